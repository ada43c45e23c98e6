//! Write groups: a producer that finds its partition idle writes on its own task; those
//! that arrive while it writes queue behind it and are written together by the next
//! leader. These tests hold a leader inside its `write` (a gate in the storage layer),
//! queue producers behind it, and check what happens to them when the write fails, when
//! producers go away at any point, when the queue is full, and when shutdown arrives.
mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::gate::Gate;
use kafko_core::{
    FsyncPolicy, Kafko, ProduceError, Producer, RecordMetadata, Result, SendOptions, StorageError,
    TopicConfig,
};

type SendFuture<'a> =
    Pin<Box<dyn Future<Output = Result<RecordMetadata, ProduceError>> + Send + 'a>>;

async fn open_gated(dir: &std::path::Path, gate: &Arc<Gate>, fsync: FsyncPolicy) -> Kafko {
    let k = common::open_interposed(dir, gate.clone()).await;
    let config = TopicConfig {
        fsync,
        ..common::small_segments(1)
    };
    k.create_topic_with_config("t", config).await.unwrap();
    k
}

/// Topic `t` whose first append the gate will hold, and a producer for it.
async fn gated_topic(fsync: FsyncPolicy) -> (tempfile::TempDir, Arc<Gate>, Kafko, Producer) {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new(0);
    let k = open_gated(dir.path(), &gate, fsync).await;
    let p = k.producer_for("t").unwrap();
    gate.hold(1);
    (dir, gate, k, p)
}

/// Sends of records `ids`, each polled once (queued behind a held leader).
fn queued_sends(p: &Producer, ids: std::ops::RangeInclusive<u64>) -> Vec<SendFuture<'_>> {
    ids.map(|i| queued_send(p, i, SendOptions::default()))
        .collect()
}

/// A send of record `i`, polled once: it is handed over (and queued, while the leader is
/// held) but not awaited.
fn queued_send(p: &Producer, i: u64, options: SendOptions) -> SendFuture<'_> {
    let mut send: SendFuture = Box::pin(async move {
        let mut sent = p.send_batch_with(vec![common::rec(i)], options).await?;
        Ok(sent.remove(0))
    });
    let mut cx = Context::from_waker(Waker::noop());
    assert!(
        send.as_mut().poll(&mut cx).is_pending(),
        "send {i} was not queued"
    );
    send
}

/// Starts a send of record `i` on a runtime worker and waits until the gate holds it in
/// its write: from then on the partition has a busy leader.
fn held_leader(p: &Producer, gate: &Gate, i: u64) -> tokio::task::JoinHandle<Result<u64>> {
    let p = p.clone();
    let leader = tokio::spawn(async move { Ok(p.send(None, common::value(i)).await?.offset) });
    gate.wait_held();
    leader
}

/// A held leader (record 0), then the sends of records 1 (the head of the queue) and
/// 2..=`last` behind it.
fn first_of_a_queue<'a>(
    p: &'a Producer,
    gate: &Gate,
    last: u64,
) -> (
    tokio::task::JoinHandle<Result<u64>>,
    SendFuture<'a>,
    Vec<SendFuture<'a>>,
) {
    let leader = held_leader(p, gate, 0);
    let first = queued_send(p, 1, SendOptions::default());
    (leader, first, queued_sends(p, 2..=last))
}

/// Awaits `sends` in order: each was appended at the next offset from `first`.
async fn assert_offsets_from<'a>(first: u64, sends: impl IntoIterator<Item = SendFuture<'a>>) {
    for (expected, send) in (first..).zip(sends) {
        assert_eq!(send.await.unwrap().offset, expected);
    }
}

fn values(k: &Kafko) -> Vec<Vec<u8>> {
    common::read_all(k, "t", 0)
        .into_iter()
        .map(|r| r.value.unwrap().to_vec())
        .collect()
}

fn write_groups(k: &Kafko) -> (u64, u64) {
    let info = &k.describe_topic("t").unwrap().partitions[0];
    (info.write_groups, info.appends_written)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producers_queued_behind_a_leader_share_one_write() {
    let (_dir, gate, k, p) = gated_topic(FsyncPolicy::Never).await;
    let leader = held_leader(&p, &gate, 0);
    let followers = queued_sends(&p, 1..=16);
    gate.open();
    assert_eq!(leader.await.unwrap().unwrap(), 0);
    assert_offsets_from(1, followers).await;
    // The leader's write, then one write for all sixteen that queued behind it.
    assert_eq!(write_groups(&k), (2, 17));
    assert_eq!(gate.appends(), 2);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_group_write_fails_every_producer_in_it_and_burns_no_offset() {
    let (_dir, gate, k, p) = gated_topic(FsyncPolicy::Never).await;
    gate.fail(2);
    let leader = held_leader(&p, &gate, 0);
    let followers = queued_sends(&p, 1..=5);
    gate.open();
    assert_eq!(leader.await.unwrap().unwrap(), 0);
    // The five were written as one group by the first of them, and that write failed.
    for f in followers {
        let e = f.await.unwrap_err();
        assert!(
            matches!(e, ProduceError::Storage(StorageError::Io { .. })),
            "{e}"
        );
    }
    // No offset was burnt, and the next group succeeds.
    assert_eq!(p.send(None, common::value(6)).await.unwrap().offset, 1);
    assert_eq!(
        values(&k),
        vec![common::value(0).to_vec(), common::value(6).to_vec()]
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_dropped_while_its_group_waits_for_fsync_leaves_the_others_written() {
    let (_dir, gate, k, p) = gated_topic(FsyncPolicy::Always).await;
    // The leader is polled on a thread of its own, once: it writes (held by the gate),
    // queues its group for the fsync, and its client goes away: the future is dropped.
    let runtime = tokio::runtime::Handle::current();
    let leader_thread = {
        let p = p.clone();
        std::thread::spawn(move || {
            let _runtime = runtime.enter();
            let mut send: SendFuture =
                Box::pin(async move { p.send(None, common::value(0)).await });
            let polled = send.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(
                polled.is_pending(),
                "an fsync=always send waits for its fsync"
            );
            drop(send);
        })
    };
    gate.wait_held();
    let followers = queued_sends(&p, 1..=4);
    gate.open();
    leader_thread.join().unwrap();
    assert_offsets_from(1, followers).await;
    assert_eq!(
        values(&k).len(),
        5,
        "the dropped leader's record was written too"
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_gone_before_its_turn_is_written_and_the_queue_moves_on() {
    let (_dir, gate, k, p) = gated_topic(FsyncPolicy::Never).await;
    let (leader, first, rest) = first_of_a_queue(&p, &gate, 4);
    // The producer at the head of the queue goes away before the token reaches it.
    drop(first);
    gate.open();
    assert_eq!(leader.await.unwrap().unwrap(), 0);
    assert_offsets_from(2, rest).await;
    // Handed over is written: the gone producer's record is there.
    assert_eq!(values(&k).len(), 5);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_dropped_holding_the_token_leads_in_its_drop() {
    let (_dir, gate, k, p) = gated_topic(FsyncPolicy::Never).await;
    let (leader, first, mut rest) = first_of_a_queue(&p, &gate, 3);
    gate.open();
    // The leader passed the token to `first`, which nobody polls: the others wait.
    assert_eq!(leader.await.unwrap().unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut cx = Context::from_waker(Waker::noop());
    assert!(rest[0].as_mut().poll(&mut cx).is_pending());
    // Dropped with the token unread, it writes its own record and theirs.
    drop(first);
    assert_offsets_from(2, rest).await;
    assert_eq!(values(&k).len(), 4);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_refuses_no_wait_sends_and_queues_waiting_ones_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Gate::new(0);
    let k = open_gated(dir.path(), &gate, FsyncPolicy::Never).await;
    let p = k.producer_for("t").unwrap();
    let no_wait = SendOptions {
        no_wait: true,
        ..Default::default()
    };
    gate.hold(1);
    let leader = held_leader(&p, &gate, 0);
    let mut cx = Context::from_waker(Waker::noop());
    let mut accepted: Vec<SendFuture> = Vec::new();
    loop {
        let i = accepted.len() as u64 + 1;
        assert!(i < 100_000, "the queue never filled");
        let mut send: SendFuture = Box::pin({
            let p = &p;
            async move {
                Ok(p.send_batch_with(vec![common::rec(i)], no_wait)
                    .await?
                    .remove(0))
            }
        });
        match send.as_mut().poll(&mut cx) {
            Poll::Pending => accepted.push(send),
            Poll::Ready(Err(ProduceError::Backpressure { topic, partition })) => {
                assert_eq!((topic.as_str(), partition), ("t", 0));
                break;
            }
            Poll::Ready(other) => panic!("send {i} finished while the leader was held: {other:?}"),
        }
    }
    let full_at = accepted.len() as u64;
    assert!(full_at > 0);
    // Waiting sends wait for room instead of failing; a later no-wait send is refused
    // again and does not take a waiter's turn.
    let waiting: Vec<SendFuture> = (0..8)
        .map(|j| {
            let p = &p;
            let mut send: SendFuture = Box::pin(async move {
                Ok(p.send_batch(vec![common::rec(full_at + 1 + j)])
                    .await?
                    .remove(0))
            });
            assert!(send.as_mut().poll(&mut cx).is_pending());
            send
        })
        .collect();
    let mut late: SendFuture = Box::pin(async {
        Ok(p.send_batch_with(vec![common::rec(u64::MAX)], no_wait)
            .await?
            .remove(0))
    });
    assert!(matches!(
        late.as_mut().poll(&mut cx),
        Poll::Ready(Err(ProduceError::Backpressure { .. }))
    ));
    gate.open();
    assert_eq!(leader.await.unwrap().unwrap(), 0);
    assert_offsets_from(1, accepted.into_iter().chain(waiting)).await;
    let records = values(&k);
    assert_eq!(records.len() as u64, full_at + 9);
    for (i, r) in (0u64..).zip(&records) {
        assert_eq!(r, &common::value(i).to_vec());
    }
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_while_a_group_forms_writes_what_was_queued_and_refuses_the_rest() {
    let (dir, gate, k, p) = gated_topic(FsyncPolicy::Never).await;
    let leader = held_leader(&p, &gate, 0);
    let queued = queued_sends(&p, 1..=3);
    let shutdown = tokio::spawn({
        let k = k.clone();
        async move { k.shutdown().await }
    });
    // Once shutdown has begun, a new send is refused at once. (One handed over before
    // that is queued, and written although its future is dropped.)
    let mut cx = Context::from_waker(Waker::noop());
    let mut handed_over = 0;
    let refused = loop {
        let mut late: SendFuture = Box::pin(async { p.send(None, common::value(99)).await });
        if let Poll::Ready(result) = late.as_mut().poll(&mut cx) {
            break result;
        }
        handed_over += 1;
        drop(late);
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(
        matches!(refused, Err(ProduceError::ShuttingDown)),
        "{refused:?}"
    );
    gate.open();
    assert_eq!(leader.await.unwrap().unwrap(), 0);
    assert_offsets_from(1, queued).await;
    shutdown.await.unwrap().unwrap();
    drop(p);
    drop(k);
    // Everything handed over before shutdown is there after a restart.
    let k = common::open(dir.path()).await;
    assert_eq!(values(&k).len(), 4 + handed_over);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_interval_policy_fsyncs_an_idle_partition_by_its_deadline() {
    let dir = tempfile::tempdir().unwrap();
    // Counts fsyncs (the fault is set beyond reach).
    let syncs = common::faulty::Faulty::new(common::faulty::Op::Sync, u64::MAX / 8);
    let k = common::open_interposed(dir.path(), syncs.clone()).await;
    let config = TopicConfig {
        fsync: FsyncPolicy::IntervalMs { interval_ms: 50 },
        ..common::small_segments(1)
    };
    k.create_topic_with_config("t", config).await.unwrap();
    let p = k.producer_for("t").unwrap();
    let before = syncs.count();
    for i in 0..3 {
        p.send(None, common::value(i)).await.unwrap();
    }
    // Written, not yet fsynced: no group waits for it.
    assert_eq!(syncs.count(), before);
    // Nothing else is sent: the timer alone fsyncs them, once.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while syncs.count() == before {
        assert!(
            std::time::Instant::now() < deadline,
            "no fsync by the deadline"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The recovery point file that covers the fsynced records is the other synced write.
    assert_eq!(
        syncs.count(),
        before + 2,
        "one fsync for the idle partition, one recovery point write"
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn producers_taking_turns_on_one_worker_still_share_writes() {
    // On one worker a leader's write never overlaps another producer: groups form only
    // because a producer that finds the partition idle, after others queued, lets the
    // runnable ones join before it writes.
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_topic(dir.path(), common::small_segments(1)).await;
    let tasks: Vec<_> = (0..16u64)
        .map(|w| {
            let p = p.clone();
            tokio::spawn(async move {
                for i in 0..50 {
                    p.send(None, common::value(w * 1000 + i)).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let (groups, appends) = write_groups(&k);
    assert_eq!(appends, 800);
    assert!(
        appends >= 4 * groups,
        "{appends} appends in {groups} writes: mean group size below 4"
    );
    assert_eq!(values(&k).len(), 800);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_written_while_an_fsync_fails_is_failed_not_stranded() {
    let (_dir, gate, k, p) = gated_topic(FsyncPolicy::Always).await;
    // The first fsync (for record 0) fails only once the next leader has checked that
    // the partition is writable and is inside its write.
    gate.hold(2);
    gate.fail_sync_once_held(2);
    let first = tokio::spawn({
        let p = p.clone();
        async move { p.send(None, common::value(0)).await.map(|m| m.offset) }
    });
    while gate.appends() < 1 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let second = held_leader(&p, &gate, 1);
    // The failed fsync fails the first group and poisons the partition while the second
    // leader is still inside its write.
    gate.wait_sync_failed();
    let wait = Duration::from_secs(5);
    let first = tokio::time::timeout(wait, first).await.unwrap().unwrap();
    assert!(
        matches!(first, Err(ProduceError::Storage(StorageError::Io { .. }))),
        "{first:?}"
    );
    gate.open();
    // No fsync will come for the second group: it fails instead of waiting forever.
    let second = tokio::time::timeout(wait, second)
        .await
        .expect("the second group waits for an fsync that never comes")
        .unwrap();
    assert!(
        matches!(
            second,
            Err(kafko_core::KafkoError::PartitionReadOnly { .. })
        ),
        "{second:?}"
    );
    drop(k);
}
