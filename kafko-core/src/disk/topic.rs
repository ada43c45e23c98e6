//! `topic.json`: a topic's configuration as stored, and its conversions to and from
//! [`TopicConfig`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{decode_v1, read_versioned, write_versioned};
use crate::config::{
    CleanupPolicy, ClientConfigs, Compression, DEFAULT_SEGMENT_MS, FsyncPolicy, TopicConfig,
};
use crate::error::{KafkoError, Result};
use crate::state_file;
use crate::storage::Storage;
use crate::topic_id::TopicId;

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

/// Version 1's codecs, and (version 5) `producer`, `gzip` and `snappy`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum CompressionV1 {
    #[default]
    None,
    Lz4,
    Zstd,
    Producer,
    Gzip,
    Snappy,
}

impl CompressionV1 {
    /// Whether a version 1 to 4 file can hold it.
    fn before_v5(self) -> bool {
        matches!(
            self,
            CompressionV1::None | CompressionV1::Lz4 | CompressionV1::Zstd
        )
    }
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
                Compression::Producer => CompressionV1::Producer,
                Compression::Gzip => CompressionV1::Gzip,
                Compression::Snappy => CompressionV1::Snappy,
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
                CompressionV1::Producer => Compression::Producer,
                CompressionV1::Gzip => Compression::Gzip,
                CompressionV1::Snappy => Compression::Snappy,
            },
            retention_ms: f.retention_ms,
            retention_bytes: f.retention_bytes,
            segment_bytes: f.segment_bytes,
            // Versions 1 to 3 have the default; version 4 sets its own after this.
            segment_ms: DEFAULT_SEGMENT_MS,
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
            client: ClientConfigs::default(),
        }
    }
}

/// Version 2 of `topic.json` is version 1 plus `id`, the topic's [`TopicId`]. A
/// version 1 file has no id (the topic was created before ids existed).
const ID: &str = "id";
/// Version 3 is version 2 plus the client configs: `client_overridden`, the names set
/// explicitly, and `client_stored`, the values kept without being acted on. A topic with
/// none is written as version 2, which older builds read.
const CLIENT_OVERRIDDEN: &str = "client_overridden";
const CLIENT_STORED: &str = "client_stored";
/// Version 4 is version 3 plus `segment_ms`. A topic with the default (7 days) is
/// written as version 3 or 2, which older builds read.
const SEGMENT_MS: &str = "segment_ms";
/// Version 5 is version 4 with `segment_ms` optional (absent: the default), and the
/// codecs `producer`, `gzip` and `snappy`; only a topic with one of those is written
/// as version 5.
const LATEST: u32 = 5;

/// Decodes a body of version 1 to 5 into the config and, from version 2, the id.
fn decode(
    version: u32,
    body: Value,
) -> std::result::Result<(TopicConfig, Option<TopicId>), String> {
    let mut segment_ms = DEFAULT_SEGMENT_MS;
    let (body, id, client) = match (version, body) {
        (2..=LATEST, Value::Object(mut members)) => {
            let id = match members.remove(ID) {
                Some(Value::String(id)) => id.parse::<TopicId>()?,
                other => {
                    return Err(format!(
                        "{FILE} version {version} needs an id, got {other:?}"
                    ));
                }
            };
            let client = if version >= 3 {
                client_configs(&mut members)?
            } else {
                ClientConfigs::default()
            };
            if version >= 4 {
                segment_ms = match members.remove(SEGMENT_MS) {
                    Some(Value::Number(n)) if n.as_u64().is_some_and(|ms| ms > 0) => {
                        n.as_u64().unwrap_or(DEFAULT_SEGMENT_MS)
                    }
                    None if version == LATEST => DEFAULT_SEGMENT_MS,
                    other => {
                        return Err(format!(
                            "{FILE} version {version} needs a positive {SEGMENT_MS}, got {other:?}"
                        ));
                    }
                };
            }
            (Value::Object(members), Some(id), client)
        }
        (2..=LATEST, other) => return Err(format!("{FILE} is not a JSON object: {other}")),
        (version, body) => (body, version_one(version)?, ClientConfigs::default()),
    };
    let file = decode_v1::<TopicConfigFileV1>(FILE, 1, body)?;
    if version < LATEST && !file.compression.before_v5() {
        return Err(format!(
            "{FILE} version {version} cannot hold compression {:?}",
            file.compression
        ));
    }
    Ok(file).map(|f| {
        let mut config = TopicConfig::from(f);
        config.client = client;
        config.segment_ms = segment_ms;
        (config, id)
    })
}

/// Takes version 3's client configs out of its members.
fn client_configs(
    members: &mut serde_json::Map<String, Value>,
) -> std::result::Result<ClientConfigs, String> {
    let overridden = members
        .remove(CLIENT_OVERRIDDEN)
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| format!("{FILE} {CLIENT_OVERRIDDEN}: {e}"))?
        .unwrap_or_default();
    let stored = members
        .remove(CLIENT_STORED)
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| format!("{FILE} {CLIENT_STORED}: {e}"))?
        .unwrap_or_default();
    Ok(ClientConfigs { overridden, stored })
}

/// Version 1 has no id; later versions than 2 are refused by name.
fn version_one(version: u32) -> std::result::Result<Option<TopicId>, String> {
    if version == 1 {
        Ok(None)
    } else {
        Err(format!(
            "{FILE} version {version} is not one this build reads (1 to {LATEST}); was it written by a newer kafko?"
        ))
    }
}

/// Reads a topic's `topic.json`: its config and, when stored, its id; `Ok(None)` when
/// it does not exist.
pub(crate) fn read_topic_config(
    storage: &dyn Storage,
    path: &Path,
) -> Result<Option<(TopicConfig, Option<TopicId>)>> {
    let Some((version, body)) = read_versioned(storage, path)? else {
        return Ok(None);
    };
    decode(version, body)
        .map(Some)
        .map_err(|reason| KafkoError::corruption(path, state_file::BODY_OFFSET, reason))
}

/// Replaces a topic's `topic.json` (atomically) with the topic's id: as version 2,
/// version 3 when the topic has client configs, version 4 when its `segment_ms` is not
/// the default, version 5 when its codec is one version 5 added (the lowest version
/// that holds it, so older builds read what they can).
pub(crate) fn write_topic_config(
    storage: &dyn Storage,
    path: &Path,
    config: &TopicConfig,
    id: TopicId,
) -> Result<()> {
    let body = TopicFile {
        config: TopicConfigFileV1::from(config),
        id: id.to_string(),
        client_overridden: &config.client.overridden,
        client_stored: &config.client.stored,
        segment_ms: (config.segment_ms != DEFAULT_SEGMENT_MS).then_some(config.segment_ms),
    };
    let version = if !body.config.compression.before_v5() {
        LATEST
    } else if config.segment_ms != DEFAULT_SEGMENT_MS {
        4
    } else if config.client != ClientConfigs::default() {
        3
    } else {
        2
    };
    write_versioned(storage, path, version, &body)
}

/// Versions 2 and 3 as written: version 1's members, then `id`, then (version 3) the
/// client configs.
#[derive(Serialize)]
struct TopicFile<'a> {
    #[serde(flatten)]
    config: TopicConfigFileV1,
    id: String,
    #[serde(skip_serializing_if = "BTreeSet::is_empty")]
    client_overridden: &'a BTreeSet<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    client_stored: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    segment_ms: Option<u64>,
}

/// Decodes a raw `topic.json` body (fuzzing).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn topic_config_body(body: &[u8]) -> std::result::Result<TopicConfig, String> {
    let (version, value) = super::parse_body(body)?;
    decode(version, value).map(|(config, _)| config)
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
        let id = TopicId::generate();
        write_topic_config(&StdStorage, &path, &config, id).unwrap();
        assert_eq!(
            read_topic_config(&StdStorage, &path).unwrap(),
            Some((config, Some(id)))
        );
        let raw = std::fs::read(&path).unwrap();
        let body = state_file::decode(&raw).unwrap();
        let text = std::str::from_utf8(body).unwrap();
        assert!(
            text.starts_with(r#"{"version":2,"partitions":3,"#),
            "{text}"
        );
        assert!(text.contains(&format!(r#""id":"{id}""#)), "{text}");
    }

    /// Writes `config` and reads it back (it must round-trip); the body as written.
    fn written_body(path: &std::path::Path, config: &TopicConfig, id: TopicId) -> String {
        write_topic_config(&StdStorage, path, config, id).unwrap();
        assert_eq!(
            read_topic_config(&StdStorage, path).unwrap(),
            Some((config.clone(), Some(id)))
        );
        let raw = std::fs::read(path).unwrap();
        String::from_utf8(state_file::decode(&raw).unwrap().to_vec()).unwrap()
    }

    #[test]
    fn client_configs_round_trip_as_version_3_and_none_writes_version_2() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let mut config = TopicConfig::default();
        config.client.overridden.insert("retention.ms".into());
        config
            .client
            .stored
            .insert("min.insync.replicas".into(), "2".into());
        let id = TopicId::generate();
        let text = written_body(&path, &config, id);
        assert!(text.starts_with(r#"{"version":3,"#), "{text}");
        assert!(
            text.contains(r#""client_stored":{"min.insync.replicas":"2"}"#),
            "{text}"
        );
        config.client = ClientConfigs::default();
        let text = written_body(&path, &config, id);
        assert!(text.starts_with(r#"{"version":2,"#), "{text}");
        let err = topic_config_body(
            format!(r#"{{"version":3,"id":"{id}","client_stored":{{"a":1}}}}"#).as_bytes(),
        )
        .unwrap_err();
        assert!(err.contains("client_stored"), "{err}");
    }

    #[test]
    fn a_segment_ms_of_its_own_writes_version_4_and_the_default_a_lower_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let mut config = TopicConfig {
            segment_ms: 60_000,
            ..TopicConfig::default()
        };
        let id = TopicId::generate();
        let text = written_body(&path, &config, id);
        assert!(text.starts_with(r#"{"version":4,"#), "{text}");
        assert!(text.contains(r#""segment_ms":60000"#), "{text}");
        config.segment_ms = DEFAULT_SEGMENT_MS;
        let text = written_body(&path, &config, id);
        assert!(text.starts_with(r#"{"version":2,"#), "{text}");
        assert!(!text.contains("segment_ms"), "{text}");
        for bad in [
            r#""segment_ms":0"#,
            r#""segment_ms":-5"#,
            r#""segment_ms":"1""#,
            "",
        ] {
            let sep = if bad.is_empty() { "" } else { "," };
            let body = format!(r#"{{"version":4,"id":"{id}"{sep}{bad}}}"#);
            let err = topic_config_body(body.as_bytes()).unwrap_err();
            assert!(err.contains("segment_ms"), "{bad}: {err}");
        }
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
        let err = topic_config_body(br#"{"version":4,"partitions":2}"#).unwrap_err();
        assert!(err.contains("version 4"), "{err}");
        let err = topic_config_body(br#"{"version":2,"partitions":2}"#).unwrap_err();
        assert!(err.contains("needs an id"), "{err}");
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
