//! A full partition inbox: a `no_wait` send is refused with `Backpressure` at once, a
//! waiting send waits for a slot, and the waiting sends are admitted in arrival order
//! with dense offsets. Nothing accepted is lost.
//!
//! On a current-thread runtime the writer task runs only when this test yields, so every
//! send polled once before that stays in the inbox: the inbox fills deterministically.
mod common;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use kafko_core::{KafkoError, RecordMetadata, Result, SendOptions};

type Send<'a> = Pin<Box<dyn Future<Output = Result<Vec<RecordMetadata>>> + 'a>>;

#[tokio::test(flavor = "current_thread")]
async fn a_full_inbox_refuses_no_wait_sends_and_queues_waiting_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_small_topic(dir.path()).await;
    let no_wait = SendOptions {
        no_wait: true,
        ..Default::default()
    };
    let mut cx = Context::from_waker(Waker::noop());

    // Fill the inbox with no-wait sends until one is refused.
    let mut accepted: Vec<Send> = Vec::new();
    let refused_at = loop {
        let i = accepted.len() as u64;
        assert!(i < 100_000, "the inbox never filled");
        let mut send: Send = Box::pin(p.send_batch_with(vec![common::rec(i)], no_wait));
        match send.as_mut().poll(&mut cx) {
            Poll::Pending => accepted.push(send),
            Poll::Ready(Err(KafkoError::Backpressure { topic, partition })) => {
                assert_eq!((topic.as_str(), partition), ("t", 0));
                break i;
            }
            Poll::Ready(other) => panic!("send {i} finished before the writer ran: {other:?}"),
        }
    };
    assert!(refused_at > 0);

    // Waiting sends queue behind the full inbox instead of failing.
    let mut waiting: Vec<Send> = Vec::new();
    for i in 0..8 {
        let mut send: Send = Box::pin(p.send_batch(vec![common::rec(refused_at + i)]));
        assert!(send.as_mut().poll(&mut cx).is_pending());
        waiting.push(send);
    }
    // Still full: a no-wait send is refused again, and does not take a waiter's turn.
    let mut late: Send = Box::pin(p.send_batch_with(vec![common::rec(u64::MAX)], no_wait));
    assert!(matches!(
        late.as_mut().poll(&mut cx),
        Poll::Ready(Err(KafkoError::Backpressure { .. }))
    ));

    // Now let the writer run: every accepted and every waiting send is acknowledged, in order.
    for (expected, send) in (0u64..).zip(accepted.into_iter().chain(waiting)) {
        let meta = send.await.unwrap();
        assert_eq!(meta[0].offset, expected);
    }
    let records = common::read_all(&k, "t", 0);
    assert_eq!(records.len() as u64, refused_at + 8);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.value.as_deref(), Some(&common::value(i as u64)[..]));
    }
    k.shutdown().await.unwrap();
}
