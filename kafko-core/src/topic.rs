//! A topic: its persisted config and its partitions (how records are routed to them and
//! sent: `send::topic_send`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use crate::activity::Activity;
use crate::config::TopicConfig;
use crate::convert::u32_saturating;
use crate::error::{KafkoError, Result};
use crate::partition::handle::PartitionHandle;
use crate::partition_list::PartitionList;
use crate::topic_id::TopicId;

/// Per-partition facts for `describe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    /// Partition number.
    pub partition: u32,
    /// First offset still stored.
    pub log_start_offset: u64,
    /// One past the last offset.
    pub high_watermark: u64,
    /// Bytes on disk (segment files).
    pub size_bytes: u64,
    /// Number of segment files.
    pub segments: usize,
    /// Appends waiting in the partition's write queue.
    pub queue_depth: usize,
    /// Write groups written since the partition was opened: each is one `write` of the
    /// appends that queued up while the previous one was written.
    pub write_groups: u64,
    /// Appends those groups held (`appends_written / write_groups` is the mean group size).
    pub appends_written: u64,
}

/// A topic's config and partition facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicDescription {
    /// Topic name.
    pub name: String,
    /// This incarnation of the topic: a topic deleted and created again has a new id.
    pub topic_id: TopicId,
    /// Current configuration.
    pub config: TopicConfig,
    /// One entry per partition.
    pub partitions: Vec<PartitionInfo>,
}

pub(crate) struct Topic {
    pub(crate) name: Arc<str>,
    pub(crate) id: TopicId,
    pub(crate) dir: PathBuf,
    pub(crate) config: RwLock<Arc<TopicConfig>>,
    /// Grows when partitions are added, never shrinks.
    pub(crate) partitions: PartitionList,
    /// Next partition for keyless batches (sticky per batch, round robin across batches).
    pub(crate) round_robin: AtomicU32,
    pub(crate) deleted: AtomicBool,
    /// Woken whenever any partition's high watermark moves.
    pub(crate) activity: Arc<Activity>,
    /// Readers waiting for records of this topic ([`WaitingReader`]).
    waiting: AtomicUsize,
}

/// One reader counted as waiting for its topic's records until dropped, on whichever
/// path its wait ends.
pub(crate) struct WaitingReader(Arc<Topic>);

impl Drop for WaitingReader {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Topic {
    pub(crate) fn new(
        name: Arc<str>,
        id: TopicId,
        dir: PathBuf,
        config: TopicConfig,
        partitions: Vec<PartitionHandle>,
        activity: Arc<Activity>,
    ) -> Self {
        Topic {
            name,
            id,
            dir,
            config: RwLock::new(Arc::new(config)),
            partitions: PartitionList::new(partitions),
            round_robin: AtomicU32::new(0),
            deleted: AtomicBool::new(false),
            activity,
            waiting: AtomicUsize::new(0),
        }
    }

    /// Counts a reader as waiting for this topic's records until the guard drops.
    pub(crate) fn wait_begins(self: &Arc<Self>) -> WaitingReader {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        WaitingReader(self.clone())
    }

    /// Readers waiting for this topic's records now.
    pub(crate) fn waiting_readers(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    pub(crate) fn config(&self) -> Arc<TopicConfig> {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn set_config(&self, config: Arc<TopicConfig>) {
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = config;
    }

    /// Number of partitions (raised by `Kafko::create_partitions`, never lowered).
    pub(crate) fn partition_count(&self) -> u32 {
        u32_saturating(self.partitions.len())
    }

    pub(crate) fn check_live(&self) -> Result<()> {
        if self.deleted.load(Ordering::Acquire) {
            return Err(KafkoError::TopicDeleted {
                topic: self.name.to_string(),
            });
        }
        Ok(())
    }

    pub(crate) fn partition(&self, partition: u32) -> Result<&PartitionHandle> {
        self.check_live()?;
        self.partitions
            .get(partition as usize)
            .ok_or_else(|| KafkoError::PartitionNotFound {
                topic: self.name.to_string(),
                partition,
                partitions: self.partition_count(),
            })
    }

    pub(crate) fn describe(&self) -> TopicDescription {
        TopicDescription {
            name: self.name.to_string(),
            topic_id: self.id,
            config: (*self.config()).clone(),
            partitions: self
                .partitions
                .iter()
                .map(|p| {
                    let segs = p.log.segments();
                    let (write_groups, appends_written) = p.log.write_groups();
                    PartitionInfo {
                        partition: p.log.partition,
                        log_start_offset: p.log.log_start(),
                        high_watermark: p.log.high_watermark(),
                        size_bytes: segs.iter().map(|s| s.len()).sum(),
                        segments: segs.len(),
                        queue_depth: p.queue_depth(),
                        write_groups,
                        appends_written,
                    }
                })
                .collect(),
        }
    }
}
