//! Segments: one `.log` file of batches plus its sparse indexes. This module owns the
//! in-memory [`Segment`] shared by the writer and readers; `batch` the byte codec
//! (`batch_v1` the first format's reader),
//! `files` the descriptors (pinned, or in the bounded cache of sealed segments),
//! `index` the sparse indexes, `reader` batch iteration, `stored_range` a fetch's batches
//! as one slice of one read, `recovery` the open-time scan.

pub(crate) mod batch;
pub(crate) mod batch_v1;
pub(crate) mod files;
pub(crate) mod index;
pub(crate) mod reader;
pub(crate) mod recovery;
pub(crate) mod stored_range;
pub(crate) mod varint;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::error::{KafkoError, Result};
use crate::naming::segment_file;
use crate::record::Record;
use crate::storage::{Storage, StorageFile};
use batch::{Format, decode_records};
use files::{FileCache, SegmentFile};
use index::{SegmentSummary, SparseIndex};
use reader::{BatchIter, FramedBatch};

/// One segment. The writer appends and publishes `len`/`next_offset`; readers only read
/// below the published `len`, so they never need the writer.
pub(crate) struct Segment {
    pub(crate) base_offset: u64,
    pub(crate) log_path: PathBuf,
    /// The layout of its batches: format 1 segments are read, never written.
    pub(crate) format: Format,
    /// The `.log` file: pinned open while active, in the descriptor cache once sealed.
    file: SegmentFile,
    /// Bytes readers may read (a whole number of batches).
    len: AtomicU64,
    /// One past the last offset stored.
    next_offset: AtomicU64,
    /// Largest timestamp stored (`i64::MIN` when empty).
    max_timestamp: AtomicI64,
    pub(crate) index: RwLock<SparseIndex>,
}

impl Segment {
    /// Wraps an opened (and verified) segment file.
    pub(crate) fn new(
        base_offset: u64,
        log_path: PathBuf,
        format: Format,
        file: Arc<dyn StorageFile>,
        summary: SegmentSummary,
        index: SparseIndex,
    ) -> Segment {
        Segment {
            base_offset,
            log_path,
            format,
            file: SegmentFile::pinned(file),
            len: AtomicU64::new(summary.log_length),
            next_offset: AtomicU64::new(summary.next_offset),
            max_timestamp: AtomicI64::new(summary.max_timestamp),
            index: RwLock::new(index),
        }
    }

    /// Creates an empty segment file at `base_offset` in `dir` and makes its creation durable.
    pub(crate) fn create(storage: &dyn Storage, dir: &Path, base_offset: u64) -> Result<Segment> {
        let log_path = dir.join(segment_file(base_offset, "log"));
        let file = storage
            .open(&log_path)
            .map_err(|e| KafkoError::io("creating", &log_path, e))?;
        file.truncate(0)
            .map_err(|e| KafkoError::io("truncating", &log_path, e))?;
        // Index files left by an earlier segment of this base (a removal a cut undid)
        // would describe another log; the directory fsync below covers their removal.
        remove_index_files(storage, dir, base_offset)?;
        storage
            .sync_dir(dir)
            .map_err(|e| KafkoError::io("syncing directory", dir, e))?;
        let summary = SegmentSummary {
            base_offset,
            log_length: 0,
            next_offset: base_offset,
            max_timestamp: i64::MIN,
        };
        Ok(Segment::new(
            base_offset,
            log_path,
            Format::V2,
            file,
            summary,
            SparseIndex::default(),
        ))
    }

    /// The open `.log` file (reopened if its cached descriptor was closed).
    ///
    /// # Errors
    /// Opening the file failed (no descriptor left), or the segment's topic was deleted.
    pub(crate) fn file(&self) -> Result<Arc<dyn StorageFile>> {
        self.file
            .get(&self.log_path)
            .map_err(|e| KafkoError::io("opening", &self.log_path, e))
    }

    /// The open `.log` file as an I/O result, for the writer's own calls (the active
    /// segment's file is pinned, so this does not open anything).
    pub(crate) fn io_file(&self) -> std::io::Result<Arc<dyn StorageFile>> {
        self.file.get(&self.log_path)
    }

    /// Hands the descriptor to the cache of sealed segments: called once the segment is
    /// sealed (fsynced) and will not be written again.
    pub(crate) fn release_file(&self, cache: &Arc<FileCache>) {
        self.file.release(cache);
    }

    /// Closes the descriptor for good (the topic was deleted): later reads fail rather
    /// than open a file that a new topic of the same name put at this path.
    pub(crate) fn close_file(&self) {
        self.file.close();
    }

    /// Published length in bytes.
    pub(crate) fn len(&self) -> u64 {
        self.len.load(Ordering::Acquire)
    }

    /// One past the last offset.
    pub(crate) fn next_offset(&self) -> u64 {
        self.next_offset.load(Ordering::Acquire)
    }

    /// Largest timestamp stored.
    pub(crate) fn max_timestamp(&self) -> i64 {
        self.max_timestamp.load(Ordering::Acquire)
    }

    /// Publishes appended bytes (called by the writer after a successful write).
    pub(crate) fn publish(&self, len: u64, next_offset: u64, max_timestamp: i64) {
        self.max_timestamp
            .fetch_max(max_timestamp, Ordering::AcqRel);
        self.next_offset.store(next_offset, Ordering::Release);
        self.len.store(len, Ordering::Release);
    }

    /// Current summary, as the index files record it.
    pub(crate) fn summary(&self) -> SegmentSummary {
        SegmentSummary {
            base_offset: self.base_offset,
            log_length: self.len(),
            next_offset: self.next_offset(),
            max_timestamp: self.max_timestamp(),
        }
    }

    /// Path of a sibling file (`index`, `timeindex`).
    pub(crate) fn sibling(&self, extension: &str) -> PathBuf {
        self.log_path.with_extension(extension)
    }

    /// Writes both index files (write-temp, fsync, rename, fsync dir).
    pub(crate) fn write_indexes(&self, storage: &dyn Storage) -> Result<()> {
        let summary = self.summary();
        let (offsets, times) = {
            let idx = self.index.read().unwrap_or_else(|p| p.into_inner());
            (idx.encode_offsets(&summary), idx.encode_times(&summary))
        };
        for (ext, data) in [("index", offsets), ("timeindex", times)] {
            let path = self.sibling(ext);
            crate::storage::replace_file(storage, &path, &data)
                .map_err(|e| KafkoError::io("writing index", &path, e))?;
        }
        Ok(())
    }

    /// Removes the segment's files (log and indexes). Its descriptor is pinned first (or
    /// the segment closed, if the cache had closed it): readers holding the segment
    /// read the removed file or fail, never a later file of the same name.
    pub(crate) fn remove_files(&self, storage: &dyn Storage) -> Result<()> {
        self.file.pin();
        remove_segment_files(
            storage,
            crate::storage::parent_of(&self.log_path),
            self.base_offset,
        )
    }

    /// The verified batches from the first up to the published length; a damaged batch
    /// is a `Corruption` error naming this file and position.
    pub(crate) fn batches(&self) -> impl Iterator<Item = Result<FramedBatch>> + '_ {
        self.batches_from((0, 0))
    }

    /// The verified batches from the one holding `offset` (found through the sparse
    /// index; the first batch when `offset` is at or before the segment's base).
    pub(crate) fn batches_holding(
        &self,
        offset: u64,
    ) -> impl Iterator<Item = Result<FramedBatch>> + '_ {
        self.batches_from(self.index_entry(offset))
    }

    /// The sparse index's entry at or before `offset`, `(relative offset, position)`:
    /// where a scan for it starts (the first batch when `offset` is at or before the
    /// segment's base).
    pub(crate) fn index_entry(&self, offset: u64) -> (u32, u32) {
        match offset.checked_sub(self.base_offset) {
            Some(rel) if rel > 0 => self
                .index
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .entry_for(u32::try_from(rel).unwrap_or(u32::MAX)),
            _ => (0, 0),
        }
    }

    /// The verified batches from the batch an index entry names (`(relative offset,
    /// byte position)`, see [`SparseIndex::entry_for`]). Each batch of a format 2
    /// segment must start where the one before it ended, the first at the entry's
    /// offset: the rule that verifies the base offsets the CRC does not cover.
    pub(crate) fn batches_from(
        &self,
        (rel, position): (u32, u32),
    ) -> impl Iterator<Item = Result<FramedBatch>> + '_ {
        let expected = self.base_offset + u64::from(rel);
        let mut iter = match self.file() {
            Ok(file) => Ok(
                BatchIter::owned(file, u64::from(position), self.len(), self.format)
                    .expecting(expected),
            ),
            Err(e) => Err(Some(e)),
        };
        std::iter::from_fn(move || {
            let iter = match &mut iter {
                Ok(iter) => iter,
                Err(e) => return e.take().map(Err),
            };
            let item = iter.next_batch()?;
            Some(item.map_err(|fault| {
                KafkoError::corruption(&self.log_path, iter.position(), format!("{fault:?}"))
            }))
        })
    }

    /// Decodes a batch of this segment into `out` (cleared first).
    pub(crate) fn decode(
        &self,
        batch: &FramedBatch,
        partition: u32,
        out: &mut Vec<Record>,
    ) -> Result<()> {
        out.clear();
        decode_records(&batch.header, batch.bytes.clone(), partition, out)
            .map_err(|why| KafkoError::corruption(&self.log_path, batch.position, why))
    }
}

/// Removes the log and index files of the segment at `base` in `dir` (absent is fine).
///
/// Index files go first: under in-order directory changes a cut can then leave a log
/// without its index (rebuilt by a scan), never an index without its log, which a later
/// segment with the same base offset would inherit (recovery trusts the length an index
/// records, FORMAT.md rule 7).
pub(crate) fn remove_segment_files(storage: &dyn Storage, dir: &Path, base: u64) -> Result<()> {
    remove_index_files(storage, dir, base)?;
    remove_if_present(storage, &dir.join(segment_file(base, "log")))
}

/// Removes a segment's index files, if any.
pub(crate) fn remove_index_files(storage: &dyn Storage, dir: &Path, base: u64) -> Result<()> {
    for ext in ["index", "timeindex"] {
        remove_if_present(storage, &dir.join(segment_file(base, ext)))?;
    }
    Ok(())
}

fn remove_if_present(storage: &dyn Storage, path: &Path) -> Result<()> {
    match storage.remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(KafkoError::io("removing", path, e)),
    }
}
