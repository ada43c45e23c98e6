//! Damage to files that were durable is refused with the file and byte, never repaired
//! by dropping acknowledged records: zeros appended to a sealed segment, the same with
//! the segment's index files gone, a deleted or emptied active segment. The recovery
//! point (every offset below it was fsynced) is what tells such damage from the unsynced
//! tail a power cut may take.
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use kafko_core::{FsyncPolicy, Kafko, KafkoError, TopicConfig};

/// Opens `dir` with 120 records acked on topic `t` (`fsync: always`, 4 KiB segments).
async fn open_with_120_fsynced(dir: &Path) -> Kafko {
    let k = common::open(dir).await;
    let config = TopicConfig {
        fsync: FsyncPolicy::Always,
        ..common::small_segments(1)
    };
    k.create_topic_with_config("t", config).await.unwrap();
    let p = k.producer_for("t").unwrap();
    for i in 0..120 {
        assert_eq!(p.send(None, common::value(i)).await.unwrap().offset, i);
    }
    k
}

/// 120 records on an `fsync: always` topic in 4 KiB segments, cleanly shut down; returns
/// the segment files. Unclean afterwards: the marker is removed, as a crash leaves it.
async fn acked_and_fsynced(dir: &Path) -> Vec<PathBuf> {
    let k = open_with_120_fsynced(dir).await;
    k.shutdown().await.unwrap();
    std::fs::remove_file(dir.join("clean-shutdown")).unwrap();
    let logs = common::segments(dir, "t", 0);
    assert!(logs.len() >= 3, "{} segments", logs.len());
    logs
}

fn append_zeros(log: &Path, n: usize) -> u64 {
    let len = std::fs::metadata(log).unwrap().len();
    let mut f = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    f.write_all(&vec![0u8; n]).unwrap();
    len
}

fn remove_indexes(log: &Path) {
    std::fs::remove_file(log.with_extension("index")).unwrap();
    std::fs::remove_file(log.with_extension("timeindex")).unwrap();
}

/// Opens `dir`, which must be refused with `Corruption`; returns file, position, reason.
async fn refused(dir: &Path) -> (PathBuf, u64, String) {
    match Kafko::open(dir).await.map_err(KafkoError::from) {
        Err(KafkoError::Corruption {
            file,
            position,
            reason,
        }) => (file, position, reason),
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(k) => {
            let n = common::read_all(&k, "t", 0).len();
            panic!("a damaged log opened with {n} of 120 records")
        }
    }
}

/// Every record is still on disk: put the damage right, and all 120 read back.
async fn all_there_after(dir: &Path, repair: impl FnOnce()) {
    repair();
    let k = common::open(dir).await;
    let offsets: Vec<u64> = common::read_all(&k, "t", 0)
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, (0..120).collect::<Vec<_>>());
    k.shutdown().await.unwrap();
}

/// Appends zeros to the sealed segment (and, with `without_indexes`, removes its index
/// files): the open is refused at the first zero byte, nothing is deleted, and once the
/// zeros are cut every acked record is back.
async fn zeros_on_the_sealed_segment_are_refused(without_indexes: bool) {
    let dir = tempfile::tempdir().unwrap();
    let logs = acked_and_fsynced(dir.path()).await;
    let sealed = &logs[1];
    let end = append_zeros(sealed, 100);
    if without_indexes {
        remove_indexes(sealed);
    }
    let (file, position, reason) = refused(dir.path()).await;
    assert_eq!((&file, position), (sealed, end), "{reason}");
    assert_eq!(
        common::segments(dir.path(), "t", 0),
        logs,
        "nothing deleted"
    );
    all_there_after(dir.path(), || {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(sealed)
            .unwrap();
        f.set_len(end).unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zeros_appended_to_a_sealed_segment_are_refused_not_a_reason_to_drop_the_log() {
    zeros_on_the_sealed_segment_are_refused(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zeros_appended_to_a_sealed_segment_without_its_index_files_are_refused() {
    zeros_on_the_sealed_segment_are_refused(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_active_segment_after_a_clean_stop_is_refused_with_the_lost_range() {
    for clean in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let logs = acked_and_fsynced(dir.path()).await;
        if clean {
            std::fs::write(dir.path().join("clean-shutdown"), common::state_file("1")).unwrap();
        }
        let active = logs.last().unwrap();
        let first_lost = common::base_of(active);
        let saved = std::fs::read(active).unwrap();
        std::fs::remove_file(active).unwrap();
        remove_indexes(active);
        let (_, _, reason) = refused(dir.path()).await;
        assert!(
            reason.contains(&format!("offsets {first_lost}..120 are missing")),
            "clean {clean}: {reason}"
        );
        // Nothing was changed: the next open is refused the same way, and the offsets
        // were not handed out again.
        let (_, _, again) = refused(dir.path()).await;
        assert_eq!(reason, again);
        all_there_after(dir.path(), || std::fs::write(active, &saved).unwrap()).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emptied_active_segment_after_a_clean_stop_is_refused_with_the_lost_range() {
    let dir = tempfile::tempdir().unwrap();
    let logs = acked_and_fsynced(dir.path()).await;
    std::fs::write(dir.path().join("clean-shutdown"), common::state_file("1")).unwrap();
    let active = logs.last().unwrap();
    let first_lost = common::base_of(active);
    let saved = std::fs::read(active).unwrap();
    std::fs::write(active, b"").unwrap();
    let (file, position, reason) = refused(dir.path()).await;
    assert_eq!((&file, position), (active, 0));
    assert!(
        reason.contains(&format!("offsets {first_lost}..120 are missing")),
        "{reason}"
    );
    all_there_after(dir.path(), || std::fs::write(active, &saved).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_with_every_segment_gone_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let logs = acked_and_fsynced(dir.path()).await;
    for log in &logs {
        std::fs::remove_file(log).unwrap();
        remove_indexes(log);
    }
    let (_, _, reason) = refused(dir.path()).await;
    assert!(reason.contains("offsets 0..120 are missing"), "{reason}");
    assert!(
        common::segments(dir.path(), "t", 0).is_empty(),
        "nothing created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_active_segment_below_the_recovery_point_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let logs = acked_and_fsynced(dir.path()).await;
    let active = logs.last().unwrap();
    let saved = std::fs::read(active).unwrap();
    // Cut into the last batch: it was fsynced (the clean stop raised the recovery point
    // to 120), so this is damage, not an unsynced tail.
    std::fs::write(active, &saved[..saved.len() - 7]).unwrap();
    for clean in [false, true] {
        if clean {
            std::fs::write(dir.path().join("clean-shutdown"), common::state_file("1")).unwrap();
        }
        let (file, _, reason) = refused(dir.path()).await;
        assert_eq!(&file, active, "clean {clean}: {reason}");
        assert_eq!(
            std::fs::metadata(active).unwrap().len() as usize,
            saved.len() - 7
        );
    }
    all_there_after(dir.path(), || std::fs::write(active, &saved).unwrap()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_recovery_point_is_refused_and_a_deleted_one_is_not_needed() {
    let dir = tempfile::tempdir().unwrap();
    acked_and_fsynced(dir.path()).await;
    let checkpoint = dir.path().join("topics/t/0/recovery-point");
    let saved = std::fs::read(&checkpoint).unwrap();
    let mut bad = saved.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    std::fs::write(&checkpoint, &bad).unwrap();
    let (file, _, _) = refused(dir.path()).await;
    assert_eq!(file, checkpoint);
    all_there_after(dir.path(), || std::fs::remove_file(&checkpoint).unwrap()).await;
}

/// The value of a partition's recovery point file, if it exists.
fn recovery_point(dir: &Path) -> Option<u64> {
    let data = std::fs::read(dir.join("topics/t/0/recovery-point")).ok()?;
    std::str::from_utf8(&data[13..]).ok()?.parse().ok()
}

/// A SIGKILL after 120 records acked on an `fsync: always` topic: the running log's
/// directory copied as it is (the process dies, the page cache stays). The log is left
/// running; its recovery point is given up to 10 s to cover the last fsync.
async fn killed_after_120_fsynced(dir: &Path, image: &Path) -> Kafko {
    let k = open_with_120_fsynced(dir).await;
    let acked = std::time::Instant::now();
    let deadline = acked + std::time::Duration::from_secs(10);
    while recovery_point(dir) != Some(120) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    eprintln!(
        "recovery point {:?} {} ms after the last ack",
        recovery_point(dir),
        acked.elapsed().as_millis()
    );
    common::on_disk::copy_dir(dir, image);
    std::fs::remove_file(image.join("kafko.lock")).ok();
    k
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fsynced_records_of_the_active_segment_deleted_or_emptied_after_a_crash_are_refused() {
    for emptied in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let image = tempfile::tempdir().unwrap();
        let k = killed_after_120_fsynced(dir.path(), image.path()).await;
        let logs = common::segments(image.path(), "t", 0);
        assert!(logs.len() >= 3, "{} segments", logs.len());
        let active = logs.last().unwrap();
        let first_lost = common::base_of(active);
        assert!(first_lost < 120);
        let saved = std::fs::read(active).unwrap();
        if emptied {
            std::fs::write(active, b"").unwrap();
        } else {
            std::fs::remove_file(active).unwrap();
        }
        let (_, _, reason) = refused(image.path()).await;
        assert!(
            reason.contains(&format!("offsets {first_lost}..120 are missing")),
            "emptied {emptied}: {reason}"
        );
        all_there_after(image.path(), || std::fs::write(active, &saved).unwrap()).await;
        k.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_first_segment_is_refused_with_the_missing_range() {
    // After a clean stop, after an unclean one, and in the image of a SIGKILL.
    for case in ["clean", "unclean", "killed"] {
        let dir = tempfile::tempdir().unwrap();
        let image = tempfile::tempdir().unwrap();
        let (root, running) = if case == "killed" {
            let k = killed_after_120_fsynced(dir.path(), image.path()).await;
            (image.path(), Some(k))
        } else {
            acked_and_fsynced(dir.path()).await;
            if case == "clean" {
                std::fs::write(dir.path().join("clean-shutdown"), common::state_file("1")).unwrap();
            }
            (dir.path(), None)
        };
        let logs = common::segments(root, "t", 0);
        let first = &logs[0];
        let second = common::base_of(&logs[1]);
        let saved = std::fs::read(first).unwrap();
        std::fs::remove_file(first).unwrap();
        remove_indexes(first);
        let (file, position, reason) = refused(root).await;
        assert_eq!((&file, position), (first, 0), "{case}: {reason}");
        assert!(
            reason.contains(&format!("offsets 0..{second} are missing")),
            "{case}: {reason}"
        );
        // Nothing was changed: refused again the same way.
        let (_, _, again) = refused(root).await;
        assert_eq!(reason, again);
        all_there_after(root, || std::fs::write(first, &saved).unwrap()).await;
        if let Some(k) = running {
            k.shutdown().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_segment_above_the_saved_log_start_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let logs = acked_and_fsynced(dir.path()).await;
    let checkpoint = dir.path().join("topics/t/0/log-start-offset");
    // As retention leaves it: the log start saved, then the segments below it deleted.
    let start = common::base_of(&logs[1]);
    std::fs::write(&checkpoint, common::state_file(&start.to_string())).unwrap();
    std::fs::remove_file(&logs[0]).unwrap();
    remove_indexes(&logs[0]);
    let k = common::open(dir.path()).await;
    let offsets: Vec<u64> = common::read_all(&k, "t", 0)
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, (start..120).collect::<Vec<_>>());
    k.shutdown().await.unwrap();
    // The first segment left is deleted too: the log start stays where it was saved, and
    // the range up to the next segment is missing.
    let next = common::base_of(&logs[2]);
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
    std::fs::remove_file(&logs[1]).unwrap();
    remove_indexes(&logs[1]);
    let (file, _, reason) = refused(dir.path()).await;
    assert_eq!(file, logs[1], "{reason}");
    assert!(
        reason.contains(&format!("offsets {start}..{next} are missing")),
        "{reason}"
    );
}

/// Every file under `dir` with its content.
fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.insert(path.clone(), Vec::new());
                stack.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_open_leaves_the_directory_byte_for_byte_as_it_was() {
    for damage in ["group offsets", "first segment"] {
        let dir = tempfile::tempdir().unwrap();
        let k = open_with_120_fsynced(dir.path()).await;
        let at = [kafko_core::PartitionOffset {
            partition: 0,
            offset: 60,
        }];
        k.group("g")
            .unwrap()
            .commit(&k.topic("t").unwrap(), None, Some(&at))
            .await
            .unwrap();
        // A deleted topic waits in `trash/` for the next open.
        k.create_topic("gone").await.unwrap();
        k.producer_for("gone")
            .unwrap()
            .send(None, "x".into())
            .await
            .unwrap();
        k.delete_topic("gone").await.unwrap();
        k.shutdown().await.unwrap();
        assert!(dir.path().join("clean-shutdown").exists());
        assert!(dir.path().join("trash").exists());

        match damage {
            "group offsets" => {
                let offsets = dir.path().join("groups/g/t.offsets");
                let mut bytes = std::fs::read(&offsets).unwrap();
                let last = bytes.len() - 1;
                bytes[last] ^= 0x01;
                std::fs::write(&offsets, bytes).unwrap();
            }
            _ => {
                let first = &common::segments(dir.path(), "t", 0)[0];
                std::fs::remove_file(first).unwrap();
            }
        }
        let before = snapshot(dir.path());
        let (file, _, reason) = refused(dir.path()).await;
        let after = snapshot(dir.path());
        let changed: Vec<_> = before
            .keys()
            .chain(after.keys())
            .filter(|path| before.get(*path) != after.get(*path))
            .collect();
        assert!(
            changed.is_empty(),
            "{damage}: the open refused ({} : {reason}) changed {changed:?}",
            file.display()
        );
    }
}
