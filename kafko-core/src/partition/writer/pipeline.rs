//! The fsync pipeline of the active segment: groups that are written but wait for an
//! fsync before they are published and acknowledged, and the flusher that runs those
//! fsyncs back to back on a blocking thread and publishes what each one covered.
//!
//! Why a pipeline: with the fsync awaited inside the group commit, no new group could be
//! written while a flush ran. Now leaders keep writing groups while an fsync runs, and
//! the flusher starts the next fsync as soon as the previous one returns, covering
//! everything written meanwhile. The flusher publishes itself: no task hop lies between
//! an fsync's return and the acknowledgements it releases.
//!
//! Invariants:
//! - a group is published (index, readable length, high watermark) and acknowledged
//!   only after an fsync that began after the group's write returned;
//! - groups are published in write order, under this pipeline's lock, by whoever
//!   publishes (the leader that wrote a group nobody waits before, or the flusher);
//!   while one group waits, every later group waits behind it, so the readable length
//!   never passes a byte still waiting for its fsync;
//! - at most one flusher runs per pipeline: it stops once it has caught up, and the
//!   next request starts it again — both decided under the lock, so a waiting group is
//!   never left without an fsync to come;
//! - a failed fsync poisons the partition, fails every waiting group and stops the
//!   flusher; nothing is published after it.

use std::collections::VecDeque;
use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::recovery_point::RecoveryPoint;
use super::{GroupEnd, Observation, PendingReply, Poison, WrittenGroup, publish};
use crate::error::KafkoError;
use crate::partition::PartitionLog;
use crate::segment::Segment;

/// The file lengths the flusher and the leaders share.
struct State {
    /// Written groups waiting for their fsync, oldest first.
    waiting: VecDeque<WrittenGroup>,
    /// Length of the file written so far.
    written: u64,
    /// The offset after the last group written (at `written`).
    written_next: u64,
    /// Length the next fsync must cover.
    requested: u64,
    /// Length the last successful fsync covered.
    synced: u64,
    /// Whether a flusher runs (or is about to).
    running: bool,
    /// When the last successful fsync returned.
    last_sync: Instant,
}

struct Shared {
    log: Arc<PartitionLog>,
    active: Arc<Segment>,
    poison: Arc<Poison>,
    /// Told what each fsync made durable.
    recovery_point: Arc<RecoveryPoint>,
    state: Mutex<State>,
    /// Changes after every fsync (done or failed): what a waiting sync watches.
    fsynced: watch::Sender<()>,
}

/// The groups of one segment file that wait for their fsync.
pub(super) struct SyncPipeline {
    shared: Arc<Shared>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update below leaves the state whole before anything can panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl SyncPipeline {
    /// A pipeline for the active segment; what the file holds already counts as synced.
    pub(super) fn new(
        log: Arc<PartitionLog>,
        active: Arc<Segment>,
        poison: Arc<Poison>,
        recovery_point: Arc<RecoveryPoint>,
    ) -> Self {
        let len = active.len();
        let next = active.next_offset();
        SyncPipeline {
            shared: Arc::new(Shared {
                log,
                active,
                poison,
                recovery_point,
                state: Mutex::new(State {
                    waiting: VecDeque::new(),
                    written: len,
                    written_next: next,
                    requested: len,
                    synced: len,
                    running: false,
                    last_sync: Instant::now(),
                }),
                fsynced: watch::Sender::new(()),
            }),
        }
    }

    /// Whether a written group waits for its fsync.
    pub(super) fn has_waiting(&self) -> bool {
        !self.shared.lock().waiting.is_empty()
    }

    /// Whether bytes were written since the last fsync.
    pub(super) fn is_dirty(&self) -> bool {
        let st = self.shared.lock();
        st.written > st.synced
    }

    /// Time since the last successful fsync.
    pub(super) fn since_sync(&self) -> Duration {
        self.shared.lock().last_sync.elapsed()
    }

    /// Takes a group that was just written: publishes it now, or, when it must be
    /// fsynced first (`must_sync`) or an earlier group still waits, queues it behind an
    /// fsync that will cover it. The common case publishes from the leader's buffers
    /// (drained, kept for the next group): no allocation.
    pub(super) fn complete(
        &self,
        end: GroupEnd,
        observations: &mut Vec<Observation>,
        replies: &mut Vec<PendingReply>,
        must_sync: bool,
    ) {
        let mut st = self.shared.lock();
        st.written = end.len;
        st.written_next = end.next_offset;
        if let Some(reason) = self.shared.poison.get() {
            // An fsync failed while this group was being written (the leader checked
            // before it began): no fsync will come for it, so it is not acknowledged.
            let log = &self.shared.log;
            for p in replies.drain(..) {
                p.fail(KafkoError::PartitionReadOnly {
                    topic: log.topic.to_string(),
                    partition: log.partition,
                    reason: reason.to_owned(),
                });
            }
            observations.clear();
            return;
        }
        if must_sync || !st.waiting.is_empty() {
            st.waiting.push_back(WrittenGroup {
                end,
                observations: std::mem::take(observations),
                replies: std::mem::take(replies),
            });
            self.request(&mut st, end.len);
            return;
        }
        publish(
            &self.shared.log,
            &self.shared.active,
            end,
            observations,
            replies.drain(..),
        );
        observations.clear();
    }

    /// Starts an fsync of everything written, without waiting for it (the interval
    /// policy's fsync).
    pub(super) fn request_sync(&self) {
        let mut st = self.shared.lock();
        let end = st.written;
        self.request(&mut st, end);
    }

    /// Makes sure an fsync that begins after now covers the first `end` bytes.
    fn request(&self, st: &mut State, end: u64) {
        st.requested = st.requested.max(end);
        if st.synced >= st.requested || st.running || self.shared.poison.get().is_some() {
            return;
        }
        st.running = true;
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || flusher(&shared));
    }

    /// fsyncs everything written so far and waits until it is durable and every waiting
    /// group is published. Fails if an fsync fails (the partition is then read-only).
    pub(super) async fn sync_all(&self) -> io::Result<()> {
        let mut fsynced = self.shared.fsynced.subscribe();
        let target = {
            let mut st = self.shared.lock();
            let end = st.written;
            self.request(&mut st, end);
            end
        };
        loop {
            if let Some(reason) = self.shared.poison.get() {
                return Err(io::Error::other(reason.to_owned()));
            }
            if self.shared.lock().synced >= target {
                return Ok(());
            }
            // The sender lives in `self.shared`: `changed` cannot fail while we hold it.
            let _ = fsynced.changed().await;
        }
    }

    /// Waits until no written group waits for its fsync (each published, or failed).
    pub(super) async fn drained(&self) {
        let mut fsynced = self.shared.fsynced.subscribe();
        while self.has_waiting() {
            let _ = fsynced.changed().await;
        }
    }
}

/// The flusher: fsyncs until the synced length has caught up with the requested one,
/// publishing the groups each fsync covered. A panic in the storage layer counts as a
/// failed fsync, so no group waits for an fsync that will not come.
fn flusher(shared: &Shared) {
    loop {
        // Every group completed so far was written before the fsync below begins: it
        // covers them all, up to `durable`.
        let (target, durable) = {
            let mut st = shared.lock();
            if st.synced >= st.requested {
                st.running = false;
                return;
            }
            (st.requested, st.written_next)
        };
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            shared.active.io_file().and_then(|f| f.sync_data())
        }))
        .unwrap_or_else(|_| Err(io::Error::other("the fsync panicked")));
        let mut st = shared.lock();
        match result {
            Ok(()) => {
                st.synced = target;
                st.last_sync = Instant::now();
                while st.waiting.front().is_some_and(|g| g.end.len <= target) {
                    if let Some(g) = st.waiting.pop_front() {
                        publish(
                            &shared.log,
                            &shared.active,
                            g.end,
                            &g.observations,
                            g.replies.into_iter(),
                        );
                    }
                }
                drop(st);
                shared.fsynced.send_replace(());
                shared
                    .recovery_point
                    .note_durable(shared.active.base_offset, durable);
            }
            Err(e) => {
                shared.poison.set(&shared.log, format!("fsync failed: {e}"));
                let err = KafkoError::io("fsyncing", &shared.active.log_path, e);
                st.running = false;
                for group in st.waiting.drain(..) {
                    for p in group.replies {
                        p.fail(err.duplicate());
                    }
                }
                drop(st);
                shared.fsynced.send_replace(());
                return;
            }
        }
    }
}
