//! A group's `members.json`: its Kafka (classic protocol) members as of its last
//! stable generation, so that a restart neither forgets them nor rebalances the group.
//! Metadata and assignments are the clients' opaque bytes, stored as base64.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{decode_v1, read_versioned, write_versioned};
use crate::error::{KafkoError, Result};
use crate::state_file;
use crate::storage::Storage;

const MEMBERS_FILE: &str = "members.json";

/// A stable classic group as kept on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredClassic {
    pub(crate) generation: u64,
    pub(crate) protocol_type: String,
    pub(crate) protocol: String,
    pub(crate) leader: String,
    pub(crate) members: Vec<StoredClassicMember>,
}

/// One member of a [`StoredClassic`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredClassicMember {
    pub(crate) member_id: String,
    pub(crate) group_instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) session_timeout: Duration,
    pub(crate) rebalance_timeout: Duration,
    /// Assignor name and the member's metadata for it, in its order of preference.
    pub(crate) protocols: Vec<(String, Bytes)>,
    pub(crate) assignment: Bytes,
    pub(crate) partitions: Vec<(String, Vec<u32>)>,
}

/// Version 1 of `members.json`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MembersFileV1 {
    generation: u64,
    protocol_type: String,
    protocol: String,
    leader: String,
    members: Vec<MemberV1>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberV1 {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instance_id: Option<String>,
    client_id: String,
    client_host: String,
    session_timeout_ms: u64,
    rebalance_timeout_ms: u64,
    /// `[name, base64 metadata]` pairs.
    protocols: Vec<(String, String)>,
    /// Base64.
    assignment: String,
    partitions: Vec<(String, Vec<u32>)>,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn decode_bytes(text: &str) -> std::result::Result<Bytes, String> {
    STANDARD
        .decode(text)
        .map(Bytes::from)
        .map_err(|e| format!("{MEMBERS_FILE}: bad base64: {e}"))
}

impl From<&StoredClassic> for MembersFileV1 {
    fn from(s: &StoredClassic) -> Self {
        MembersFileV1 {
            generation: s.generation,
            protocol_type: s.protocol_type.clone(),
            protocol: s.protocol.clone(),
            leader: s.leader.clone(),
            members: s
                .members
                .iter()
                .map(|m| MemberV1 {
                    id: m.member_id.clone(),
                    instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    session_timeout_ms: millis(m.session_timeout),
                    rebalance_timeout_ms: millis(m.rebalance_timeout),
                    protocols: m
                        .protocols
                        .iter()
                        .map(|(name, metadata)| (name.clone(), STANDARD.encode(metadata)))
                        .collect(),
                    assignment: STANDARD.encode(&m.assignment),
                    partitions: m.partitions.clone(),
                })
                .collect(),
        }
    }
}

impl TryFrom<MembersFileV1> for StoredClassic {
    type Error = String;

    fn try_from(f: MembersFileV1) -> std::result::Result<Self, String> {
        let members = f
            .members
            .into_iter()
            .map(|m| {
                let protocols = m
                    .protocols
                    .into_iter()
                    .map(|(name, metadata)| Ok((name, decode_bytes(&metadata)?)))
                    .collect::<std::result::Result<_, String>>()?;
                Ok(StoredClassicMember {
                    member_id: m.id,
                    group_instance_id: m.instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    session_timeout: Duration::from_millis(m.session_timeout_ms),
                    rebalance_timeout: Duration::from_millis(m.rebalance_timeout_ms),
                    protocols,
                    assignment: decode_bytes(&m.assignment)?,
                    partitions: m.partitions,
                })
            })
            .collect::<std::result::Result<_, String>>()?;
        Ok(StoredClassic {
            generation: f.generation,
            protocol_type: f.protocol_type,
            protocol: f.protocol,
            leader: f.leader,
            members,
        })
    }
}

/// Reads a group's `members.json`; `Ok(None)` when it does not exist.
pub(crate) fn read_members(storage: &dyn Storage, path: &Path) -> Result<Option<StoredClassic>> {
    let Some((version, body)) = read_versioned(storage, path)? else {
        return Ok(None);
    };
    decode_v1::<MembersFileV1>(MEMBERS_FILE, version, body)
        .and_then(StoredClassic::try_from)
        .map(Some)
        .map_err(|reason| KafkoError::corruption(path, state_file::BODY_OFFSET, reason))
}

/// Replaces a group's `members.json` (atomically).
pub(crate) fn write_members(
    storage: &dyn Storage,
    path: &Path,
    group: &StoredClassic,
) -> Result<()> {
    write_versioned(storage, path, 1, &MembersFileV1::from(group))
}

/// Decodes a raw `members.json` body (fuzzing).
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn members_body(body: &[u8]) -> std::result::Result<StoredClassic, String> {
    let (version, value) = super::parse_body(body)?;
    decode_v1::<MembersFileV1>(MEMBERS_FILE, version, value).and_then(StoredClassic::try_from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StdStorage;

    #[test]
    fn a_stable_group_round_trips_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MEMBERS_FILE);
        let group = StoredClassic {
            generation: 7,
            protocol_type: "consumer".into(),
            protocol: "range".into(),
            leader: "m-1".into(),
            members: vec![StoredClassicMember {
                member_id: "m-1".into(),
                group_instance_id: Some("host-a".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                session_timeout: Duration::from_millis(45_000),
                rebalance_timeout: Duration::from_millis(300_000),
                protocols: vec![("range".into(), Bytes::from_static(&[0, 1, 255]))],
                assignment: Bytes::from_static(&[0, 0, 0, 1, 2]),
                partitions: vec![("t".into(), vec![0, 2])],
            }],
        };
        write_members(&StdStorage, &path, &group).unwrap();
        assert_eq!(read_members(&StdStorage, &path).unwrap(), Some(group));
        assert_eq!(
            read_members(&StdStorage, &dir.path().join("none")).unwrap(),
            None
        );
    }

    #[test]
    fn bad_base64_or_unknown_members_are_corruption() {
        let body = br#"{"version":1,"generation":1,"protocol_type":"consumer","protocol":"range","leader":"a","members":[{"id":"a","client_id":"c","client_host":"h","session_timeout_ms":1,"rebalance_timeout_ms":1,"protocols":[],"assignment":"!!","partitions":[]}]}"#;
        assert!(members_body(body).unwrap_err().contains("base64"));
        let extra = br#"{"version":1,"generation":1,"protocol_type":"","protocol":"","leader":"","members":[],"more":1}"#;
        assert!(members_body(extra).is_err());
        let newer = br#"{"version":2}"#;
        assert!(members_body(newer).unwrap_err().contains("newer"));
    }
}
