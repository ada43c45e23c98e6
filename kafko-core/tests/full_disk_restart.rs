//! Restarting on a full disk: the open must not insist on writing anything. An index it
//! rebuilds but cannot write is kept in memory; every record reads back; writes are
//! refused with `StorageFull` (HTTP 507) until space returns, and then nothing is lost.
mod common;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::failing_appends::{enospc, failing_appends};
use common::interposed::Hook;
use kafko_core::storage::StorageFile;
use kafko_core::{ErrorKind, ProduceError, StorageError};

/// The real filesystem, full while `full` is set: no new file, no small-file write, no
/// append. Reads, renames, removals and fsyncs of what exists still work.
#[derive(Clone)]
struct FullDisk(Arc<AtomicBool>);

impl Hook for FullDisk {
    fn before(&self, op: &str, path: &Path) -> io::Result<()> {
        let full = self.0.load(Ordering::SeqCst);
        if full && (op == "write" || (op == "open" && !path.exists())) {
            return Err(enospc());
        }
        Ok(())
    }
    fn file(&self, inner: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        Arc::new(failing_appends(inner, self.0.clone(), enospc))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_on_a_full_disk_serves_reads_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_small_topic(dir.path()).await;
    let mut n = 0;
    while common::segments(dir.path(), "t", 0).len() < 4 {
        p.send(None, common::value(n)).await.unwrap();
        n += 1;
    }
    k.shutdown().await.unwrap();
    // The disk filled up before the seals could write their index files, and the
    // process stopped uncleanly: the next open must rebuild those indexes.
    let logs = common::segments(dir.path(), "t", 0);
    for log in &logs[..logs.len() - 1] {
        std::fs::remove_file(log.with_extension("index")).unwrap();
        std::fs::remove_file(log.with_extension("timeindex")).unwrap();
    }
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();

    let full = Arc::new(AtomicBool::new(true));
    // A full disk must not stop the open.
    let k = common::open_interposed(dir.path(), FullDisk(full.clone())).await;
    let offsets: Vec<u64> = common::read_all(&k, "t", 0)
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(
        offsets,
        (0..n).collect::<Vec<_>>(),
        "every record reads back"
    );
    let at = common::read(&k, ("t", 0), n / 2, 1, 1 << 20);
    assert_eq!(
        at.records[0].offset,
        n / 2,
        "the in-memory index finds offsets"
    );
    let p = k.producer_for("t").unwrap();
    let err = p.send(None, "refused".into()).await.unwrap_err();
    assert!(
        matches!(err, ProduceError::Storage(StorageError::Full { .. })),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::StorageFull);
    assert_eq!(
        k.describe_topic("t").unwrap().partitions[0].high_watermark,
        n
    );

    // Space returns: the write goes through at the next offset, nothing lost.
    full.store(false, Ordering::SeqCst);
    assert_eq!(p.send(None, "after".into()).await.unwrap().offset, n);
    k.shutdown().await.unwrap();
    let k = common::open(dir.path()).await;
    assert_eq!(common::read_all(&k, "t", 0).len() as u64, n + 1);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_on_a_full_disk_is_clean_once_the_data_is_fsynced() {
    let dir = tempfile::tempdir().unwrap();
    let full = Arc::new(AtomicBool::new(false));
    let k = common::open_interposed(dir.path(), FullDisk(full.clone())).await;
    k.create_topic_with_config("t", common::small_segments(1))
        .await
        .unwrap();
    let p = k.producer_for("t").unwrap();
    let n = 100;
    for i in 0..n {
        p.send(None, common::value(i)).await.unwrap();
    }
    // The disk fills up: the stop can fsync what was written, but write no new file
    // (the active segment's index files, the recovery point).
    full.store(true, Ordering::SeqCst);
    k.shutdown()
        .await
        .expect("a stop whose data is fsynced is clean, index files or not");
    assert!(
        dir.path().join("clean-shutdown").exists(),
        "the clean-shutdown marker"
    );
    let k = common::open(dir.path()).await;
    assert_eq!(common::read_all(&k, "t", 0).len() as u64, n);
    let p = k.producer_for("t").unwrap();
    assert_eq!(p.send(None, "next".into()).await.unwrap().offset, n);
    k.shutdown().await.unwrap();
}
