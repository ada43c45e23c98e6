//! A flipped bit is never served: reads of a damaged batch fail with `Corruption` naming
//! the file, and a bad batch followed by good ones in the active segment refuses to open
//! rather than silently dropping the good records.
mod common;

use kafko_core::{Kafko, KafkoError, OpenError, StorageError, TopicConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bit_flip_in_a_sealed_segment_fails_the_read_not_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_small_topic(dir.path()).await;
    for i in 0..200 {
        p.send(None, common::value(i)).await.unwrap();
    }
    k.shutdown().await.unwrap();
    let first = common::segments(dir.path(), "t", 0).remove(0);
    let mut bytes = std::fs::read(&first).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x04;
    std::fs::write(&first, &bytes).unwrap();

    let k = Kafko::open(dir.path()).await.unwrap();
    let mut served_bad = false;
    let mut saw_error = false;
    for offset in 0..200u64 {
        match common::try_read(&k, ("t", 0), offset, 1, 1 << 20) {
            Ok(f) => {
                for r in f.records {
                    served_bad |= r.value.as_ref() != Some(&common::value(r.offset));
                }
            }
            Err(KafkoError::Corruption { file, .. }) => {
                assert_eq!(file, first);
                saw_error = true;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert!(saw_error, "the damaged batch must be reported");
    assert!(!served_bad, "no corrupted payload may be served");
    // Records in other segments are still readable.
    let last = common::read(&k, ("t", 0), 199, 1, 1 << 20);
    assert_eq!(last.records[0].value.as_ref().unwrap(), &common::value(199));
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_batch_followed_by_valid_ones_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_topic(dir.path(), TopicConfig::default()).await;
    for i in 0..20 {
        p.send(None, common::value(i)).await.unwrap();
    }
    k.shutdown().await.unwrap();
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
    let log = common::last_segment(dir.path(), "t", 0);
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[100] ^= 0x01;
    std::fs::write(&log, &bytes).unwrap();
    let err = Kafko::open(dir.path()).await.err().expect("must refuse");
    match err {
        OpenError::Storage(StorageError::Corruption { file, position, .. }) => {
            assert_eq!(file, log);
            assert!(position <= 100);
        }
        other => panic!("expected corruption, got {other}"),
    }
    // The data is untouched: repairing the bit makes everything readable again.
    bytes[100] ^= 0x01;
    std::fs::write(&log, &bytes).unwrap();
    let k = Kafko::open(dir.path()).await.unwrap();
    assert_eq!(common::read_all(&k, "t", 0).len(), 20);
    k.shutdown().await.unwrap();
}
