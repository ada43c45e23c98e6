//! The partition's recovery point file (`recovery-point`): every offset below the value
//! it holds was fsynced. This owns every write of it — at each seal, at shutdown, and,
//! lazily, after the fsyncs of the active segment — so they are serialized and the value
//! only grows.
//!
//! Why lazily: recovery refuses a log that ends below the recovery point, and that is
//! what tells a deleted or emptied active segment (damage) from an unsynced tail lost to
//! a crash. Raised only at seals, it left the active segment's fsynced records
//! unprotected. Rewriting the file (write, fsync, rename, directory fsync) after every
//! fsync would double the fsyncs of an `fsync = always` partition, so the flusher only
//! notes what each fsync made durable, and a task writes the file at most once per
//! [`LAG`] — at once for the first fsync of a segment, so a whole active segment is
//! covered from its first fsync on. Nothing waits for it: it is off the path of every
//! append and acknowledgement.
//!
//! Invariants:
//! - a value is written only once every offset below it was fsynced: the flusher notes
//!   an offset after the fsync that covers it, and while a rolled segment's seal runs no
//!   lazy write happens (the seal writes the point itself once its fsync returned);
//! - writes never lower the value, and never overlap (one lock around each);
//! - after `close` (the writer's shutdown, before a topic directory moves to `trash/`)
//!   no lazy write happens: only the shutdown's own.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::state_file;
use crate::storage::Storage;

/// Longest time the file lags behind the fsyncs that it covers, while writes go on.
pub(crate) const LAG: Duration = Duration::from_millis(250);

/// What is durable, and what the file says.
struct State {
    /// The value in the file (0 until this run writes it).
    persisted: u64,
    /// Every offset below it was fsynced, as far as noted.
    durable: u64,
    /// A lazy write is scheduled or running.
    scheduled: bool,
    /// A rolled segment's seal runs: what lies below the active segment is not yet
    /// known to be durable.
    sealing: bool,
    /// The writer shut down: no more lazy writes.
    closed: bool,
    /// When the file was last written.
    last_write: Instant,
}

/// The keeper of one partition's recovery point file.
pub(crate) struct RecoveryPoint {
    storage: Arc<dyn Storage>,
    path: PathBuf,
    state: Mutex<State>,
    /// Held around each write of the file.
    file: Mutex<()>,
}

impl RecoveryPoint {
    /// The keeper of the file at `path`.
    pub(crate) fn new(storage: Arc<dyn Storage>, path: PathBuf) -> Arc<Self> {
        Arc::new(RecoveryPoint {
            storage,
            path,
            state: Mutex::new(State {
                persisted: 0,
                durable: 0,
                scheduled: false,
                sealing: false,
                closed: false,
                last_write: Instant::now(),
            }),
            file: Mutex::new(()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update leaves the state whole before anything can panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An fsync of the active segment based at `base` returned: every offset below
    /// `durable` is on disk. Schedules a lazy write of the file (never waits).
    pub(crate) fn note_durable(self: &Arc<Self>, base: u64, durable: u64) {
        let delay = {
            let mut st = self.lock();
            st.durable = st.durable.max(durable);
            if st.scheduled || st.sealing || st.closed || st.durable <= st.persisted {
                return;
            }
            st.scheduled = true;
            if st.persisted <= base {
                // The segment's first fsync: cover it now.
                Duration::ZERO
            } else {
                LAG.saturating_sub(st.last_write.elapsed())
            }
        };
        self.schedule(delay);
    }

    /// Runs the lazy writer after `delay`; with no runtime (it is going away), the
    /// shutdown or the next open has the last word.
    fn schedule(self: &Arc<Self>, delay: Duration) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.lock().scheduled = false;
            return;
        };
        let keeper = self.clone();
        runtime.spawn(async move {
            let mut delay = delay;
            loop {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                let me = keeper.clone();
                let again = tokio::task::spawn_blocking(move || me.write_pending())
                    .await
                    .unwrap_or(false);
                if !again {
                    return;
                }
                delay = LAG;
            }
        });
    }

    /// The lazy write: raises the file to what is durable. Whether another is due (more
    /// became durable meanwhile); when not, the schedule ends.
    fn write_pending(&self) -> bool {
        let _file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let target = {
            let mut st = self.lock();
            if st.closed || st.sealing || st.durable <= st.persisted {
                st.scheduled = false;
                return false;
            }
            st.durable
        };
        let written = self.write(target);
        let mut st = self.lock();
        if written {
            st.persisted = st.persisted.max(target);
        }
        st.last_write = Instant::now();
        if written && st.durable > st.persisted && !st.closed && !st.sealing {
            return true;
        }
        // A failed write is retried after the next fsync.
        st.scheduled = false;
        false
    }

    /// A roll starts the seal of the segment that was active: until it completes, the
    /// offsets below the new active segment are not known to be durable.
    pub(crate) fn begin_seal(&self) {
        self.lock().sealing = true;
    }

    /// The seal's fsync returned: every offset below `sealed_end` is durable, and so is
    /// whatever the new active segment's fsyncs covered meanwhile. Writes the file.
    pub(crate) fn sealed(self: &Arc<Self>, sealed_end: u64) {
        let _file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        let target = {
            let mut st = self.lock();
            st.sealing = false;
            st.durable = st.durable.max(sealed_end);
            st.durable
        };
        self.raise_locked(target);
    }

    /// Stops lazy writes (waiting for one that runs): the writer shuts down.
    pub(crate) fn close(&self) {
        let _file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        self.lock().closed = true;
    }

    /// Raises the file to `durable` now (shutdown, after its fsync): every offset below
    /// it was fsynced.
    pub(crate) fn raise(&self, durable: u64) -> crate::error::Result<()> {
        let _file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        {
            let mut st = self.lock();
            st.durable = st.durable.max(durable);
            if st.persisted >= durable {
                return Ok(());
            }
        }
        state_file::write(&*self.storage, &self.path, &durable)?;
        let mut st = self.lock();
        st.persisted = st.persisted.max(durable);
        st.last_write = Instant::now();
        Ok(())
    }

    /// Writes `target` unless the file holds as much; a failure is logged (the file then
    /// lags, which loses nothing: it only protects less).
    fn raise_locked(&self, target: u64) {
        if self.lock().persisted >= target {
            return;
        }
        if self.write(target) {
            let mut st = self.lock();
            st.persisted = st.persisted.max(target);
            st.last_write = Instant::now();
        }
    }

    /// Writes `value` into the file; whether it was written.
    fn write(&self, value: u64) -> bool {
        match state_file::write(&*self.storage, &self.path, &value) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(path = %self.path.display(), error = %e, "could not raise the recovery point");
                false
            }
        }
    }
}
