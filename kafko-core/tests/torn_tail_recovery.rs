//! A crash can leave part of the last batch, zeros, or garbage at the end of the active
//! segment. Every such tail is cut back to the last whole batch, with no panic, and the
//! next append gets the next offset.
mod common;

use std::io::Write;

use kafko_core::Kafko;

/// What a crash after unsynced writes leaves: no clean-shutdown marker, and no recovery
/// point past the writes (this topic never rolled, so none at all).
fn crash(dir: &std::path::Path) {
    let _ = std::fs::remove_file(dir.join("clean-shutdown"));
    let _ = std::fs::remove_file(dir.join("topics/t/0/recovery-point"));
}

/// Writes `n` single-record batches, stops uncleanly, returns (log path, batch end positions).
async fn prepare(dir: &std::path::Path, n: u64) -> (std::path::PathBuf, Vec<u64>) {
    let k = common::open(dir).await;
    k.create_topic("t").await.unwrap();
    let p = k.producer_for("t").unwrap();
    let mut ends = Vec::new();
    for i in 0..n {
        p.send(None, common::value(i)).await.unwrap();
        ends.push(k.describe_topic("t").unwrap().partitions[0].size_bytes);
    }
    k.shutdown().await.unwrap();
    crash(dir);
    (common::last_segment(dir, "t", 0), ends)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn torn_last_batch_at_every_byte_length_is_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let (log, ends) = prepare(dir.path(), 3).await;
    let pristine = std::fs::read(&log).unwrap();
    let (start, end) = (ends[1], ends[2]);
    for cut in start..end {
        std::fs::write(&log, &pristine[..cut as usize]).unwrap();
        crash(dir.path());
        let k = Kafko::open(dir.path()).await.unwrap();
        let recs = common::read_all(&k, "t", 0);
        assert_eq!(recs.len(), 2, "cut at {cut}");
        assert_eq!(
            std::fs::metadata(&log).unwrap().len(),
            start,
            "cut at {cut}"
        );
        let offset = common::append(&k, "next").await;
        assert_eq!(offset, 2, "cut at {cut}");
        k.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appended_zeros_or_garbage_are_cut() {
    let dir = tempfile::tempdir().unwrap();
    let (log, ends) = prepare(dir.path(), 5).await;
    for tail in [
        vec![0u8; 4096],
        vec![0xAB; 100],
        b"\x10\x00\x00\x00garbage".to_vec(),
        vec![0u8; 3],
    ] {
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(&tail).unwrap();
        drop(f);
        crash(dir.path());
        let k = Kafko::open(dir.path()).await.unwrap();
        assert_eq!(common::read_all(&k, "t", 0).len(), 5);
        assert_eq!(std::fs::metadata(&log).unwrap().len(), ends[4]);
        k.shutdown().await.unwrap();
    }
}
