//! [`Gate`]: a hook that can hold one partition's appends inside their `write` (and fail
//! the n-th), so a test can keep a write group's leader busy while producers queue
//! behind it.

use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use kafko_core::storage::StorageFile;

use crate::failing_appends::{CheckedAppends, in_partition};
use crate::interposed::Hook;

#[derive(Default)]
struct GateState {
    /// Appends started so far.
    appends: u64,
    /// While set, this append (1-based) waits inside `write` until `open`.
    hold: Option<u64>,
    /// This append (1-based) fails.
    fail: Option<u64>,
    /// Whether an append is being held.
    holding: bool,
    /// The first fsync waits until this append (1-based) is held, then fails.
    fail_sync_once_held: Option<u64>,
    /// Whether that fsync has failed.
    sync_failed: bool,
}

/// Holds (or fails) chosen appends to the files of one partition directory.
pub struct Gate {
    partition: u32,
    state: Mutex<GateState>,
    changed: Condvar,
}

impl Gate {
    /// A gate on partition `partition`'s files, holding and failing nothing yet.
    pub fn new(partition: u32) -> Arc<Self> {
        Arc::new(Gate {
            partition,
            state: Mutex::default(),
            changed: Condvar::new(),
        })
    }

    /// Holds the `n`-th append (1-based, counted from the gate's creation) in its write.
    pub fn hold(&self, n: u64) {
        self.state.lock().unwrap().hold = Some(n);
    }

    /// Fails the `n`-th append.
    pub fn fail(&self, n: u64) {
        self.state.lock().unwrap().fail = Some(n);
    }

    /// Makes the first fsync wait until append `n` is held inside its write, and fail.
    pub fn fail_sync_once_held(&self, n: u64) {
        self.state.lock().unwrap().fail_sync_once_held = Some(n);
    }

    fn sync(&self) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        let Some(n) = st.fail_sync_once_held.take() else {
            return Ok(());
        };
        st = self
            .changed
            .wait_while(st, |s| !(s.holding && s.appends >= n))
            .unwrap();
        st.sync_failed = true;
        self.changed.notify_all();
        Err(io::Error::other("injected fsync failure"))
    }

    /// Waits until the fsync armed by [`Gate::fail_sync_once_held`] has failed.
    pub fn wait_sync_failed(&self) {
        self.wait_until(|s| s.sync_failed, "the armed fsync never ran");
    }

    /// Lets the held append go on.
    pub fn open(&self) {
        self.state.lock().unwrap().hold = None;
        self.changed.notify_all();
    }

    /// Waits until an append is held (panics after 10 s).
    pub fn wait_held(&self) {
        self.wait_until(|s| s.holding, "no append was held");
    }

    /// Waits until `done` holds of the state; panics with `never` after 10 s.
    fn wait_until(&self, done: impl Fn(&GateState) -> bool, never: &str) {
        let st = self.state.lock().unwrap();
        let (st, _) = self
            .changed
            .wait_timeout_while(st, Duration::from_secs(10), |s| !done(s))
            .unwrap();
        assert!(done(&st), "{never}");
    }

    /// Appends started so far.
    pub fn appends(&self) -> u64 {
        self.state.lock().unwrap().appends
    }

    fn enter(&self) -> io::Result<()> {
        let mut st = self.state.lock().unwrap();
        st.appends += 1;
        let n = st.appends;
        if st.hold == Some(n) {
            st.holding = true;
            self.changed.notify_all();
            st = self.changed.wait_while(st, |s| s.hold == Some(n)).unwrap();
            st.holding = false;
        }
        if st.fail == Some(n) {
            return Err(io::Error::other(format!("injected failure of append {n}")));
        }
        Ok(())
    }
}

impl Hook for Arc<Gate> {
    fn before(&self, _op: &str, _path: &Path) -> io::Result<()> {
        Ok(())
    }
    fn file_at(&self, path: &Path, file: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        if !in_partition(path, self.partition) {
            return file;
        }
        let (gate, sync_gate) = (self.clone(), self.clone());
        Arc::new(CheckedAppends {
            inner: file,
            check: Box::new(move || gate.enter()),
            sync_check: Some(Box::new(move || sync_gate.sync())),
        })
    }
}
