//! Failure behaviour of the write path: a failed write burns no offset and fails every
//! waiting caller; a failed fsync makes the partition read-only; a panicking writer is a
//! typed error; a full disk is `StorageFull`; a clean restart recovers all acknowledged data.
mod common;

use std::sync::Arc;

use common::faulty::{Faulty, Op};
use common::interposed::Interposed;
use kafko_core::{ErrorKind, FsyncPolicy, Kafko, ProduceError, StorageError, TopicConfig};

async fn open_faulty(dir: &std::path::Path, faults: Arc<Faulty>) -> Kafko {
    Kafko::builder(dir)
        .storage(Arc::new(Interposed(faults)))
        .open()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_write_burns_no_offset_at_every_n() {
    for n in 1..=6u64 {
        let dir = tempfile::tempdir().unwrap();
        let faults = Faulty::with(Op::Append, n, |f| f.partial = 7);
        let k = open_faulty(dir.path(), faults.clone()).await;
        k.create_topic("t").await.unwrap();
        let p = k.producer_for("t").unwrap();
        let mut acked = Vec::new();
        for i in 0..8u64 {
            match p.send(None, common::value(i)).await {
                Ok(m) => acked.push((m.offset, i)),
                Err(e) => assert!(
                    matches!(e, ProduceError::Storage(StorageError::Io { .. })),
                    "{e}"
                ),
            }
        }
        assert_eq!(acked.len(), 7, "exactly one write failed (n={n})");
        assert!(
            acked.iter().enumerate().all(|(i, (o, _))| *o == i as u64),
            "offsets stay dense"
        );
        k.shutdown().await.unwrap();
        let k = Kafko::open(dir.path()).await.unwrap();
        let recs = common::read_all(&k, "t", 0);
        assert_eq!(recs.len(), 7);
        for (r, (o, i)) in recs.iter().zip(&acked) {
            assert_eq!(r.offset, *o);
            assert_eq!(r.value.as_ref().unwrap(), &common::value(*i));
        }
        k.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fsync_failure_makes_the_partition_read_only() {
    let dir = tempfile::tempdir().unwrap();
    // Sticky: once armed every sync fails, so the recovery point's own state write
    // (which may run between the two sends) cannot take the one failure meant for the
    // data's fsync.
    let faults = Faulty::with(Op::Sync, 1_000_000, |f| f.sticky = true);
    let k = open_faulty(dir.path(), faults.clone()).await;
    k.create_topic_with_config(
        "t",
        TopicConfig {
            fsync: FsyncPolicy::Always,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let p = k.producer_for("t").unwrap();
    p.send(None, "ok".into()).await.unwrap();
    faults.arm();
    let first = p.send(None, "lost".into()).await.unwrap_err();
    assert!(
        matches!(first, ProduceError::Storage(StorageError::Io { .. })),
        "{first}"
    );
    let second = p.send(None, "refused".into()).await.unwrap_err();
    assert!(
        matches!(second, ProduceError::PartitionReadOnly { .. }),
        "{second}"
    );
    assert_eq!(second.kind(), ErrorKind::Unavailable);
    // Reads keep working.
    assert_eq!(
        common::read(&k, ("t", 0), 0, 10, 1000).records[0]
            .value
            .as_ref()
            .unwrap(),
        "ok"
    );
    drop(k);
    let k = Kafko::open(dir.path()).await.unwrap();
    let recs = common::read_all(&k, "t", 0);
    assert_eq!(recs[0].value.as_ref().unwrap(), "ok");
    let offset = common::append(&k, "after").await;
    assert_eq!(offset as usize, recs.len());
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_full_is_storage_full_and_writes_resume() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faulty::with(Op::Append, 3, |f| {
        f.enospc = true;
        f.sticky = true;
    });
    let k = open_faulty(dir.path(), faults.clone()).await;
    k.create_topic("t").await.unwrap();
    let p = k.producer_for("t").unwrap();
    p.send(None, "a".into()).await.unwrap();
    p.send(None, "b".into()).await.unwrap();
    for _ in 0..3 {
        let e = p.send(None, "c".into()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::StorageFull, "{e}");
    }
    assert_eq!(common::read(&k, ("t", 0), 0, 10, 1000).records.len(), 2);
    faults.disarm();
    assert_eq!(p.send(None, "d".into()).await.unwrap().offset, 2);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panicking_writer_is_a_typed_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Faulty::with(Op::Append, 2, |f| f.panic = true);
    let k = open_faulty(dir.path(), faults).await;
    k.create_topic("t").await.unwrap();
    let p = k.producer_for("t").unwrap();
    p.send(None, "a".into()).await.unwrap();
    let e = tokio::time::timeout(std::time::Duration::from_secs(5), p.send(None, "b".into()))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(e, ProduceError::PartitionPanicked { partition: 0, .. }),
        "{e}"
    );
    let e = p.send(None, "c".into()).await.unwrap_err();
    assert!(matches!(e, ProduceError::PartitionPanicked { .. }), "{e}");
    assert!(k.shutdown().await.is_err());
}
