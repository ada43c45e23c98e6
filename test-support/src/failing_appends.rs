//! Appends that fail while a switch is on: a file wrapper, and a hook that puts it on the
//! files of one partition directory. Shared with kafko's tests.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kafko_core::storage::StorageFile;

use crate::interposed::Hook;

/// A plain write failure with no cause a caller could act on.
pub fn injected() -> io::Error {
    io::Error::other("injected write failure")
}

/// ENOSPC, what a full disk answers.
pub fn enospc() -> io::Error {
    io::Error::from_raw_os_error(28)
}

/// A check run before a file operation: its error fails the operation untouched.
pub type Check = Box<dyn Fn() -> io::Result<()> + Send + Sync>;

/// A file whose appends first pass `check` (its error fails the append, nothing
/// written), and whose fsyncs pass `sync_check` when there is one; everything else
/// passes through.
pub struct CheckedAppends {
    pub inner: Arc<dyn StorageFile>,
    pub check: Check,
    pub sync_check: Option<Check>,
}

impl StorageFile for CheckedAppends {
    fn append(&self, buf: &[u8]) -> io::Result<()> {
        (self.check)()?;
        self.inner.append(buf)
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.inner.read_at(buf, pos)
    }
    fn sync_data(&self) -> io::Result<()> {
        if let Some(check) = &self.sync_check {
            check()?;
        }
        self.inner.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.inner.truncate(len)
    }
}

/// `inner`, its appends failing with `error()` while `on` is set.
pub fn failing_appends(
    inner: Arc<dyn StorageFile>,
    on: Arc<AtomicBool>,
    error: fn() -> io::Error,
) -> CheckedAppends {
    CheckedAppends {
        inner,
        check: Box::new(move || match on.load(Ordering::SeqCst) {
            true => Err(error()),
            false => Ok(()),
        }),
        sync_check: None,
    }
}

/// Whether `path` is a file of partition directory `partition` (of any topic).
pub fn in_partition(path: &Path, partition: u32) -> bool {
    path.parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == partition.to_string().as_str())
}

/// Fails every append to a file in partition directory `partition` (of any topic) with
/// [`injected`] while `on` is set.
pub struct FailPartition {
    pub partition: u32,
    pub on: Arc<AtomicBool>,
}

impl FailPartition {
    /// Partition `partition`, the switch off.
    pub fn new(partition: u32) -> Self {
        FailPartition {
            partition,
            on: Arc::default(),
        }
    }
}

impl Hook for FailPartition {
    fn before(&self, _op: &str, _path: &Path) -> io::Result<()> {
        Ok(())
    }
    fn file_at(&self, path: &Path, file: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        if !in_partition(path, self.partition) {
            return file;
        }
        Arc::new(failing_appends(file, self.on.clone(), injected))
    }
}
