//! The calls of Kafka's consumer group protocol (KIP-848) on a [`GroupHandle`]:
//! ConsumerGroupHeartbeat, ConsumerGroupDescribe, and the member-epoch check of
//! OffsetCommit and OffsetFetch. The state machine is in `consumer`; this module takes
//! the groups' lock, looks up the subscribed topics' partition counts (outside it),
//! and keeps the group's type: a group with live classic members, or members of
//! kafko's own APIs, is not a consumer group (`NotConsumerGroup`), and an empty group
//! of either type becomes one on its first heartbeat.

use std::collections::{BTreeMap, BTreeSet};

use tokio::time::Instant;

use super::consumer::HeartbeatContext;
use super::consumer_store::persist_consumer;
use super::consumer_types::{
    ConsumerError, ConsumerGroupDescription, ConsumerHeartbeat, ConsumerHeartbeatAnswer,
    ConsumerRefusal,
};
use super::coordinator::GroupState;
use super::handle::GroupHandle;
use super::membership::new_member_id;
use super::{CommitOffset, GroupConfig};
use crate::error::GroupError;
use crate::handle::TopicHandle;

fn refused(refusal: ConsumerRefusal, message: impl Into<String>) -> ConsumerError {
    ConsumerError::new(refusal, message)
}

/// Refuses a group whose live members speak another protocol. The members'
/// `consumer.json` is written (`consumer_store`) after each heartbeat that changed
/// the group, before its answer.
fn check_type(g: &GroupState) -> Result<(), ConsumerError> {
    if g.members.classic.is_active() {
        return Err(refused(
            ConsumerRefusal::NotConsumerGroup,
            "the group is a classic group with members",
        ));
    }
    if !g.members.members.is_empty() {
        return Err(refused(
            ConsumerRefusal::NotConsumerGroup,
            "the group's members use kafko's HTTP APIs",
        ));
    }
    Ok(())
}

impl GroupHandle {
    /// Runs `f` on the group after expiring its silent members; `create` makes the
    /// group if it is missing.
    fn with_consumer<T>(
        &self,
        create: bool,
        f: impl FnOnce(&mut GroupState) -> Result<T, ConsumerError>,
    ) -> Result<T, ConsumerError> {
        let name = &*self.name;
        let c = self.coordinator();
        let mut groups = c.lock();
        if !groups.contains_key(name) {
            if !create {
                return Err(refused(ConsumerRefusal::NotConsumerGroup, "no such group"));
            }
            c.make_room(&mut groups)
                .map_err(|e| refused(ConsumerRefusal::GroupMaxSize, e.to_string()))?;
            c.count_created(&mut groups, name, 1);
            groups.insert(name.to_owned(), GroupState::new(GroupConfig::default()));
        }
        let Some(g) = groups.get_mut(name) else {
            return Err(refused(ConsumerRefusal::NotConsumerGroup, "no such group"));
        };
        let now = Instant::now();
        g.last_used = now;
        g.expire(now);
        let m = &mut g.members;
        if m.classic.expire(now, &mut m.generation) {
            g.changed.notify_waiters();
        }
        g.members
            .consumer
            .expire(now, c.limits.consumer_session_timeout);
        g.members.consumer.refresh_target();
        f(g)
    }

    /// Kafka's ConsumerGroupHeartbeat: joins (epoch 0), leaves (−1, or −2 for a static
    /// member leaving for a while) or heartbeats, and answers the member's epoch and,
    /// when it must learn it, its assignment. `match_regex` resolves a subscription's
    /// regular expression to the live topics it matches (`None`: not resolvable now;
    /// the earlier matches stay). Creates the group.
    ///
    /// # Errors
    /// A [`ConsumerError`] whose refusal is the Kafka error to answer.
    pub async fn consumer_heartbeat(
        &self,
        request: &ConsumerHeartbeat,
        match_regex: impl Fn(&str) -> Option<BTreeSet<String>>,
    ) -> Result<ConsumerHeartbeatAnswer, ConsumerError> {
        if self.check_not_closing().is_err() {
            return Err(refused(ConsumerRefusal::ShuttingDown, "shutting down"));
        }
        // What the group subscribes to, looked at first, so that the topics' partition
        // counts are read without the groups' lock.
        let (mut topics, stored_regex) = self.with_consumer(true, |g| {
            check_type(g)?;
            let c = &g.members.consumer;
            let regex = c
                .members
                .get(&request.member_id)
                .and_then(|m| m.regex.clone());
            Ok((c.subscribed_topics(), regex))
        })?;
        let sub = request.subscription.as_ref();
        if let Some(names) = sub.and_then(|s| s.topic_names.as_ref()) {
            topics.extend(names.iter().cloned());
        }
        let regex = match sub.and_then(|s| s.regex.as_ref()) {
            Some(regex) => Some(regex.clone()).filter(|r| !r.is_empty()),
            None => stored_regex,
        };
        let regex_topics = regex.as_deref().and_then(&match_regex);
        if let Some(found) = &regex_topics {
            topics.extend(found.iter().cloned());
        }
        let partitions: BTreeMap<String, u32> = topics
            .into_iter()
            .filter_map(|name| {
                let t = self.kafko.find_topic(&name).ok().flatten()?;
                Some((name, t.partitions()))
            })
            .collect();
        let limits = self.coordinator().limits;
        let new_id = new_member_id;
        let answer = self.with_consumer(true, |g| {
            check_type(g)?;
            let cx = HeartbeatContext {
                now: Instant::now(),
                regex_topics,
                partitions: &partitions,
                heartbeat_interval: limits.consumer_heartbeat_interval,
                max_members: limits.max_size,
                new_id: &new_id,
            };
            g.members.consumer.heartbeat(request, &cx)
        })?;
        // Durable before the member learns it.
        let c = self.coordinator();
        if let Err(e) =
            persist_consumer(c.store.clone(), c.groups.clone(), self.name.to_string()).await
        {
            tracing::warn!(group = %self.name, error = %e, "writing consumer group members failed");
        }
        Ok(answer)
    }

    /// Kafka's ConsumerGroupDescribe of this group.
    ///
    /// # Errors
    /// `NotConsumerGroup` for a missing group or one of another type with members.
    pub fn consumer_describe(&self) -> Result<ConsumerGroupDescription, ConsumerError> {
        self.with_consumer(false, |g| {
            check_type(g)?;
            let c = &g.members.consumer;
            // A group never used by the consumer protocol is not a consumer group.
            if c.group_epoch == 0 {
                return Err(refused(
                    ConsumerRefusal::NotConsumerGroup,
                    "not a consumer group",
                ));
            }
            Ok(c.describe())
        })
    }

    /// Whether the group has live consumer-protocol members (OffsetCommit and
    /// OffsetFetch then check member epochs with [`consumer_check_offsets`](Self::consumer_check_offsets)).
    pub fn is_consumer_group(&self) -> bool {
        self.with_consumer(false, |g| Ok(g.members.consumer.is_active()))
            .unwrap_or(false)
    }

    /// Checks an OffsetCommit (or, with `fetch`, an OffsetFetch) of a consumer group
    /// from `member_id` at `member_epoch` (−1 with no member: taken for a commit only
    /// while the group is empty). `version` is the request's: a member of a consumer
    /// group commits with v9 or later.
    ///
    /// # Errors
    /// `UnknownMember`, `FencedMemberEpoch`, `StaleMemberEpoch`, `UnsupportedVersion`.
    pub fn consumer_check_offsets(
        &self,
        member_id: &str,
        member_epoch: i32,
        fetch: bool,
        version: i16,
    ) -> Result<(), ConsumerError> {
        self.with_consumer(false, |g| {
            let c = &g.members.consumer;
            if !fetch && version < 9 && c.members.contains_key(member_id) {
                return Err(refused(
                    ConsumerRefusal::UnsupportedVersion,
                    "OffsetCommit version 9 or above must be used by members of a consumer group",
                ));
            }
            c.check_offsets_call(member_id, member_epoch, fetch)
        })
    }

    /// Kafka's OffsetCommit on one topic of a consumer group, from `member_id` at
    /// `member_epoch` (see [`consumer_check_offsets`](Self::consumer_check_offsets)).
    /// Durable before it returns; keeps each offset's metadata string.
    ///
    /// # Errors
    /// `Err(Ok(refusal))` for the member-epoch check, `Err(Err(e))` for the commit
    /// (`PartitionNotFound`, `TopicDeleted`, `ShuttingDown`, or the write's storage
    /// failure: nothing changes).
    pub async fn consumer_commit(
        &self,
        member_id: &str,
        member_epoch: i32,
        version: i16,
        topic: &TopicHandle,
        offsets: &[CommitOffset],
    ) -> Result<(), Result<ConsumerError, GroupError>> {
        self.check_not_closing().map_err(|e| Err(e.into()))?;
        let t = topic.inner();
        t.check_live().map_err(|e| Err(e.into()))?;
        for o in offsets {
            t.partition(o.partition).map_err(|e| Err(e.into()))?;
        }
        self.consumer_check_offsets(member_id, member_epoch, false, version)
            .map_err(Ok)?;
        self.coordinator()
            .commit_kafka_offsets(&self.name, &t.name, offsets)
            .await
            .map_err(|e| Err(e.into()))
    }
}
