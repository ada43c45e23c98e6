//! A topic: its persisted config, its partitions, and the routing of records to them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use crate::activity::Activity;

use crate::config::{Compression, TopicConfig};
use crate::convert::{u32_saturating, usize_saturating};
use crate::error::{KafkoError, ProduceError, Result};
use crate::partition::handle::PartitionHandle;
use crate::record::{ProducerRecord, RecordMetadata, now_ms};
use crate::routing::partition_for_key;
use crate::segment::batch::{self, RecordFields};
use crate::send::{RecordRef, SendBatch, check_batch_size};
use crate::topic_id::TopicId;

/// How a send waits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendOptions {
    /// fsync before acknowledging, whatever the topic's policy.
    pub sync: bool,
    /// Fail with `Backpressure` instead of waiting when a partition's write queue is full.
    pub no_wait: bool,
}

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
    config: RwLock<Arc<TopicConfig>>,
    pub(crate) partitions: Vec<PartitionHandle>,
    /// Next partition for keyless batches (sticky per batch, round robin across batches).
    round_robin: AtomicU32,
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
            partitions,
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

    fn send_rules(&self) -> SendRules {
        SendRules::of(&self.config.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Number of partitions (fixed at creation).
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

    /// Checks one record against the topic's rules and picks its partition: explicit,
    /// else by key, else `keyless()` (sticky per send).
    pub(crate) fn route(
        &self,
        rules: SendRules,
        r: &RecordRef<'_>,
        keyless: impl FnOnce() -> u32,
    ) -> Result<u32> {
        let size = r.size();
        if size as u64 > rules.max_record_bytes {
            return Err(KafkoError::RecordTooLarge {
                size,
                max: usize_saturating(rules.max_record_bytes),
            });
        }
        if rules.compacts && r.key.is_none() {
            return Err(KafkoError::KeyRequired {
                topic: self.name.to_string(),
            });
        }
        match (r.partition, r.key) {
            (Some(p), _) => self.partition(p).map(|_| p),
            (None, Some(key)) => Ok(partition_for_key(key, self.partition_count())),
            (None, None) => Ok(keyless()),
        }
    }

    /// Appends one record: the common case, without the per-partition grouping of
    /// [`send`](Self::send).
    pub(crate) async fn send_one(
        &self,
        record: ProducerRecord,
        opts: SendOptions,
    ) -> Result<RecordMetadata> {
        self.check_live()?;
        let rules = self.send_rules();
        let partition = self.route(rules, &RecordRef::from(&record), || {
            match self.partitions.len() {
                1 => 0,
                n => self.round_robin.fetch_add(1, Ordering::Relaxed) % u32_saturating(n),
            }
        })?;
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let fields = std::iter::once(RecordFields {
            offset_delta: 0,
            timestamp,
            key: record.key.as_deref(),
            value: record.value.as_deref(),
            headers: &record.headers,
        });
        let batch = batch::encode(rules.compression, fields)
            .map_err(|reason| KafkoError::InvalidRequest { reason })
            .and_then(check_batch_size)?;
        let offset = self.partitions[partition as usize]
            .append(batch, opts.sync, !opts.no_wait)
            .await?;
        Ok(RecordMetadata {
            partition,
            offset,
            timestamp,
        })
    }

    /// A send to be built record by record (see [`SendBatch`]); its keyless records go to
    /// one partition, round robin across sends.
    pub(crate) fn batch(&self) -> SendBatch<'_> {
        let sticky = match self.partitions.len() {
            1 => 0,
            n => self.round_robin.fetch_add(1, Ordering::Relaxed) % u32_saturating(n),
        };
        SendBatch::new(self, self.send_rules(), sticky)
    }

    /// Appends records, all partitions at once; each partition's records are appended
    /// together, at consecutive offsets (see [`SendBatch::send`]).
    pub(crate) async fn send(
        &self,
        records: Vec<ProducerRecord>,
        opts: SendOptions,
    ) -> Result<Vec<RecordMetadata>, ProduceError> {
        let records = match <[ProducerRecord; 1]>::try_from(records) {
            // One record (most REST calls, a `send_batch` of one) skips the batch grouping.
            Ok([record]) => return Ok(vec![self.send_one(record, opts).await?]),
            Err(records) => records,
        };
        self.check_live()?;
        let mut batch = self.batch();
        for r in &records {
            batch.push(RecordRef::from(r))?;
        }
        Ok(batch.send(opts).await?.records().collect())
    }
}

/// The config fields a send checks, copied out of the config once per send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SendRules {
    pub(crate) max_record_bytes: u64,
    pub(crate) compression: Compression,
    pub(crate) compacts: bool,
}

impl SendRules {
    fn of(config: &TopicConfig) -> Self {
        SendRules {
            max_record_bytes: config.max_record_bytes,
            compression: config.compression,
            compacts: config.cleanup_policy.compacts(),
        }
    }
}
