//! [`Activity`]: the signal that something a waiting reader looks for may have happened
//! (a partition grew, a group poll settled, a topic was created or deleted), and
//! [`ActivityWatch`], the one way to wait for any of a set of them.
//!
//! A signal bumps a counter before it wakes the waiters. A watch remembers each
//! counter as it was when the watch began (or its last wait returned), so a signal that
//! lands between a reader's look and its wait ends the wait at once: take the watch,
//! look, then wait. No wake-up is lost and none is polled for on a timer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

use tokio::sync::Notify;

/// One source of wake-ups (a topic's appends and settled group polls; the broker's
/// topic creations and deletions).
#[derive(Debug, Default)]
pub struct Activity {
    /// Signals so far; a watch compares it with what it saw.
    signals: AtomicU64,
    notify: Notify,
}

impl Activity {
    /// A source that has not signalled yet.
    pub(crate) fn new() -> Self {
        Activity::default()
    }

    /// Wakes every watch of this activity, and ends the next wait of a watch that has
    /// not started waiting yet.
    pub(crate) fn signal(&self) {
        self.signals.fetch_add(1, Ordering::AcqRel);
        self.notify.notify_waiters();
    }

    fn signals(&self) -> u64 {
        self.signals.load(Ordering::Acquire)
    }
}

/// Interest in a set of [`Activity`] sources, from the moment it is made.
#[derive(Debug, Default)]
pub struct ActivityWatch {
    watched: Vec<Arc<Activity>>,
    /// The count of each watched source's signals already seen.
    seen: Vec<u64>,
}

impl ActivityWatch {
    /// Watches `sources` from now on.
    pub fn new(sources: impl IntoIterator<Item = Arc<Activity>>) -> Self {
        let mut watch = ActivityWatch::default();
        for source in sources {
            watch.add(source);
        }
        watch
    }

    /// Watches `source` too, from now on.
    pub fn add(&mut self, source: Arc<Activity>) {
        self.seen.push(source.signals());
        self.watched.push(source);
    }

    /// Whether the watch has no source (its wait never ends by itself).
    pub fn is_empty(&self) -> bool {
        self.watched.is_empty()
    }

    /// Resolves once any watched source has signalled since the watch began or since
    /// the last `signalled` returned; pending forever when nothing is watched (bound it
    /// with a deadline).
    pub async fn signalled(&mut self) {
        loop {
            // Registered before the counters are read: a signal in between still wakes.
            let mut waits: Vec<_> = self
                .watched
                .iter()
                .map(|source| Box::pin(source.notify.notified()))
                .collect();
            for wait in &mut waits {
                wait.as_mut().enable();
            }
            let mut moved = false;
            for (source, seen) in self.watched.iter().zip(&mut self.seen) {
                let now = source.signals();
                if now != *seen {
                    *seen = now;
                    moved = true;
                }
            }
            if moved {
                return;
            }
            std::future::poll_fn(|cx| {
                for wait in &mut waits {
                    if Pin::new(wait).poll(cx).is_ready() {
                        return Poll::Ready(());
                    }
                }
                Poll::Pending
            })
            .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_signal_between_the_watch_and_the_wait_ends_the_wait_at_once() {
        let a = Arc::new(Activity::new());
        let mut watch = ActivityWatch::new([a.clone()]);
        a.signal();
        tokio::time::timeout(Duration::from_secs(5), watch.signalled())
            .await
            .expect("the earlier signal ends the wait");
    }

    #[tokio::test(start_paused = true)]
    async fn a_signal_seen_once_does_not_end_the_next_wait() {
        let a = Arc::new(Activity::new());
        let mut watch = ActivityWatch::new([a.clone()]);
        a.signal();
        watch.signalled().await;
        let waited = tokio::time::timeout(Duration::from_secs(1), watch.signalled()).await;
        assert!(waited.is_err(), "nothing signalled since the last wait");
    }

    #[tokio::test]
    async fn any_of_the_sources_wakes_a_waiting_watch() {
        let (a, b) = (Arc::new(Activity::new()), Arc::new(Activity::new()));
        let mut watch = ActivityWatch::new([a.clone(), b.clone()]);
        let waiting = tokio::spawn(async move { watch.signalled().await });
        tokio::task::yield_now().await;
        b.signal();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("b's signal wakes the watch")
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_signal_before_the_watch_is_not_seen_and_an_empty_watch_waits_forever() {
        let a = Arc::new(Activity::new());
        a.signal();
        let mut watch = ActivityWatch::new([a.clone()]);
        assert!(
            tokio::time::timeout(Duration::from_secs(1), watch.signalled())
                .await
                .is_err()
        );
        let mut empty = ActivityWatch::default();
        assert!(empty.is_empty());
        assert!(
            tokio::time::timeout(Duration::from_secs(1), empty.signalled())
                .await
                .is_err()
        );
    }
}
