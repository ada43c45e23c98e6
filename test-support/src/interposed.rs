//! [`Interposed`]: the real filesystem behind a test's hook, which may fail an operation
//! before it runs or wrap the files it opens. The fault-injection storages of the tests
//! are hooks on this one delegation, not copies of it.

use std::any::Any;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kafko_core::Kafko;
use kafko_core::storage::{StdStorage, Storage, StorageFile};

/// Operations a hook can fail: `"open"`, `"write"` (a synced small-file write), `"rename"`
/// (given the destination) and `"remove"`.
pub trait Hook: Send + Sync + 'static {
    /// Runs before `op` on `path`; an error fails the operation untouched.
    fn before(&self, op: &str, path: &Path) -> io::Result<()>;
    /// Wraps a file just opened (the default keeps it as is).
    fn file(&self, file: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        file
    }
    /// Wraps a file just opened at `path` (the default: [`Hook::file`]).
    fn file_at(&self, _path: &Path, file: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        self.file(file)
    }
}

/// A hook shared by the test that keeps a handle on it, to arm or inspect it.
impl<H: Hook> Hook for Arc<H> {
    fn before(&self, op: &str, path: &Path) -> io::Result<()> {
        (**self).before(op, path)
    }
    fn file(&self, file: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        (**self).file(file)
    }
    fn file_at(&self, path: &Path, file: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        (**self).file_at(path, file)
    }
}

/// Opens `dir` over the real filesystem with `hook` in front.
pub async fn open_interposed(dir: &Path, hook: impl Hook) -> Kafko {
    Kafko::builder(dir)
        .storage(Arc::new(Interposed(hook)))
        .open()
        .await
        .expect("open")
}

/// A bug in the storage layer: panics on every operation a hook sees (see [`Hook`])
/// under a path that contains this name.
pub struct PanicsOn(pub &'static str);

impl Hook for PanicsOn {
    fn before(&self, op: &str, path: &Path) -> io::Result<()> {
        assert!(
            !path.to_string_lossy().contains(self.0),
            "injected panic on {op} {}",
            path.display()
        );
        Ok(())
    }
}

/// [`StdStorage`] with a [`Hook`] in front.
pub struct Interposed<H>(pub H);

impl<H: Hook> Storage for Interposed<H> {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        StdStorage.create_dir_all(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        self.0.before("open", path)?;
        Ok(self.0.file_at(path, StdStorage.open(path)?))
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        StdStorage.read(path)
    }
    fn write_synced(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.0.before("write", path)?;
        StdStorage.write_synced(path, data)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.before("rename", to)?;
        StdStorage.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.0.before("remove", path)?;
        StdStorage.remove_file(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        StdStorage.remove_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        StdStorage.sync_dir(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        StdStorage.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        StdStorage.exists(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        StdStorage.try_lock(path)
    }
}
