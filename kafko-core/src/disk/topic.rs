//! `topic.json`: a topic's configuration as stored, and its conversions to and from
//! [`TopicConfig`].

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{decode_v1, read_versioned, write_versioned};
use crate::config::{CleanupPolicy, Compression, FsyncPolicy, TopicConfig};
use crate::error::{KafkoError, Result};
use crate::state_file;
use crate::storage::Storage;

const FILE: &str = "topic.json";

/// Version 1 of `topic.json`. Every member is optional and takes the value it had as
/// a default when this version was written (not today's default), so a file's meaning
/// never changes under it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct TopicConfigFileV1 {
    partitions: u32,
    compression: CompressionV1,
    retention_ms: Option<u64>,
    retention_bytes: Option<u64>,
    segment_bytes: u64,
    fsync: FsyncV1,
    max_record_bytes: u64,
    cleanup_policy: CleanupPolicyV1,
    min_compaction_lag_ms: u64,
    delete_retention_ms: u64,
}

impl Default for TopicConfigFileV1 {
    fn default() -> Self {
        TopicConfigFileV1 {
            partitions: 1,
            compression: CompressionV1::None,
            retention_ms: Some(7 * 24 * 3600 * 1000),
            retention_bytes: None,
            segment_bytes: 64 * 1024 * 1024,
            fsync: FsyncV1::Never,
            max_record_bytes: 1024 * 1024,
            cleanup_policy: CleanupPolicyV1::Delete,
            min_compaction_lag_ms: 0,
            delete_retention_ms: 24 * 3600 * 1000,
        }
    }
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum CompressionV1 {
    #[default]
    None,
    Lz4,
    Zstd,
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
enum FsyncV1 {
    #[default]
    Never,
    IntervalMs {
        interval_ms: u64,
    },
    Always,
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum CleanupPolicyV1 {
    #[default]
    Delete,
    Compact,
    CompactDelete,
}

impl From<&TopicConfig> for TopicConfigFileV1 {
    fn from(c: &TopicConfig) -> Self {
        TopicConfigFileV1 {
            partitions: c.partitions,
            compression: match c.compression {
                Compression::None => CompressionV1::None,
                Compression::Lz4 => CompressionV1::Lz4,
                Compression::Zstd => CompressionV1::Zstd,
            },
            retention_ms: c.retention_ms,
            retention_bytes: c.retention_bytes,
            segment_bytes: c.segment_bytes,
            fsync: match c.fsync {
                FsyncPolicy::Never => FsyncV1::Never,
                FsyncPolicy::IntervalMs { interval_ms } => FsyncV1::IntervalMs { interval_ms },
                FsyncPolicy::Always => FsyncV1::Always,
            },
            max_record_bytes: c.max_record_bytes,
            cleanup_policy: match c.cleanup_policy {
                CleanupPolicy::Delete => CleanupPolicyV1::Delete,
                CleanupPolicy::Compact => CleanupPolicyV1::Compact,
                CleanupPolicy::CompactDelete => CleanupPolicyV1::CompactDelete,
            },
            min_compaction_lag_ms: c.min_compaction_lag_ms,
            delete_retention_ms: c.delete_retention_ms,
        }
    }
}

impl From<TopicConfigFileV1> for TopicConfig {
    fn from(f: TopicConfigFileV1) -> Self {
        TopicConfig {
            partitions: f.partitions,
            compression: match f.compression {
                CompressionV1::None => Compression::None,
                CompressionV1::Lz4 => Compression::Lz4,
                CompressionV1::Zstd => Compression::Zstd,
            },
            retention_ms: f.retention_ms,
            retention_bytes: f.retention_bytes,
            segment_bytes: f.segment_bytes,
            fsync: match f.fsync {
                FsyncV1::Never => FsyncPolicy::Never,
                FsyncV1::IntervalMs { interval_ms } => FsyncPolicy::IntervalMs { interval_ms },
                FsyncV1::Always => FsyncPolicy::Always,
            },
            max_record_bytes: f.max_record_bytes,
            cleanup_policy: match f.cleanup_policy {
                CleanupPolicyV1::Delete => CleanupPolicy::Delete,
                CleanupPolicyV1::Compact => CleanupPolicy::Compact,
                CleanupPolicyV1::CompactDelete => CleanupPolicy::CompactDelete,
            },
            min_compaction_lag_ms: f.min_compaction_lag_ms,
            delete_retention_ms: f.delete_retention_ms,
        }
    }
}

/// Reads a topic's `topic.json`; `Ok(None)` when it does not exist.
pub(crate) fn read_topic_config(storage: &dyn Storage, path: &Path) -> Result<Option<TopicConfig>> {
    let Some((version, body)) = read_versioned(storage, path)? else {
        return Ok(None);
    };
    decode_v1::<TopicConfigFileV1>(FILE, version, body)
        .map(|f| Some(f.into()))
        .map_err(|reason| KafkoError::corruption(path, state_file::BODY_OFFSET, reason))
}

/// Replaces a topic's `topic.json` (atomically).
pub(crate) fn write_topic_config(
    storage: &dyn Storage,
    path: &Path,
    config: &TopicConfig,
) -> Result<()> {
    write_versioned(storage, path, 1, &TopicConfigFileV1::from(config))
}

/// Decodes a raw `topic.json` body (fuzzing).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn topic_config_body(body: &[u8]) -> std::result::Result<TopicConfig, String> {
    let (version, value) = super::parse_body(body)?;
    decode_v1::<TopicConfigFileV1>(FILE, version, value).map(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StdStorage;

    #[test]
    fn configs_round_trip_with_their_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let config = TopicConfig {
            partitions: 3,
            compression: Compression::Zstd,
            retention_ms: None,
            retention_bytes: Some(1 << 20),
            fsync: FsyncPolicy::IntervalMs { interval_ms: 250 },
            cleanup_policy: CleanupPolicy::CompactDelete,
            ..TopicConfig::default()
        };
        write_topic_config(&StdStorage, &path, &config).unwrap();
        assert_eq!(read_topic_config(&StdStorage, &path).unwrap(), Some(config));
        let raw = std::fs::read(&path).unwrap();
        let body = state_file::decode(&raw).unwrap();
        let text = std::str::from_utf8(body).unwrap();
        assert!(
            text.starts_with(r#"{"version":1,"partitions":3,"#),
            "{text}"
        );
    }

    #[test]
    fn unversioned_bodies_are_version_one_and_absent_members_keep_their_old_defaults() {
        let c = topic_config_body(br#"{"partitions":2,"fsync":{"mode":"always"}}"#).unwrap();
        assert_eq!(c.partitions, 2);
        assert_eq!(c.fsync, FsyncPolicy::Always);
        assert_eq!(c.retention_ms, Some(7 * 24 * 3600 * 1000));
        assert_eq!(c.segment_bytes, 64 * 1024 * 1024);
    }

    #[test]
    fn newer_versions_and_unknown_members_are_refused_by_name() {
        let err = topic_config_body(br#"{"version":2,"partitions":2}"#).unwrap_err();
        assert!(err.contains("version 2"), "{err}");
        let err = topic_config_body(br#"{"version":1,"partition":2}"#).unwrap_err();
        assert!(err.contains("unknown field"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, state_file::encode(br#"{"version":9}"#)).unwrap();
        assert!(matches!(
            read_topic_config(&StdStorage, &path),
            Err(KafkoError::Corruption { .. })
        ));
    }
}
