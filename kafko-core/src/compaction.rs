//! Log compaction (`cleanup_policy = compact` or `compact_delete`): the cleaner keeps the
//! latest record per key in the sealed segments of a partition.
//!
//! One pass over a partition:
//! 1. **Range.** The cleanable range is the longest prefix of *sealed* segments (never the
//!    active one) whose newest record is at least `min_compaction_lag_ms` old.
//! 2. **Map.** Read the range once and build `key → latest offset` (full keys, not
//!    hashes, so a collision can never drop a live record). The map is capped at
//!    [`MAX_MAP_BYTES`]; when it fills up, the range ends at that segment — records
//!    further on are simply not cleaned this pass, which is always safe.
//! 3. **Rewrite.** Consecutive segments are grouped (total size ≤ `segment_bytes`, and an
//!    offset span that fits the index's 32-bit relative offsets) and each group is
//!    rewritten, oldest group first, into one `<base>.cleaned` file keeping a record iff
//!    it is the latest of its key (or has no key: a record written before the topic was
//!    compacted is kept rather than guessed about). Offsets are preserved; reads skip the
//!    gaps. A group of one segment from which nothing would be removed is left alone.
//! 4. **Swap.** The file is fsynced and handed to the partition's writer, which installs
//!    it in the crash-safe order described in FORMAT.md ("Compaction").
//!
//! Oldest group first matters: a tombstone (or a newer value) is only ever removed after
//! every older value of its key was, so a crash between two swaps cannot bring an old
//! value back.
//!
//! **Tombstones** (records with no value) are kept while they are the latest record of
//! their key, until their batch's `max_timestamp` is `delete_retention_ms` in the past;
//! the first pass after that removes them. We use the batch timestamp (which compaction
//! preserves) rather than Kafka's "segment last modified" because it is stable across
//! rewrites and merges and needs no file-system metadata; the cost is that the clock
//! starts when the tombstone was written, not when older values were first cleaned
//! away. Set `delete_retention_ms` to cover the longest time a consumer may take to read
//! from the log start to the head.
//!
//! The cleaner runs one partition at a time (a broker-wide lock), on a blocking thread,
//! and remembers partitions that had nothing to do, so the background tick costs nothing
//! until a segment is sealed, the last stable offset moves, or a tombstone or lag
//! deadline passes.
//!
//! **Transactions** (TRANSACTIONS.md, "In the partitions"): only segments wholly below
//! the last stable offset are cleaned, so every transaction in them is decided. Records
//! of aborted transactions are removed and never count as the latest of their key.
//! Transaction markers (control batches) are always kept as they are: a batch with no
//! record left is covered by an empty batch, but a marker is never one of those.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use crate::broker::Kafko;
use crate::config::TopicConfig;
use crate::error::{AdminError, KafkoError, Result};
use crate::naming::segment_file;
use crate::partition::command::{SegmentSwap, SwapOutcome};
use crate::partition::handle::PartitionHandle;
use crate::producer_state::{AbortedTransaction, is_aborted, transactional_producer};
use crate::record::{Record, now_ms};
use crate::segment::Segment;
use crate::segment::batch::{self, BatchHeader, EncodedBatch, Format, ProducerFields};
use crate::segment::index::{self, SegmentSummary, SparseIndex};
use crate::storage::Storage;
use crate::topic::Topic;

/// Upper bound (approximate bytes) of the key → offset map built for one partition pass.
pub const MAX_MAP_BYTES: usize = 128 * 1024 * 1024;
/// Bytes of output buffered before each append to the `.cleaned` file.
const WRITE_CHUNK: usize = 1024 * 1024;
/// Bookkeeping bytes counted per map entry besides the key.
const MAP_ENTRY_OVERHEAD: usize = 48;

/// What a compaction pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionOutcome {
    /// Partitions that were examined.
    pub partitions: usize,
    /// Sealed segments replaced by cleaned ones.
    pub segments_replaced: usize,
    /// Cleaned segments written in their place.
    pub segments_written: usize,
    /// Bytes of the replaced segments (the input rate of the cleaner).
    pub bytes_in: u64,
    /// Bytes of the cleaned segments.
    pub bytes_out: u64,
    /// Records removed (superseded values and expired tombstones).
    pub records_removed: u64,
    /// Of those, tombstones removed after `delete_retention_ms`.
    pub tombstones_removed: u64,
}

impl CompactionOutcome {
    fn add(&mut self, o: &CompactionOutcome) {
        self.partitions += o.partitions;
        self.segments_replaced += o.segments_replaced;
        self.segments_written += o.segments_written;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.records_removed += o.records_removed;
        self.tombstones_removed += o.tombstones_removed;
    }
}

/// Broker-wide cleaner state: one pass at a time, and the partitions known to be clean.
#[derive(Default)]
pub(crate) struct Cleaner {
    /// Held for a whole pass: two passes on one partition would race for the same
    /// `.cleaned` file name and swap over each other's output.
    idle: tokio::sync::Mutex<HashMap<(String, u32), IdleState>>,
}

/// A partition whose last pass had nothing to do, and until when that stays true.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IdleState {
    /// `(base, length)` of every sealed segment when the pass ran.
    signature: Signature,
    /// When a tombstone expires or a segment passes the compaction lag (ms since epoch).
    wake_at: i64,
    /// The config the pass ran with.
    config: TopicConfig,
}

impl Kafko {
    /// Compacts every partition of `topic` now, whatever the background cleaner last saw.
    /// The topic must have a compacting cleanup policy.
    ///
    /// # Errors
    /// [`AdminError::NotCompacted`] for a topic that does not compact,
    /// `TopicNotFound`/`TopicDeleted`, `ShuttingDown` (the pass stops between two
    /// swaps), and the storage failures of the rewrite or the swap.
    pub async fn compact_now(&self, topic: &str) -> Result<CompactionOutcome, AdminError> {
        let t = self.resolve(topic)?;
        if !t.config().cleanup_policy.compacts() {
            return Err(AdminError::NotCompacted {
                topic: topic.to_owned(),
            });
        }
        let mut idle = self.inner.cleaner.idle.lock().await;
        Ok(compact_topic(self, &t, &mut idle, true).await?)
    }
}

/// The background pass: every compacted topic, skipping partitions with nothing new.
pub(crate) async fn compact_all(kafko: &Kafko) -> Result<CompactionOutcome> {
    let mut total = CompactionOutcome::default();
    let mut idle = kafko.inner.cleaner.idle.lock().await;
    let mut topics = kafko.all_topics();
    topics.push(kafko.inner.offsets_topic.clone());
    topics.push(kafko.inner.transactions.log().clone());
    for t in topics {
        if !t.config().cleanup_policy.compacts() || t.check_live().is_err() {
            continue;
        }
        // One damaged or busy topic must not stop the others from being cleaned.
        match compact_topic(kafko, &t, &mut idle, false).await {
            Ok(o) => total.add(&o),
            Err(KafkoError::ShuttingDown) => return Err(KafkoError::ShuttingDown),
            Err(e) => tracing::warn!(topic = %t.name, error = %e, "compaction failed"),
        }
    }
    // Forget partitions of topics that are gone.
    let live = kafko.list_topics();
    idle.retain(|(topic, _), _| live.binary_search(topic).is_ok());
    Ok(total)
}

async fn compact_topic(
    kafko: &Kafko,
    t: &Arc<Topic>,
    idle: &mut HashMap<(String, u32), IdleState>,
    force: bool,
) -> Result<CompactionOutcome> {
    let mut total = CompactionOutcome::default();
    for handle in &t.partitions {
        t.check_live()?;
        let key = (t.name.to_string(), handle.log.partition);
        let config = t.config();
        let now = now_ms();
        let signature = sealed_signature(handle);
        if !force
            && let Some(state) = idle.get(&key)
            && state.signature == signature
            && state.config == *config
            && now < state.wake_at
        {
            continue;
        }
        let (outcome, wake_at) = compact_partition(kafko, handle, &config, now).await?;
        if outcome.segments_replaced == 0 {
            idle.insert(
                key,
                IdleState {
                    signature,
                    wake_at,
                    config: (*config).clone(),
                },
            );
        } else {
            idle.remove(&key);
            tracing::info!(
                topic = %t.name,
                partition = handle.log.partition,
                replaced = outcome.segments_replaced,
                bytes_in = outcome.bytes_in,
                bytes_out = outcome.bytes_out,
                removed = outcome.records_removed,
                "compacted"
            );
        }
        total.add(&outcome);
    }
    Ok(total)
}

/// What a pass depends on: the sealed segments (base offset, length), and the last
/// stable offset (which bounds the cleanable range).
type Signature = (Vec<(u64, u64)>, u64);

fn sealed_signature(handle: &PartitionHandle) -> Signature {
    let segments = handle.log.segments();
    let sealed = segments[..segments.len().saturating_sub(1)]
        .iter()
        .map(|s| (s.base_offset, s.len()))
        .collect();
    (sealed, handle.log.last_stable_offset())
}

/// A plan for one partition: the cleanable segments grouped for rewriting, and the map.
struct Plan {
    groups: Vec<Vec<Arc<Segment>>>,
    latest: HashMap<Box<[u8]>, u64>,
    /// The aborted transactions that may have records in the range.
    aborted: Vec<AbortedTransaction>,
    /// Earliest time (ms) at which a pass could find new work without new segments.
    wake_at: i64,
}

impl Plan {
    /// Whether `r`, of the batch whose header is `header`, belongs to an aborted
    /// transaction.
    fn aborted(&self, header: &[u8], r: &Record) -> bool {
        !self.aborted.is_empty()
            && transactional_producer(header)
                .is_some_and(|id| is_aborted(&self.aborted, id, r.offset))
    }
}

/// Cleans one partition; returns what it did and when it could next have work.
async fn compact_partition(
    kafko: &Kafko,
    handle: &PartitionHandle,
    config: &Arc<TopicConfig>,
    now: i64,
) -> Result<(CompactionOutcome, i64)> {
    let segments = handle.log.segments();
    let log_start = handle.log.log_start();
    let lso = handle.log.last_stable_offset();
    let aborted = handle.log.producers.aborted_in(log_start, lso);
    let cfg = config.clone();
    let bounds = Bounds {
        log_start,
        lso,
        aborted,
    };
    let plan = blocking(move || plan(&segments, &cfg, now, bounds)).await?;
    let plan = Arc::new(plan);
    let mut wake_at = plan.wake_at;
    let mut outcome = CompactionOutcome {
        partitions: 1,
        ..Default::default()
    };
    let storage = kafko.inner.storage.clone();
    for i in 0..plan.groups.len() {
        // Shutdown waits for this pass: stop between groups (every swap is whole).
        if kafko.is_shutting_down() {
            return Err(KafkoError::ShuttingDown);
        }
        let (p, s, c) = (plan.clone(), storage.clone(), config.clone());
        let dir = handle.log.dir.clone();
        let partition = handle.log.partition;
        let (written, tombstone_wake) =
            blocking(move || rewrite(&*s, &dir, partition, &p, i, &c, now)).await?;
        wake_at = wake_at.min(tombstone_wake);
        let Some(w) = written else { continue };
        let bytes_in: u64 = plan.groups[i].iter().map(|s| s.len()).sum();
        let swap = SegmentSwap {
            replaced: plan.groups[i].iter().map(|s| s.base_offset).collect(),
            cleaned_path: w.path,
            summary: w.summary,
            index: w.index,
        };
        match handle.swap(swap).await? {
            SwapOutcome::Installed => {}
            SwapOutcome::SegmentsChanged => {
                // Retention removed part of the range meanwhile: the next pass replans.
                tracing::debug!(
                    partition,
                    "compaction swap skipped: the segments changed during the pass"
                );
                break;
            }
        }
        outcome.segments_replaced += plan.groups[i].len();
        outcome.segments_written += 1;
        outcome.bytes_in += bytes_in;
        outcome.bytes_out += w.summary.log_length;
        outcome.records_removed += w.removed;
        outcome.tombstones_removed += w.tombstones_removed;
    }
    Ok((outcome, wake_at))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    crate::storage::blocking("compaction", f).await
}

/// The partition's state a plan starts from.
struct Bounds {
    log_start: u64,
    /// The last stable offset: segments reaching it are not cleaned.
    lso: u64,
    /// The aborted transactions with records in `log_start..lso`.
    aborted: Vec<AbortedTransaction>,
}

/// Chooses the cleanable range, builds the key map over it and groups its segments.
fn plan(segments: &[Arc<Segment>], config: &TopicConfig, now: i64, bounds: Bounds) -> Result<Plan> {
    let Bounds {
        log_start,
        lso,
        aborted,
    } = bounds;
    let lag = i64::try_from(config.min_compaction_lag_ms).unwrap_or(i64::MAX);
    let horizon = now.saturating_sub(lag);
    let sealed = &segments[..segments.len().saturating_sub(1)];
    let mut wake_at = i64::MAX;
    let mut cleanable = 0;
    for seg in sealed {
        if seg.next_offset() <= log_start {
            // Wholly below the log start: retention is about to delete it.
            cleanable += 1;
            continue;
        }
        if seg.next_offset() > lso {
            // An open transaction may have records here: cleaned once it is decided
            // (the last stable offset is part of the idle signature).
            break;
        }
        if seg.max_timestamp() > horizon {
            wake_at = wake_at.min(seg.max_timestamp().saturating_add(lag));
            break;
        }
        cleanable += 1;
    }
    let mut latest: HashMap<Box<[u8]>, u64> = HashMap::new();
    let mut map_bytes = 0usize;
    let mut records = Vec::new();
    let mut mapped = 0;
    for seg in &sealed[..cleanable] {
        seg.batches().try_for_each(|batch| {
            let batch = batch?;
            seg.decode(&batch, 0, &mut records)?;
            let txn = match aborted.is_empty() || seg.format != Format::V2 {
                true => None,
                false => transactional_producer(&batch.bytes),
            };
            // An aborted transaction's record never wins its key.
            records.retain(|r| !txn.is_some_and(|id| is_aborted(&aborted, id, r.offset)));
            for r in &records {
                if let Some(k) = &r.key {
                    if let Some(o) = latest.get_mut(&k[..]) {
                        *o = r.offset;
                    } else {
                        map_bytes += k.len() + MAP_ENTRY_OVERHEAD;
                        latest.insert(k.to_vec().into_boxed_slice(), r.offset);
                    }
                }
            }
            Ok::<(), KafkoError>(())
        })?;
        mapped += 1;
        if map_bytes >= MAX_MAP_BYTES {
            // Later segments are cleaned by a later pass; their keys are unknown here, so
            // nothing they supersede is removed now (safe), and the pass ends with them.
            wake_at = now;
            break;
        }
    }
    let range = &sealed[..mapped];
    Ok(Plan {
        groups: group_segments(range, config.segment_bytes),
        latest,
        aborted,
        wake_at,
    })
}

/// Groups consecutive segments: total size ≤ `max_bytes`, offset span within `u32`.
fn group_segments(range: &[Arc<Segment>], max_bytes: u64) -> Vec<Vec<Arc<Segment>>> {
    let mut groups: Vec<Vec<Arc<Segment>>> = Vec::new();
    let mut size = 0u64;
    for seg in range {
        let fits = groups.last().is_some_and(|g| {
            size + seg.len() <= max_bytes
                && seg.next_offset() - g[0].base_offset < u64::from(u32::MAX)
        });
        if fits {
            size += seg.len();
            if let Some(g) = groups.last_mut() {
                g.push(seg.clone());
            }
        } else {
            size = seg.len();
            groups.push(vec![seg.clone()]);
        }
    }
    groups
}

/// A `.cleaned` file written for one group.
struct Written {
    path: PathBuf,
    summary: SegmentSummary,
    index: SparseIndex,
    removed: u64,
    tombstones_removed: u64,
}

/// Rewrites group `i` of the plan into `<base>.cleaned` (`None` when it would not
/// change), and says when the earliest tombstone it kept expires.
fn rewrite(
    storage: &dyn Storage,
    dir: &std::path::Path,
    partition: u32,
    plan: &Plan,
    i: usize,
    config: &TopicConfig,
    now: i64,
) -> Result<(Option<Written>, i64)> {
    let group = &plan.groups[i];
    let base = group[0].base_offset;
    let mut tombstones = Tombstones::new(config, now);
    let mut out = CleanedFile::create(storage, dir.join(segment_file(base, "cleaned")), base)?;
    let mut removed = 0u64;
    let mut records = Vec::new();
    let expected_end = group[group.len() - 1].next_offset();
    for seg in group {
        seg.batches().try_for_each(|batch| {
            let batch = batch?;
            let h = batch.header;
            seg.decode(&batch, 0, &mut records)?;
            let before = records.len();
            let v2 = seg.format == Format::V2;
            records.retain(|r| {
                !(v2 && plan.aborted(&batch.bytes, r))
                    && keeps(plan, &mut tombstones, r, h.max_timestamp)
            });
            removed += (before - records.len()) as u64;
            if records.is_empty() && !h.is_control() {
                // Its offsets are covered by an empty batch before the next one kept.
                out.skip(&h);
                return Ok(());
            }
            out.cover_to(h.base_offset)?;
            if records.len() == before && h.format == Format::V2 {
                return out.copy(&batch.bytes, &h);
            }
            let rebuilt = batch::rebuild(&records, &h)
                .map_err(|why| KafkoError::corruption(&seg.log_path, batch.position, why))?;
            out.frame(&rebuilt, batch.position)
        })?;
    }
    out.cover_to(expected_end)?;
    if removed == 0 && group.len() == 1 {
        out.discard(storage);
        return Ok((None, tombstones.wake));
    }
    let written = out.finish(
        storage,
        partition,
        expected_end,
        removed,
        tombstones.removed,
    )?;
    Ok((Some(written), tombstones.wake))
}

/// The tombstone rule of one rewrite: a tombstone that is the latest of its key goes
/// once its batch is `delete_retention_ms` old; `wake` is when the earliest kept one
/// expires.
struct Tombstones {
    retention: i64,
    horizon: i64,
    wake: i64,
    removed: u64,
}

impl Tombstones {
    fn new(config: &TopicConfig, now: i64) -> Self {
        let retention = i64::try_from(config.delete_retention_ms).unwrap_or(i64::MAX);
        Tombstones {
            retention,
            horizon: now.saturating_sub(retention),
            wake: i64::MAX,
            removed: 0,
        }
    }
}

/// Whether record `r` (of a batch whose newest timestamp is `batch_max_ts`) survives:
/// it has no key, or it is the latest of its key and not an expired tombstone.
fn keeps(plan: &Plan, tombstones: &mut Tombstones, r: &Record, batch_max_ts: i64) -> bool {
    let Some(k) = &r.key else { return true };
    match plan.latest.get(&k[..]) {
        Some(&latest) if latest > r.offset => false,
        Some(&latest) if latest == r.offset && r.value.is_none() => {
            let expired = batch_max_ts <= tombstones.horizon;
            if expired {
                tombstones.removed += 1;
            } else {
                let expires = batch_max_ts.saturating_add(tombstones.retention);
                tombstones.wake = tombstones.wake.min(expires);
            }
            !expired
        }
        _ => true,
    }
}

/// A `.cleaned` file being written: batches are buffered and appended in chunks, and
/// its sparse index and summary are built as they go.
struct CleanedFile {
    path: PathBuf,
    file: Arc<dyn crate::storage::StorageFile>,
    base: u64,
    out: Vec<u8>,
    position: u64,
    index: SparseIndex,
    max_timestamp: i64,
    next_offset: u64,
    /// The batches skipped since the last one written (all their records removed): the
    /// newest timestamp and the last producer among them, for the empty batch that
    /// covers their offsets.
    skipped_max_timestamp: i64,
    skipped_producer: ProducerFields,
}

impl CleanedFile {
    fn create(storage: &dyn Storage, path: PathBuf, base: u64) -> Result<Self> {
        let file = storage
            .open(&path)
            .map_err(|e| KafkoError::io("creating", &path, e))?;
        file.truncate(0)
            .map_err(|e| KafkoError::io("truncating", &path, e))?;
        Ok(CleanedFile {
            path,
            file,
            base,
            out: Vec::with_capacity(WRITE_CHUNK + 64 * 1024),
            position: 0,
            index: SparseIndex::default(),
            max_timestamp: i64::MIN,
            next_offset: base,
            skipped_max_timestamp: i64::MIN,
            skipped_producer: ProducerFields::NONE,
        })
    }

    /// Notes a batch none of whose records is kept.
    fn skip(&mut self, h: &BatchHeader) {
        self.skipped_max_timestamp = self.skipped_max_timestamp.max(h.max_timestamp);
        if h.producer.id >= 0 {
            self.skipped_producer = h.producer;
        }
    }

    /// Writes empty batches over the offsets from the last batch written up to `end`
    /// (batches skipped, or a gap a format 1 segment left), so the cleaned segment's
    /// offsets stay contiguous, as format 2 requires. A run is split where its span
    /// would not fit a batch's 31-bit offset delta.
    fn cover_to(&mut self, end: u64) -> Result<()> {
        // Batches with no timestamp of their own: Kafka's "no timestamp" (−1).
        let ts = match self.skipped_max_timestamp {
            i64::MIN => -1,
            ts => ts,
        };
        while self.next_offset < end {
            let span = (end - self.next_offset).min(i32::MAX as u64);
            let empty = batch::empty(index::narrow(span - 1), ts, ts, self.skipped_producer);
            let position = self.position;
            self.frame(&empty, position)?;
        }
        self.skipped_max_timestamp = i64::MIN;
        self.skipped_producer = ProducerFields::NONE;
        Ok(())
    }

    /// Appends a batch unchanged.
    fn copy(&mut self, framed: &[u8], h: &BatchHeader) -> Result<()> {
        self.out.extend_from_slice(framed);
        self.emit(h, framed.len())
    }

    /// Appends a re-encoded batch at the next offset (`position`: the original's, for
    /// errors).
    fn frame(&mut self, rebuilt: &EncodedBatch, position: u64) -> Result<()> {
        let start = self.out.len();
        batch::frame(&mut self.out, self.next_offset, rebuilt);
        let framed_len = self.out.len() - start;
        let header = BatchHeader::parse(&self.out[start..], Format::V2).map_err(|e| {
            KafkoError::corruption(&self.path, position, format!("re-encoded batch: {e:?}"))
        })?;
        self.emit(&header, framed_len)
    }

    /// Accounts for the batch just buffered, and writes the buffer out once it is full.
    fn emit(&mut self, h: &BatchHeader, framed_len: usize) -> Result<()> {
        self.index.observe(
            index::narrow(h.base_offset - self.base),
            index::narrow(self.position),
            framed_len as u64,
            h.max_timestamp,
        );
        self.position += framed_len as u64;
        self.max_timestamp = self.max_timestamp.max(h.max_timestamp);
        self.next_offset = h.next_offset();
        if self.out.len() >= WRITE_CHUNK {
            self.file
                .append(&self.out)
                .map_err(|e| KafkoError::io("writing", &self.path, e))?;
            self.out.clear();
        }
        Ok(())
    }

    /// Removes a file that would not change anything (best effort).
    fn discard(self, storage: &dyn Storage) {
        drop(self.file);
        let _ = storage.remove_file(&self.path);
    }

    /// Writes the rest, fsyncs, and checks the file ends where the replaced range did.
    fn finish(
        self,
        storage: &dyn Storage,
        partition: u32,
        expected_end: u64,
        removed: u64,
        tombstones_removed: u64,
    ) -> Result<Written> {
        let path = &self.path;
        self.file
            .append(&self.out)
            .map_err(|e| KafkoError::io("writing", path, e))?;
        self.file
            .sync_data()
            .map_err(|e| KafkoError::io("fsyncing", path, e))?;
        if self.next_offset != expected_end {
            // Cannot happen by construction (the last batch is always kept); refuse to
            // swap rather than leave a range that recovery would not recognise.
            let _ = storage.remove_file(path);
            return Err(KafkoError::corruption(
                path,
                self.position,
                format!(
                    "cleaned segment of partition {partition} ends at {}, expected {expected_end}",
                    self.next_offset
                ),
            ));
        }
        Ok(Written {
            summary: SegmentSummary {
                base_offset: self.base,
                log_length: self.position,
                next_offset: self.next_offset,
                max_timestamp: self.max_timestamp,
            },
            index: self.index,
            path: self.path,
            removed,
            tombstones_removed,
        })
    }
}
