//! A consumer group (KIP-848) to and from its `consumer.json`, and the write of it:
//! after every heartbeat that changed the group (a member joined, left or moved on in
//! its reconciliation, the group or assignment epoch moved), before the heartbeat is
//! answered. A restart therefore finds every member at its epoch with the partitions
//! it owns, the ones it was releasing, and the target assignment: members carry on
//! without a reassignment, each session starting afresh.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use super::assignor::{Assignment, Assignor};
use super::consumer::{Consumer, ConsumerMember, MemberState, to_list};
use super::coordinator::{Groups, persist_members};
use super::offsets::OffsetStore;
use crate::disk::{StoredAssignment, StoredConsumer, StoredConsumerMember};
use crate::error::Result;

fn state_name(state: MemberState) -> &'static str {
    match state {
        MemberState::Stable => "stable",
        MemberState::UnrevokedPartitions => "unrevoked_partitions",
        MemberState::UnreleasedPartitions => "unreleased_partitions",
    }
}

fn assignment(stored: StoredAssignment) -> Assignment {
    let mut out = Assignment::new();
    for (topic, partitions) in stored {
        if !partitions.is_empty() {
            out.entry(topic).or_default().extend(partitions);
        }
    }
    out
}

/// The group as written, or `None` when there is nothing to keep (never used).
pub(super) fn snapshot(c: &Consumer) -> Option<StoredConsumer> {
    if c.group_epoch == 0 && c.members.is_empty() {
        return None;
    }
    Some(StoredConsumer {
        group_epoch: c.group_epoch,
        assignment_epoch: c.assignment_epoch,
        assignor: c.assignor.name().to_owned(),
        metadata: c.metadata.clone(),
        members: c
            .members
            .iter()
            .map(|(id, m)| StoredConsumerMember {
                id: id.clone(),
                instance_id: m.instance_id.clone(),
                rack_id: m.rack_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: u64::try_from(m.rebalance_timeout.as_millis())
                    .unwrap_or(u64::MAX),
                topic_names: m.topic_names.clone(),
                regex: m.regex.clone(),
                subscribed: m.subscribed.iter().cloned().collect(),
                assignor: m.assignor.clone(),
                epoch: m.epoch,
                previous_epoch: m.previous_epoch,
                state: state_name(m.state).to_owned(),
                assigned: to_list(&m.assigned),
                revoking: to_list(&m.revoking),
                target: c.target.get(id).map(to_list).unwrap_or_default(),
            })
            .collect(),
    })
}

/// The group as read at open: every session starts at `now`, and a member releasing
/// partitions has its whole rebalance timeout again.
pub(super) fn restore(stored: StoredConsumer, now: Instant) -> Consumer {
    let mut c = Consumer {
        group_epoch: stored.group_epoch,
        assignment_epoch: stored.assignment_epoch,
        assignor: Assignor::named(&stored.assignor).unwrap_or_default(),
        metadata: stored.metadata,
        ..Consumer::default()
    };
    for m in stored.members {
        let state = match m.state.as_str() {
            "unrevoked_partitions" => MemberState::UnrevokedPartitions,
            "unreleased_partitions" => MemberState::UnreleasedPartitions,
            _ => MemberState::Stable,
        };
        let rebalance_timeout = std::time::Duration::from_millis(m.rebalance_timeout_ms);
        if let Some(instance) = &m.instance_id {
            c.instances.insert(instance.clone(), m.id.clone());
        }
        c.target.insert(m.id.clone(), assignment(m.target));
        c.members.insert(
            m.id,
            ConsumerMember {
                instance_id: m.instance_id,
                rack_id: m.rack_id,
                client_id: m.client_id,
                client_host: m.client_host,
                rebalance_timeout,
                topic_names: m.topic_names,
                regex: m.regex,
                subscribed: m.subscribed.into_iter().collect(),
                assignor: m.assignor,
                epoch: m.epoch,
                previous_epoch: m.previous_epoch,
                state,
                assigned: assignment(m.assigned),
                revoking: assignment(m.revoking),
                last_seen: now,
                revoke_deadline: (state == MemberState::UnrevokedPartitions)
                    .then(|| now + rebalance_timeout),
            },
        );
    }
    c
}

/// Forgets an empty consumer group's epochs when the group becomes a classic one; its
/// `consumer.json` goes with the next [`persist_consumer`].
pub(super) fn convert_to_classic(c: &mut Consumer) {
    if !c.is_active() && c.group_epoch > 0 {
        *c = Consumer {
            dirty: true,
            ..Consumer::default()
        };
    }
}

impl super::handle::GroupHandle {
    /// Removes the `consumer.json` of a group that was a consumer group, if it changed
    /// (see [`convert_to_classic`]).
    pub(super) async fn forget_consumer_group(&self) -> Result<()> {
        let c = self.coordinator();
        persist_consumer(c.store.clone(), c.groups.clone(), self.name.to_string()).await
    }
}

/// Writes `group`'s consumer members to `consumer.json` if they changed since the
/// last write. Under the group's write lock, with the state taken under that lock, so
/// the last write is always the newest state; a failed write leaves the group marked
/// for the next attempt.
pub(super) async fn persist_consumer(
    store: Arc<OffsetStore>,
    groups: Arc<Mutex<Groups>>,
    group: String,
) -> Result<()> {
    persist_members(
        (store, groups, group),
        "writing consumer group members",
        |g| {
            if !g.members.consumer.dirty {
                return None;
            }
            g.members.consumer.dirty = false;
            Some(snapshot(&g.members.consumer))
        },
        |store, name, snapshot| store.write_consumer(name, snapshot.as_ref()),
        |g| g.members.consumer.dirty = true,
    )
    .await
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use crate::group::consumer::HeartbeatContext;
    use crate::group::consumer_types::{ConsumerHeartbeat, ConsumerSubscription};

    #[test]
    fn a_group_comes_back_with_its_epochs_and_assignments() {
        let now = Instant::now();
        let mut c = Consumer::default();
        let partitions: BTreeMap<String, u32> = [("t".to_owned(), 4)].into();
        let cx = HeartbeatContext {
            now,
            regex_topics: None,
            partitions: &partitions,
            heartbeat_interval: Duration::from_secs(5),
            max_members: 10,
            new_id: &|| "x".to_owned(),
        };
        for id in ["a", "b"] {
            let join = ConsumerHeartbeat {
                member_id: id.into(),
                member_epoch: 0,
                instance_id: Some(format!("i-{id}")),
                rebalance_timeout: Some(Duration::from_secs(30)),
                subscription: Some(ConsumerSubscription {
                    topic_names: Some(vec!["t".into()]),
                    regex: None,
                }),
                owned: Some(Vec::new()),
                ..Default::default()
            };
            c.heartbeat(&join, &cx).unwrap();
        }
        // a is releasing partitions for b.
        let a = ConsumerHeartbeat {
            member_id: "a".into(),
            member_epoch: 1,
            ..Default::default()
        };
        c.heartbeat(&a, &cx).unwrap();
        let stored = snapshot(&c).unwrap();
        let back = restore(stored.clone(), now);
        assert_eq!(snapshot(&back), Some(stored));
        assert_eq!(back.members["a"].state, MemberState::UnrevokedPartitions);
        assert_eq!(back.instances["i-b"], "b");
        assert!(snapshot(&Consumer::default()).is_none());
    }
}
