//! Appends that fail while a switch is on: a file wrapper, and a hook that puts it on the
//! files of one partition directory. Shared with kafko-http's tests.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use kafko_core::storage::StorageFile;

use super::interposed::Hook;

/// A plain write failure with no cause a caller could act on.
pub fn injected() -> io::Error {
    io::Error::other("injected write failure")
}

/// ENOSPC, what a full disk answers.
pub fn enospc() -> io::Error {
    io::Error::from_raw_os_error(28)
}

/// A file whose appends fail with `error()` while `on` is set; everything else passes
/// through.
pub struct FailingAppends {
    pub inner: Arc<dyn StorageFile>,
    pub on: Arc<AtomicBool>,
    pub error: fn() -> io::Error,
}

impl StorageFile for FailingAppends {
    fn append(&self, buf: &[u8]) -> io::Result<()> {
        if self.on.load(Ordering::SeqCst) {
            return Err((self.error)());
        }
        self.inner.append(buf)
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.inner.read_at(buf, pos)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.inner.truncate(len)
    }
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
        let in_partition = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d == self.partition.to_string().as_str());
        if !in_partition {
            return file;
        }
        Arc::new(FailingAppends {
            inner: file,
            on: self.on.clone(),
            error: injected,
        })
    }
}
