//! Every byte of a stored batch is verified (FORMAT.md, "How every byte is verified"):
//! a bit flipped anywhere in a Kafka record batch — the base offset, length, leader
//! epoch and magic that its CRC-32C does not cover, the CRC itself, the CRC-covered
//! header fields and the records — is never served as data. After a clean shutdown the
//! read of the damaged batch fails with `Corruption`; after an unclean one the open is
//! refused, because a valid batch follows the damaged one.
mod common;

use kafko_core::{Kafko, KafkoError, OpenError, StorageError, TopicConfig};

/// Bytes of a Kafka record batch header.
const HEADER: usize = 61;

/// Writes three one-record batches and returns the log's bytes and where batch 2 starts.
async fn three_batches(dir: &std::path::Path) -> (std::path::PathBuf, Vec<u8>, usize, usize) {
    let (k, p) = common::open_topic(dir, TopicConfig::default()).await;
    for i in 0..3 {
        p.send(None, common::value(i)).await.unwrap();
    }
    k.shutdown().await.unwrap();
    let log = common::last_segment(dir, "t", 0);
    let bytes = std::fs::read(&log).unwrap();
    let batches = common::on_disk::batches_on_disk(dir, "t", 0);
    assert_eq!(batches.len(), 3);
    (log, bytes, batches[0].1, batches[1].1)
}

/// The byte positions to damage in batch 2: every header byte, and a spread of record
/// bytes.
fn positions(start: usize, len: usize) -> Vec<usize> {
    let mut at: Vec<usize> = (start..start + HEADER).collect();
    at.extend((start + HEADER..start + len).step_by(7));
    at.push(start + len - 1);
    at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flip_anywhere_in_a_batch_fails_its_read_after_a_clean_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let (log, pristine, start, len) = three_batches(dir.path()).await;
    let marker = std::fs::read(dir.path().join("clean-shutdown")).unwrap();
    for at in positions(start, len) {
        for bit in [0, 7] {
            let mut bytes = pristine.clone();
            bytes[at] ^= 1 << bit;
            std::fs::write(&log, &bytes).unwrap();
            std::fs::write(dir.path().join("clean-shutdown"), &marker).unwrap();
            let k = Kafko::open(dir.path()).await.unwrap();
            let mut failed = false;
            for offset in 0..3u64 {
                match common::try_read(&k, ("t", 0), offset, 3, 1 << 20) {
                    Ok(f) => {
                        for r in f.records {
                            assert_eq!(
                                r.value.as_ref(),
                                Some(&common::value(r.offset)),
                                "byte {at} bit {bit}: damaged data served"
                            );
                        }
                    }
                    Err(KafkoError::Corruption { file, .. }) => {
                        assert_eq!(file, log);
                        failed = true;
                    }
                    Err(e) => panic!("byte {at} bit {bit}: unexpected {e}"),
                }
            }
            assert!(failed, "byte {at} bit {bit}: the damage went unnoticed");
            k.shutdown().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flip_anywhere_in_a_batch_before_a_valid_one_refuses_an_unclean_open() {
    let dir = tempfile::tempdir().unwrap();
    let (log, pristine, start, len) = three_batches(dir.path()).await;
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
    for at in positions(start, len) {
        let mut bytes = pristine.clone();
        bytes[at] ^= 0x10;
        std::fs::write(&log, &bytes).unwrap();
        match Kafko::open(dir.path()).await {
            Err(OpenError::Storage(StorageError::Corruption { file, .. })) => {
                assert_eq!(file, log, "byte {at}");
            }
            Err(other) => panic!("byte {at}: expected corruption, got {other}"),
            Ok(k) => {
                let records = common::read_all(&k, "t", 0);
                panic!("byte {at}: opened with {} records", records.len());
            }
        }
        // Nothing was changed on disk.
        assert_eq!(std::fs::read(&log).unwrap(), bytes, "byte {at}");
    }
    std::fs::write(&log, &pristine).unwrap();
    let k = Kafko::open(dir.path()).await.unwrap();
    assert_eq!(common::read_all(&k, "t", 0).len(), 3);
    k.shutdown().await.unwrap();
}
