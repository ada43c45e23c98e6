//! The write state of a partition: the active segment, the group being staged, the fsync
//! pipeline and the seal of the last rolled segment. Whoever holds it is the partition's
//! one writer — a producer leading a write group, or a maintenance task (see
//! `write_queue`, which hands it from one to the next). Nothing else writes.
//!
//! Invariants:
//! - offsets are assigned only here, and become visible (high watermark) only after the
//!   bytes holding them were written — and fsynced, when the policy or request says so;
//! - a failed write is cut back off the file and burns no offset;
//! - after a failed fsync (or a failed cut) the partition accepts no more writes;
//! - `write_group` never waits: what would (a roll, a seal still running before an
//!   fsync that must cover it) is returned as a [`Detour`] for a maintenance task;
//! - a rolled segment is sealed (fsync, then its index files) on a blocking thread while
//!   the new one takes writes; at most one seal is in flight, and everything that
//!   promises durability (an fsynced group, `sync`, shutdown) or removes segments (the
//!   next roll, retention, a compaction swap) waits for it first;
//! - a group that must be fsynced (policy `always`, or a `sync` request) is published and
//!   acknowledged only after its fsync, which the `pipeline` runs while later groups are
//!   written; those wait behind it, so publishing stays in order.
//!
//! Here: staging and writing a group, the fsync policy and shutdown. The other duties each
//! have a file: `pipeline` (fsyncs running while later groups are written), `roll` (new
//! segment, background seal), `recovery_point` (the file saying what was fsynced),
//! `retention`, `delete_records` (moving the log start on request) and `swap`
//! (installing a compacted segment).

mod delete_records;
mod pipeline;
mod recovery_point;
mod retention;
mod roll;
mod swap;

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::oneshot;

use self::pipeline::SyncPipeline;
use self::recovery_point::RecoveryPoint;
use super::PartitionLog;
use super::command::Batches;
use super::write_queue::Answer;
use crate::config::{FsyncPolicy, TopicConfig};
use crate::error::{KafkoError, Result};
use crate::producer_state::table::ProducerBatch;
use crate::producer_state::{producer_of, snapshot};
use crate::segment::Segment;
use crate::segment::batch::{self, Format};
use crate::segment::index;
use crate::storage::{Storage, blocking};

/// Most appends written in one group.
pub(crate) const MAX_GROUP_APPENDS: usize = 512;
/// Most bytes written in one group (one append may exceed it alone).
pub(crate) const MAX_GROUP_BYTES: u64 = 4 * 1024 * 1024;

/// Write buffer allocated up front.
const INITIAL_BUFFER: usize = 64 * 1024;
/// Largest write buffer kept between groups (an append may be larger than a group).
#[allow(clippy::cast_possible_truncation)] // 8 MiB: fits the usize of every target.
const MAX_RETAINED_BUFFER: usize = 2 * MAX_GROUP_BYTES as usize;

/// Name of the per-partition log start checkpoint.
pub(crate) const LOG_START_FILE: &str = "log-start-offset";
/// Name of the per-partition recovery point: every offset below it was fsynced. Raised
/// after each seal, at clean shutdown and, lazily, after the active segment's fsyncs
/// (`recovery_point`); recovery refuses a log that ends below it.
pub(crate) const RECOVERY_POINT_FILE: &str = "recovery-point";

/// One append handed to the writer: its batches, whether it asks for an fsync, and where
/// its answer goes.
pub(crate) struct Entry {
    pub(crate) batches: Batches,
    /// fsync before acknowledging, whatever the policy.
    pub(crate) sync: bool,
    pub(crate) reply: oneshot::Sender<Answer>,
}

impl Entry {
    /// Answers the append with an error (it was not written).
    pub(crate) fn fail(self, error: KafkoError) {
        let _ = self.reply.send(Answer::Done(Err(error)));
    }
}

/// Why the partition takes no more writes. Set once; the first reason stays.
#[derive(Default)]
pub(crate) struct Poison(OnceLock<String>);

impl Poison {
    pub(crate) fn get(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }

    fn set(&self, log: &PartitionLog, reason: String) {
        if self.0.set(reason).is_ok() {
            let reason = self.get().unwrap_or_default();
            tracing::error!(topic = %log.topic, partition = log.partition, %reason, "partition turns read-only");
        }
    }
}

/// An append staged in the current group, to be answered with its base offset.
pub(crate) struct PendingReply {
    reply: oneshot::Sender<Answer>,
    base_offset: u64,
}

impl PendingReply {
    pub(crate) fn fail(self, error: KafkoError) {
        let _ = self.reply.send(Answer::Done(Err(error)));
    }
}

/// A batch observed in the write buffer, applied to the index once published.
pub(crate) struct Observation {
    rel: u32,
    position: u32,
    framed_len: u64,
    max_timestamp: i64,
    /// The batch's idempotent producer, folded into the producer state once published.
    producer: Option<ProducerBatch>,
}

/// Where a written group ends: what publishing it makes visible.
#[derive(Clone, Copy)]
pub(crate) struct GroupEnd {
    /// Length of the active segment's file with the group.
    len: u64,
    next_offset: u64,
    max_timestamp: i64,
}

/// A written group waiting in the pipeline for an fsync that covers it.
pub(crate) struct WrittenGroup {
    end: GroupEnd,
    observations: Vec<Observation>,
    replies: Vec<PendingReply>,
}

/// Work a group needs that may wait, so a leader on a producer's task cannot do it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detour {
    /// The next append does not fit the active segment.
    Roll,
    /// The group must be fsynced, and the seal of the last rolled segment still runs.
    FinishSeal,
}

/// Whether the storage layer survived a write.
#[derive(PartialEq, Eq)]
enum Written {
    Ok,
    StoragePanicked,
}

/// How `write_group` ended.
pub(crate) enum GroupOutcome {
    /// Every entry was written (or failed and answered).
    Done,
    /// The entries left in the group need this first.
    Needs(Detour),
    /// The storage layer panicked in a write: the partition is unusable.
    StoragePanicked,
}

pub(crate) struct Writer {
    log: Arc<PartitionLog>,
    storage: Arc<dyn Storage>,
    config: Arc<TopicConfig>,
    active: Arc<Segment>,
    poison: Arc<Poison>,
    /// Set when a compaction swap failed past its commit point (see `install_swap`).
    swap_unfinished: Option<String>,
    buf: Vec<u8>,
    pending: Vec<PendingReply>,
    observations: Vec<Observation>,
    /// Next offset to assign, counting batches staged in `buf`.
    buffered_next: u64,
    /// Length of the active segment's file: ahead of the published length while groups
    /// wait in `pipeline`.
    written_len: u64,
    /// Written groups waiting for their fsync.
    pipeline: SyncPipeline,
    buffered_max_ts: i64,
    /// The newest timestamp of the active segment's first batch, which `segment_ms`
    /// counts from (Kafka's rolling-based timestamp); `None` while the segment is empty.
    rolling_timestamp: Option<i64>,
    sync_requested: bool,
    /// Whether the interval policy needs a timer started (`take_interval_timer`).
    interval_timer: bool,
    /// Whether a started timer has yet to fire: one at a time.
    timer_armed: bool,
    /// The seal of the previously active segment, while it runs (see `roll`).
    sealing: Option<roll::Sealing>,
    /// The keeper of the `recovery-point` file.
    recovery_point: Arc<RecoveryPoint>,
}

impl Writer {
    pub(crate) fn new(
        log: Arc<PartitionLog>,
        config: Arc<TopicConfig>,
        active: Arc<Segment>,
    ) -> Self {
        let buffered_next = active.next_offset();
        let written_len = active.len();
        let rolling_timestamp = first_batch_timestamp(&active);
        let poison = Arc::new(Poison::default());
        let recovery_point =
            RecoveryPoint::new(log.storage.clone(), log.dir.join(RECOVERY_POINT_FILE));
        let pipeline = SyncPipeline::new(
            log.clone(),
            active.clone(),
            poison.clone(),
            recovery_point.clone(),
        );
        Writer {
            storage: log.storage.clone(),
            log,
            config,
            active,
            poison,
            swap_unfinished: None,
            buf: Vec::with_capacity(INITIAL_BUFFER),
            pending: Vec::new(),
            observations: Vec::new(),
            buffered_next,
            written_len,
            pipeline,
            buffered_max_ts: i64::MIN,
            rolling_timestamp,
            sync_requested: false,
            interval_timer: false,
            timer_armed: false,
            sealing: None,
            recovery_point,
        }
    }

    fn read_only_error(&self, reason: &str) -> KafkoError {
        KafkoError::PartitionReadOnly {
            topic: self.log.topic.to_string(),
            partition: self.log.partition,
            reason: reason.to_owned(),
        }
    }

    fn poison(&self, reason: String) {
        self.poison.set(&self.log, reason);
    }

    /// Uses a new configuration from the next group on.
    pub(crate) fn set_config(&mut self, config: Arc<TopicConfig>) {
        self.config = config;
    }

    /// Writes the entries of `group`, oldest first, in one `write`, and publishes or
    /// queues the result for its fsync; answers each entry. Never waits: entries that
    /// need a roll, or an fsync that a running seal must precede, stay in `group` and
    /// the detour they need is returned.
    pub(crate) fn write_group(&mut self, group: &mut Vec<Entry>) -> GroupOutcome {
        self.reap_finished_seal();
        if let Some(reason) = self.poison.get().map(str::to_owned) {
            for entry in group.drain(..) {
                entry.fail(self.read_only_error(&reason));
            }
            return GroupOutcome::Done;
        }
        let must_sync = self.config.fsync == FsyncPolicy::Always
            || group.iter().any(|e| e.sync)
            || self.pipeline.has_waiting();
        if must_sync && self.sealing.is_some() {
            return GroupOutcome::Needs(Detour::FinishSeal);
        }
        let mut entries = std::mem::take(group).into_iter();
        while let Some(entry) = entries.next() {
            if self.needs_roll(&entry.batches) {
                // This one and the rest wait for the roll, in order.
                group.push(entry);
                group.extend(entries);
                break;
            }
            self.stage(entry);
        }
        if self.write_staged(must_sync) == Written::StoragePanicked {
            return GroupOutcome::StoragePanicked;
        }
        match group.is_empty() {
            true => GroupOutcome::Done,
            false => GroupOutcome::Needs(Detour::Roll),
        }
    }

    /// Whether `batches` would overflow the active segment (its bytes, or the 32-bit
    /// relative offsets of its index), counting what is already staged, or are
    /// `segment_ms` newer than its first batch; or the active segment is of format 1
    /// (from an earlier version), which is never appended to.
    fn needs_roll(&self, batches: &Batches) -> bool {
        let used = self.written_len + self.buf.len() as u64;
        let rel = self.buffered_next - self.active.base_offset;
        used > 0
            && (self.active.format != Format::V2
                || used + batches.framed_len() > self.config.segment_bytes
                || rel + batches.offset_span() > u64::from(u32::MAX)
                || self.aged(batches.max_timestamp()))
    }

    /// Whether a batch with newest timestamp `timestamp` is `segment_ms` past the active
    /// segment's first batch. Record time, as Kafka counts it: a first batch without a
    /// timestamp (negative) never ages the segment.
    fn aged(&self, timestamp: i64) -> bool {
        let limit = i64::try_from(self.config.segment_ms).unwrap_or(i64::MAX);
        self.rolling_timestamp
            .is_some_and(|first| first >= 0 && timestamp.saturating_sub(first) >= limit)
    }

    /// Adds one append's batches to the write buffer. They go to one segment and one
    /// write, so they are stored or failed together (a segment may exceed
    /// `segment_bytes` by one append, as it may by one large batch).
    fn stage(&mut self, entry: Entry) {
        let Entry {
            batches,
            sync,
            reply,
        } = entry;
        let base_offset = self.buffered_next;
        if self.written_len + self.buf.len() as u64 == 0 {
            self.rolling_timestamp = batches.as_slice().first().map(|b| b.max_timestamp);
        }
        self.buf
            .reserve(usize::try_from(batches.framed_len()).unwrap_or(usize::MAX));
        // By value: each batch is dropped once copied, so a large append is held about
        // once, not twice.
        // Every batch but the last carries the append bit (set by the encoder), so
        // recovery drops an append cut short.
        for batch in batches {
            let offset = self.buffered_next;
            let position = self.written_len + self.buf.len() as u64;
            self.observations.push(Observation {
                rel: index::narrow(offset - self.active.base_offset),
                position: index::narrow(position),
                framed_len: batch.framed_len() as u64,
                max_timestamp: batch.max_timestamp,
                producer: producer_of(
                    &batch.bytes,
                    offset,
                    batch.last_offset_delta,
                    batch.max_timestamp,
                ),
            });
            batch::frame(&mut self.buf, offset, &batch);
            self.buffered_next = offset + u64::from(batch.last_offset_delta) + 1;
            self.buffered_max_ts = self.buffered_max_ts.max(batch.max_timestamp);
        }
        self.sync_requested |= sync;
        self.pending.push(PendingReply { reply, base_offset });
    }

    /// Writes the staged group in one call, then publishes it, or queues it for the fsync
    /// that must come first. A failed write fails the group's appends (so does a panic
    /// of the storage layer, which also makes the partition unusable).
    fn write_staged(&mut self, must_sync: bool) -> Written {
        if self.buf.is_empty() {
            return Written::Ok;
        }
        let must_sync = must_sync || self.sync_requested;
        let written = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.active.io_file().and_then(|f| f.append(&self.buf))
        }));
        let outcome = match written {
            Ok(Ok(())) => {
                self.written_len += self.buf.len() as u64;
                let end = GroupEnd {
                    len: self.written_len,
                    next_offset: self.buffered_next,
                    max_timestamp: self.buffered_max_ts,
                };
                self.log.count_group(self.pending.len());
                self.pipeline
                    .complete(end, &mut self.observations, &mut self.pending, must_sync);
                self.after_write();
                Written::Ok
            }
            Ok(Err(e)) => {
                let error = KafkoError::io("appending to", &self.active.log_path, e);
                self.fail_staged(|| error.duplicate());
                Written::Ok
            }
            Err(_) => {
                self.poison("the storage layer panicked in a write".into());
                let (topic, partition) = (self.log.topic.clone(), self.log.partition);
                self.fail_staged(|| KafkoError::PartitionPanicked {
                    topic: topic.to_string(),
                    partition,
                });
                Written::StoragePanicked
            }
        };
        self.buf.clear();
        if self.buf.capacity() > MAX_RETAINED_BUFFER {
            // One huge append must not pin its size in memory for the partition's life.
            self.buf = Vec::with_capacity(INITIAL_BUFFER);
        }
        self.observations.clear();
        self.buffered_max_ts = i64::MIN;
        self.sync_requested = false;
        outcome
    }

    /// Fails every staged append after a failed write: whatever part of the write landed
    /// is cut, so the next group starts clean, and its offsets are not burnt. Groups
    /// written before it (some may wait for their fsync) stay.
    fn fail_staged(&mut self, error: impl Fn() -> KafkoError) {
        if let Err(cut) = self
            .active
            .io_file()
            .and_then(|f| f.truncate(self.written_len))
        {
            self.poison(format!("could not cut a failed write: {cut}"));
        }
        if let Some(first) = self.pending.first() {
            self.buffered_next = first.base_offset;
        }
        for p in self.pending.drain(..) {
            p.fail(error());
        }
    }

    /// The interval policy after a write: an fsync now when one is due (the flusher runs
    /// it; nothing waits for it), else a timer for the deadline.
    fn after_write(&mut self) {
        if let FsyncPolicy::IntervalMs { interval_ms } = self.config.fsync {
            if self.pipeline.since_sync() >= Duration::from_millis(interval_ms) {
                self.pipeline.request_sync();
            } else if !self.timer_armed {
                self.interval_timer = true;
            }
        }
    }

    /// When an interval fsync is to be run by a timer: once per armed deadline.
    pub(crate) fn take_interval_timer(&mut self) -> Option<Duration> {
        if !std::mem::take(&mut self.interval_timer) {
            return None;
        }
        match self.config.fsync {
            FsyncPolicy::IntervalMs { interval_ms } => {
                self.timer_armed = true;
                Some(Duration::from_millis(interval_ms).saturating_sub(self.pipeline.since_sync()))
            }
            _ => None,
        }
    }

    /// The timer's deadline passed: fsync what is still unsynced (a poisoned partition
    /// never fsyncs again).
    pub(crate) fn on_interval_deadline(&mut self) {
        self.timer_armed = false;
        if self.poison.get().is_none() && self.pipeline.is_dirty() {
            self.pipeline.request_sync();
        }
    }

    /// Runs a detour: rolls the segment, or waits for the running seal.
    pub(crate) async fn run_detour(&mut self, detour: Detour) -> Result<()> {
        match detour {
            Detour::Roll => self.roll().await,
            Detour::FinishSeal => self.finish_seal().await,
        }
    }

    /// fsyncs everything written so far, the seal of a rolled segment included.
    pub(crate) async fn sync_now(&mut self) -> Result<()> {
        let synced = self.pipeline.sync_all().await;
        if let Some(reason) = self.poison.get() {
            return Err(self.read_only_error(reason));
        }
        if let Err(e) = synced {
            return Err(KafkoError::io("fsyncing", &self.active.log_path, e));
        }
        self.finish_seal().await
    }

    /// fsyncs the active segment, then writes its indexes (so the next open needs no
    /// scan) and raises the recovery point to the end of the log, on the blocking pool.
    /// Only the fsync decides whether the shutdown is durable: an index or recovery
    /// point that cannot be written (a full disk) is logged, and the next open rebuilds
    /// the index from the log.
    pub(crate) async fn shutdown(&mut self) -> Result<()> {
        // No lazy write of the recovery point from now on: after this the topic's
        // directory may move to `trash/`, and a new one take its name.
        let recovery_point = self.recovery_point.clone();
        blocking("stopping recovery point writes", move || {
            recovery_point.close();
            Ok(())
        })
        .await?;
        self.sync_now().await?;
        let active = self.active.clone();
        let storage = self.storage.clone();
        let recovery_point = self.recovery_point.clone();
        let producers = self.log.producers.copy();
        blocking("writing the active segment's indexes", move || {
            if let Err(e) = active.write_indexes(&*storage) {
                tracing::warn!(path = %active.log_path.display(), error = %e, "could not write the active segment's index files; the next open rebuilds them");
            }
            if let Err(e) = recovery_point.raise(active.next_offset()) {
                tracing::warn!(path = %active.log_path.display(), error = %e, "could not raise the recovery point at shutdown");
            }
            // Everything is published and fsynced: the table is the fold of the whole log.
            let dir = crate::storage::parent_of(&active.log_path);
            if let Err(e) = snapshot::write(&*storage, dir, active.next_offset(), &producers) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not write the producer state at shutdown; the next open folds the log instead");
            }
            Ok(())
        })
        .await
    }
}

/// Makes written bytes visible — index entries, the segment's readable length, the high
/// watermark (which wakes long-polls) — and then answers their producers.
fn publish(
    log: &PartitionLog,
    active: &Segment,
    end: GroupEnd,
    observations: &[Observation],
    replies: impl Iterator<Item = PendingReply>,
) {
    {
        let mut idx = active.index.write().unwrap_or_else(|p| p.into_inner());
        for o in observations {
            idx.observe(o.rel, o.position, o.framed_len, o.max_timestamp);
        }
    }
    log.producers
        .fold(observations.iter().filter_map(|o| o.producer.as_ref()));
    active.publish(end.len, end.next_offset, end.max_timestamp);
    log.publish_high_watermark(end.next_offset);
    for p in replies {
        let _ = p.reply.send(Answer::Done(Ok(p.base_offset)));
    }
}

/// The newest timestamp of `segment`'s first batch; `None` for an empty segment. A
/// first batch that cannot be read (recovery has vouched for it, so only an I/O error)
/// falls back to the segment's newest timestamp, which rolls later, never sooner.
fn first_batch_timestamp(segment: &Segment) -> Option<i64> {
    if segment.len() == 0 {
        return None;
    }
    match segment.batches().next() {
        Some(Ok(first)) => Some(first.header.max_timestamp),
        _ => Some(segment.max_timestamp()),
    }
}
