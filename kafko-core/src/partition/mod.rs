//! A partition: the shared, read-mostly [`PartitionLog`] (segment list, high watermark,
//! last stable offset, log start offset) that readers use without involving the writer,
//! and its reads at either [`Isolation`] (TRANSACTIONS.md, "In the partitions"), plus the write
//! state (`writer`), the write groups that hand it from producer to producer
//! (`write_queue`), what it is given to write (`command`), the async handle producers
//! use (`handle`), and the open-time loading (`open`).

pub(crate) mod command;
pub(crate) mod handle;
pub(crate) mod open;
pub(crate) mod write_queue;
pub(crate) mod writer;

use std::path::PathBuf;

use bytes::{Bytes, BytesMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use tokio::sync::watch;

use crate::activity::Activity;

use crate::error::{KafkoError, Result};
use crate::producer_state::table::ProducerTable;
use crate::producer_state::{
    AbortedTransaction, ProducerStates, is_aborted, transactional_producer,
};
use crate::record::Record;
use crate::segment::Segment;
use crate::segment::batch::{self, Format};
use crate::segment::files::FileCache;
use crate::storage::Storage;

/// Which records a read sees of transactions (Kafka's `isolation.level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// Only what is stable: below the last stable offset (no open transaction's records),
    /// without the records of aborted transactions.
    #[default]
    ReadCommitted,
    /// Everything below the high watermark, open and aborted transactions' records too.
    ReadUncommitted,
}

/// Records returned by one read, with the cursor to continue from.
#[derive(Debug, Clone, Default)]
pub struct FetchedRecords {
    /// The records, in offset order.
    pub records: Vec<Record>,
    /// Offset to read next (after the last record, or past a compaction gap).
    pub next_offset: u64,
    /// One past the last offset in the partition when the read ran.
    pub high_watermark: u64,
    /// First offset still in the partition when the read ran.
    pub log_start_offset: u64,
    /// The last stable offset when the read ran: below it no transaction is open. A
    /// read-committed read stops there.
    pub last_stable_offset: u64,
}

/// Stored Kafka record batches returned by one read (see
/// [`PartitionReader::read_batches`](crate::PartitionReader::read_batches)).
#[derive(Debug, Clone, Default)]
pub struct FetchedBatches {
    /// Whole record batches (Kafka's magic 2), as stored, back to back. The first holds
    /// the offset asked for, so it may begin before it: readers skip the records before.
    pub bytes: Bytes,
    /// Records in the batches (control batches' included).
    pub records: u64,
    /// Offset to read next: after the last batch.
    pub next_offset: u64,
    /// One past the last offset in the partition when the read ran.
    pub high_watermark: u64,
    /// First offset still in the partition when the read ran.
    pub log_start_offset: u64,
    /// The last stable offset when the read ran: a read-committed read serves only
    /// batches below it.
    pub last_stable_offset: u64,
    /// Read committed: the aborted transactions whose records may lie in the batches
    /// served (their consumer drops those records); read uncommitted: none.
    pub aborted: Vec<AbortedTransaction>,
}

/// Where a partition lives and what it shares with its topic.
pub(crate) struct PartitionPlace {
    pub(crate) topic: Arc<str>,
    pub(crate) partition: u32,
    pub(crate) dir: PathBuf,
    pub(crate) storage: Arc<dyn Storage>,
    /// The descriptors of sealed segments, shared by the whole log.
    pub(crate) files: Arc<FileCache>,
    /// The topic's wake-up for consumers spanning partitions.
    pub(crate) activity: Arc<Activity>,
}

/// The state of one partition that readers share with its writer.
pub(crate) struct PartitionLog {
    pub(crate) topic: Arc<str>,
    pub(crate) partition: u32,
    pub(crate) dir: PathBuf,
    pub(crate) storage: Arc<dyn Storage>,
    /// The descriptors of sealed segments, shared by the whole log.
    pub(crate) files: Arc<FileCache>,
    /// Copy-on-write list, oldest first; the last one is active. Replaced only by the writer.
    segments: RwLock<Arc<Vec<Arc<Segment>>>>,
    high_watermark: AtomicU64,
    /// The last stable offset: the first offset of the oldest open transaction, else the
    /// high watermark. Published with the high watermark.
    last_stable: AtomicU64,
    log_start: AtomicU64,
    /// Carries the high watermark to long-polling readers.
    hw_watch: watch::Sender<u64>,
    /// Topic-wide wake-up for consumers spanning several partitions.
    activity: Arc<Activity>,
    /// Idempotent producers' state: the fold of the readable log's batch headers.
    pub(crate) producers: ProducerStates,
    /// Write groups written, and the appends they held.
    groups_written: AtomicU64,
    appends_written: AtomicU64,
}

impl PartitionLog {
    pub(crate) fn new(
        place: PartitionPlace,
        segments: Vec<Arc<Segment>>,
        log_start: u64,
        high_watermark: u64,
        mut producers: ProducerTable,
    ) -> Self {
        producers.drop_aborted_below(log_start);
        let last_stable = producers
            .first_open()
            .map_or(high_watermark, |f| f.min(high_watermark));
        let PartitionPlace {
            topic,
            partition,
            dir,
            storage,
            files,
            activity,
        } = place;
        PartitionLog {
            topic,
            partition,
            dir,
            storage,
            files,
            segments: RwLock::new(Arc::new(segments)),
            high_watermark: AtomicU64::new(high_watermark),
            last_stable: AtomicU64::new(last_stable),
            log_start: AtomicU64::new(log_start),
            hw_watch: watch::Sender::new(high_watermark),
            activity,
            producers: ProducerStates::new(producers),
            groups_written: AtomicU64::new(0),
            appends_written: AtomicU64::new(0),
        }
    }

    /// Counts one written write group of `appends` appends.
    pub(crate) fn count_group(&self, appends: usize) {
        self.groups_written.fetch_add(1, Ordering::Relaxed);
        self.appends_written
            .fetch_add(appends as u64, Ordering::Relaxed);
    }

    /// Write groups written since open, and the appends they held.
    pub(crate) fn write_groups(&self) -> (u64, u64) {
        (
            self.groups_written.load(Ordering::Relaxed),
            self.appends_written.load(Ordering::Relaxed),
        )
    }

    /// Snapshot of the segment list.
    pub(crate) fn segments(&self) -> Arc<Vec<Arc<Segment>>> {
        self.segments
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the segment list (writer only).
    pub(crate) fn set_segments(&self, segments: Vec<Arc<Segment>>) {
        *self.segments.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(segments);
    }

    /// One past the last readable offset.
    pub(crate) fn high_watermark(&self) -> u64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    /// First offset still in the log.
    pub(crate) fn log_start(&self) -> u64 {
        self.log_start.load(Ordering::Acquire)
    }

    pub(crate) fn set_log_start(&self, offset: u64) {
        let before = self.log_start.fetch_max(offset, Ordering::AcqRel);
        if offset > before {
            self.producers.drop_aborted_below(offset);
        }
    }

    /// The last stable offset: below it no transaction is open (at most the high
    /// watermark).
    pub(crate) fn last_stable_offset(&self) -> u64 {
        let hw = self.high_watermark();
        self.last_stable.load(Ordering::Acquire).min(hw)
    }

    /// One past the last offset a read at `isolation` may return.
    pub(crate) fn readable_end(&self, isolation: Isolation) -> u64 {
        match isolation {
            Isolation::ReadCommitted => self.last_stable_offset(),
            Isolation::ReadUncommitted => self.high_watermark(),
        }
    }

    /// Open transactions here: `(producer id, epoch, first offset)`, oldest first.
    #[allow(dead_code)] // the transaction coordinator's recovery sweep
    pub(crate) fn open_transactions(&self) -> Vec<(i64, i16, u64)> {
        self.producers.open_transactions()
    }

    /// Publishes a new high watermark, and the last stable offset of the producer state
    /// just folded up to it, and wakes long-polling readers.
    pub(crate) fn publish_high_watermark(&self, hw: u64) {
        let lso = self.producers.first_open().map_or(hw, |f| f.min(hw));
        self.last_stable.store(lso, Ordering::Release);
        self.high_watermark.store(hw, Ordering::Release);
        self.hw_watch.send_replace(hw);
        self.activity.signal();
    }

    fn out_of_range(&self, requested: u64) -> KafkoError {
        KafkoError::OffsetOutOfRange {
            requested,
            log_start_offset: self.log_start(),
            high_watermark: self.high_watermark(),
        }
    }

    /// Reads records from `offset`, at most `max_records`, and at most `max_bytes` of
    /// keys, values and headers (but always at least one record when one exists).
    ///
    /// A read that fails while retention or compaction replaced segments under it (a
    /// removed segment whose descriptor the cache had closed cannot be read) runs once
    /// more on the new list: it then finds the records, or `OffsetOutOfRange`.
    /// Read committed (see [`read_with`](Self::read_with)).
    pub(crate) fn read(
        &self,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<FetchedRecords> {
        self.read_with(offset, max_records, max_bytes, Isolation::ReadCommitted)
    }

    /// [`read`](Self::read) at `isolation`: read committed stops at the last stable
    /// offset and leaves out the records of aborted transactions.
    pub(crate) fn read_with(
        &self,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
        isolation: Isolation,
    ) -> Result<FetchedRecords> {
        self.retried(|| self.read_once(offset, max_records, max_bytes, isolation))
    }

    /// Runs `read` once more when it failed while retention or compaction replaced the
    /// segment list under it.
    fn retried<T>(&self, read: impl Fn() -> Result<T>) -> Result<T> {
        let before = self.segments();
        match read() {
            Err(_) if !Arc::ptr_eq(&before, &self.segments()) => read(),
            read => read,
        }
    }

    /// The segments, and the index of the one holding `offset` (or the first).
    fn segments_from(&self, offset: u64) -> (Arc<Vec<Arc<Segment>>>, usize) {
        let segments = self.segments();
        let first = segments
            .partition_point(|s| s.base_offset <= offset)
            .saturating_sub(1);
        (segments, first)
    }

    /// Whole stored batches from the one holding `offset`, up to `max_bytes` (the first
    /// batch even past it when `at_least_one`), below the high watermark. Format 2
    /// batches are served as stored, after their checks; format 1 batches are re-encoded
    /// as Kafka batches with the same offsets.
    ///
    /// Read committed serves only batches below the last stable offset, and names the
    /// aborted transactions whose records may lie in them (Kafka's fetch at isolation
    /// level 1); read uncommitted, every batch below the high watermark.
    pub(crate) fn read_batches(
        &self,
        offset: u64,
        max_bytes: usize,
        at_least_one: bool,
        isolation: Isolation,
    ) -> Result<FetchedBatches> {
        self.retried(|| self.read_batches_once(offset, max_bytes, at_least_one, isolation))
    }

    fn read_batches_once(
        &self,
        offset: u64,
        max_bytes: usize,
        at_least_one: bool,
        isolation: Isolation,
    ) -> Result<FetchedBatches> {
        let high_watermark = self.high_watermark();
        let lso = self.last_stable_offset();
        let start = self.log_start();
        if offset < start || offset > high_watermark {
            return Err(self.out_of_range(offset));
        }
        // Batches are served up to `hw`: the end this isolation may see.
        let hw = match isolation {
            Isolation::ReadCommitted => lso,
            Isolation::ReadUncommitted => high_watermark,
        };
        let mut out = FetchedBatches {
            next_offset: offset,
            high_watermark,
            log_start_offset: start,
            last_stable_offset: lso,
            ..FetchedBatches::default()
        };
        // Usually one segment's slice, as read; crossing into the next segment copies.
        let mut parts: Vec<Bytes> = Vec::new();
        let mut taken = 0usize;
        let (segments, first) = self.segments_from(offset);
        let mut decoded = Vec::new();
        'segments: for seg in &segments[first..] {
            if out.next_offset >= hw || taken >= max_bytes && !parts.is_empty() {
                break;
            }
            if seg.next_offset() <= out.next_offset {
                continue;
            }
            if seg.format == Format::V2 {
                let first_one = at_least_one && parts.is_empty();
                let range = seg.stored_range(out.next_offset, hw, max_bytes - taken, first_one)?;
                if range.bytes.is_empty() {
                    break;
                }
                taken += range.bytes.len();
                out.records += range.records;
                out.next_offset = range.next_offset;
                parts.push(range.bytes);
                if out.next_offset < seg.next_offset() {
                    // The segment had more than the budget took.
                    break;
                }
                continue;
            }
            for batch in seg.batches_holding(out.next_offset) {
                let batch = batch?;
                let h = batch.header;
                if h.next_offset() <= out.next_offset {
                    continue;
                }
                if h.base_offset >= hw {
                    break 'segments;
                }
                seg.decode(&batch, self.partition, &mut decoded)?;
                let rebuilt = batch::rebuild(&decoded, &h)
                    .map_err(|why| KafkoError::corruption(&seg.log_path, batch.position, why))?;
                let mut framed = Vec::with_capacity(rebuilt.framed_len());
                batch::frame(&mut framed, h.base_offset, &rebuilt);
                let fits = taken + framed.len() <= max_bytes;
                if !(fits || parts.is_empty() && at_least_one) {
                    break 'segments;
                }
                taken += framed.len();
                parts.push(Bytes::from(framed));
                out.records += u64::from(h.record_count);
                out.next_offset = h.next_offset();
                if !fits {
                    break 'segments;
                }
            }
        }
        if isolation == Isolation::ReadCommitted && out.next_offset > offset {
            out.aborted = self.producers.aborted_in(offset, out.next_offset);
        }
        out.bytes = match parts.len() {
            0 => Bytes::new(),
            1 => parts.pop().unwrap_or_default(),
            _ => {
                let mut all = BytesMut::with_capacity(taken);
                for part in &parts {
                    all.extend_from_slice(part);
                }
                all.freeze()
            }
        };
        Ok(out)
    }

    fn read_once(
        &self,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
        isolation: Isolation,
    ) -> Result<FetchedRecords> {
        let high_watermark = self.high_watermark();
        let lso = self.last_stable_offset();
        let start = self.log_start();
        if offset < start || offset > high_watermark {
            return Err(self.out_of_range(offset));
        }
        let mut out = FetchedRecords {
            records: Vec::new(),
            next_offset: offset,
            high_watermark,
            log_start_offset: start,
            last_stable_offset: lso,
        };
        // Records are read up to `hw`: the end this isolation may see.
        let (hw, aborted) = match isolation {
            Isolation::ReadCommitted if offset < lso => {
                (lso, self.producers.aborted_in(offset, lso))
            }
            Isolation::ReadCommitted => (lso, Vec::new()),
            Isolation::ReadUncommitted => (high_watermark, Vec::new()),
        };
        if offset >= hw || max_records == 0 {
            return Ok(out);
        }
        let (segments, first) = self.segments_from(offset);
        let mut cursor = offset;
        let mut bytes = 0usize;
        let mut decoded = Vec::new();
        'segments: for seg in &segments[first..] {
            if cursor >= hw {
                break;
            }
            if seg.next_offset() <= cursor {
                continue;
            }
            for batch in seg.batches_holding(cursor) {
                let batch = batch?;
                let h = batch.header;
                if h.next_offset() <= cursor {
                    continue;
                }
                if h.base_offset >= hw {
                    break 'segments;
                }
                seg.decode(&batch, self.partition, &mut decoded)?;
                let txn_producer = match aborted.is_empty() || seg.format != Format::V2 {
                    true => None,
                    false => transactional_producer(&batch.bytes),
                };
                for r in decoded.drain(..) {
                    if r.offset < cursor || r.offset >= hw {
                        continue;
                    }
                    if txn_producer.is_some_and(|id| is_aborted(&aborted, id, r.offset)) {
                        continue;
                    }
                    let size = record_bytes(&r);
                    if !out.records.is_empty() && bytes + size > max_bytes {
                        break 'segments;
                    }
                    bytes += size;
                    cursor = r.offset + 1;
                    out.records.push(r);
                    if out.records.len() >= max_records {
                        break 'segments;
                    }
                }
                // Compaction can leave gaps: continue after the whole batch.
                cursor = cursor.max(h.next_offset().min(hw));
            }
        }
        out.next_offset = cursor;
        Ok(out)
    }

    /// The largest record timestamp among the segments that hold readable records
    /// (`None` when there are none), from each segment's summary: nothing is read.
    pub(crate) fn max_timestamp(&self) -> Option<i64> {
        let (start, hw) = (self.log_start(), self.high_watermark());
        self.segments()
            .iter()
            .filter(|seg| seg.next_offset() > start && seg.base_offset < hw)
            .map(|seg| seg.max_timestamp())
            .max()
            .filter(|&ts| ts != i64::MIN)
    }

    /// The first offset whose record timestamp is at or after `timestamp`, if any.
    pub(crate) fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<u64>> {
        let hw = self.high_watermark();
        let start = self.log_start();
        let segments = self.segments();
        let mut decoded = Vec::new();
        for seg in segments.iter() {
            if seg.max_timestamp() < timestamp || seg.next_offset() <= start {
                continue;
            }
            let entry = {
                let idx = seg.index.read().unwrap_or_else(|p| p.into_inner());
                idx.entry_for(idx.offset_for_time(timestamp))
            };
            for batch in seg.batches_from(entry) {
                let batch = batch?;
                let h = batch.header;
                if h.base_offset >= hw {
                    return Ok(None);
                }
                if h.max_timestamp < timestamp || h.next_offset() <= start {
                    continue;
                }
                seg.decode(&batch, self.partition, &mut decoded)?;
                if let Some(r) = decoded
                    .iter()
                    .find(|r| r.timestamp >= timestamp && r.offset >= start && r.offset < hw)
                {
                    return Ok(Some(r.offset));
                }
            }
        }
        Ok(None)
    }

    /// Closes the descriptors of every segment for good (the topic was deleted): a read
    /// still running on this log fails rather than open a file of a later topic of the
    /// same name.
    pub(crate) fn close_files(&self) {
        for seg in self.segments().iter() {
            seg.close_file();
        }
    }

    /// Wakes every reader waiting on this partition (its topic was deleted): they look
    /// again and find it gone.
    pub(crate) fn wake_readers(&self) {
        self.hw_watch.send_modify(|_| {});
        self.activity.signal();
    }

    /// A receiver that changes whenever the high watermark moves.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.hw_watch.subscribe()
    }
}

/// Bytes a record counts against `max_bytes`.
pub(crate) fn record_bytes(r: &Record) -> usize {
    r.key.as_ref().map_or(0, |k| k.len())
        + r.value.as_ref().map_or(0, |v| v.len())
        + r.headers
            .iter()
            .map(|h| h.name.len() + h.value.len())
            .sum::<usize>()
        + 16
}
