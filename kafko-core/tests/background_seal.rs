//! A rolled segment is sealed (fsync, then index files) on a background thread. These
//! tests pin down what that means for recovery (FORMAT.md, recovery rule 7) and for the
//! failure path:
//! - a sealed segment without index files whose tail was lost (the power went before its
//!   seal completed) ends the log: the tail is cut, later segments are dropped, and the
//!   next append continues right after the last whole batch;
//! - the same damage below the length an index file records, or after a clean shutdown,
//!   is corruption; an index covering less than the tear is stale, not proof;
//! - a seal whose fsync fails turns the partition read-only, like any failed fsync.
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::faulty::{Faulty, Op};
use common::interposed::Interposed;
use kafko_core::{AdminError, Kafko, OpenError, ProduceError, StorageError};

/// Fills partition 0 of topic `t` over at least four 4 KiB segments, shuts down cleanly
/// and returns the segment log files (oldest first).
async fn three_sealed_segments(dir: &Path) -> Vec<PathBuf> {
    let (k, p) = common::open_small_topic(dir).await;
    let mut i = 0;
    while common::segments(dir, "t", 0).len() < 4 {
        p.send(None, common::value(i)).await.unwrap();
        i += 1;
    }
    k.shutdown().await.unwrap();
    common::segments(dir, "t", 0)
}

/// The offset of every record of partition 0, read from its log start.
fn offsets_of(k: &Kafko) -> Vec<u64> {
    common::read_all(k, "t", 0)
        .iter()
        .map(|r| r.offset)
        .collect()
}

/// Cuts `log` in the middle of its last batch: what a power cut leaves of unsynced pages.
fn tear(log: &Path) -> u64 {
    let bytes = std::fs::read(log).unwrap();
    let cut = bytes.len() - 5;
    std::fs::write(log, &bytes[..cut]).unwrap();
    cut as u64
}

/// Byte positions where the batches of a segment file end.
fn batch_ends(log: &Path) -> Vec<u64> {
    let bytes = std::fs::read(log).unwrap();
    let mut ends = Vec::new();
    let mut at = 0usize;
    // Kafka's record batch: the length (after itself) at bytes 8..12, big-endian.
    while at + 12 <= bytes.len() {
        let length = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 12 + length;
        ends.push(at as u64);
    }
    assert_eq!(ends.last().copied(), Some(bytes.len() as u64));
    ends
}

/// Cuts `log` after its second-to-last batch: an unsynced tail lost whole.
fn drop_last_batch(log: &Path) -> u64 {
    let ends = batch_ends(log);
    let cut = ends[ends.len() - 2];
    let f = std::fs::OpenOptions::new().write(true).open(log).unwrap();
    f.set_len(cut).unwrap();
    cut
}

/// Removes the clean-shutdown marker: the next open recovers as after a crash.
fn unclean(dir: &Path) {
    std::fs::remove_file(dir.join("clean-shutdown")).unwrap();
}

/// A crash before the seal of `log` completed: no marker, and the recovery point the
/// previous seal left (the clean shutdown that built the directory raised it to the end).
fn crash_before_seal_of(dir: &Path, log: &Path) {
    unclean(dir);
    common::set_recovery_point(dir, "t", 0, common::base_of(log));
}

/// Opens `dir`, which must fail with `Corruption`; returns its file and position.
async fn expect_corruption(dir: &Path) -> (PathBuf, u64) {
    match Kafko::open(dir).await {
        Err(OpenError::Storage(StorageError::Corruption { file, position, .. })) => {
            (file, position)
        }
        Err(e) => panic!("expected corruption, got {e}"),
        Ok(_) => panic!("a damaged log opened"),
    }
}

fn remove_indexes(log: &Path) {
    std::fs::remove_file(log.with_extension("index")).unwrap();
    std::fs::remove_file(log.with_extension("timeindex")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_segment_whose_seal_never_completed_ends_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let logs = three_sealed_segments(dir.path()).await;
    let before = {
        let k = common::open(dir.path()).await;
        let all = offsets_of(&k);
        k.shutdown().await.unwrap();
        all
    };
    // Segment 1 as a power cut before its seal completed leaves it: no index files, its
    // last batch half written. Segments 2.. hold records after the gap.
    let torn = &logs[1];
    remove_indexes(torn);
    tear(torn);
    crash_before_seal_of(dir.path(), torn);

    let k = common::open(dir.path()).await;
    let after = offsets_of(&k);
    let first_of_segment_2: u64 = logs[2]
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(!after.is_empty());
    assert_eq!(
        after[..],
        before[..after.len()],
        "what is left is a prefix of the log"
    );
    assert_eq!(
        *after.last().unwrap() + 2,
        first_of_segment_2,
        "exactly the torn batch is gone from segment 1"
    );
    let remaining = common::segments(dir.path(), "t", 0);
    assert_eq!(
        remaining,
        logs[..2],
        "the segments after the gap are dropped"
    );
    for later in &logs[2..] {
        assert!(!later.with_extension("index").exists());
        assert!(!later.with_extension("timeindex").exists());
    }
    // The cut segment is the active one again: the next record follows the last whole batch.
    let offset = common::append(&k, "next").await;
    assert_eq!(offset, *after.last().unwrap() + 1);
    assert_eq!(common::last_segment(dir.path(), "t", 0), logs[1]);
    k.shutdown().await.unwrap();

    // And the repaired log reopens as it was left.
    let k = common::open(dir.path()).await;
    assert_eq!(offsets_of(&k).len(), after.len() + 1);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_index_from_a_clean_shutdown_does_not_make_a_tear_corruption() {
    // A clean shutdown writes the active segment's index files. The segment then grows
    // and rolls; the power goes before its seal: its index files are the stale ones,
    // covering less than the tear, which therefore lies in never-synced bytes.
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_small_topic(dir.path()).await;
    for i in 0..3 {
        p.send(None, common::value(i)).await.unwrap();
    }
    k.shutdown().await.unwrap();
    let first = common::segments(dir.path(), "t", 0).remove(0);
    let stale_len = std::fs::metadata(&first).unwrap().len();
    let stale: Vec<_> = ["index", "timeindex"]
        .map(|ext| std::fs::read(first.with_extension(ext)).unwrap())
        .into();
    drop(p);
    drop(k);

    let logs = three_sealed_segments(dir.path()).await;
    assert_eq!(logs[0], first);
    for (ext, bytes) in ["index", "timeindex"].iter().zip(&stale) {
        std::fs::write(first.with_extension(ext), bytes).unwrap();
    }
    let cut = tear(&first);
    assert!(cut > stale_len);
    crash_before_seal_of(dir.path(), &first);

    let k = common::open(dir.path()).await;
    assert_eq!(common::segments(dir.path(), "t", 0), logs[..1]);
    let offsets = offsets_of(&k);
    assert!(offsets.len() > 3 && offsets.iter().enumerate().all(|(i, &o)| o == i as u64));
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_segment_that_was_sealed_is_corruption() {
    // With its index files present, the seal completed: the tail was durable once.
    let dir = tempfile::tempdir().unwrap();
    let logs = three_sealed_segments(dir.path()).await;
    let cut = tear(&logs[1]);
    unclean(dir.path());
    let (file, position) = expect_corruption(dir.path()).await;
    assert_eq!(file, logs[1]);
    assert!(
        position <= cut,
        "{position} points at or into the torn batch"
    );
    assert_eq!(
        common::segments(dir.path(), "t", 0),
        logs,
        "nothing deleted"
    );

    // After a clean shutdown every seal completed, index files or not.
    let dir = tempfile::tempdir().unwrap();
    let logs = three_sealed_segments(dir.path()).await;
    remove_indexes(&logs[1]);
    tear(&logs[1]);
    let (file, _) = expect_corruption(dir.path()).await;
    assert_eq!(file, logs[1]);
    assert_eq!(
        common::segments(dir.path(), "t", 0),
        logs,
        "nothing deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_seal_fsync_makes_the_partition_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faulty::new(Op::Sync, 1_000_000);
    let k = Kafko::builder(dir.path())
        .storage(Arc::new(Interposed(faults.clone())))
        .open()
        .await
        .unwrap();
    k.create_topic_with_config("t", common::small_segments(1))
        .await
        .unwrap();
    // fsync never: the next fsync is the first roll's seal.
    faults.arm();
    let p = k.producer_for("t").unwrap();
    let mut acked = 0u64;
    let err = loop {
        match p.send(None, common::value(acked)).await {
            Ok(m) => {
                assert_eq!(m.offset, acked);
                acked += 1;
                assert!(acked < 10_000, "the failed seal was never noticed");
            }
            Err(e) => break e,
        }
    };
    assert_eq!(
        faults.count(),
        1_000_000,
        "the seal's fsync was the one that failed"
    );
    // The write that found the failure (at the next roll, or once the seal was seen
    // finished) gets the fsync error or the refusal; every later one the refusal.
    assert!(
        matches!(
            err,
            ProduceError::Storage(StorageError::Io { .. }) | ProduceError::PartitionReadOnly { .. }
        ),
        "{err}"
    );
    let next = p.send(None, "refused".into()).await.unwrap_err();
    assert!(
        matches!(next, ProduceError::PartitionReadOnly { .. }),
        "{next}"
    );
    assert!(matches!(
        k.sync().await,
        Err(AdminError::PartitionReadOnly { .. })
    ));
    // Everything acknowledged is still readable.
    assert_eq!(common::read_all(&k, "t", 0).len() as u64, acked);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_lost_at_a_batch_boundary_ends_the_log_too() {
    // No torn bytes, only a gap: segment 1 ends before segment 2 begins.
    let dir = tempfile::tempdir().unwrap();
    let logs = three_sealed_segments(dir.path()).await;
    remove_indexes(&logs[1]);
    drop_last_batch(&logs[1]);
    crash_before_seal_of(dir.path(), &logs[1]);
    let k = common::open(dir.path()).await;
    assert_eq!(common::segments(dir.path(), "t", 0), logs[..2]);
    let offsets = offsets_of(&k);
    assert!(offsets.iter().enumerate().all(|(i, &o)| o == i as u64));
    let offset = common::append(&k, "next").await;
    assert_eq!(
        offset as usize,
        offsets.len(),
        "the log goes on without a gap"
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gaps_that_a_power_cut_cannot_explain_are_corruption() {
    // A sealed segment shorter than its index records: it was durable at full length.
    let dir = tempfile::tempdir().unwrap();
    let logs = three_sealed_segments(dir.path()).await;
    let cut = drop_last_batch(&logs[1]);
    unclean(dir.path());
    assert_eq!(expect_corruption(dir.path()).await, (logs[1].clone(), cut));
    assert_eq!(
        common::segments(dir.path(), "t", 0),
        logs,
        "nothing deleted"
    );

    // A whole segment missing between two complete ones.
    let dir = tempfile::tempdir().unwrap();
    let logs = three_sealed_segments(dir.path()).await;
    std::fs::remove_file(&logs[1]).unwrap();
    remove_indexes(&logs[1]);
    for clean in [true, false] {
        if !clean {
            unclean(dir.path());
        }
        let (file, _) = expect_corruption(dir.path()).await;
        assert_eq!(file, logs[2], "clean: {clean}");
    }
}
