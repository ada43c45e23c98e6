//! A topic: its persisted config, its partitions, and the routing of records to them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde::Serialize;
use tokio::sync::Notify;

use crate::config::{Compression, TopicConfig};
use crate::error::{KafkoError, Result};
use crate::partition::handle::PartitionHandle;
use crate::record::{ProducerRecord, RecordMetadata, now_ms};
use crate::routing::partition_for_key;
use crate::segment::batch::{self, RecordFields};

/// How a send waits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendOptions {
    /// fsync before acknowledging, whatever the topic's policy.
    pub sync: bool,
    /// Fail with `Backpressure` instead of waiting when a partition's inbox is full.
    pub no_wait: bool,
}

/// Per-partition facts for `describe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// Appends waiting in the writer's inbox.
    pub queue_depth: usize,
}

/// A topic's config and partition facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TopicDescription {
    /// Topic name.
    pub name: String,
    /// Current configuration.
    pub config: TopicConfig,
    /// One entry per partition.
    pub partitions: Vec<PartitionInfo>,
}

pub(crate) struct Topic {
    pub(crate) name: Arc<str>,
    pub(crate) dir: PathBuf,
    config: RwLock<Arc<TopicConfig>>,
    pub(crate) partitions: Vec<PartitionHandle>,
    /// Next partition for keyless batches (sticky per batch, round robin across batches).
    round_robin: AtomicU32,
    /// The config fields every send needs, packed for a plain atomic load: producers on
    /// several threads would otherwise contend on the config lock's counters per send.
    send_rules: AtomicU64,
    pub(crate) deleted: AtomicBool,
    /// Woken whenever any partition's high watermark moves.
    pub(crate) activity: Arc<Notify>,
}

impl Topic {
    pub(crate) fn new(
        name: Arc<str>,
        dir: PathBuf,
        config: TopicConfig,
        partitions: Vec<PartitionHandle>,
        activity: Arc<Notify>,
    ) -> Self {
        Topic {
            name,
            dir,
            send_rules: AtomicU64::new(SendRules::of(&config).pack()),
            config: RwLock::new(Arc::new(config)),
            partitions,
            round_robin: AtomicU32::new(0),
            deleted: AtomicBool::new(false),
            activity,
        }
    }

    pub(crate) fn config(&self) -> Arc<TopicConfig> {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn set_config(&self, config: Arc<TopicConfig>) {
        self.send_rules
            .store(SendRules::of(&config).pack(), Ordering::Release);
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = config;
    }

    fn send_rules(&self) -> SendRules {
        SendRules::unpack(self.send_rules.load(Ordering::Acquire))
    }

    pub(crate) fn check_live(&self) -> Result<()> {
        if self.deleted.load(Ordering::Acquire) {
            return Err(KafkoError::TopicNotFound {
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
                partitions: self.partitions.len() as u32,
            })
    }

    pub(crate) fn describe(&self) -> TopicDescription {
        TopicDescription {
            name: self.name.to_string(),
            config: (*self.config()).clone(),
            partitions: self
                .partitions
                .iter()
                .map(|p| {
                    let segs = p.log.segments();
                    PartitionInfo {
                        partition: p.log.partition,
                        log_start_offset: p.log.log_start(),
                        high_watermark: p.log.high_watermark(),
                        size_bytes: segs.iter().map(|s| s.len()).sum(),
                        segments: segs.len(),
                        queue_depth: p.queue_depth(),
                    }
                })
                .collect(),
        }
    }

    /// Validates, routes, encodes and appends records; one atomic batch per partition.
    /// Checks one record against the topic's rules and picks its partition: explicit,
    /// else by key, else `keyless()` (sticky per request).
    fn route(
        &self,
        config: SendRules,
        r: &ProducerRecord,
        keyless: impl FnOnce() -> u32,
    ) -> Result<u32> {
        let size = r.size();
        if size as u64 > config.max_record_bytes {
            return Err(KafkoError::RecordTooLarge {
                size,
                max: config.max_record_bytes as usize,
            });
        }
        if config.compacts && r.key.is_none() {
            return Err(KafkoError::KeyRequired {
                topic: self.name.to_string(),
            });
        }
        match (r.partition, &r.key) {
            (Some(p), _) => self.partition(p).map(|_| p),
            (None, Some(key)) => Ok(partition_for_key(key, self.partitions.len() as u32)),
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
        let config = self.send_rules();
        let partition = self.route(config, &record, || match self.partitions.len() {
            1 => 0,
            n => self.round_robin.fetch_add(1, Ordering::Relaxed) % n as u32,
        })?;
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let fields = std::iter::once(RecordFields {
            offset_delta: 0,
            timestamp,
            key: record.key.as_deref(),
            value: record.value.as_deref(),
            headers: &record.headers,
        });
        let batch = encode_checked(config.compression, fields)?;
        let offset = self.partitions[partition as usize]
            .append(batch, opts.sync, !opts.no_wait)
            .await?;
        Ok(RecordMetadata {
            partition,
            offset,
            timestamp,
        })
    }

    pub(crate) async fn send(
        &self,
        records: Vec<ProducerRecord>,
        opts: SendOptions,
    ) -> Result<Vec<RecordMetadata>> {
        let records = match <[ProducerRecord; 1]>::try_from(records) {
            // One record (most REST calls, a `send_batch` of one) skips the batch grouping.
            Ok([record]) => return Ok(vec![self.send_one(record, opts).await?]),
            Err(records) => records,
        };
        self.check_live()?;
        if records.is_empty() {
            return Err(KafkoError::InvalidRequest {
                reason: "a send needs at least one record".into(),
            });
        }
        let config = self.send_rules();
        let n = self.partitions.len() as u32;
        let sticky = self.round_robin.fetch_add(1, Ordering::Relaxed) % n;
        let now = now_ms();
        let mut routed = Vec::with_capacity(records.len());
        let mut timestamps = Vec::with_capacity(records.len());
        for r in &records {
            routed.push(self.route(config, r, || sticky)?);
            timestamps.push(r.timestamp.unwrap_or(now));
        }
        // Usually every record goes to one partition (a single send, a keyless batch).
        let groups: BTreeMap<u32, Vec<usize>> = if routed.iter().all(|&p| p == routed[0]) {
            BTreeMap::from([(routed[0], (0..records.len()).collect())])
        } else {
            let mut g: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
            for (i, &p) in routed.iter().enumerate() {
                g.entry(p).or_default().push(i);
            }
            g
        };
        let mut out = vec![
            RecordMetadata {
                partition: 0,
                offset: 0,
                timestamp: 0
            };
            records.len()
        ];
        let mut encoded = Vec::with_capacity(groups.len());
        for (&p, idxs) in &groups {
            let fields = idxs.iter().enumerate().map(|(delta, &i)| RecordFields {
                offset_delta: delta as u32,
                timestamp: timestamps[i],
                key: records[i].key.as_deref(),
                value: records[i].value.as_deref(),
                headers: &records[i].headers,
            });
            let b = encode_checked(config.compression, fields)?;
            encoded.push((p, b));
        }
        for (p, b) in encoded {
            let base = self.partitions[p as usize]
                .append(b, opts.sync, !opts.no_wait)
                .await?;
            for (delta, &i) in groups[&p].iter().enumerate() {
                out[i] = RecordMetadata {
                    partition: p,
                    offset: base + delta as u64,
                    timestamp: timestamps[i],
                };
            }
        }
        Ok(out)
    }
}

/// Encodes a batch and checks it against the on-disk batch limit.
fn encode_checked<'a>(
    codec: Compression,
    fields: impl ExactSizeIterator<Item = RecordFields<'a>> + Clone,
) -> Result<batch::EncodedBatch> {
    let b = batch::encode(codec, fields).map_err(|reason| KafkoError::InvalidRequest { reason })?;
    if b.framed_len() as u64 > crate::config::MAX_BATCH_BYTES {
        return Err(KafkoError::RecordTooLarge {
            size: b.framed_len(),
            max: crate::config::MAX_BATCH_BYTES as usize,
        });
    }
    Ok(b)
}

/// The config fields a send checks, packed into one `u64`: bits 0–39 `max_record_bytes`
/// (validated ≤ 32 MiB), bits 40–47 the codec id, bit 48 "compacted".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SendRules {
    max_record_bytes: u64,
    compression: Compression,
    compacts: bool,
}

impl SendRules {
    fn of(config: &TopicConfig) -> Self {
        SendRules {
            max_record_bytes: config.max_record_bytes,
            compression: config.compression,
            compacts: config.cleanup_policy.compacts(),
        }
    }

    fn pack(self) -> u64 {
        (self.max_record_bytes & ((1 << 40) - 1))
            | (u64::from(self.compression.id()) << 40)
            | (u64::from(self.compacts) << 48)
    }

    fn unpack(v: u64) -> Self {
        SendRules {
            max_record_bytes: v & ((1 << 40) - 1),
            compression: Compression::from_id((v >> 40) as u8).unwrap_or_default(),
            compacts: v & (1 << 48) != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::CleanupPolicy;

    #[test]
    fn send_rules_survive_packing() {
        for compression in [Compression::None, Compression::Lz4, Compression::Zstd] {
            for cleanup_policy in [CleanupPolicy::Delete, CleanupPolicy::Compact] {
                let config = TopicConfig {
                    compression,
                    cleanup_policy,
                    max_record_bytes: 32 * 1024 * 1024,
                    ..Default::default()
                };
                let rules = SendRules::of(&config);
                assert_eq!(SendRules::unpack(rules.pack()), rules);
            }
        }
    }
}
