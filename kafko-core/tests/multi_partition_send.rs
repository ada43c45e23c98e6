//! A send to several partitions is handed over all at once or not at all: a full write
//! queue on one partition refuses the whole send before anything is appended; a write that
//! fails on one partition after others appended is reported per partition, naming the
//! records that were not stored. A large send is split into bounded batches on disk,
//! which one partition still appends together (all of them, or none after a failed
//! write).
mod common;

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Waker};

use common::failing_appends::FailPartition;
use common::gate::Gate;
use common::on_disk::batches_on_disk;
use kafko_core::{
    Kafko, ProduceError, Producer, ProducerRecord, RecordMetadata, RecordRef, Result, SendOptions,
    StorageError, TopicConfig,
};

type Send<'a> = Pin<Box<dyn Future<Output = Result<Vec<RecordMetadata>, ProduceError>> + 'a>>;

fn no_wait() -> SendOptions {
    SendOptions {
        no_wait: true,
        ..Default::default()
    }
}

/// Records for partitions 0, 1 and 2 in turn, `per_partition` each.
fn spread(per_partition: u64) -> Vec<ProducerRecord> {
    (0..per_partition * 3)
        .map(|i| common::rec(i).with_partition((i % 3) as u32))
        .collect()
}

fn high_watermark(k: &Kafko, partition: u32) -> u64 {
    common::offsets(k, "t", partition).high_watermark
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_on_the_second_partition_appends_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new(1);
    let k = common::open_interposed(dir.path(), gate.clone()).await;
    k.create_topic_with_config("t", common::small_segments(3))
        .await
        .unwrap();
    let p = k.producer_for("t").unwrap();
    let mut cx = Context::from_waker(Waker::noop());

    // Partition 1's leader is held inside its write: fill its queue with no-wait sends
    // until one is refused.
    gate.hold(1);
    let leader = tokio::spawn({
        let p = p.clone();
        async move { p.send_batch(vec![common::rec(0).with_partition(1)]).await }
    });
    gate.wait_held();
    let mut queued: Vec<Send> = Vec::new();
    loop {
        assert!(queued.len() < 100_000, "the queue never filled");
        let record = common::rec(queued.len() as u64).with_partition(1);
        let mut send: Send = Box::pin(p.send_batch_with(vec![record], no_wait()));
        match send.as_mut().poll(&mut cx) {
            Poll::Pending => queued.push(send),
            Poll::Ready(Err(ProduceError::Backpressure { .. })) => break,
            Poll::Ready(other) => panic!("a send finished while the leader was held: {other:?}"),
        }
    }

    let refused = p.send_batch_with(spread(2), no_wait()).await;
    assert!(
        matches!(
            refused,
            Err(ProduceError::Backpressure { partition: 1, .. })
        ),
        "{refused:?}"
    );
    gate.open();
    leader.await.unwrap().unwrap();
    let queued_count = queued.len() as u64;
    for send in queued {
        send.await.unwrap();
    }
    // Nothing of the refused send was appended anywhere: a retry cannot duplicate it.
    assert_eq!(high_watermark(&k, 0), 0);
    assert_eq!(high_watermark(&k, 1), queued_count + 1);
    assert_eq!(high_watermark(&k, 2), 0);

    // With room again, the same send goes through whole.
    let meta = p.send_batch_with(spread(2), no_wait()).await.unwrap();
    assert_eq!(meta.len(), 6);
    assert_eq!(high_watermark(&k, 0), 2);
    assert_eq!(high_watermark(&k, 2), 2);
    k.shutdown().await.unwrap();
}

/// Topic `t` of three partitions on `dir` and a producer for it, appends to partition 1
/// failing while the returned switch is on.
async fn open_failing(dir: &Path) -> (Kafko, Producer, Arc<AtomicBool>) {
    let hook = FailPartition::new(1);
    let armed = hook.on.clone();
    let k = common::open_interposed(dir, hook).await;
    k.create_topic_with_config("t", common::small_segments(3))
        .await
        .unwrap();
    let p = k.producer_for("t").unwrap();
    (k, p, armed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_fault_on_the_second_of_three_partitions_is_reported_per_partition() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p, armed) = open_failing(dir.path()).await;
    armed.store(true, Ordering::SeqCst);

    let records = spread(4);
    let err = p
        .send_batch_with(records.clone(), no_wait())
        .await
        .unwrap_err();
    let ProduceError::PartiallyAppended(partial) = err else {
        panic!("expected a per-partition answer, got {err:?}");
    };
    let appended: Vec<_> = partial
        .appended
        .iter()
        .map(|a| (a.partition, a.base_offset, a.record_count))
        .collect();
    assert_eq!(
        appended,
        [(0, 0, 4), (2, 0, 4)],
        "partitions 0 and 2 appended"
    );
    assert_eq!(partial.failed.len(), 1);
    assert_eq!(partial.failed[0].partition, 1);
    assert_eq!(partial.failed[0].record_count, 4);
    assert!(
        matches!(
            partial.failed[0].error,
            ProduceError::Storage(StorageError::Io { .. })
        ),
        "{}",
        partial.failed[0].error
    );
    // The answer names exactly the records not stored: those routed to partition 1.
    let failed: Vec<usize> = partial.failed_records().collect();
    assert_eq!(failed, [1, 4, 7, 10]);
    let positions: Vec<_> = partial.records().collect();
    assert_eq!(positions.len(), 12);
    for (i, pos) in positions.iter().enumerate() {
        match i % 3 {
            1 => assert!(pos.is_none()),
            p => assert_eq!(
                pos.map(|m| (m.partition, m.offset)),
                Some((p as u32, i as u64 / 3))
            ),
        }
    }
    assert_eq!(high_watermark(&k, 0), 4);
    assert_eq!(high_watermark(&k, 1), 0);
    assert_eq!(high_watermark(&k, 2), 4);

    // Retrying only the failed records, once the fault is gone, completes the send.
    armed.store(false, Ordering::SeqCst);
    let retry: Vec<_> = failed.iter().map(|&i| records[i].clone()).collect();
    p.send_batch_with(retry, no_wait()).await.unwrap();
    for partition in 0..3u32 {
        let stored = common::read_all(&k, "t", partition);
        let expected: Vec<_> = records
            .iter()
            .filter(|r| r.partition == Some(partition))
            .map(|r| r.value.clone())
            .collect();
        let values: Vec<_> = stored.into_iter().map(|r| r.value).collect();
        assert_eq!(
            values, expected,
            "partition {partition} holds each record once"
        );
    }
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_on_every_partition_is_the_plain_error() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p, armed) = open_failing(dir.path()).await;
    armed.store(true, Ordering::SeqCst);
    let only_one: Vec<_> = (0..5).map(|i| common::rec(i).with_partition(1)).collect();
    let err = p.send_batch_with(only_one, no_wait()).await.unwrap_err();
    assert!(
        matches!(err, ProduceError::Storage(StorageError::Io { .. })),
        "{err:?}"
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_send_is_stored_as_bounded_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_topic(dir.path(), TopicConfig::default()).await;
    // 20,000 tiny records, then 40 records of 100 KiB: one send each.
    let tiny = 20_000u64;
    let mut batch = p.batch();
    for _ in 0..tiny {
        batch.push(RecordRef::default()).unwrap();
    }
    let receipt = batch.send(SendOptions::default()).await.unwrap();
    assert_eq!(receipt.partitions().len(), 1);
    assert_eq!(
        (receipt.partitions()[0].base_offset, receipt.record_count()),
        (0, tiny)
    );
    let big = vec![7u8; 100 * 1024];
    let records: Vec<_> = (0..40).map(|_| ProducerRecord::new(big.clone())).collect();
    let meta = p.send_batch(records).await.unwrap();
    assert_eq!(meta[0].offset, tiny);
    assert_eq!(meta[39].offset, tiny + 39);

    let batches = batches_on_disk(dir.path(), "t", 0);
    let counts: Vec<u32> = batches.iter().map(|b| b.0).collect();
    assert_eq!(counts.iter().map(|&c| u64::from(c)).sum::<u64>(), tiny + 40);
    assert!(
        batches.len() >= 5 + 4,
        "20,000 records are at least 5 batches and 4 MiB at least 4: {counts:?}"
    );
    for (count, framed) in &batches {
        assert!(*count <= kafko_core::send::BATCH_MAX_RECORDS, "{counts:?}");
        assert!(
            *framed <= kafko_core::send::BATCH_TARGET_BYTES + 64,
            "batch of {framed} bytes"
        );
    }
    // A read of 10 records inside the range sees them in order.
    let mid = common::read(&k, ("t", 0), 12_345, 10, 1 << 20);
    assert_eq!(mid.records.first().map(|r| r.offset), Some(12_345));
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_batches_of_one_partition_fail_together() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p, armed) = open_failing(dir.path()).await;
    let records = |n: u64| -> Vec<ProducerRecord> {
        (0..n).map(|i| common::rec(i).with_partition(1)).collect()
    };
    armed.store(true, Ordering::SeqCst);
    // 10,000 records: three batches, one append; the failed write stores none of them.
    let err = p.send_batch(records(10_000)).await.unwrap_err();
    assert!(
        matches!(err, ProduceError::Storage(StorageError::Io { .. })),
        "{err:?}"
    );
    assert_eq!(high_watermark(&k, 1), 0);
    assert!(batches_on_disk(dir.path(), "t", 1).is_empty());
    armed.store(false, Ordering::SeqCst);
    let meta = p.send_batch(records(10_000)).await.unwrap();
    assert_eq!(meta[0].offset, 0, "the failed append burnt no offset");
    assert_eq!(common::read_all(&k, "t", 1).len(), 10_000);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_append_stays_in_one_segment() {
    let dir = tempfile::tempdir().unwrap();
    let small_segments = TopicConfig {
        segment_bytes: 64 * 1024,
        ..Default::default()
    };
    let (k, p) = common::open_topic(dir.path(), small_segments).await;
    p.send(None, "first".into()).await.unwrap();
    // 3 batches of about 1 MiB, each larger than a segment: one segment holds all three.
    let big = vec![1u8; 400 * 1024];
    let records: Vec<_> = (0..6).map(|_| ProducerRecord::new(big.clone())).collect();
    p.send_batch(records).await.unwrap();
    let segments = common::segments(dir.path(), "t", 0);
    assert_eq!(segments.len(), 2, "{segments:?}");
    assert_eq!(batches_on_disk(dir.path(), "t", 0).len(), 1 + 3);
    assert_eq!(common::read_all(&k, "t", 0).len(), 7);
    k.shutdown().await.unwrap();
}

/// What a crash after unsynced writes leaves: no clean-shutdown marker, and no recovery
/// point past the writes (this topic never rolled, so none at all).
fn crash(dir: &Path) {
    let _ = std::fs::remove_file(dir.join("clean-shutdown"));
    let _ = std::fs::remove_file(dir.join("topics/t/0/recovery-point"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_cut_short_by_a_crash_is_dropped_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_topic(dir.path(), TopicConfig::default()).await;
    p.send(None, "first".into()).await.unwrap();
    let records: Vec<_> = (0..10_000).map(common::rec).collect();
    p.send_batch(records).await.unwrap();
    k.shutdown().await.unwrap();
    let batches = batches_on_disk(dir.path(), "t", 0);
    let counts: Vec<u32> = batches.iter().map(|b| b.0).collect();
    assert_eq!(counts, [1, 4096, 4096, 1808]);
    let log = common::last_segment(dir.path(), "t", 0);
    let pristine = std::fs::read(&log).unwrap();
    let ends: Vec<usize> = batches
        .iter()
        .scan(0, |end, b| {
            *end += b.1;
            Some(*end)
        })
        .collect();
    // A crash left the first one or two batches of the append whole, or a part of one.
    for cut in [ends[1], ends[2], ends[2] + 100, ends[3] - 1] {
        std::fs::write(&log, &pristine[..cut]).unwrap();
        crash(dir.path());
        let k = Kafko::open(dir.path()).await.unwrap();
        assert_eq!(common::read_all(&k, "t", 0).len(), 1, "cut at {cut}");
        assert_eq!(std::fs::metadata(&log).unwrap().len() as usize, ends[0]);
        let offset = common::append(&k, "next").await;
        assert_eq!(
            offset, 1,
            "cut at {cut}: the dropped append burnt no offset"
        );
        k.shutdown().await.unwrap();
    }
    // The whole append survives a crash whole.
    std::fs::write(&log, &pristine).unwrap();
    crash(dir.path());
    let k = Kafko::open(dir.path()).await.unwrap();
    assert_eq!(common::read_all(&k, "t", 0).len(), 10_001);
    k.shutdown().await.unwrap();
}
