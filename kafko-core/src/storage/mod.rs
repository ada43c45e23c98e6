//! The storage seam: every file operation of the log goes through [`Storage`] and
//! [`StorageFile`], so tests can substitute a layer that injects faults or simulates
//! power loss. The real filesystem is [`StdStorage`].
//!
//! Dynamic dispatch costs one indirect call per `write`/`fsync` — the writer issues one
//! `append` per drained group of batches — which is noise next to the syscall itself.
//!
//! `blocking` (crate-internal) is how async code runs the operations that may wait for the device
//! (ARCHITECTURE.md, "The blocking rule").

mod std_fs;

use std::any::Any;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use std_fs::StdStorage;

/// An open file: appended by one writer, read positionally by any number of readers.
pub trait StorageFile: Send + Sync + 'static {
    /// Appends all of `buf` at the end of the file.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn append(&self, buf: &[u8]) -> io::Result<()>;
    /// Reads up to `buf.len()` bytes at `pos`; returns how many were read (0 at the end).
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize>;
    /// Flushes the file's data to stable storage (fdatasync).
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn sync_data(&self) -> io::Result<()>;
    /// Current length in bytes.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Cuts the file to `len` bytes.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn truncate(&self, len: u64) -> io::Result<()>;
}

/// A directory-level view of storage.
pub trait Storage: Send + Sync + 'static {
    /// Creates `path` and its parents.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// Opens (creating if absent) a file for appending and positional reads.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>>;
    /// Reads a whole (small) file.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Creates or truncates `path`, writes `data` and fsyncs it.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn write_synced(&self, path: &Path, data: &[u8]) -> io::Result<()>;
    /// Atomically renames `from` to `to`.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    /// Removes a directory tree.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()>;
    /// fsyncs a directory so that creations, renames and removals in it are durable.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn sync_dir(&self, path: &Path) -> io::Result<()>;
    /// Lists the entries of a directory (full paths).
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>>;
    /// Whether `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Takes an exclusive lock on `path` (a file, created if absent, or a directory),
    /// failing with `WouldBlock` when another holder has it. The lock is held while the
    /// returned guard lives.
    ///
    /// # Errors
    /// The I/O error of the underlying call.
    fn try_lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>>;
}

/// Runs storage work that may wait for the device — fsync, rename, unlink, a directory
/// fsync, file creation, a recovery scan — on tokio's blocking pool, never on an async
/// worker, where it would stall every task queued behind it. `what` names the work if
/// the task itself fails: a panic is an [`InternalError`](crate::error::InternalError),
/// not an I/O failure.
pub(crate) async fn blocking<T: Send + 'static>(
    what: &'static str,
    work: impl FnOnce() -> crate::error::Result<T> + Send + 'static,
) -> crate::error::Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|join| Err(crate::error::InternalError::task(what, &join).into()))
}

/// Replaces a small file atomically: write `<path>.tmp`, fsync, rename, fsync the directory.
pub(crate) fn replace_file(storage: &dyn Storage, path: &Path, data: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    storage.write_synced(&tmp, data)?;
    storage.rename(&tmp, path)?;
    storage.sync_dir(parent_of(path))
}

/// Creates `dir` and whichever of its ancestors are missing, fsyncing the parent of each
/// directory it created, so the whole path survives a power cut — not only the last
/// entry. (Creating `groups/<g>` in a fresh data directory and syncing only `groups/`
/// left the `groups` entry itself undurable.)
pub(crate) fn create_dir_durably(storage: &dyn Storage, dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = dir;
    while !storage.exists(at) {
        missing.push(at);
        match at.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => at = parent,
            _ => break,
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    storage.create_dir_all(dir)?;
    // Outermost first: each parent exists, and is itself durable, by the time it is synced.
    for created in missing.iter().rev() {
        storage.sync_dir(parent_of(created))?;
    }
    Ok(())
}

/// The parent directory of a path inside the data directory (`.` for a bare name).
pub(crate) fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| Path::new("."))
}
