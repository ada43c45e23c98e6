//! A topic directory without a valid `topic.json`: open never deletes records because a
//! config is missing. A directory that holds records is refused, naming the file; only
//! the empty directory of a creation that stopped before its commit point is removed.
mod common;

use std::path::Path;

use kafko_core::{ErrorKind, Kafko, OpenError, StorageError};

/// Writes 50 records to topic `t` (two partitions) and shuts down cleanly.
async fn fifty_records(dir: &Path) {
    let k = common::open(dir).await;
    k.create_topic_with_config("t", common::small_segments(2))
        .await
        .unwrap();
    let p = k.producer_for("t").unwrap();
    for i in 0..50 {
        p.send(None, common::value(i)).await.unwrap();
    }
    k.create_topic("other").await.unwrap();
    k.shutdown().await.unwrap();
}

fn bytes_under(path: &Path) -> u64 {
    std::fs::read_dir(path)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                bytes_under(&e.path())
            } else {
                e.metadata().unwrap().len()
            }
        })
        .sum()
}

async fn expect_refused(dir: &Path, config: &Path) {
    match Kafko::open(dir).await {
        Err(e @ OpenError::Storage(StorageError::Corruption { .. })) => {
            assert_eq!(e.kind(), ErrorKind::Corruption);
            let OpenError::Storage(StorageError::Corruption { file, .. }) = &e else {
                unreachable!()
            };
            assert_eq!(file, config, "{e}");
        }
        Err(e) => panic!("expected corruption naming {}, got {e}", config.display()),
        Ok(_) => panic!("opened a topic directory with records and no valid config"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_config_beside_records_is_refused_and_nothing_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    fifty_records(dir.path()).await;
    let topic = dir.path().join("topics/t");
    let config = topic.join("topic.json");
    let saved = std::fs::read(&config).unwrap();
    let stored = bytes_under(&topic);
    std::fs::remove_file(&config).unwrap();

    expect_refused(dir.path(), &config).await;
    // Unclean too: the same answer.
    let _ = std::fs::remove_file(dir.path().join("clean-shutdown"));
    expect_refused(dir.path(), &config).await;
    assert_eq!(
        bytes_under(&topic),
        stored - saved.len() as u64,
        "data kept"
    );

    // Put the config back: every record is there.
    std::fs::write(&config, &saved).unwrap();
    let k = common::open(dir.path()).await;
    let all = common::read_all(&k, "t", 0).len() + common::read_all(&k, "t", 1).len();
    assert_eq!(all, 50);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_config_beside_records_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    fifty_records(dir.path()).await;
    let config = dir.path().join("topics/t/topic.json");
    let mut bytes = std::fs::read(&config).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    std::fs::write(&config, &bytes).unwrap();
    expect_refused(dir.path(), &config).await;
    assert!(dir.path().join("topics/t/0").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_empty_directory_of_an_unfinished_creation_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    fifty_records(dir.path()).await;
    // What a creation cut before `topic.json` leaves: partition directories with empty
    // segment files, and maybe the config's temp file.
    let half = dir.path().join("topics/half");
    for p in 0..3 {
        std::fs::create_dir_all(half.join(p.to_string())).unwrap();
        std::fs::write(half.join(format!("{p}/00000000000000000000.log")), b"").unwrap();
    }
    std::fs::write(half.join("topic.json.tmp"), b"KSTF").unwrap();
    let k = common::open(dir.path()).await;
    assert!(
        !half.exists(),
        "the empty half-created directory is removed"
    );
    assert_eq!(k.list_topics(), vec!["other".to_owned(), "t".to_owned()]);
    k.create_topic("half").await.unwrap();
    k.shutdown().await.unwrap();
}
