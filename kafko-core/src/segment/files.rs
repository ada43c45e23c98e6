//! The descriptors of segment files. This module owns [`SegmentFile`], how a segment
//! reaches its `.log` file, and [`FileCache`], the bounded set of descriptors that sealed
//! segments share.
//!
//! The active segment, and a sealed one until its seal (fsync) completes, hold their file
//! open (*pinned*): the writer appends, truncates and fsyncs through that descriptor.
//! A sealed segment's descriptor goes into the cache, which keeps at most `capacity`
//! of them open and closes the least recently used; a read of a segment whose descriptor
//! was closed opens its file again by path. The open descriptors of a log therefore stay
//! near the cache's capacity plus one per partition, however many segments it holds.
//!
//! A path is only reopened while it still names this segment's file. Before a segment's
//! files are removed (retention, compaction) a descriptor still in the cache is pinned,
//! so readers holding the segment keep reading the unlinked file; one already closed is
//! not opened again for that (a pass removing thousands of segments would need as many
//! descriptors at once): the segment is closed, as are the segments of a deleted topic,
//! and a read of a closed segment fails instead of opening whatever now has that name.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::storage::{Storage, StorageFile};

/// The default number of sealed segments' descriptors kept open.
pub(crate) const DEFAULT_MAX_OPEN_SEGMENT_FILES: usize = 512;

/// Identifies a segment in the cache (unique per process).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The least recently used descriptors of sealed segments, at most `capacity` open.
pub(crate) struct FileCache {
    storage: Arc<dyn Storage>,
    capacity: usize,
    lru: Mutex<Lru>,
}

#[derive(Default)]
struct Lru {
    /// Bumped on every use; orders `by_use`.
    clock: u64,
    /// Segment id → (last use, its open file).
    open: HashMap<u64, (u64, Arc<dyn StorageFile>)>,
    /// Last use → segment id, oldest first.
    by_use: BTreeMap<u64, u64>,
}

impl FileCache {
    /// A cache that keeps at most `capacity` (at least 1) descriptors open, reopening
    /// files through `storage`.
    pub(crate) fn new(storage: Arc<dyn Storage>, capacity: usize) -> Arc<FileCache> {
        Arc::new(FileCache {
            storage,
            capacity: capacity.max(1),
            lru: Mutex::new(Lru::default()),
        })
    }

    /// Descriptors the cache holds open now.
    #[cfg(test)]
    pub(crate) fn open_count(&self) -> usize {
        self.lock().open.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The open file of segment `id`, touched as most recently used, if the cache has it.
    fn lookup(&self, id: u64) -> Option<Arc<dyn StorageFile>> {
        let mut lru = self.lock();
        lru.clock += 1;
        let now = lru.clock;
        let (used, file) = lru.open.get_mut(&id)?;
        let before = std::mem::replace(used, now);
        let file = file.clone();
        lru.by_use.remove(&before);
        lru.by_use.insert(now, id);
        Some(file)
    }

    /// Puts segment `id`'s open file in the cache, closing the least recently used
    /// descriptors beyond the capacity. (A reader still using an evicted file keeps it
    /// open until its read ends.)
    fn insert(&self, id: u64, file: Arc<dyn StorageFile>) {
        let evicted = {
            let mut lru = self.lock();
            lru.clock += 1;
            let now = lru.clock;
            if let Some((before, _)) = lru.open.insert(id, (now, file)) {
                lru.by_use.remove(&before);
            }
            lru.by_use.insert(now, id);
            let mut evicted = Vec::new();
            while lru.open.len() > self.capacity {
                let Some((_, oldest)) = lru.by_use.pop_first() else {
                    break;
                };
                if let Some((_, f)) = lru.open.remove(&oldest) {
                    evicted.push(f);
                }
            }
            evicted
        };
        // Closed outside the lock.
        drop(evicted);
    }

    /// Takes segment `id`'s file out of the cache (it is pinned or gone now).
    fn remove(&self, id: u64) -> Option<Arc<dyn StorageFile>> {
        let mut lru = self.lock();
        let (used, file) = lru.open.remove(&id)?;
        lru.by_use.remove(&used);
        Some(file)
    }
}

/// How a segment holds its file.
enum Held {
    /// Open for the segment's whole life from here on: the active segment, one being
    /// sealed, or one whose files were removed (readers keep the unlinked file).
    Pinned(Arc<dyn StorageFile>),
    /// A sealed segment: its descriptor lives in the cache and is reopened by path.
    Cached(Arc<FileCache>),
    /// Closed for good (its topic was deleted): reads fail.
    Closed,
}

/// A segment's `.log` file, pinned open or reached through the [`FileCache`].
pub(crate) struct SegmentFile {
    id: u64,
    held: RwLock<Held>,
}

impl SegmentFile {
    /// A file held open (the active segment's, or one still to be sealed).
    pub(crate) fn pinned(file: Arc<dyn StorageFile>) -> SegmentFile {
        SegmentFile {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            held: RwLock::new(Held::Pinned(file)),
        }
    }

    /// The open file; a cached one closed since its last use is opened again at `path`.
    ///
    /// The path is opened while the state is read-locked: [`SegmentFile::pin`] and
    /// [`SegmentFile::close`] take the write lock before the file is removed, so no
    /// open here can find another file under the name.
    pub(crate) fn get(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        let held = self.held.read().unwrap_or_else(|p| p.into_inner());
        match &*held {
            Held::Pinned(file) => Ok(file.clone()),
            Held::Cached(cache) => {
                if let Some(file) = cache.lookup(self.id) {
                    return Ok(file);
                }
                let file = cache.storage.open(path)?;
                cache.insert(self.id, file.clone());
                Ok(file)
            }
            Held::Closed => Err(io::Error::new(
                io::ErrorKind::NotFound,
                "the segment was closed: its topic was deleted",
            )),
        }
    }

    /// Hands a pinned descriptor to `cache` (the segment is sealed and durable now).
    pub(crate) fn release(&self, cache: &Arc<FileCache>) {
        let mut held = self.held.write().unwrap_or_else(|p| p.into_inner());
        if let Held::Pinned(file) = &*held {
            cache.insert(self.id, file.clone());
            *held = Held::Cached(cache.clone());
        }
    }

    /// Called before the file's path is removed or replaced: a descriptor in the cache
    /// is pinned, so the segment keeps reading this file; without one the segment is
    /// closed (reads of it fail rather than open another file at the path).
    pub(crate) fn pin(&self) {
        let mut held = self.held.write().unwrap_or_else(|p| p.into_inner());
        let Held::Cached(cache) = &*held else {
            return;
        };
        *held = cache.remove(self.id).map_or(Held::Closed, Held::Pinned);
    }

    /// Closes the file for good (its topic was deleted).
    pub(crate) fn close(&self) {
        let mut held = self.held.write().unwrap_or_else(|p| p.into_inner());
        if let Held::Cached(cache) = &*held {
            cache.remove(self.id);
        }
        *held = Held::Closed;
    }
}

impl Drop for SegmentFile {
    fn drop(&mut self) {
        let held = self.held.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Held::Cached(cache) = held {
            cache.remove(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StdStorage;

    fn fd_count() -> usize {
        std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
    }

    #[test]
    fn sealed_files_beyond_the_capacity_are_closed_and_reopened_on_read() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(StdStorage);
        let cache = FileCache::new(storage.clone(), 4);
        let mut files = Vec::new();
        for i in 0..20 {
            let path = dir.path().join(format!("{i}.log"));
            let f = storage.open(&path).unwrap();
            f.append(format!("segment {i}").as_bytes()).unwrap();
            let seg = SegmentFile::pinned(f);
            seg.release(&cache);
            files.push((path, seg));
        }
        assert_eq!(cache.open_count(), 4);
        for (i, (path, seg)) in files.iter().enumerate() {
            let f = seg.get(path).unwrap();
            let mut buf = vec![0; 16];
            let n = f.read_at(&mut buf, 0).unwrap();
            assert_eq!(&buf[..n], format!("segment {i}").as_bytes());
        }
        assert_eq!(cache.open_count(), 4);
        drop(files);
        assert_eq!(cache.open_count(), 0);
    }

    #[test]
    fn a_removed_segment_reads_its_own_file_or_nothing_never_its_successor() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(StdStorage);
        let cache = FileCache::new(storage.clone(), 2);
        let segment = |name: &str| {
            let path = dir.path().join(name);
            let f = storage.open(&path).unwrap();
            f.append(b"old").unwrap();
            let seg = SegmentFile::pinned(f);
            seg.release(&cache);
            (path, seg)
        };
        let (evicted_path, evicted) = segment("0.log");
        let (cached_path, cached) = segment("1.log");
        let (_, _newest) = segment("2.log");
        assert_eq!(cache.open_count(), 2);
        // Both are pinned before their files are removed and others take the names.
        for (path, seg) in [(&evicted_path, &evicted), (&cached_path, &cached)] {
            seg.pin();
            std::fs::remove_file(path).unwrap();
            std::fs::write(path, b"new").unwrap();
        }
        let mut buf = [0; 3];
        cached
            .get(&cached_path)
            .unwrap()
            .read_at(&mut buf, 0)
            .unwrap();
        assert_eq!(&buf, b"old", "the cached one keeps its unlinked file");
        assert!(
            evicted.get(&evicted_path).is_err(),
            "the closed one must not open the new file"
        );
        // A deleted topic's segment is closed.
        cached.close();
        assert!(cached.get(&cached_path).is_err());
        let before = fd_count();
        drop(cached);
        assert!(fd_count() <= before);
    }
}
