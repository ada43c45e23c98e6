//! What sending takes from a topic: its send rules (the config fields a send checks),
//! the routing of one record to a partition, and the topic's send entry points. Kept
//! beside the send so that `topic` knows nothing of sending.

use std::sync::atomic::Ordering;

use crate::config::{Compression, TopicConfig};
use crate::convert::{u32_saturating, usize_saturating};
use crate::error::{KafkoError, ProduceError, Result};
use crate::record::{ProducerRecord, RecordMetadata, now_ms};
use crate::routing::partition_for_key;
use crate::segment::batch::{self, RecordFields};
use crate::topic::Topic;

use super::{RecordRef, SendBatch, check_batch_size};

/// How a send waits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendOptions {
    /// fsync before acknowledging, whatever the topic's policy.
    pub sync: bool,
    /// Fail with `Backpressure` instead of waiting when a partition's write queue is full.
    pub no_wait: bool,
}

impl Topic {
    pub(crate) fn send_rules(&self) -> SendRules {
        SendRules::of(&self.config.read().unwrap_or_else(|p| p.into_inner()))
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
