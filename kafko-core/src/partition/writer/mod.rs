//! The single writer task of a partition. It owns the active segment, assigns offsets,
//! drains every queued append into one `write` (group commit), applies the fsync policy,
//! rolls segments, runs retention and installs compacted segments. Nothing else writes.
//!
//! Invariants:
//! - offsets are assigned only here, and become visible (high watermark) only after the
//!   bytes holding them were written — and fsynced, when the policy or request says so;
//! - a failed write is cut back off the file and burns no offset;
//! - after a failed fsync (or a failed cut) the partition accepts no more writes;
//! - a rolled segment is sealed (fsync, then its index files) on a blocking thread while
//!   the new one takes writes; at most one seal is in flight, and everything that
//!   promises durability (an fsync of the active segment, `sync`, shutdown) or removes
//!   segments (the next roll, retention, a compaction swap) waits for it first;
//! - a group that must be fsynced (policy `always`, or a `sync` request) is published and
//!   acknowledged only after its fsync, which runs on the `pipeline` while the writer
//!   goes on writing later groups; those wait behind it, so publishing stays in order.
//!
//! Here: the task loop, group commit, the fsync policy and shutdown. The writer's other
//! duties each have a file: `pipeline` (fsyncs running while later groups are written),
//! `roll` (new segment, background seal), `retention` and `swap` (installing a compacted
//! segment).

mod pipeline;
mod retention;
mod roll;
mod swap;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use self::pipeline::SyncPipeline;
use super::PartitionLog;
use super::command::{Batches, Command};
use crate::config::{FsyncPolicy, TopicConfig};
use crate::error::{KafkoError, Result};
use crate::segment::Segment;
use crate::segment::batch;
use crate::segment::index;
use crate::state_file;
use crate::storage::{Storage, blocking};

/// Most appends drained into one write.
const MAX_GROUP_COMMANDS: usize = 512;
/// Most times the writer yields while gathering one group (see `gather_group`).
const MAX_GROUP_YIELDS: usize = 8;
/// Most bytes drained into one write.
const MAX_GROUP_BYTES: usize = 4 * 1024 * 1024;

/// Write buffer allocated up front.
const INITIAL_BUFFER: usize = 64 * 1024;
/// Largest write buffer kept between groups (an append may be larger than a group).
const MAX_RETAINED_BUFFER: usize = 2 * MAX_GROUP_BYTES;

/// Name of the per-partition log start checkpoint.
pub(crate) const LOG_START_FILE: &str = "log-start-offset";
/// Name of the per-partition recovery point: every offset below it was fsynced. Raised
/// after each seal and at clean shutdown; recovery refuses a log that ends below it.
pub(crate) const RECOVERY_POINT_FILE: &str = "recovery-point";

/// Shared with the handle so a dropped reply can be told apart from a shutdown.
#[derive(Default)]
pub(crate) struct WriterState {
    pub(crate) panicked: AtomicBool,
}

/// Sets `panicked` if the writer unwinds. Declared first in `run`, so it drops before
/// the writer's own fields (the reply senders): waiters see the flag when they wake.
struct PanicGuard(Arc<WriterState>);

impl Drop for PanicGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.panicked.store(true, Ordering::Release);
        }
    }
}

struct PendingReply {
    reply: oneshot::Sender<Result<u64>>,
    base_offset: u64,
}

/// A batch observed in the write buffer, applied to the index once published.
struct Observation {
    rel: u32,
    position: u32,
    framed_len: u64,
    max_timestamp: i64,
}

/// Where a written group ends: what publishing it makes visible.
#[derive(Clone, Copy)]
struct GroupEnd {
    /// Length of the active segment's file with the group.
    len: u64,
    next_offset: u64,
    max_timestamp: i64,
}

/// A written group waiting in the pipeline for an fsync that covers it.
struct WrittenGroup {
    end: GroupEnd,
    observations: Vec<Observation>,
    replies: Vec<PendingReply>,
}

pub(crate) struct Writer {
    log: Arc<PartitionLog>,
    storage: Arc<dyn Storage>,
    rx: mpsc::Receiver<Command>,
    config: Arc<TopicConfig>,
    active: Arc<Segment>,
    /// Written since the last fsync.
    dirty: bool,
    last_sync: Instant,
    poisoned: Option<String>,
    /// Set when a compaction swap failed past its commit point (see `install_swap`).
    swap_unfinished: Option<String>,
    state: Arc<WriterState>,
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
    sync_requested: bool,
    /// Appends in the previous group: how many producers the next gather expects.
    last_group: usize,
    /// The seal of the previously active segment, while it runs (see `roll`).
    sealing: Option<roll::Sealing>,
}

impl Writer {
    pub(crate) fn new(
        log: Arc<PartitionLog>,
        rx: mpsc::Receiver<Command>,
        config: Arc<TopicConfig>,
        active: Arc<Segment>,
        state: Arc<WriterState>,
    ) -> Self {
        let buffered_next = active.next_offset();
        let written_len = active.len();
        let pipeline = SyncPipeline::new(active.file.clone());
        Writer {
            storage: log.storage.clone(),
            log,
            rx,
            config,
            active,
            dirty: false,
            last_sync: Instant::now(),
            poisoned: None,
            swap_unfinished: None,
            state,
            buf: Vec::with_capacity(INITIAL_BUFFER),
            pending: Vec::new(),
            observations: Vec::new(),
            buffered_next,
            written_len,
            pipeline,
            buffered_max_ts: i64::MIN,
            sync_requested: false,
            last_group: 1,
            sealing: None,
        }
    }

    /// The task body: runs until shutdown or until every sender is gone.
    pub(crate) async fn run(mut self) {
        let _guard = PanicGuard(self.state.clone());
        let mut deferred: Option<Command> = None;
        loop {
            let cmd = match deferred.take() {
                Some(c) => Some(c),
                None => self.next_command().await,
            };
            let Some(cmd) = cmd else {
                // Every handle is gone: leave the data durable.
                let _ = self.shutdown().await;
                return;
            };
            match cmd {
                Command::Append {
                    batches,
                    sync,
                    reply,
                } => {
                    self.reap_finished_seal().await;
                    self.reap_synced();
                    self.stage(batches, sync, reply).await;
                    deferred = self.gather_group().await;
                    self.last_group = self.pending.len();
                    self.flush().await;
                }
                Command::Sync { reply } => {
                    let _ = reply.send(self.sync_now().await);
                }
                Command::Retention { now_ms, reply } => {
                    let _ = reply.send(self.enforce_retention(now_ms).await);
                }
                Command::Swap { swap, reply } => {
                    let _ = reply.send(self.install_swap(*swap).await);
                }
                Command::UpdateConfig { config } => self.config = config,
                Command::Shutdown { reply } => {
                    let _ = reply.send(self.shutdown().await);
                    return;
                }
            }
        }
    }

    /// Stages every append already queued, and gives producers that are about to send a
    /// few chances to join, so concurrent sends share one write (and one fsync). Returns a
    /// non-append command met on the way, to be run after the flush.
    ///
    /// Why wait at all: a flush wakes every producer it answers, but they are runnable, not
    /// yet sent — and tokio runs the first woken send's writer wake-up before the others.
    /// Without waiting, the group shrinks to whoever was first. The wait is bounded: it
    /// stops once the group is as large as the previous one (the producers we expect are
    /// here), when a yield brought nothing new, or after `MAX_GROUP_YIELDS` yields.
    async fn gather_group(&mut self) -> Option<Command> {
        let mut yields = 0;
        loop {
            while self.pending.len() < MAX_GROUP_COMMANDS && self.buf.len() < MAX_GROUP_BYTES {
                match self.rx.try_recv() {
                    Ok(Command::Append {
                        batches,
                        sync,
                        reply,
                    }) => self.stage(batches, sync, reply).await,
                    Ok(other) => return Some(other),
                    Err(_) => break,
                }
            }
            let full =
                self.pending.len() >= MAX_GROUP_COMMANDS || self.buf.len() >= MAX_GROUP_BYTES;
            let expected_here = self.pending.len() >= self.last_group.max(2);
            if full || expected_here || yields >= MAX_GROUP_YIELDS {
                return None;
            }
            requeue().await;
            yields += 1;
            if self.rx.is_empty() {
                return None;
            }
        }
    }

    /// Waits for a command, running interval fsyncs while idle and publishing groups as
    /// their fsyncs finish.
    async fn next_command(&mut self) -> Option<Command> {
        loop {
            // A poisoned partition never fsyncs again: without the check its deadline
            // stays in the past and this loop spins forever.
            let deadline = match self.config.fsync {
                FsyncPolicy::IntervalMs { interval_ms }
                    if self.dirty && self.poisoned.is_none() =>
                {
                    Some(self.last_sync + std::time::Duration::from_millis(interval_ms))
                }
                _ => None,
            };
            if deadline.is_none() && self.pipeline.is_empty() {
                return self.rx.recv().await;
            }
            let waiting = !self.pipeline.is_empty();
            let woke = tokio::select! {
                // Acknowledgements first: they free producers to send the next group.
                biased;
                done = self.pipeline.next_done(), if waiting => Woke::Synced(done),
                cmd = self.rx.recv() => Woke::Command(cmd),
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => Woke::Deadline,
            };
            match woke {
                Woke::Command(cmd) => return cmd,
                Woke::Synced(done) => self.on_synced(done),
                Woke::Deadline => {
                    let _ = self.sync_now().await;
                }
            }
        }
    }

    fn read_only_error(&self, reason: &str) -> KafkoError {
        KafkoError::PartitionReadOnly {
            topic: self.log.topic.to_string(),
            partition: self.log.partition,
            reason: reason.to_owned(),
        }
    }

    /// Adds one append's batches to the write buffer, rolling the segment first if they
    /// would overflow it. They go to one segment and one write, so they are stored or
    /// failed together (a segment may exceed `segment_bytes` by one append, as it may by
    /// one large batch).
    async fn stage(&mut self, batches: Batches, sync: bool, reply: oneshot::Sender<Result<u64>>) {
        if let Some(reason) = &self.poisoned {
            let _ = reply.send(Err(self.read_only_error(reason)));
            return;
        }
        let framed = batches.framed_len();
        let used = self.written_len + self.buf.len() as u64;
        let rel = self.buffered_next - self.active.base_offset;
        if used > 0
            && (used + framed > self.config.segment_bytes
                || rel + batches.offset_span() > u64::from(u32::MAX))
        {
            self.flush().await;
            if let Err(e) = self.roll().await {
                let _ = reply.send(Err(e));
                return;
            }
        }
        if let Some(reason) = &self.poisoned {
            let _ = reply.send(Err(self.read_only_error(reason)));
            return;
        }
        let base_offset = self.buffered_next;
        self.buf.reserve(framed as usize);
        // By value: each batch is dropped once copied, so a large append is held about
        // once, not twice.
        let mut batches = batches.into_iter().peekable();
        while let Some(mut batch) = batches.next() {
            // Marks every batch but the last, so recovery drops an append cut short.
            batch.continued = batches.peek().is_some();
            let offset = self.buffered_next;
            let position = self.written_len + self.buf.len() as u64;
            self.observations.push(Observation {
                rel: index::narrow(offset - self.active.base_offset),
                position: index::narrow(position),
                framed_len: batch.framed_len() as u64,
                max_timestamp: batch.max_timestamp,
            });
            batch::frame(&mut self.buf, offset, &batch);
            self.buffered_next = offset + u64::from(batch.last_offset_delta) + 1;
            self.buffered_max_ts = self.buffered_max_ts.max(batch.max_timestamp);
        }
        self.sync_requested |= sync;
        self.pending.push(PendingReply { reply, base_offset });
    }

    /// Writes the buffer in one call; publishes and replies now, or once fsynced.
    async fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        if let Err(e) = self.write_buffer().await {
            // The failed group's offsets are not burnt: the next starts at its first.
            if let Some(first) = self.pending.first() {
                self.buffered_next = first.base_offset;
            }
            for p in self.pending.drain(..) {
                let _ = p.reply.send(Err(e.duplicate()));
            }
        }
        self.buf.clear();
        if self.buf.capacity() > MAX_RETAINED_BUFFER {
            // One huge append must not pin its size in memory for the partition's life.
            self.buf = Vec::with_capacity(INITIAL_BUFFER);
        }
        self.observations.clear();
        self.buffered_max_ts = i64::MIN;
        self.sync_requested = false;
    }

    /// Writes the staged group. A group that must be fsynced — by the policy, by a
    /// request, or because an earlier group still waits for its fsync — goes to the
    /// pipeline; any other is published and answered here.
    async fn write_buffer(&mut self) -> Result<()> {
        let must_sync = self.sync_requested
            || self.config.fsync == FsyncPolicy::Always
            || !self.pipeline.is_empty();
        if must_sync {
            // The fsync to come covers every record before it, those of a segment still
            // sealing too. Waited for before the write, so a failed seal fails this group
            // with nothing of it on disk.
            self.finish_seal().await?;
        }
        if let Err(e) = self.active.file.append(&self.buf) {
            // The path is cloned here, on failure, not for every group.
            let err = KafkoError::io("appending to", &self.active.log_path, e);
            // Cut whatever part of the write landed, so the next batch starts clean. Groups
            // written before it (some may wait for their fsync) stay.
            if let Err(cut) = self.active.file.truncate(self.written_len) {
                self.poison(format!("could not cut a failed write: {cut}"));
            }
            return Err(err);
        }
        self.written_len += self.buf.len() as u64;
        self.dirty = true;
        let end = GroupEnd {
            len: self.written_len,
            next_offset: self.buffered_next,
            max_timestamp: self.buffered_max_ts,
        };
        if must_sync {
            self.pipeline.push(WrittenGroup {
                end,
                observations: std::mem::take(&mut self.observations),
                replies: std::mem::take(&mut self.pending),
            });
            return Ok(());
        }
        // The common case publishes from the writer's own buffers: no allocation.
        publish(
            &self.log,
            &self.active,
            end,
            &self.observations,
            self.pending.drain(..),
        );
        if let FsyncPolicy::IntervalMs { interval_ms } = self.config.fsync
            && self.last_sync.elapsed() >= std::time::Duration::from_millis(interval_ms)
        {
            let _ = self.sync_now().await;
        }
        Ok(())
    }

    /// Publishes the groups a finished fsync covers; after a failed one, fails every
    /// waiting group and turns the partition read-only.
    fn on_synced(&mut self, done: std::io::Result<u64>) {
        match done {
            Ok(synced_len) => {
                for group in self.pipeline.take_covered(synced_len) {
                    publish(
                        &self.log,
                        &self.active,
                        group.end,
                        &group.observations,
                        group.replies.into_iter(),
                    );
                }
                if synced_len >= self.written_len {
                    self.dirty = false;
                    self.last_sync = Instant::now();
                }
            }
            Err(e) => {
                self.poison(format!("fsync failed: {e}"));
                let err = KafkoError::io("fsyncing", &self.active.log_path, e);
                for group in self.pipeline.take_all() {
                    for p in group.replies {
                        let _ = p.reply.send(Err(err.duplicate()));
                    }
                }
            }
        }
    }

    /// Publishes whatever fsyncs have finished, without waiting. Nothing is reported
    /// while nothing waits: the flusher reports only fsyncs that waiting groups asked for.
    fn reap_synced(&mut self) {
        if self.pipeline.is_empty() {
            return;
        }
        while let Some(done) = self.pipeline.try_done() {
            self.on_synced(done);
        }
    }

    /// Waits until no group waits for an fsync (each published, or failed).
    async fn drain_pipeline(&mut self) {
        while !self.pipeline.is_empty() {
            let done = self.pipeline.next_done().await;
            self.on_synced(done);
        }
    }

    /// fdatasync of the active segment on a blocking thread: the runtime thread stays free
    /// to accept and parse the requests that the next group commit will cover.
    async fn fsync_active(&self) -> std::io::Result<()> {
        let file = self.active.file.clone();
        match tokio::task::spawn_blocking(move || file.sync_data()).await {
            Ok(result) => result,
            Err(join) => Err(std::io::Error::other(format!("fsync task failed: {join}"))),
        }
    }

    fn poison(&mut self, reason: String) {
        tracing::error!(topic = %self.log.topic, partition = self.log.partition, %reason, "partition turns read-only");
        self.poisoned = Some(reason);
    }

    async fn sync_now(&mut self) -> Result<()> {
        self.drain_pipeline().await;
        if let Some(reason) = &self.poisoned {
            return Err(self.read_only_error(reason));
        }
        self.finish_seal().await?;
        if !self.dirty {
            return Ok(());
        }
        if let Err(e) = self.fsync_active().await {
            self.poison(format!("fsync failed: {e}"));
            return Err(KafkoError::io("fsyncing", &self.active.log_path, e));
        }
        self.dirty = false;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// fsyncs the active segment, then writes its indexes (so the next open needs no
    /// scan) and raises the recovery point to the end of the log, on the blocking pool.
    async fn shutdown(&mut self) -> Result<()> {
        self.flush().await;
        self.sync_now().await?;
        let active = self.active.clone();
        let storage = self.storage.clone();
        let checkpoint = self.log.dir.join(RECOVERY_POINT_FILE);
        blocking("writing the active segment's indexes", move || {
            active.write_indexes(&*storage)?;
            state_file::write(&*storage, &checkpoint, &active.next_offset())
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
    active.publish(end.len, end.next_offset, end.max_timestamp);
    log.publish_high_watermark(end.next_offset);
    for p in replies {
        let _ = p.reply.send(Ok(p.base_offset));
    }
}

/// What woke an idle writer.
enum Woke {
    Command(Option<Command>),
    Synced(std::io::Result<u64>),
    Deadline,
}

/// Puts the running task at the back of its worker's run queue once, so the producers
/// woken by the last flush run (and send) before it continues. Unlike
/// `tokio::task::yield_now`, which defers the task until the worker would park (an extra
/// `epoll_wait` per yield), this re-queues it directly.
async fn requeue() {
    let mut done = false;
    std::future::poll_fn(|cx| {
        if done {
            std::task::Poll::Ready(())
        } else {
            done = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await
}
