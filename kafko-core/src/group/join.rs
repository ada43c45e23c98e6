//! Membership calls of the groups that kafko assigns itself (the `/v1` and REST Proxy
//! members): join on one topic or a set of topics, heartbeat, leave. Every change of a
//! member's topics starts a new generation of the whole group; each topic's partitions
//! are split by range among the members reading it (`membership`).

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::time::Instant;

use super::coordinator::{GroupState, group_not_found, validate_session_timeout};
use super::handle::GroupHandle;
use super::membership::{Member, new_member_id};
use super::{GroupConfig, GroupMembership, MemberRef, Membership, PartitionOffset};
use crate::convert::usize_saturating;
use crate::error::{GroupError, KafkoError, Result};
use crate::handle::TopicHandle;
use crate::naming::validate_name;

/// How a join changes a member's topics.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Subscribe {
    /// Adds the topics to those it reads (the `/v1` join on one topic).
    Add,
    /// Reads exactly these topics.
    Exactly,
}

impl GroupHandle {
    /// Runs `f` on the whole group's state, after expiring silent members; creates the
    /// group first when `create` (counting `entries` against the eviction bound).
    fn with_group<T>(
        &self,
        create: Option<usize>,
        f: impl FnOnce(&mut GroupState) -> Result<T>,
    ) -> Result<T> {
        let name = &*self.name;
        let mut groups = self.coordinator().lock();
        if !groups.contains_key(name) {
            let Some(entries) = create else {
                return Err(group_not_found(name));
            };
            self.coordinator().make_room(&mut groups)?;
            self.coordinator().count_created(&mut groups, name, entries);
            groups.insert(name.to_owned(), GroupState::new(GroupConfig::default()));
        }
        let g = groups.get_mut(name).ok_or_else(|| group_not_found(name))?;
        let now = Instant::now();
        g.last_used = now;
        g.expire(now);
        f(g)
    }

    /// Joins the group on `topic` (creating the group), adding it to the topics the
    /// member reads. Without `member_id` a new id is generated; joining again with a
    /// live member's id on a topic it reads is a heartbeat that returns its current
    /// assignment without a rebalance. A new member, or a new topic for a member, starts
    /// a new generation of the whole group.
    ///
    /// # Errors
    /// [`GroupError::InvalidSessionTimeout`], [`GroupError::InvalidName`] (the member
    /// id), `TopicDeleted`, `InconsistentGroupProtocol` (Kafka clients are its members).
    pub fn join(
        &self,
        topic: &TopicHandle,
        member_id: Option<&str>,
        session_timeout: Duration,
    ) -> Result<Membership, GroupError> {
        let joined = self.join_with(&[topic], member_id, session_timeout, Subscribe::Add)?;
        let name = topic.inner().name.to_string();
        let assignment = joined.partitions(&name).to_vec();
        Ok(Membership {
            group: joined.group,
            topic: name,
            member_id: joined.member_id,
            generation: joined.generation,
            assignment,
        })
    }

    /// Joins the group (creating it) as a member that reads exactly `topics`: one
    /// member, one generation over all of them. Without `member_id` a new id is
    /// generated; joining again with a live member's id and the same topics is a
    /// heartbeat that returns its current assignment; other topics start a new
    /// generation.
    ///
    /// # Errors
    /// As [`join`](Self::join); `InvalidRequest` for an empty topic list.
    pub fn join_topics(
        &self,
        topics: &[&TopicHandle],
        member_id: Option<&str>,
        session_timeout: Duration,
    ) -> Result<GroupMembership, GroupError> {
        if topics.is_empty() {
            return Err(KafkoError::InvalidRequest {
                reason: "a member reads at least one topic".into(),
            }
            .into());
        }
        self.join_with(topics, member_id, session_timeout, Subscribe::Exactly)
    }

    fn join_with(
        &self,
        topics: &[&TopicHandle],
        member_id: Option<&str>,
        session_timeout: Duration,
        mode: Subscribe,
    ) -> Result<GroupMembership, GroupError> {
        validate_session_timeout(session_timeout)?;
        if let Some(id) = member_id {
            validate_name(id)?;
        }
        for t in topics {
            t.inner().check_live()?;
        }
        let names: BTreeSet<String> = topics.iter().map(|t| t.inner().name.to_string()).collect();
        let entries: u64 = topics
            .iter()
            .map(|t| u64::from(t.inner().partition_count()))
            .sum();
        let group = &*self.name;
        let joined = self.with_group(Some(usize_saturating(entries)), |g| {
            if g.members.classic.is_active() || g.members.consumer.is_active() {
                return Err(KafkoError::InconsistentGroupProtocol {
                    group: group.to_owned(),
                    reason: "its members are Kafka clients".into(),
                });
            }
            let now = Instant::now();
            let id = member_id.map_or_else(new_member_id, str::to_owned);
            let member = g
                .members
                .members
                .entry(id.clone())
                .or_insert_with(|| Member::new(session_timeout, now));
            let new = member.topics.is_empty();
            member.last_seen = now;
            member.session_timeout = session_timeout;
            let wanted = match mode {
                Subscribe::Add => member.topics.union(&names).cloned().collect(),
                Subscribe::Exactly => names.clone(),
            };
            if new || wanted != member.topics {
                member.topics = wanted;
                for name in &names {
                    g.topics.entry(name.clone()).or_default();
                }
                g.rebalance();
                tracing::info!(group, member = %id, generation = g.members.generation, topics = ?names, "member joined");
            }
            Ok(self.membership_of(g, &id, topics))
        })?;
        Ok(joined)
    }

    /// The member's place in the group now.
    fn membership_of(&self, g: &GroupState, id: &str, topics: &[&TopicHandle]) -> GroupMembership {
        let reads = g.members.members.get(id).map(|m| &m.topics);
        let mut assignment: Vec<(String, Vec<u32>)> = topics
            .iter()
            .map(|t| t.inner())
            .filter(|t| reads.is_some_and(|r| r.contains(&*t.name)))
            .map(|t| {
                let parts = g.members.assignment(id, &t.name, t.partition_count());
                (t.name.to_string(), parts)
            })
            .collect();
        assignment.sort_by(|a, b| a.0.cmp(&b.0));
        assignment.dedup_by(|a, b| a.0 == b.0);
        GroupMembership {
            group: self.name.to_string(),
            member_id: id.to_owned(),
            generation: g.members.generation,
            assignment,
        }
    }

    /// Keeps a member's session alive and tells whether it is still in the current
    /// generation.
    ///
    /// # Errors
    /// `GroupNotFound`, `UnknownMember` (expired or left: rejoin), `StaleGeneration` (the
    /// group rebalanced: rejoin to learn the new assignment).
    pub fn heartbeat(&self, member: &MemberRef) -> Result<(), GroupError> {
        let group = &*self.name;
        self.with_group(None, |g| {
            let current = g.members.generation;
            let m = g
                .members
                .members
                .get_mut(&member.member_id)
                .ok_or_else(|| KafkoError::UnknownMember {
                    group: group.to_owned(),
                    member: member.member_id.clone(),
                })?;
            m.last_seen = Instant::now();
            if member.generation != current {
                return Err(KafkoError::StaleGeneration {
                    group: group.to_owned(),
                    current,
                    given: member.generation,
                });
            }
            Ok(())
        })?;
        Ok(())
    }

    /// Stops a member reading `topic` after committing what it was delivered there with
    /// auto-commit; a member left without topics leaves the group. The group
    /// rebalances.
    ///
    /// # Errors
    /// [`GroupError::GroupNotFound`], [`GroupError::UnknownMember`] (not a member, or it
    /// does not read `topic`), `TopicDeleted`, or a storage failure committing its
    /// delivered records (it stays a member).
    pub async fn leave_topic(
        &self,
        topic: &TopicHandle,
        member_id: &str,
    ) -> Result<(), GroupError> {
        self.leave_topics(Some(&[topic]), member_id).await
    }

    /// Removes a member from the group after committing, on each of its topics, what it
    /// was delivered with auto-commit.
    ///
    /// # Errors
    /// As [`leave_topic`](Self::leave_topic).
    pub async fn leave(&self, member_id: &str) -> Result<(), GroupError> {
        self.leave_topics(None, member_id).await
    }

    async fn leave_topics(
        &self,
        only: Option<&[&TopicHandle]>,
        member_id: &str,
    ) -> Result<(), GroupError> {
        let group = &*self.name;
        let unknown = || KafkoError::UnknownMember {
            group: group.to_owned(),
            member: member_id.to_owned(),
        };
        if let Some(topics) = only {
            for t in topics {
                t.inner().check_live()?;
            }
        }
        let leaving: Vec<String> = self.with_group(None, |g| {
            let m = g.members.members.get(member_id).ok_or_else(unknown)?;
            match only {
                None => Ok(m.topics.iter().cloned().collect()),
                Some(topics) => topics
                    .iter()
                    .map(|t| t.inner().name.to_string())
                    .map(|name| m.topics.contains(&name).then_some(name).ok_or_else(unknown))
                    .collect(),
            }
        })?;
        for topic in &leaving {
            let pending: Vec<PartitionOffset> = self.with_group(None, |g| {
                Ok(g.topics
                    .get(topic)
                    .map(|ts| ts.pending_of(member_id))
                    .unwrap_or_default())
            })?;
            if !pending.is_empty() {
                self.coordinator()
                    .commit(group, topic, &pending, |ts| {
                        ts.clear_pending(member_id, &pending)
                    })
                    .await?;
            }
        }
        let left = self.with_group(None, |g| {
            let Some(m) = g.members.members.get_mut(member_id) else {
                return Ok(false);
            };
            for topic in &leaving {
                m.topics.remove(topic);
            }
            if m.topics.is_empty() {
                g.members.members.remove(member_id);
            }
            g.rebalance();
            Ok(true)
        })?;
        if !left {
            return Err(unknown().into());
        }
        tracing::info!(group, member = member_id, topics = ?leaving, "member left");
        Ok(())
    }
}
