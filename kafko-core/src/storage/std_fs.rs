//! The real filesystem behind the storage seam.

use std::any::Any;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Storage, StorageFile};

/// [`Storage`] on the local filesystem (std::fs, positional reads, fdatasync).
#[derive(Debug, Default, Clone, Copy)]
pub struct StdStorage;

struct StdFile(File);

impl StorageFile for StdFile {
    fn append(&self, buf: &[u8]) -> io::Result<()> {
        // The file is opened with O_APPEND, so every write lands at the end.
        (&self.0).write_all(buf)
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> io::Result<usize> {
        self.0.read_at(buf, pos)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn truncate(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}

impl Storage for StdStorage {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let f = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)?;
        Ok(Arc::new(StdFile(f)))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }
    fn write_synced(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        let mut f = File::create(path)?;
        f.write_all(data)?;
        f.sync_all()
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        File::open(path)?.sync_all()
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            out.push(entry?.path());
        }
        out.sort();
        Ok(out)
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn try_lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        // A directory is locked through a descriptor opened on it (flock works on any
        // descriptor): unlike a lock file, it cannot be deleted from under the holder.
        let f = if path.is_dir() {
            File::open(path)?
        } else {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)?
        };
        match f.try_lock() {
            Ok(()) => Ok(Box::new(f)),
            Err(TryLockError::WouldBlock) => Err(io::Error::from(io::ErrorKind::WouldBlock)),
            Err(TryLockError::Error(e)) => Err(e),
        }
    }
}
