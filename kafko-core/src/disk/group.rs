//! A group's files: `group.json` (its options) and `<topic>.offsets` (its committed
//! offsets on one topic), as stored, and their conversions.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{decode_v1, read_versioned, write_versioned};
use crate::config::{GroupConfig, OffsetReset};
use crate::error::{KafkoError, Result};
use crate::state_file;
use crate::storage::Storage;

const CONFIG_FILE: &str = "group.json";
const OFFSETS_FILE: &str = "<topic>.offsets";

/// Version 1 of `group.json`.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct GroupConfigFileV1 {
    offset_reset: OffsetResetV1,
}

#[derive(Debug, Default, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum OffsetResetV1 {
    #[default]
    Earliest,
    Latest,
    Error,
}

impl From<&GroupConfig> for GroupConfigFileV1 {
    fn from(c: &GroupConfig) -> Self {
        GroupConfigFileV1 {
            offset_reset: match c.offset_reset {
                OffsetReset::Earliest => OffsetResetV1::Earliest,
                OffsetReset::Latest => OffsetResetV1::Latest,
                OffsetReset::Error => OffsetResetV1::Error,
            },
        }
    }
}

impl From<GroupConfigFileV1> for GroupConfig {
    fn from(f: GroupConfigFileV1) -> Self {
        GroupConfig {
            offset_reset: match f.offset_reset {
                OffsetResetV1::Earliest => OffsetReset::Earliest,
                OffsetResetV1::Latest => OffsetReset::Latest,
                OffsetResetV1::Error => OffsetReset::Error,
            },
        }
    }
}

/// `<topic>.offsets`: partition → next offset to read. Version 2 adds `committed_at`
/// (partition → the commit's wall-clock time, ms; what offsets retention counts from),
/// `metadata`, the commits' metadata strings (partition → text, only the non-empty
/// ones) and `leader_epoch`, the commits' leader epochs (partition → epoch, only those
/// given, ≥ 0; files without it read as none).
#[derive(Debug, Default, Serialize, Deserialize)]
struct OffsetsFile {
    /// The topic, authoritative over the file name (which is shortened for long names);
    /// absent in files written before long names were shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    topic: Option<String>,
    offsets: BTreeMap<u32, u64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    committed_at: BTreeMap<u32, i64>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    metadata: BTreeMap<u32, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    leader_epoch: BTreeMap<u32, i32>,
}

/// Committed offsets as read: the topic named in the body, if any, the offsets, their
/// metadata strings and leader epochs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct StoredOffsets {
    pub(crate) topic: Option<String>,
    pub(crate) offsets: BTreeMap<u32, u64>,
    /// When each offset was committed (ms); absent in version 1 files.
    pub(crate) committed_at: BTreeMap<u32, i64>,
    pub(crate) metadata: BTreeMap<u32, String>,
    /// The leader epoch each commit carried (only those ≥ 0).
    pub(crate) leader_epoch: BTreeMap<u32, i32>,
}

/// Decodes an offsets body of version 1 or 2.
fn decode_offsets(version: u32, body: Value) -> std::result::Result<StoredOffsets, String> {
    let f: OffsetsFile = match version {
        2 => serde_json::from_value(body).map_err(|e| format!("{OFFSETS_FILE}: {e}"))?,
        _ => {
            let f: OffsetsFile = decode_v1(OFFSETS_FILE, version, body)?;
            if !f.metadata.is_empty() || !f.committed_at.is_empty() || !f.leader_epoch.is_empty() {
                return Err(format!(
                    "{OFFSETS_FILE} version 1 has no metadata, commit times or leader epochs"
                ));
            }
            f
        }
    };
    Ok(StoredOffsets {
        topic: f.topic,
        offsets: f.offsets,
        committed_at: f.committed_at,
        metadata: f.metadata,
        leader_epoch: f.leader_epoch,
    })
}

/// Reads a group's `group.json`; `Ok(None)` when it does not exist.
pub(crate) fn read_group_config(storage: &dyn Storage, path: &Path) -> Result<Option<GroupConfig>> {
    let Some((version, body)) = read_versioned(storage, path)? else {
        return Ok(None);
    };
    decode_v1::<GroupConfigFileV1>(CONFIG_FILE, version, body)
        .map(|f| Some(f.into()))
        .map_err(|reason| KafkoError::corruption(path, state_file::BODY_OFFSET, reason))
}

/// Replaces a group's `group.json` (atomically).
pub(crate) fn write_group_config(
    storage: &dyn Storage,
    path: &Path,
    config: &GroupConfig,
) -> Result<()> {
    write_versioned(storage, path, 1, &GroupConfigFileV1::from(config))
}

/// Reads a `<topic>.offsets` file; `Ok(None)` when it does not exist.
pub(crate) fn read_offsets(storage: &dyn Storage, path: &Path) -> Result<Option<StoredOffsets>> {
    let Some((version, body)) = read_versioned(storage, path)? else {
        return Ok(None);
    };
    decode_offsets(version, body)
        .map(Some)
        .map_err(|reason| KafkoError::corruption(path, state_file::BODY_OFFSET, reason))
}

/// Replaces a `<topic>.offsets` file (atomically).
pub(crate) fn write_offsets(
    storage: &dyn Storage,
    path: &Path,
    stored: &StoredOffsets,
) -> Result<()> {
    let body = OffsetsFile {
        topic: stored.topic.clone(),
        offsets: stored.offsets.clone(),
        committed_at: stored.committed_at.clone(),
        metadata: stored.metadata.clone(),
        leader_epoch: stored.leader_epoch.clone(),
    };
    write_versioned(storage, path, 2, &body)
}

/// Decodes a raw `group.json` body (fuzzing).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn group_config_body(body: &[u8]) -> std::result::Result<GroupConfig, String> {
    let (version, value) = super::parse_body(body)?;
    decode_v1::<GroupConfigFileV1>(CONFIG_FILE, version, value).map(Into::into)
}

/// Decodes a raw `<topic>.offsets` body (fuzzing).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn offsets_body(body: &[u8]) -> std::result::Result<StoredOffsets, String> {
    let (version, value) = super::parse_body(body)?;
    decode_offsets(version, value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_without_a_version_read_as_version_one() {
        let c = group_config_body(br#"{"offset_reset":"latest"}"#).unwrap();
        assert_eq!(c.offset_reset, OffsetReset::Latest);
        let stored = offsets_body(br#"{"offsets":{"0":12,"3":99}}"#).unwrap();
        assert_eq!(stored.topic, None);
        assert_eq!(stored.offsets, [(0, 12), (3, 99)].into());
        let err = offsets_body(br#"{"version":3,"offsets":{}}"#).unwrap_err();
        assert!(err.contains("version 3"), "{err}");
        let err = offsets_body(br#"{"version":1,"offsets":{},"metadata":{"0":"x"}}"#);
        assert!(err.unwrap_err().contains("no metadata"));
    }

    #[test]
    fn version_two_keeps_commit_times_metadata_and_leader_epochs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.offsets");
        let storage = crate::storage::StdStorage;
        let stored = StoredOffsets {
            topic: Some("t".into()),
            offsets: [(0, 5), (1, 9)].into(),
            committed_at: [(0, 1_700_000_000_000), (1, 1_700_000_000_123)].into(),
            metadata: [(1, "by consumer-1".to_owned())].into(),
            leader_epoch: [(0, 3)].into(),
        };
        write_offsets(&storage, &path, &stored).unwrap();
        let (version, _) = read_versioned(&storage, &path).unwrap().unwrap();
        assert_eq!(version, 2);
        assert_eq!(read_offsets(&storage, &path).unwrap().unwrap(), stored);
        // Files written before leader epochs were kept read as none.
        let older = offsets_body(br#"{"version":2,"offsets":{"0":4},"metadata":{"0":"m"}}"#);
        assert!(older.unwrap().leader_epoch.is_empty());
    }
}
