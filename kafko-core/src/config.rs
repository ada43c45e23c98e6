//! Topic and group configuration: what a topic is created with, what can change later,
//! and the validation that keeps every value in range; a group's options. Plain Rust types: how a config is stored
//! (`topic.json`) and how it travels over HTTP are separate types with their own
//! conversions, so each can change without the others.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::error::{KafkoError, Result};

/// Codec applied to each batch's record area: Kafka's `compression.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Kafka's `producer`: a Kafka producer's batch is stored with the codec it was sent
    /// with; records kafko encodes itself (`/v1`, the REST Proxy, the library) are
    /// stored uncompressed.
    #[default]
    Producer,
    /// Stored uncompressed.
    None,
    /// gzip.
    Gzip,
    /// snappy (snappy-java's framing, as Kafka's producers write it).
    Snappy,
    /// LZ4 frames.
    Lz4,
    /// Zstandard, level 1.
    Zstd,
}

/// When acknowledged writes reach stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsyncPolicy {
    /// Acknowledged once in the OS page cache (survives a process crash, not a power cut).
    #[default]
    Never,
    /// fsync at most this many milliseconds after a write.
    IntervalMs {
        /// Maximum age of unsynced acknowledged data.
        interval_ms: u64,
    },
    /// Acknowledged only after an fsync that began after the batch was written; one fsync
    /// covers every batch written before it, and batches keep being written while it runs.
    Always,
}

/// What happens to old records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CleanupPolicy {
    /// Delete whole segments by age and size.
    #[default]
    Delete,
    /// Keep the latest record per key.
    Compact,
    /// Both: compact, and delete by age and size.
    CompactDelete,
}

impl CleanupPolicy {
    /// Whether the cleaner compacts this topic.
    pub fn compacts(self) -> bool {
        matches!(self, CleanupPolicy::Compact | CleanupPolicy::CompactDelete)
    }
    /// Whether retention deletes old segments.
    pub fn deletes(self) -> bool {
        matches!(self, CleanupPolicy::Delete | CleanupPolicy::CompactDelete)
    }
}

/// A topic's configuration. `partitions` only grows (`Kafko::create_partitions`); the
/// rest can be updated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicConfig {
    /// Number of partitions (1..=1024).
    pub partitions: u32,
    /// Batch codec.
    pub compression: Compression,
    /// Delete sealed segments whose newest record is older than this; `None` keeps forever.
    pub retention_ms: Option<u64>,
    /// Delete the oldest sealed segments while a partition is larger; `None` = unbounded.
    pub retention_bytes: Option<u64>,
    /// Roll the active segment when it would exceed this size.
    pub segment_bytes: u64,
    /// Roll the active segment before an append whose newest timestamp is this many
    /// milliseconds past the newest timestamp of the segment's first batch (Kafka's
    /// `segment.ms`; record time, not wall time, so an idle topic does not roll).
    pub segment_ms: u64,
    /// Durability of acknowledged writes.
    pub fsync: FsyncPolicy,
    /// Largest accepted record (key + value + headers).
    pub max_record_bytes: u64,
    /// Delete, compact or both.
    pub cleanup_policy: CleanupPolicy,
    /// Compaction keeps records younger than this out of cleaning.
    pub min_compaction_lag_ms: u64,
    /// Compaction keeps tombstones this long after they were cleaned once.
    pub delete_retention_ms: u64,
    /// Configs a client protocol set by name (Kafka's topic configs).
    pub client: ClientConfigs,
}

/// Topic configs a client protocol set by name, kept with the topic so that it describes
/// them back as set: which of the configs the log acts on were set explicitly (rather
/// than left at the server's default), and the values of those the log keeps without
/// acting on them (settings that have no meaning on one node).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientConfigs {
    /// Names of configs the log acts on that were set explicitly.
    pub overridden: BTreeSet<String>,
    /// Values of configs the log keeps without acting on them, by name.
    pub stored: BTreeMap<String, String>,
}

/// The most bytes of names and values [`ClientConfigs`] holds for one topic.
pub const MAX_CLIENT_CONFIG_BYTES: usize = 64 * 1024;

impl ClientConfigs {
    /// Bytes of its names and values.
    pub fn bytes(&self) -> usize {
        self.overridden.iter().map(String::len).sum::<usize>()
            + self
                .stored
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }

    /// Whether `name` was set (explicitly, or stored).
    pub fn is_set(&self, name: &str) -> bool {
        self.overridden.contains(name) || self.stored.contains_key(name)
    }
}

/// Alias with the seed's name.
pub type LogConfig = TopicConfig;

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            partitions: 1,
            compression: Compression::None,
            retention_ms: Some(7 * 24 * 3600 * 1000),
            retention_bytes: None,
            segment_bytes: 64 * 1024 * 1024,
            segment_ms: DEFAULT_SEGMENT_MS,
            fsync: FsyncPolicy::Never,
            max_record_bytes: 1024 * 1024,
            cleanup_policy: CleanupPolicy::Delete,
            min_compaction_lag_ms: 0,
            delete_retention_ms: 24 * 3600 * 1000,
            client: ClientConfigs::default(),
        }
    }
}

/// Kafka's default `segment.ms`: 7 days.
pub const DEFAULT_SEGMENT_MS: u64 = 7 * 24 * 3600 * 1000;

/// Hard ceiling for a single batch on disk; see FORMAT.md.
pub const MAX_BATCH_BYTES: u64 = 64 * 1024 * 1024;

impl TopicConfig {
    /// Checks every value is in range.
    ///
    /// # Errors
    /// [`KafkoError::InvalidConfig`] naming the first value out of range.
    pub fn validate(&self) -> Result<()> {
        let bad = |reason: String| Err(KafkoError::InvalidConfig { reason });
        if !(1..=1024).contains(&self.partitions) {
            return bad(format!(
                "partitions must be 1..=1024, got {}",
                self.partitions
            ));
        }
        if !(4096..=1 << 32).contains(&self.segment_bytes) {
            return bad(format!(
                "segment_bytes must be 4096..=4294967296, got {}",
                self.segment_bytes
            ));
        }
        if self.segment_ms == 0 {
            return bad("segment_ms must be at least 1".into());
        }
        if self.max_record_bytes == 0 || self.max_record_bytes > MAX_BATCH_BYTES / 2 {
            return bad(format!(
                "max_record_bytes must be 1..={}, got {}",
                MAX_BATCH_BYTES / 2,
                self.max_record_bytes
            ));
        }
        if let FsyncPolicy::IntervalMs { interval_ms } = self.fsync
            && interval_ms == 0
        {
            return bad("fsync interval_ms must be > 0 (use always)".into());
        }
        // Times and sizes are signed 64-bit, as in Kafka (and the OpenAPI `int64`): a
        // larger retention_ms once wrapped negative and expired every sealed segment.
        let longs = [
            ("retention_ms", self.retention_ms),
            ("retention_bytes", self.retention_bytes),
            ("segment_ms", Some(self.segment_ms)),
            ("min_compaction_lag_ms", Some(self.min_compaction_lag_ms)),
            ("delete_retention_ms", Some(self.delete_retention_ms)),
            (
                "fsync interval_ms",
                match self.fsync {
                    FsyncPolicy::IntervalMs { interval_ms } => Some(interval_ms),
                    _ => None,
                },
            ),
        ];
        for (name, value) in longs {
            if let Some(v) = value
                && v > i64::MAX as u64
            {
                return bad(format!("{name} must be at most {}, got {v}", i64::MAX));
            }
        }
        let client = self.client.bytes();
        if client > MAX_CLIENT_CONFIG_BYTES {
            return bad(format!(
                "client configs must hold at most {MAX_CLIENT_CONFIG_BYTES} bytes of names and values, got {client}"
            ));
        }
        Ok(())
    }

    /// Applies an update, refusing changes to immutable fields.
    ///
    /// # Errors
    /// [`KafkoError::InvalidConfig`] for a change of `partitions` or a resulting value
    /// out of range.
    pub fn apply(&self, update: &TopicConfigUpdate) -> Result<TopicConfig> {
        let mut next = self.clone();
        if let Some(p) = update.partitions
            && p != self.partitions
        {
            return Err(KafkoError::InvalidConfig {
                reason: "partitions cannot be changed after creation".into(),
            });
        }
        if let Some(v) = update.compression {
            next.compression = v;
        }
        if let Some(v) = update.retention_ms {
            next.retention_ms = v;
        }
        if let Some(v) = update.retention_bytes {
            next.retention_bytes = v;
        }
        if let Some(v) = update.segment_bytes {
            next.segment_bytes = v;
        }
        if let Some(v) = update.segment_ms {
            next.segment_ms = v;
        }
        if let Some(v) = update.fsync {
            next.fsync = v;
        }
        if let Some(v) = update.max_record_bytes {
            next.max_record_bytes = v;
        }
        if let Some(v) = update.cleanup_policy {
            next.cleanup_policy = v;
        }
        if let Some(v) = update.min_compaction_lag_ms {
            next.min_compaction_lag_ms = v;
        }
        if let Some(v) = update.delete_retention_ms {
            next.delete_retention_ms = v;
        }
        next.validate()?;
        Ok(next)
    }
}

/// A partial update of a [`TopicConfig`]; absent fields keep their value.
/// `retention_ms`/`retention_bytes` take `Some(None)` to remove the limit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicConfigUpdate {
    /// Must equal the current count if present.
    pub partitions: Option<u32>,
    /// New codec (applies to new batches).
    pub compression: Option<Compression>,
    /// New time retention.
    pub retention_ms: Option<Option<u64>>,
    /// New size retention.
    pub retention_bytes: Option<Option<u64>>,
    /// New segment size.
    pub segment_bytes: Option<u64>,
    /// New segment age (record time).
    pub segment_ms: Option<u64>,
    /// New fsync policy.
    pub fsync: Option<FsyncPolicy>,
    /// New record limit.
    pub max_record_bytes: Option<u64>,
    /// New cleanup policy.
    pub cleanup_policy: Option<CleanupPolicy>,
    /// New compaction lag.
    pub min_compaction_lag_ms: Option<u64>,
    /// New tombstone retention.
    pub delete_retention_ms: Option<u64>,
}

/// Longest accepted session timeout.
pub const MAX_SESSION_TIMEOUT: Duration = Duration::from_secs(3600);

/// Where a group starts when it has no valid offset for a partition (none committed, or
/// the committed one is outside the log, e.g. removed by retention): Kafka's
/// `auto.offset.reset`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OffsetReset {
    /// The log start offset (oldest record still stored).
    #[default]
    Earliest,
    /// The high watermark when the partition is first read (only records produced from
    /// then on).
    Latest,
    /// Fail the poll with [`KafkoError::NoValidOffset`](crate::KafkoError::NoValidOffset).
    Error,
}

/// Options of a group, persisted in `group.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupConfig {
    /// Reset policy for partitions without a valid offset.
    pub offset_reset: OffsetReset,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid() {
        TopicConfig::default().validate().unwrap();
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        let c = TopicConfig {
            partitions: 0,
            ..Default::default()
        };
        assert!(matches!(
            c.validate(),
            Err(KafkoError::InvalidConfig { .. })
        ));
        let c = TopicConfig {
            segment_bytes: 10,
            ..Default::default()
        };
        assert!(matches!(
            c.validate(),
            Err(KafkoError::InvalidConfig { .. })
        ));
    }

    #[test]
    fn update_can_clear_retention_and_cannot_change_partitions() {
        let c = TopicConfig::default();
        let u = TopicConfigUpdate {
            retention_ms: Some(None),
            ..Default::default()
        };
        assert_eq!(c.apply(&u).unwrap().retention_ms, None);
        let u = TopicConfigUpdate {
            partitions: Some(3),
            ..Default::default()
        };
        assert!(matches!(c.apply(&u), Err(KafkoError::InvalidConfig { .. })));
    }
}
