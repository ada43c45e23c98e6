//! The async face of a partition: sends commands to its writer task and maps a vanished
//! writer to a typed error (panicked vs shut down).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::PartitionLog;
use super::command::{Batches, Command, RetentionOutcome, SegmentSwap};
use super::writer::{Writer, WriterState};
use crate::config::TopicConfig;
use crate::error::{KafkoError, Result};
use crate::segment::Segment;
use crate::segment::batch::EncodedBatch;

/// Commands a partition's inbox holds before producers see backpressure.
pub(crate) const INBOX_CAPACITY: usize = 1024;

pub(crate) struct PartitionHandle {
    pub(crate) log: Arc<PartitionLog>,
    tx: mpsc::Sender<Command>,
    state: Arc<WriterState>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl PartitionHandle {
    /// Starts the writer task for an opened partition.
    pub(crate) fn spawn(
        log: Arc<PartitionLog>,
        config: Arc<TopicConfig>,
        active: Arc<Segment>,
    ) -> Self {
        let (tx, rx) = mpsc::channel(INBOX_CAPACITY);
        let state = Arc::new(WriterState::default());
        let writer = Writer::new(log.clone(), rx, config, active, state.clone());
        let task = tokio::spawn(writer.run());
        PartitionHandle {
            log,
            tx,
            state,
            task: Mutex::new(Some(task)),
        }
    }

    fn gone(&self) -> KafkoError {
        if self.state.panicked.load(Ordering::Acquire) {
            KafkoError::PartitionPanicked {
                topic: self.log.topic.to_string(),
                partition: self.log.partition,
            }
        } else {
            KafkoError::ShuttingDown
        }
    }

    /// Appends a batch. With `wait`, a full inbox waits; without, it is `Backpressure`.
    pub(crate) async fn append(&self, batch: EncodedBatch, sync: bool, wait: bool) -> Result<u64> {
        self.reserve(wait)
            .await?
            .append(Batches::One(batch), sync)
            .reply()
            .await
    }

    /// Reserves room for one command in the inbox. With `wait`, a full inbox waits for a
    /// slot; without, it is `Backpressure`. A slot that is dropped unused frees its room:
    /// a send reserves every partition it needs before it hands anything over.
    pub(crate) async fn reserve(&self, wait: bool) -> Result<Slot<'_>> {
        // `try_reserve` first: it cannot overtake producers already waiting (the inbox
        // hands a freed slot to the longest waiter first).
        let permit = match self.tx.try_reserve() {
            Ok(permit) => permit,
            Err(TrySendError::Full(())) if wait => {
                self.tx.reserve().await.map_err(|_| self.gone())?
            }
            Err(TrySendError::Full(())) => {
                return Err(KafkoError::Backpressure {
                    topic: self.log.topic.to_string(),
                    partition: self.log.partition,
                });
            }
            Err(TrySendError::Closed(())) => return Err(self.gone()),
        };
        Ok(Slot {
            handle: self,
            permit,
        })
    }

    async fn request<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T>>) -> Command,
    ) -> Result<T> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(make(reply)).await.map_err(|_| self.gone())?;
        rx.await.map_err(|_| self.gone())?
    }

    /// fsyncs everything acknowledged so far.
    pub(crate) async fn sync(&self) -> Result<()> {
        self.request(|reply| Command::Sync { reply }).await
    }

    /// Runs retention now.
    pub(crate) async fn retention(&self, now_ms: i64) -> Result<RetentionOutcome> {
        self.request(|reply| Command::Retention { now_ms, reply })
            .await
    }

    /// Installs a compacted segment.
    pub(crate) async fn swap(&self, swap: SegmentSwap) -> Result<()> {
        self.request(|reply| Command::Swap {
            swap: Box::new(swap),
            reply,
        })
        .await
    }

    /// Hands the writer a new configuration.
    pub(crate) async fn update_config(&self, config: Arc<TopicConfig>) -> Result<()> {
        self.tx
            .send(Command::UpdateConfig { config })
            .await
            .map_err(|_| self.gone())
    }

    /// Drains the inbox, fsyncs, writes indexes and waits for the task to end.
    pub(crate) async fn shutdown(&self) -> Result<()> {
        let result = match self.request(|reply| Command::Shutdown { reply }).await {
            Err(KafkoError::ShuttingDown) => Ok(()),
            other => other,
        };
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task
            && let Err(e) = task.await
            && e.is_panic()
        {
            return Err(KafkoError::PartitionPanicked {
                topic: self.log.topic.to_string(),
                partition: self.log.partition,
            });
        }
        result
    }

    /// Commands waiting in the inbox.
    pub(crate) fn queue_depth(&self) -> usize {
        INBOX_CAPACITY - self.tx.capacity()
    }
}

/// Room for one command in a partition's inbox, reserved by [`PartitionHandle::reserve`].
pub(crate) struct Slot<'a> {
    handle: &'a PartitionHandle,
    permit: mpsc::Permit<'a, Command>,
}

impl<'a> Slot<'a> {
    /// Hands `batches` to the writer (it cannot fail: the room is reserved).
    pub(crate) fn append(self, batches: Batches, sync: bool) -> PendingAppend<'a> {
        let (reply, rx) = oneshot::channel();
        self.permit.send(Command::Append {
            batches,
            sync,
            reply,
        });
        PendingAppend {
            handle: self.handle,
            rx,
        }
    }
}

/// An append handed to a writer: its reply (the first batch's base offset) to come.
pub(crate) struct PendingAppend<'a> {
    handle: &'a PartitionHandle,
    rx: oneshot::Receiver<Result<u64>>,
}

impl PendingAppend<'_> {
    /// Waits for the writer's answer. A writer that is gone (its inbox and the append in
    /// it dropped) is `ShuttingDown` or `PartitionPanicked`.
    pub(crate) async fn reply(self) -> Result<u64> {
        self.rx.await.map_err(|_| self.handle.gone())?
    }
}
