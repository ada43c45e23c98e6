//! A storage layer over the real filesystem that fails (or panics) the Nth operation
//! of a kind, for failure-path tests.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kafko_core::storage::StorageFile;

use crate::interposed::Hook;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Append,
    Sync,
    Rename,
    Open,
}

/// Fails operation `op` when its counter reaches `at` (and every later one if `sticky`).
pub struct Faulty {
    pub op: Op,
    pub at: u64,
    pub sticky: bool,
    pub panic: bool,
    pub enospc: bool,
    /// Partial write: how many bytes of a failing append still land.
    pub partial: usize,
    counter: AtomicU64,
}

impl Faulty {
    pub fn new(op: Op, at: u64) -> Arc<Self> {
        Self::with(op, at, |_| {})
    }
    pub fn with(op: Op, at: u64, f: impl FnOnce(&mut Faulty)) -> Arc<Self> {
        let mut s = Faulty {
            op,
            at,
            sticky: false,
            panic: false,
            enospc: false,
            partial: 0,
            counter: AtomicU64::new(0),
        };
        f(&mut s);
        Arc::new(s)
    }
    /// Arms: the very next operation of the kind fails.
    pub fn arm(&self) {
        self.counter.store(self.at - 1, Ordering::SeqCst);
    }
    /// Disarms: no more failures from now on.
    pub fn disarm(&self) {
        self.counter.store(u64::MAX / 2, Ordering::SeqCst);
    }
    pub fn count(&self) -> u64 {
        self.counter.load(Ordering::SeqCst)
    }
    fn hit(&self, op: Op) -> io::Result<()> {
        if op != self.op {
            return Ok(());
        }
        let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.at || (self.sticky && n >= self.at && n < u64::MAX / 4) {
            if self.panic {
                panic!("injected panic at {op:?} #{n}");
            }
            if self.enospc {
                return Err(io::Error::from_raw_os_error(28));
            }
            return Err(io::Error::other(format!("injected failure at {op:?} #{n}")));
        }
        Ok(())
    }
}

struct FaultyFile {
    inner: Arc<dyn StorageFile>,
    faults: Arc<Faulty>,
}

impl StorageFile for FaultyFile {
    fn append(&self, buf: &[u8]) -> io::Result<()> {
        if let Err(e) = self.faults.hit(Op::Append) {
            let keep = self.faults.partial.min(buf.len());
            if keep > 0 {
                self.inner.append(&buf[..keep])?;
            }
            return Err(e);
        }
        self.inner.append(buf)
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.inner.read_at(buf, pos)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.faults.hit(Op::Sync)?;
        self.inner.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.inner.truncate(len)
    }
}

/// A fault plan as a hook: `Interposed(faults)` is the real filesystem failing (or
/// panicking at) the operation the plan names. For `Interposed`: opens, small-file writes (counted as syncs) and
/// renames hit the plan here; appends and fsyncs hit it in [`FaultyFile`].
impl Hook for Arc<Faulty> {
    fn before(&self, op: &str, _path: &Path) -> io::Result<()> {
        match op {
            "open" => self.hit(Op::Open),
            "write" => self.hit(Op::Sync),
            "rename" => self.hit(Op::Rename),
            _ => Ok(()),
        }
    }
    fn file(&self, inner: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        Arc::new(FaultyFile {
            inner,
            faults: self.clone(),
        })
    }
}
