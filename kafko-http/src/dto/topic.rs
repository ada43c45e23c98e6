//! Wire types of topics: the configuration as returned and as requested, and a topic's
//! description, with the conversions to and from the core's plain types.

use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

/// `GET /v1/topics` response.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TopicList {
    /// Topic names, sorted.
    pub(crate) topics: Vec<String>,
}

/// Batch codec (Kafka's `compression.type`): `producer` stores a Kafka producer's batch
/// with the codec it was sent with, and records sent over HTTP uncompressed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Compression {
    /// Kafka producers' codecs as sent; uncompressed otherwise.
    Producer,
    /// Stored uncompressed.
    None,
    /// gzip.
    Gzip,
    /// snappy.
    Snappy,
    /// LZ4 frames.
    Lz4,
    /// Zstandard, level 1.
    Zstd,
}

/// When acknowledged writes reach stable storage.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub(crate) enum Fsync {
    /// Acknowledged once in the page cache.
    #[schema(title = "FsyncNever")]
    Never,
    /// fsync at most `interval_ms` after a write.
    #[schema(title = "FsyncIntervalMs")]
    IntervalMs {
        /// Maximum age of unsynced acknowledged data, in ms (> 0).
        #[schema(minimum = 1)]
        interval_ms: u64,
    },
    /// Acknowledged only after fsync.
    #[schema(title = "FsyncAlways")]
    Always,
}

/// What happens to old records.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum CleanupPolicy {
    /// Delete whole segments by age and size.
    Delete,
    /// Keep the latest record per key (every record needs a key).
    Compact,
    /// Compact, and delete by age and size.
    CompactDelete,
}

/// A topic's full configuration (as returned).
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TopicConfig {
    /// Number of partitions (1..=1024), fixed at creation.
    partitions: u32,
    /// Batch codec.
    compression: Compression,
    /// Delete segments whose newest record is older than this; null keeps forever. An
    /// idle partition's active segment goes too once it is that old.
    retention_ms: Option<u64>,
    /// Delete the oldest segments while a partition is larger; null = unbounded.
    retention_bytes: Option<u64>,
    /// Roll the active segment at this size (4096..=4294967296).
    segment_bytes: u64,
    /// Roll the active segment before a record this many milliseconds newer (record
    /// time) than its first batch.
    segment_ms: u64,
    /// Durability of acknowledged writes.
    fsync: Fsync,
    /// Largest accepted record: key + value + header names and values.
    max_record_bytes: u64,
    /// Delete, compact or both.
    cleanup_policy: CleanupPolicy,
    /// Compaction leaves records younger than this alone.
    min_compaction_lag_ms: u64,
    /// Tombstones are kept this long after compaction.
    delete_retention_ms: u64,
}

/// A topic configuration in a request: absent fields take their defaults on create and
/// keep their value on update; `null` clears `retention_ms` / `retention_bytes`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TopicConfigRequest {
    /// Number of partitions (1..=1024); on update it must equal the current count.
    #[schema(minimum = 1, maximum = 1024)]
    partitions: Option<u32>,
    /// Batch codec.
    compression: Option<Compression>,
    /// Delete segments whose newest record is older than this; null keeps forever.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>)]
    retention_ms: Option<Option<u64>>,
    /// Size bound per partition; null = unbounded.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u64>)]
    retention_bytes: Option<Option<u64>>,
    /// Roll the active segment at this size (4096..=4294967296).
    #[schema(minimum = 4096, maximum = 4294967296_u64)]
    segment_bytes: Option<u64>,
    /// Roll the active segment before a record this many milliseconds newer (record
    /// time) than its first batch (default 7 days).
    #[schema(minimum = 1, maximum = 9223372036854775807_u64)]
    segment_ms: Option<u64>,
    /// Durability of acknowledged writes.
    fsync: Option<Fsync>,
    /// Largest accepted record (1..=33554432: half the largest batch).
    #[schema(minimum = 1, maximum = 33554432)]
    max_record_bytes: Option<u64>,
    /// Delete, compact or both.
    cleanup_policy: Option<CleanupPolicy>,
    /// Compaction lag.
    min_compaction_lag_ms: Option<u64>,
    /// Tombstone retention.
    delete_retention_ms: Option<u64>,
}

/// A member that is present, `null` included (`Some(None)`); an absent one is `None`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<u64>>, D::Error> {
    Option::<u64>::deserialize(d).map(Some)
}

/// Per-partition facts.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct PartitionInfo {
    partition: u32,
    /// First offset still stored.
    log_start_offset: u64,
    /// One past the last offset.
    high_watermark: u64,
    /// Bytes of segment files.
    size_bytes: u64,
    /// Number of segment files.
    segments: u64,
    /// Appends waiting in the partition writer's inbox.
    queue_depth: u64,
}

/// A topic's configuration and partitions.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TopicDescription {
    name: String,
    /// This incarnation of the topic (32 hex digits): a topic deleted and created again
    /// under the same name has another id. Pass it as `topic_id` when reading to be
    /// refused (404 `topic_deleted`) rather than read another incarnation.
    topic_id: String,
    config: TopicConfig,
    partitions: Vec<PartitionInfo>,
}

impl From<kafko_core::Compression> for Compression {
    fn from(c: kafko_core::Compression) -> Self {
        match c {
            kafko_core::Compression::Producer => Compression::Producer,
            kafko_core::Compression::None => Compression::None,
            kafko_core::Compression::Gzip => Compression::Gzip,
            kafko_core::Compression::Snappy => Compression::Snappy,
            kafko_core::Compression::Lz4 => Compression::Lz4,
            kafko_core::Compression::Zstd => Compression::Zstd,
        }
    }
}

impl From<Compression> for kafko_core::Compression {
    fn from(c: Compression) -> Self {
        match c {
            Compression::Producer => kafko_core::Compression::Producer,
            Compression::None => kafko_core::Compression::None,
            Compression::Gzip => kafko_core::Compression::Gzip,
            Compression::Snappy => kafko_core::Compression::Snappy,
            Compression::Lz4 => kafko_core::Compression::Lz4,
            Compression::Zstd => kafko_core::Compression::Zstd,
        }
    }
}

impl From<kafko_core::FsyncPolicy> for Fsync {
    fn from(f: kafko_core::FsyncPolicy) -> Self {
        match f {
            kafko_core::FsyncPolicy::Never => Fsync::Never,
            kafko_core::FsyncPolicy::IntervalMs { interval_ms } => {
                Fsync::IntervalMs { interval_ms }
            }
            kafko_core::FsyncPolicy::Always => Fsync::Always,
        }
    }
}

impl From<Fsync> for kafko_core::FsyncPolicy {
    fn from(f: Fsync) -> Self {
        match f {
            Fsync::Never => kafko_core::FsyncPolicy::Never,
            Fsync::IntervalMs { interval_ms } => {
                kafko_core::FsyncPolicy::IntervalMs { interval_ms }
            }
            Fsync::Always => kafko_core::FsyncPolicy::Always,
        }
    }
}

impl From<kafko_core::CleanupPolicy> for CleanupPolicy {
    fn from(c: kafko_core::CleanupPolicy) -> Self {
        match c {
            kafko_core::CleanupPolicy::Delete => CleanupPolicy::Delete,
            kafko_core::CleanupPolicy::Compact => CleanupPolicy::Compact,
            kafko_core::CleanupPolicy::CompactDelete => CleanupPolicy::CompactDelete,
        }
    }
}

impl From<CleanupPolicy> for kafko_core::CleanupPolicy {
    fn from(c: CleanupPolicy) -> Self {
        match c {
            CleanupPolicy::Delete => kafko_core::CleanupPolicy::Delete,
            CleanupPolicy::Compact => kafko_core::CleanupPolicy::Compact,
            CleanupPolicy::CompactDelete => kafko_core::CleanupPolicy::CompactDelete,
        }
    }
}

impl From<&kafko_core::TopicConfig> for TopicConfig {
    fn from(c: &kafko_core::TopicConfig) -> Self {
        TopicConfig {
            partitions: c.partitions,
            compression: c.compression.into(),
            retention_ms: c.retention_ms,
            retention_bytes: c.retention_bytes,
            segment_bytes: c.segment_bytes,
            segment_ms: c.segment_ms,
            fsync: c.fsync.into(),
            max_record_bytes: c.max_record_bytes,
            cleanup_policy: c.cleanup_policy.into(),
            min_compaction_lag_ms: c.min_compaction_lag_ms,
            delete_retention_ms: c.delete_retention_ms,
        }
    }
}

/// A create request: the library's defaults, overridden by every member present.
impl From<TopicConfigRequest> for kafko_core::TopicConfig {
    fn from(r: TopicConfigRequest) -> Self {
        let d = kafko_core::TopicConfig::default();
        kafko_core::TopicConfig {
            partitions: r.partitions.unwrap_or(d.partitions),
            compression: r.compression.map_or(d.compression, Into::into),
            retention_ms: r.retention_ms.unwrap_or(d.retention_ms),
            retention_bytes: r.retention_bytes.unwrap_or(d.retention_bytes),
            segment_bytes: r.segment_bytes.unwrap_or(d.segment_bytes),
            segment_ms: r.segment_ms.unwrap_or(d.segment_ms),
            fsync: r.fsync.map_or(d.fsync, Into::into),
            max_record_bytes: r.max_record_bytes.unwrap_or(d.max_record_bytes),
            cleanup_policy: r.cleanup_policy.map_or(d.cleanup_policy, Into::into),
            min_compaction_lag_ms: r.min_compaction_lag_ms.unwrap_or(d.min_compaction_lag_ms),
            delete_retention_ms: r.delete_retention_ms.unwrap_or(d.delete_retention_ms),
            client: d.client,
        }
    }
}

/// An update request: the members present, each replacing the current value.
impl From<TopicConfigRequest> for kafko_core::TopicConfigUpdate {
    fn from(r: TopicConfigRequest) -> Self {
        kafko_core::TopicConfigUpdate {
            partitions: r.partitions,
            compression: r.compression.map(Into::into),
            retention_ms: r.retention_ms,
            retention_bytes: r.retention_bytes,
            segment_bytes: r.segment_bytes,
            segment_ms: r.segment_ms,
            fsync: r.fsync.map(Into::into),
            max_record_bytes: r.max_record_bytes,
            cleanup_policy: r.cleanup_policy.map(Into::into),
            min_compaction_lag_ms: r.min_compaction_lag_ms,
            delete_retention_ms: r.delete_retention_ms,
        }
    }
}

impl From<kafko_core::PartitionInfo> for PartitionInfo {
    fn from(p: kafko_core::PartitionInfo) -> Self {
        PartitionInfo {
            partition: p.partition,
            log_start_offset: p.log_start_offset,
            high_watermark: p.high_watermark,
            size_bytes: p.size_bytes,
            segments: p.segments as u64,
            queue_depth: p.queue_depth as u64,
        }
    }
}

impl From<kafko_core::TopicDescription> for TopicDescription {
    fn from(d: kafko_core::TopicDescription) -> Self {
        TopicDescription {
            name: d.name,
            topic_id: d.topic_id.to_string(),
            config: (&d.config).into(),
            partitions: d.partitions.into_iter().map(Into::into).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: &str) -> TopicConfigRequest {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_create_request_overrides_the_defaults_with_what_it_names() {
        let c = kafko_core::TopicConfig::from(request(
            r#"{"partitions":3,"retention_ms":null,"fsync":{"mode":"interval_ms","interval_ms":5}}"#,
        ));
        assert_eq!(
            c,
            kafko_core::TopicConfig {
                partitions: 3,
                retention_ms: None,
                fsync: kafko_core::FsyncPolicy::IntervalMs { interval_ms: 5 },
                ..Default::default()
            }
        );
        assert_eq!(
            kafko_core::TopicConfig::from(request("{}")),
            kafko_core::TopicConfig::default()
        );
    }

    #[test]
    fn an_update_tells_null_from_absent() {
        let u = kafko_core::TopicConfigUpdate::from(request(r#"{"retention_bytes":null}"#));
        assert_eq!(u.retention_bytes, Some(None));
        assert_eq!(u.retention_ms, None);
        let u = kafko_core::TopicConfigUpdate::from(request(r#"{"retention_ms":5}"#));
        assert_eq!(u.retention_ms, Some(Some(5)));
    }

    #[test]
    fn unknown_members_are_refused() {
        let err = serde_json::from_str::<TopicConfigRequest>(r#"{"partition":1}"#).unwrap_err();
        assert!(
            err.to_string().contains("unknown field `partition`"),
            "{err}"
        );
    }

    #[test]
    fn a_config_is_returned_in_its_documented_shape() {
        let text =
            serde_json::to_string(&TopicConfig::from(&kafko_core::TopicConfig::default())).unwrap();
        assert_eq!(
            text,
            r#"{"partitions":1,"compression":"none","retention_ms":604800000,"retention_bytes":null,"segment_bytes":67108864,"segment_ms":604800000,"fsync":{"mode":"never"},"max_record_bytes":1048576,"cleanup_policy":"delete","min_compaction_lag_ms":0,"delete_retention_ms":86400000}"#
        );
    }
}
