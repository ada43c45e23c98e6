//! A group's `consumer.json`: its members of Kafka's consumer protocol (KIP-848) with
//! their epochs, subscriptions and assignments, the group epoch and the target
//! assignment, so that a restart neither forgets them nor reassigns a partition.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{decode_v1, read_versioned, write_versioned};
use crate::error::{KafkoError, Result};
use crate::state_file;
use crate::storage::Storage;

const CONSUMER_FILE: &str = "consumer.json";

/// Partitions by topic, as stored: `[["<topic>",[<partition>,…]],…]`.
pub(crate) type StoredAssignment = Vec<(String, Vec<u32>)>;

/// A consumer group as kept on disk (version 1 of `consumer.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoredConsumer {
    pub(crate) group_epoch: i32,
    pub(crate) assignment_epoch: i32,
    pub(crate) assignor: String,
    /// Partition counts of the subscribed topics the target was computed from.
    pub(crate) metadata: BTreeMap<String, u32>,
    pub(crate) members: Vec<StoredConsumerMember>,
}

/// One member of a [`StoredConsumer`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StoredConsumerMember {
    pub(crate) id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) instance_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) rebalance_timeout_ms: u64,
    pub(crate) topic_names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) regex: Option<String>,
    /// The topics subscribed: the names and the regex's matches.
    pub(crate) subscribed: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) assignor: Option<String>,
    pub(crate) epoch: i32,
    pub(crate) previous_epoch: i32,
    /// `stable`, `unrevoked_partitions` or `unreleased_partitions`.
    pub(crate) state: String,
    pub(crate) assigned: StoredAssignment,
    pub(crate) revoking: StoredAssignment,
    pub(crate) target: StoredAssignment,
}

/// Reads a group's `consumer.json`; `Ok(None)` when it does not exist.
pub(crate) fn read_consumer(storage: &dyn Storage, path: &Path) -> Result<Option<StoredConsumer>> {
    let Some((version, body)) = read_versioned(storage, path)? else {
        return Ok(None);
    };
    decode_v1::<StoredConsumer>(CONSUMER_FILE, version, body)
        .map(Some)
        .map_err(|reason| KafkoError::corruption(path, state_file::BODY_OFFSET, reason))
}

/// Replaces a group's `consumer.json` (atomically).
pub(crate) fn write_consumer(
    storage: &dyn Storage,
    path: &Path,
    group: &StoredConsumer,
) -> Result<()> {
    write_versioned(storage, path, 1, group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::StdStorage;

    #[test]
    fn a_consumer_group_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONSUMER_FILE);
        let group = StoredConsumer {
            group_epoch: 4,
            assignment_epoch: 4,
            assignor: "uniform".into(),
            metadata: [("t".to_owned(), 3)].into(),
            members: vec![StoredConsumerMember {
                id: "m".into(),
                instance_id: Some("i".into()),
                rack_id: None,
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 30_000,
                topic_names: vec!["t".into()],
                regex: None,
                subscribed: vec!["t".into()],
                assignor: None,
                epoch: 4,
                previous_epoch: 3,
                state: "stable".into(),
                assigned: vec![("t".into(), vec![0, 1, 2])],
                revoking: vec![],
                target: vec![("t".into(), vec![0, 1, 2])],
            }],
        };
        write_consumer(&StdStorage, &path, &group).unwrap();
        assert_eq!(read_consumer(&StdStorage, &path).unwrap(), Some(group));
        assert_eq!(
            read_consumer(&StdStorage, &dir.path().join("none")).unwrap(),
            None
        );
    }
}
