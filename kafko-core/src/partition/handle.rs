//! The async face of a partition's write side: appends go through its write queue (see
//! `write_queue`), maintenance runs as jobs holding the write token.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::oneshot;

use super::PartitionLog;
use super::command::{Batches, RetentionOutcome, SegmentSwap, SwapOutcome};
use super::write_queue::{AppendWait, WriteQueue};
use super::writer::{Entry, Writer};
use crate::config::TopicConfig;
use crate::error::{KafkoError, Result};
use crate::segment::Segment;
use crate::segment::batch::EncodedBatch;

pub(crate) struct PartitionHandle {
    pub(crate) log: Arc<PartitionLog>,
    queue: Arc<WriteQueue>,
    shut_down: AtomicBool,
}

impl PartitionHandle {
    /// The write side of an opened partition.
    pub(crate) fn new(
        log: Arc<PartitionLog>,
        config: Arc<TopicConfig>,
        active: Arc<Segment>,
    ) -> Self {
        let writer = Writer::new(log.clone(), config, active);
        PartitionHandle {
            queue: WriteQueue::new(log.clone(), writer),
            log,
            shut_down: AtomicBool::new(false),
        }
    }

    /// Appends a batch. With `wait`, a full queue waits; without, it is `Backpressure`.
    pub(crate) async fn append(&self, batch: EncodedBatch, sync: bool, wait: bool) -> Result<u64> {
        self.reserve(wait)
            .await?
            .append(Batches::One(batch), sync, true)
            .reply()
            .await
    }

    /// Reserves room for one append in the write queue. With `wait`, a full queue waits
    /// for room; without, it is `Backpressure`. A slot dropped unused frees its room: a
    /// send reserves every partition it needs before it hands anything over.
    pub(crate) async fn reserve(&self, wait: bool) -> Result<Slot<'_>> {
        self.queue.take_room(wait).await?;
        Ok(self.slot())
    }

    /// Reserves room for one append if the write queue has some now; `None` when full.
    pub(crate) fn try_reserve(&self) -> Result<Option<Slot<'_>>> {
        Ok(self.queue.try_take_room()?.then(|| self.slot()))
    }

    /// A slot for room already taken.
    fn slot(&self) -> Slot<'_> {
        Slot {
            handle: self,
            used: false,
        }
    }

    /// fsyncs everything acknowledged so far.
    pub(crate) async fn sync(&self) -> Result<()> {
        self.queue.job(|w| Box::pin(w.sync_now())).await
    }

    /// Runs retention now.
    pub(crate) async fn retention(&self, now_ms: i64) -> Result<RetentionOutcome> {
        self.queue
            .job(move |w| Box::pin(w.enforce_retention(now_ms)))
            .await
    }

    /// Moves the log start up to `to` (`None`: the high watermark); the log start
    /// afterwards.
    pub(crate) async fn delete_records(&self, to: Option<u64>) -> Result<u64> {
        self.queue
            .job(move |w| Box::pin(w.delete_records(to)))
            .await
    }

    /// Installs a compacted segment.
    pub(crate) async fn swap(&self, swap: SegmentSwap) -> Result<SwapOutcome> {
        self.queue
            .job(move |w| Box::pin(w.install_swap(swap)))
            .await
    }

    /// Uses a new configuration from the next group on.
    pub(crate) async fn update_config(&self, config: Arc<TopicConfig>) -> Result<()> {
        self.queue
            .job(move |w| {
                Box::pin(async move {
                    w.set_config(config);
                    Ok(())
                })
            })
            .await
    }

    /// Writes what is queued, refuses later appends, fsyncs and writes the indexes.
    pub(crate) async fn shutdown(&self) -> Result<()> {
        self.shut_down.store(true, Ordering::Release);
        match self.queue.last_job(|w| Box::pin(w.shutdown())).await {
            Err(KafkoError::ShuttingDown) => Ok(()),
            other => other,
        }
    }

    /// Appends waiting in (or reserved in) the write queue.
    pub(crate) fn queue_depth(&self) -> usize {
        self.queue.depth()
    }
}

impl Drop for PartitionHandle {
    /// A partition dropped without `shutdown` still leaves its data durable, when a
    /// runtime is there to run the shutdown.
    fn drop(&mut self) {
        if self.shut_down.load(Ordering::Acquire) {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let queue = self.queue.clone();
            runtime.spawn(async move {
                let _ = queue.last_job(|w| Box::pin(w.shutdown())).await;
            });
        }
    }
}

/// Room for one append in a partition's write queue, reserved by
/// [`PartitionHandle::reserve`].
pub(crate) struct Slot<'a> {
    handle: &'a PartitionHandle,
    used: bool,
}

impl Slot<'_> {
    /// Hands `batches` over (it cannot be refused for room: the room is reserved). When
    /// the partition is idle this writes them now, on the caller's task. `may_form`: the
    /// caller awaits this answer next, so it may take a group's forming turn (a send to
    /// several partitions must not hold one partition's turn while awaiting another).
    pub(crate) fn append(mut self, batches: Batches, sync: bool, may_form: bool) -> PendingAppend {
        self.used = true;
        let (reply, rx) = oneshot::channel();
        let queue = &self.handle.queue;
        let forming = queue.hand_over(
            Entry {
                batches,
                sync,
                reply,
            },
            may_form,
        );
        PendingAppend {
            wait: AppendWait::new(queue.clone(), rx, forming),
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.handle.queue.release_room(1);
        }
    }
}

/// An append handed over: its answer (the first batch's base offset) to come.
pub(crate) struct PendingAppend {
    wait: AppendWait,
}

impl PendingAppend {
    /// Waits for the answer. A partition shut down (or lost in a panic) before writing
    /// the append is `ShuttingDown` (or `PartitionPanicked`).
    pub(crate) async fn reply(self) -> Result<u64> {
        self.wait.answer().await
    }
}
