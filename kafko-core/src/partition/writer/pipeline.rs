//! The fsync pipeline of the active segment: groups that are written but wait for an
//! fsync before they are published and acknowledged, and the flusher that runs those
//! fsyncs back to back on a blocking thread.
//!
//! Why a pipeline: with the fsync awaited inside the group commit, the writer took no
//! new group while a flush ran, and between two fsyncs lay the wake-up of the writer,
//! its replies, the next gather and the start of a blocking thread — on the bench
//! machine about as long as the fsync itself. Now the writer keeps writing groups while
//! an fsync runs, and the flusher starts the next fsync as soon as the previous one
//! returns, covering everything written meanwhile.
//!
//! Invariants (the writer keeps the ones about publishing, see `Writer::write_buffer`):
//! - a group is published (index, readable length, high watermark) and acknowledged
//!   only after an fsync that began after the group's write returned;
//! - groups are published in write order; while one waits, every later group waits
//!   behind it, so the readable length never passes a byte still waiting for its fsync;
//! - at most one flusher runs per pipeline: it stops once it has caught up, and the
//!   next queued group starts it again — both decided under one lock, so a group is
//!   never left without an fsync to come;
//! - a failed fsync is reported once and stops the flusher; the writer then fails every
//!   waiting group and turns the partition read-only.

use std::collections::VecDeque;
use std::io;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;

use super::WrittenGroup;
use crate::storage::StorageFile;

/// What the flusher and the writer share: how far the file must be, and has been, synced.
#[derive(Default)]
struct Progress {
    /// File length the waiting groups need synced.
    requested: u64,
    /// File length the last successful fsync covered.
    synced: u64,
    /// Whether a flusher is running (or about to).
    running: bool,
}

/// The groups of one segment file that wait for their fsync.
pub(super) struct SyncPipeline {
    file: Arc<dyn StorageFile>,
    progress: Arc<Mutex<Progress>>,
    /// Each finished fsync: the file length it covered, or its error.
    done_tx: mpsc::UnboundedSender<io::Result<u64>>,
    done_rx: mpsc::UnboundedReceiver<io::Result<u64>>,
    waiting: VecDeque<WrittenGroup>,
}

fn lock(progress: &Mutex<Progress>) -> MutexGuard<'_, Progress> {
    // The lock guards plain integers; a panic elsewhere cannot leave them half-updated.
    progress.lock().unwrap_or_else(|p| p.into_inner())
}

impl SyncPipeline {
    /// An empty pipeline for `file`.
    pub(super) fn new(file: Arc<dyn StorageFile>) -> Self {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        SyncPipeline {
            file,
            progress: Arc::default(),
            done_tx,
            done_rx,
            waiting: VecDeque::new(),
        }
    }

    /// Whether no group waits.
    pub(super) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Queues a written group (its bytes end at `group.end.len`) and makes sure an fsync
    /// that begins after now will cover it.
    pub(super) fn push(&mut self, group: WrittenGroup) {
        let end = group.end.len;
        self.waiting.push_back(group);
        let mut progress = lock(&self.progress);
        progress.requested = progress.requested.max(end);
        if !progress.running {
            progress.running = true;
            let (file, shared, done) = (
                self.file.clone(),
                self.progress.clone(),
                self.done_tx.clone(),
            );
            tokio::task::spawn_blocking(move || flusher(&*file, &shared, &done));
        }
    }

    /// Waits for the next fsync to finish. Only to be awaited while a group waits: the
    /// flusher then runs, or has reported and stopped.
    pub(super) async fn next_done(&mut self) -> io::Result<u64> {
        match self.done_rx.recv().await {
            Some(done) => done,
            // Unreachable while `self` holds a sender; said rather than assumed.
            None => Err(io::Error::other("the fsync pipeline closed")),
        }
    }

    /// A finished fsync, if one has been reported.
    pub(super) fn try_done(&mut self) -> Option<io::Result<u64>> {
        self.done_rx.try_recv().ok()
    }

    /// Takes the waiting groups that an fsync of the first `synced_len` bytes covers,
    /// oldest first.
    pub(super) fn take_covered(
        &mut self,
        synced_len: u64,
    ) -> impl Iterator<Item = WrittenGroup> + '_ {
        let covered = self
            .waiting
            .iter()
            .take_while(|g| g.end.len <= synced_len)
            .count();
        self.waiting.drain(..covered)
    }

    /// Takes every waiting group (after a failed fsync).
    pub(super) fn take_all(&mut self) -> impl Iterator<Item = WrittenGroup> + '_ {
        self.waiting.drain(..)
    }
}

/// The flusher: fsyncs until the synced length has caught up with the requested one,
/// reporting each fsync. A panic in the storage layer is reported as an error, so the
/// writer never waits for an fsync that will not come.
fn flusher(
    file: &dyn StorageFile,
    progress: &Mutex<Progress>,
    done: &mpsc::UnboundedSender<io::Result<u64>>,
) {
    loop {
        let target = {
            let mut p = lock(progress);
            if p.synced >= p.requested {
                p.running = false;
                return;
            }
            p.requested
        };
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| file.sync_data()))
            .unwrap_or_else(|_| Err(io::Error::other("the fsync panicked")));
        let failed = result.is_err();
        {
            let mut p = lock(progress);
            if failed {
                p.running = false;
            } else {
                p.synced = target;
            }
        }
        // A closed channel means the writer is gone; nothing is left to report to.
        let _ = done.send(result.map(|()| target));
        if failed {
            return;
        }
    }
}
