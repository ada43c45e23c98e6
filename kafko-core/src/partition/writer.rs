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
//!   segments (the next roll, retention, a compaction swap) waits for it first.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::PartitionLog;
use super::command::{Command, RetentionOutcome, SegmentSwap};
use crate::config::{FsyncPolicy, TopicConfig};
use crate::error::{KafkoError, Result};
use crate::naming::segment_file;
use crate::segment::Segment;
use crate::segment::batch::{self, EncodedBatch};
use crate::state_file;
use crate::storage::Storage;

/// Most appends drained into one write.
const MAX_GROUP_COMMANDS: usize = 512;
/// Most times the writer yields while gathering one group (see `gather_group`).
const MAX_GROUP_YIELDS: usize = 8;
/// Most bytes drained into one write.
const MAX_GROUP_BYTES: usize = 4 * 1024 * 1024;

/// Name of the per-partition log start checkpoint.
pub(crate) const LOG_START_FILE: &str = "log-start-offset";

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

/// A batch observed in the write buffer, applied to the index once written.
struct Observation {
    rel: u32,
    position: u32,
    framed_len: u64,
    max_timestamp: i64,
}

/// A rolled segment's seal running on a blocking thread.
struct Sealing {
    log_path: std::path::PathBuf,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
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
    /// Next offset to assign, counting batches staged in `buf`; the committed next offset
    /// and written length are the active segment's published ones.
    buffered_next: u64,
    buffered_max_ts: i64,
    sync_requested: bool,
    /// Appends in the previous group: how many producers the next gather expects.
    last_group: usize,
    /// The seal of the previously active segment, while it runs (see `roll`).
    sealing: Option<Sealing>,
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
            buf: Vec::with_capacity(64 * 1024),
            pending: Vec::new(),
            observations: Vec::new(),
            buffered_next,
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
                Command::Append { batch, sync, reply } => {
                    // A seal that failed meanwhile turns the partition read-only now,
                    // not at the next roll or sync.
                    if self.sealing.as_ref().is_some_and(|s| s.task.is_finished()) {
                        let _ = self.finish_seal().await;
                    }
                    self.stage(batch, sync, reply).await;
                    deferred = self.gather_group().await;
                    self.last_group = self.pending.len();
                    self.flush().await;
                }
                Command::Sync { reply } => {
                    let _ = reply.send(self.sync_now().await);
                }
                Command::Retention { now_ms, reply } => {
                    let result = match self.finish_seal().await {
                        Ok(()) => self.enforce_retention(now_ms),
                        Err(e) => Err(e),
                    };
                    let _ = reply.send(result);
                }
                Command::Swap { swap, reply } => {
                    let result = match self.finish_seal().await {
                        Ok(()) => self.install_swap(swap),
                        Err(e) => {
                            let _ = self.storage.remove_file(&swap.cleaned_path);
                            Err(e)
                        }
                    };
                    let _ = reply.send(result);
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
                    Ok(Command::Append { batch, sync, reply }) => {
                        self.stage(batch, sync, reply).await
                    }
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

    /// Waits for a command, running interval fsyncs while idle.
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
            let Some(deadline) = deadline else {
                return self.rx.recv().await;
            };
            tokio::select! {
                cmd = self.rx.recv() => return cmd,
                () = tokio::time::sleep_until(deadline) => {
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

    /// Adds one batch to the write buffer, rolling the segment first if it would overflow.
    async fn stage(
        &mut self,
        batch: EncodedBatch,
        sync: bool,
        reply: oneshot::Sender<Result<u64>>,
    ) {
        if let Some(reason) = &self.poisoned {
            let _ = reply.send(Err(self.read_only_error(reason)));
            return;
        }
        let framed = batch.framed_len() as u64;
        let used = self.active.len() + self.buf.len() as u64;
        let rel = self.buffered_next - self.active.base_offset;
        if used > 0
            && (used + framed > self.config.segment_bytes
                || rel + u64::from(batch.last_offset_delta) >= u64::from(u32::MAX))
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
        let position = self.active.len() + self.buf.len() as u64;
        self.observations.push(Observation {
            rel: (base_offset - self.active.base_offset) as u32,
            position: position as u32,
            framed_len: framed,
            max_timestamp: batch.max_timestamp,
        });
        batch::frame(&mut self.buf, base_offset, &batch);
        self.buffered_next = base_offset + u64::from(batch.last_offset_delta) + 1;
        self.buffered_max_ts = self.buffered_max_ts.max(batch.max_timestamp);
        self.sync_requested |= sync;
        self.pending.push(PendingReply { reply, base_offset });
    }

    /// Writes the buffer in one call, fsyncs if required, publishes and replies.
    async fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let result = self.write_buffer().await;
        match result {
            Ok(()) => {
                for p in self.pending.drain(..) {
                    let _ = p.reply.send(Ok(p.base_offset));
                }
            }
            Err(e) => {
                self.buffered_next = self.active.next_offset();
                for p in self.pending.drain(..) {
                    let _ = p.reply.send(Err(e.duplicate()));
                }
            }
        }
        self.buf.clear();
        self.observations.clear();
        self.buffered_max_ts = i64::MIN;
        self.sync_requested = false;
    }

    async fn write_buffer(&mut self) -> Result<()> {
        let path = self.active.log_path.clone();
        let must_sync = self.sync_requested || self.config.fsync == FsyncPolicy::Always;
        if must_sync {
            // The fsync below covers every record before it, those of a segment still
            // sealing too. Waited for before the write, so a failed seal fails this group
            // with nothing of it on disk.
            self.finish_seal().await?;
        }
        if let Err(e) = self.active.file.append(&self.buf) {
            let err = KafkoError::io("appending to", &path, e);
            // Cut whatever part of the write landed, so the next batch starts clean.
            if let Err(cut) = self.active.file.truncate(self.active.len()) {
                self.poison(format!("could not cut a failed write: {cut}"));
            }
            return Err(err);
        }
        if must_sync {
            if let Err(e) = self.fsync_active().await {
                self.poison(format!("fsync failed: {e}"));
                return Err(KafkoError::io("fsyncing", &path, e));
            }
            self.last_sync = Instant::now();
            self.dirty = false;
        } else {
            self.dirty = true;
        }
        {
            let mut idx = self.active.index.write().unwrap_or_else(|p| p.into_inner());
            for o in &self.observations {
                idx.observe(o.rel, o.position, o.framed_len, o.max_timestamp);
            }
        }
        let written_len = self.active.len() + self.buf.len() as u64;
        self.active
            .publish(written_len, self.buffered_next, self.buffered_max_ts);
        self.log.publish_high_watermark(self.buffered_next);
        if let FsyncPolicy::IntervalMs { interval_ms } = self.config.fsync
            && self.last_sync.elapsed() >= std::time::Duration::from_millis(interval_ms)
        {
            let _ = self.sync_now().await;
        }
        Ok(())
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

    /// Starts a new active segment and seals the old one (fsync, then its index files) on
    /// a blocking thread.
    ///
    /// Why not seal inline: the fsync of a whole segment writes it out (25 ms for 64 MiB
    /// on the bench machine, seconds for a large segment on a slow disk), and every
    /// producer of the partition would wait for it. Kafka flushes a rolled segment in
    /// the background too. A crash before the seal completes leaves a sealed segment
    /// whose index files do not match its log; recovery scans it, and a lost tail (torn,
    /// or ending before the next segment) ends the log there (FORMAT.md, recovery rule 7).
    async fn roll(&mut self) -> Result<()> {
        if self.active.len() == 0 {
            // The flush before this roll failed and left the active segment empty: a new
            // segment would have the same base offset, and the two would share one file
            // (compacting the stale twin later deleted the live segment's file).
            return Ok(());
        }
        if let Some(reason) = &self.poisoned {
            return Err(self.read_only_error(reason));
        }
        self.finish_seal().await?;
        let next = Arc::new(Segment::create(
            &*self.storage,
            &self.log.dir,
            self.active.next_offset(),
        )?);
        let mut segments: Vec<_> = self.log.segments().iter().cloned().collect();
        segments.push(next.clone());
        self.log.set_segments(segments);
        let sealed = std::mem::replace(&mut self.active, next);
        // The sealed segment's pending data is the seal's to make durable now.
        self.dirty = false;
        let storage = self.storage.clone();
        let log_path = sealed.log_path.clone();
        let task = tokio::task::spawn_blocking(move || {
            sealed.file.sync_data()?;
            // Without index files recovery rebuilds them by a scan: not worth failing for.
            if let Err(e) = sealed.write_indexes(&*storage) {
                tracing::warn!(path = %sealed.log_path.display(), error = %e, "could not write the index files of a sealed segment");
            }
            Ok(())
        });
        self.sealing = Some(Sealing { log_path, task });
        Ok(())
    }

    /// Waits for the seal of the previously active segment, if one is in flight. A failed
    /// seal fsync poisons the partition like any failed fsync.
    async fn finish_seal(&mut self) -> Result<()> {
        let Some(sealing) = self.sealing.take() else {
            return Ok(());
        };
        let result = match sealing.task.await {
            Ok(result) => result,
            Err(join) => Err(std::io::Error::other(format!("seal task failed: {join}"))),
        };
        if let Err(e) = result {
            self.poison(format!("fsync of a sealed segment failed: {e}"));
            return Err(KafkoError::io("fsyncing", &sealing.log_path, e));
        }
        Ok(())
    }

    /// Deletes the oldest sealed segments beyond `retention_ms` / `retention_bytes`.
    fn enforce_retention(&mut self, now_ms: i64) -> Result<RetentionOutcome> {
        let segments = self.log.segments();
        let mut outcome = RetentionOutcome {
            log_start_offset: self.log.log_start(),
            ..Default::default()
        };
        if !self.config.cleanup_policy.deletes() || segments.len() < 2 {
            return Ok(outcome);
        }
        let sealed = &segments[..segments.len() - 1];
        let mut total: u64 = segments.iter().map(|s| s.len()).sum();
        let mut count = 0;
        for seg in sealed {
            let expired = self
                .config
                .retention_ms
                // `ms as i64` made a retention past i64::MAX negative, so "keep for
                // ~forever" expired every sealed segment at once (found via schemathesis).
                .is_some_and(|ms| {
                    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
                    seg.max_timestamp() < now_ms.saturating_sub(ms)
                });
            // Kafka's rule: drop a segment only if what remains still meets the limit.
            let oversized = self
                .config
                .retention_bytes
                .is_some_and(|max| total - seg.len() >= max);
            if !(expired || oversized) {
                break;
            }
            total -= seg.len();
            count += 1;
        }
        if count == 0 {
            return Ok(outcome);
        }
        let new_start = segments[count].base_offset.max(self.log.log_start());
        // Persist the new start before deleting, so a crash cannot resurrect a gap.
        state_file::write(
            &*self.storage,
            &self.log.dir.join(LOG_START_FILE),
            &new_start,
        )?;
        self.log.set_segments(segments[count..].to_vec());
        self.log.set_log_start(new_start);
        for seg in &segments[..count] {
            outcome.bytes_deleted += seg.len();
            seg.remove_files(&*self.storage)?;
        }
        self.storage
            .sync_dir(&self.log.dir)
            .map_err(|e| KafkoError::io("syncing directory", &self.log.dir, e))?;
        outcome.segments_deleted = count;
        outcome.log_start_offset = new_start;
        tracing::info!(topic = %self.log.topic, partition = self.log.partition, deleted = count, log_start = new_start, "retention deleted segments");
        Ok(outcome)
    }

    /// Installs a compacted segment in place of a run of sealed ones (crash-safe order:
    /// `.cleaned` → `.swap` (commit point) → delete old → `.swap` → `.log`).
    fn install_swap(&mut self, swap: SegmentSwap) -> Result<()> {
        if let Some(reason) = self.poisoned.as_ref().or(self.swap_unfinished.as_ref()) {
            let _ = self.storage.remove_file(&swap.cleaned_path);
            return Err(self.read_only_error(reason));
        }
        let segments = self.log.segments();
        let Some(first) = segments
            .iter()
            .position(|s| Some(&s.base_offset) == swap.replaced.first())
        else {
            let _ = self.storage.remove_file(&swap.cleaned_path);
            return Err(KafkoError::InvalidRequest {
                reason: "segments changed during compaction".into(),
            });
        };
        let end = first + swap.replaced.len();
        let still_same = end < segments.len()
            && segments[first..end]
                .iter()
                .map(|s| s.base_offset)
                .eq(swap.replaced.iter().copied());
        if !still_same {
            let _ = self.storage.remove_file(&swap.cleaned_path);
            return Err(KafkoError::InvalidRequest {
                reason: "segments changed during compaction".into(),
            });
        }
        // The cleaned segment must cover exactly the replaced range: recovery of an
        // interrupted swap deletes `[base, next_offset)` of the `.swap` file.
        let range_end = segments[end - 1].next_offset();
        if swap.summary.base_offset != segments[first].base_offset
            || swap.summary.next_offset != range_end
        {
            let _ = self.storage.remove_file(&swap.cleaned_path);
            return Err(KafkoError::corruption(
                &swap.cleaned_path,
                0,
                format!(
                    "cleaned segment spans {}..{}, replaced segments span {}..{range_end}",
                    swap.summary.base_offset, swap.summary.next_offset, segments[first].base_offset
                ),
            ));
        }
        let dir = self.log.dir.clone();
        fn io<'a>(op: &'static str, p: &'a Path) -> impl FnOnce(std::io::Error) -> KafkoError + 'a {
            move |e| KafkoError::io(op, p.to_path_buf(), e)
        }
        let base = swap.summary.base_offset;
        let swap_path = dir.join(segment_file(base, "swap"));
        let log_path = dir.join(segment_file(base, "log"));
        self.storage
            .rename(&swap.cleaned_path, &swap_path)
            .map_err(io("renaming", &swap_path))?;
        // Past the commit point the swap can only go forward, and if a step fails only
        // recovery (FORMAT.md rule 6) can finish it. Until a restart the partition takes
        // no further swaps: a later swap of an overlapping range would leave this
        // `.swap` behind, and the next open would resurrect it as a segment overlapping
        // its neighbour (refused as corruption). Writes and reads are unaffected.
        let committed = (|| {
            self.storage
                .sync_dir(&dir)
                .map_err(io("syncing directory", &dir))?;
            for seg in &segments[first..end] {
                seg.remove_files(&*self.storage)?;
            }
            self.storage
                .sync_dir(&dir)
                .map_err(io("syncing directory", &dir))?;
            self.storage
                .rename(&swap_path, &log_path)
                .map_err(io("renaming", &log_path))?;
            self.storage
                .sync_dir(&dir)
                .map_err(io("syncing directory", &dir))?;
            let file = self
                .storage
                .open(&log_path)
                .map_err(io("opening", &log_path))?;
            let cleaned = Arc::new(Segment::new(base, log_path, file, swap.summary, swap.index));
            cleaned.write_indexes(&*self.storage)?;
            Ok(cleaned)
        })();
        let cleaned = match committed {
            Ok(c) => c,
            Err(e) => {
                let reason = format!("a compaction swap failed past its commit point: {e}");
                tracing::error!(topic = %self.log.topic, partition = self.log.partition, %reason, "compaction stops until a restart");
                self.swap_unfinished = Some(reason);
                return Err(e);
            }
        };
        let mut next: Vec<_> = segments[..first].to_vec();
        next.push(cleaned);
        next.extend(segments[end..].iter().cloned());
        self.log.set_segments(next);
        Ok(())
    }

    /// fsyncs the active segment and writes its indexes so the next open needs no scan.
    async fn shutdown(&mut self) -> Result<()> {
        self.flush().await;
        self.sync_now().await?;
        self.active.write_indexes(&*self.storage)
    }
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
