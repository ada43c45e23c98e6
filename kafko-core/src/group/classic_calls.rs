//! The calls of Kafka's classic group protocol on a [`GroupHandle`]: JoinGroup (the
//! barrier), SyncGroup (the relay), Heartbeat, LeaveGroup, OffsetCommit with its
//! generation check and metadata, and what OffsetFetch reads. The state machine is in
//! `classic`; this module takes the groups' lock, waits for the rebalance to move on,
//! and turns refusals into the group's errors.
//!
//! A waiting call holds no lock: it waits on the group's `changed` signal until the
//! phase moves or its deadline passes, then looks again. Whichever call notices a
//! passed deadline completes the rebalance, so no timer task is needed.
//!
//! A call that leaves the group stable with new members or assignments, or empty,
//! writes `members.json` (`persist_classic`): the leader's SyncGroup and a static
//! member's quiet rejoin wait for that write before they answer; other changes (a
//! leave, an expiry) are written by a task of their own.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::GroupConfig;
use super::classic::{
    ClassicMemberId, JoinGroupOutcome, JoinGroupRequest, LeaveOutcome, MemberAssignment, Phase,
    Refusal, assignment_bytes, join_bytes,
};
use super::coordinator::{GroupState, group_not_found, persist_classic};
use super::handle::GroupHandle;
use super::membership::new_member_id;
use crate::error::{GroupError, KafkoError, Result};
use crate::handle::TopicHandle;

/// One partition's offset in an OffsetCommit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOffset {
    /// Partition.
    pub partition: u32,
    /// Next offset to read.
    pub offset: u64,
    /// The client's metadata string, read back by OffsetFetch.
    pub metadata: Option<String>,
    /// The leader epoch of the record the client consumed last, read back by
    /// OffsetFetch; `None` (or a negative epoch) when the client gave none.
    pub leader_epoch: Option<i32>,
}

/// A committed offset as OffsetFetch reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    /// Partition.
    pub partition: u32,
    /// Next offset to read.
    pub offset: u64,
    /// The metadata string of the commit, if it carried one.
    pub metadata: Option<String>,
    /// The leader epoch of the commit, if it carried one.
    pub leader_epoch: Option<i32>,
}

/// What a waiting call's look at its group found.
enum Step<T> {
    /// The answer.
    Done(T),
    /// Look again at once (the look moved the group on).
    Again,
    /// Wait for a change, at most until then.
    Until(Instant),
}

impl GroupHandle {
    /// Turns a refusal of the state machine into this group's error.
    fn refused(&self, member: &str, refusal: Refusal, given: u64) -> KafkoError {
        let group = self.name.to_string();
        match refusal {
            Refusal::UnknownMember => KafkoError::UnknownMember {
                group,
                member: member.to_owned(),
            },
            Refusal::StaleGeneration { current } => KafkoError::StaleGeneration {
                group,
                current,
                given,
            },
            Refusal::RebalanceInProgress => KafkoError::RebalanceInProgress { group },
            Refusal::Inconsistent(reason) => {
                KafkoError::InconsistentGroupProtocol { group, reason }
            }
            Refusal::Fenced { instance } => KafkoError::FencedInstanceId {
                group,
                instance,
                member: member.to_owned(),
            },
        }
    }

    /// Writes the group's Kafka members if they changed (see `persist_classic`).
    async fn persist_members(&self) -> Result<()> {
        let c = self.coordinator();
        persist_classic(c.store.clone(), c.groups.clone(), self.name.to_string()).await
    }

    /// The group's rebalance signal, to register on before looking at its state (so a
    /// change between the look and the wait is not missed).
    fn changed(&self) -> Result<Arc<Notify>> {
        self.coordinator()
            .lock()
            .get(&*self.name)
            .map(|g| g.changed.clone())
            .ok_or_else(|| group_not_found(&self.name))
    }

    /// Looks at the group with `look` until it says it is done, waiting on the group's
    /// signal (registered before each look, so no change is missed) up to the deadline
    /// it names in between.
    async fn wait_for<T>(
        &self,
        mut look: impl FnMut(&mut GroupState, &Arc<Notify>) -> Result<Step<T>>,
    ) -> Result<T> {
        loop {
            let changed = self.changed()?;
            let notified = changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            match self.with_classic(false, &mut look)? {
                Step::Done(value) => return Ok(value),
                Step::Again => {}
                Step::Until(deadline) => {
                    let _ = tokio::time::timeout_at(deadline, notified).await;
                }
            }
        }
    }

    /// Runs `f` on the group after expiring silent members of both kinds; `create`
    /// makes the group if it is missing.
    /// Creates the group unless it exists (a transaction that will commit its offsets
    /// holds it).
    pub(crate) fn ensure_exists(&self) -> Result<()> {
        self.with_classic(true, |_, _| Ok(()))
    }

    fn with_classic<T>(
        &self,
        create: bool,
        f: impl FnOnce(&mut GroupState, &Arc<Notify>) -> Result<T>,
    ) -> Result<T> {
        let name = &*self.name;
        let mut groups = self.coordinator().lock();
        if !groups.contains_key(name) {
            if !create {
                return Err(group_not_found(name));
            }
            self.coordinator().make_room(&mut groups)?;
            self.coordinator().count_created(&mut groups, name, 1);
            groups.insert(name.to_owned(), GroupState::new(GroupConfig::default()));
        }
        let g = groups.get_mut(name).ok_or_else(|| group_not_found(name))?;
        let now = Instant::now();
        g.last_used = now;
        g.expire(now);
        let changed = g.changed.clone();
        let m = &mut g.members;
        m.classic.count_in(&self.coordinator().totals);
        if m.classic.expire(now, &mut m.generation) {
            changed.notify_waiters();
        }
        let out = f(g, &changed);
        // A change worth keeping that no caller waits to write: written in the
        // background (the write takes the group's write lock, not this one).
        if g.members.classic.needs_write() {
            self.coordinator().persist_in_background(name);
        }
        out
    }

    /// Kafka's JoinGroup: admits the member (the member-id handshake first, when the
    /// request asks for it) and waits until the rebalance it joined completes — at once
    /// for a lone member, else when every known member has rejoined or the rebalance
    /// timeout passed (the silent ones are then removed). Only the leader's answer lists
    /// the members with their metadata.
    ///
    /// # Errors
    /// `InconsistentGroupProtocol` (the group has members of kafko's own APIs, another
    /// protocol type, or no assignor in common), `UnknownMember` (an id the group never
    /// gave out, or removed while waiting), `InvalidSessionTimeout` (outside the
    /// [`GroupLimits`](super::GroupLimits)' bounds), `LimitReached` (the groups, or one
    /// of the group's limits: resource `group members`, `group bytes`, `join protocols`),
    /// `ShuttingDown`.
    pub async fn classic_join(
        &self,
        mut request: JoinGroupRequest,
    ) -> Result<JoinGroupOutcome, GroupError> {
        self.check_not_closing()?;
        let limits = self.coordinator().limits;
        let timeout = request.session_timeout;
        let (min, max) = (limits.min_session_timeout, limits.max_session_timeout);
        if timeout < min || timeout > max {
            return Err(GroupError::InvalidSessionTimeout { timeout, min, max });
        }
        // No rebalance waits longer than the longest session a member may have.
        request.rebalance_timeout = request.rebalance_timeout.min(limits.max_session_timeout);
        if request.protocols.len() > limits.max_protocols {
            return Err(limit("join protocols", limits.max_protocols).into());
        }
        // A protocol named twice counts once (Kafka keys a join's protocols by name).
        let mut seen = HashSet::new();
        request.protocols.retain(|p| seen.insert(p.name.clone()));
        let group = &*self.name;
        let totals = self.coordinator().totals.clone();
        let admitted = self.with_classic(true, |g, changed| {
            if !g.members.members.is_empty() {
                return Err(self.refused(
                    &request.member_id,
                    Refusal::Inconsistent("its members use kafko's HTTP APIs".into()),
                    0,
                ));
            }
            if g.members.consumer.is_active() {
                return Err(self.refused(
                    &request.member_id,
                    Refusal::Inconsistent("it is a consumer group with members".into()),
                    0,
                ));
            }
            // An empty consumer group becomes a classic one.
            super::consumer_store::convert_to_classic(&mut g.members.consumer);
            let now = Instant::now();
            let c = &mut g.members.classic;
            c.check_protocols(&request)
                .map_err(|r| self.refused(&request.member_id, r, 0))?;
            // A static member: a join with no id takes over its instance's place (or
            // joins as a new member, with no id handshake); one with an id must be
            // the id its instance has.
            let mut replaces = None;
            let id = if let Some(instance) = request.group_instance_id.as_deref() {
                if request.member_id.is_empty() {
                    replaces = c.instance_holder(instance).cloned();
                    format!("{instance}-{}", new_member_id())
                } else {
                    let who = ClassicMemberId {
                        member_id: &request.member_id,
                        group_instance_id: Some(instance),
                    };
                    c.check_instance(who)
                        .map_err(|r| self.refused(&request.member_id, r, 0))?;
                    request.member_id.clone()
                }
            } else if request.member_id.is_empty() {
                let id = new_member_id();
                // Past the server's pending ids, the member joins without the handshake.
                if request.require_known_member_id
                    && totals.pending() < limits.max_pending_member_ids
                {
                    let until = now + request.session_timeout;
                    c.pending_ids.insert(id.clone(), until, limits.max_size);
                    c.settle();
                    return Ok(Err(JoinGroupOutcome::MemberIdRequired(id)));
                }
                id
            } else if c.members.contains_key(&request.member_id)
                || c.pending_ids.contains(&request.member_id)
            {
                request.member_id.clone()
            } else {
                return Err(self.refused(&request.member_id, Refusal::UnknownMember, 0));
            };
            let old = c
                .members
                .get(replaces.as_ref().unwrap_or(&id))
                .map(|m| m.bytes);
            if old.is_none() && c.members.len() >= limits.max_size {
                return Err(limit("group members", limits.max_size));
            }
            let bytes = join_bytes(&id, &request);
            let old = old.unwrap_or(0);
            if bytes > limits.max_member_bytes
                || c.held.saturating_sub(old) + bytes > limits.max_group_bytes
                || totals.bytes().saturating_sub(old) + bytes > limits.max_total_bytes
            {
                return Err(limit("group bytes", limits.max_group_bytes));
            }
            let generation = g.members.generation;
            if let Some(old) = replaces {
                let quiet = c.replace_static(&old, &id, &request, now);
                // A join still waiting under the old id ends: that id is gone.
                changed.notify_waiters();
                tracing::info!(group, member = %id, replaced = %old, "static member rejoined");
                if quiet {
                    let mut answer = c
                        .answer(&id, generation)
                        .ok_or_else(|| self.refused(&id, Refusal::UnknownMember, 0))?;
                    answer.skip_assignment = answer.leader == id;
                    return Ok(Err(JoinGroupOutcome::Joined(answer)));
                }
                if c.try_complete(&mut g.members.generation, false, now) {
                    changed.notify_waiters();
                }
                return Ok(Ok((id, generation)));
            }
            if !c.admit(&id, &request, now) {
                let answer = c.answer(&id, generation);
                return Ok(Err(answer.map_or_else(
                    || JoinGroupOutcome::MemberIdRequired(id.clone()),
                    JoinGroupOutcome::Joined,
                )));
            }
            if c.try_complete(&mut g.members.generation, false, now) {
                changed.notify_waiters();
            }
            tracing::info!(group, member = %id, "member joining (Kafka protocol)");
            Ok(Ok((id, generation)))
        })?;
        self.forget_consumer_group().await?;
        let (id, joined_in) = match admitted {
            Ok(waiting) => waiting,
            Err(answered) => {
                // A static member's quiet rejoin changed the member ids: durable first.
                self.persist_members().await?;
                return Ok(answered);
            }
        };
        let answer = self
            .wait_for(|g, changed| {
                let m = &mut g.members;
                let c = &mut m.classic;
                if !c.members.contains_key(&id) {
                    return Err(self.refused(&id, Refusal::UnknownMember, 0));
                }
                match c.phase {
                    Phase::Preparing { deadline } if m.generation == joined_in => {
                        if Instant::now() < deadline {
                            return Ok(Step::Until(deadline));
                        }
                        if c.try_complete(&mut m.generation, true, Instant::now()) {
                            changed.notify_waiters();
                        }
                        Ok(Step::Again)
                    }
                    _ => c
                        .answer(&id, m.generation)
                        .map(Step::Done)
                        .ok_or_else(|| self.refused(&id, Refusal::UnknownMember, 0)),
                }
            })
            .await?;
        Ok(JoinGroupOutcome::Joined(answer))
    }

    /// Kafka's SyncGroup: the leader hands in every member's assignment (which makes
    /// the group stable); the others wait for it. Each member gets its own assignment,
    /// unchanged.
    ///
    /// # Errors
    /// `UnknownMember`, `StaleGeneration`, `RebalanceInProgress` (rejoin), `GroupNotFound`.
    pub async fn classic_sync(
        &self,
        who: impl Into<ClassicMemberId<'_>>,
        generation: u64,
        assignments: Vec<MemberAssignment>,
    ) -> Result<Bytes, GroupError> {
        let who = who.into();
        let member_id = who.member_id;
        let mut assignments = Some(assignments);
        let assignment = self
            .wait_for(|g, changed| {
                let now = Instant::now();
                let m = &mut g.members;
                let c = &mut m.classic;
                c.check(who, generation, m.generation, now)
                    .map_err(|r| self.refused(member_id, r, generation))?;
                if c.phase == Phase::Completing && c.leader.as_deref() == Some(member_id) {
                    let given = assignments.take().unwrap_or_default();
                    let limits = self.coordinator().limits;
                    let mut extra = 0usize;
                    for a in given
                        .iter()
                        .filter(|a| c.members.contains_key(&a.member_id))
                    {
                        let bytes = assignment_bytes(&a.assignment, &a.partitions);
                        if bytes > limits.max_member_bytes {
                            return Err(limit("group bytes", limits.max_group_bytes));
                        }
                        extra = extra.saturating_add(bytes);
                    }
                    let totals = &self.coordinator().totals;
                    if c.held.saturating_add(extra) > limits.max_group_bytes
                        || totals.bytes().saturating_add(extra) > limits.max_total_bytes
                    {
                        return Err(limit("group bytes", limits.max_group_bytes));
                    }
                    c.assign(given);
                    changed.notify_waiters();
                }
                if c.phase == Phase::Stable {
                    let own = c.members.get(member_id).map(|m| m.assignment.clone());
                    return Ok(Step::Done(own.unwrap_or_default()));
                }
                // Wait for the leader, at most until its session would expire.
                let leader_expires = c
                    .leader
                    .as_ref()
                    .and_then(|l| c.members.get(l))
                    .map_or(now, |l| l.last_seen + l.session_timeout);
                Ok(Step::Until(leader_expires))
            })
            .await?;
        // The generation's assignments are durable before anyone acts on them.
        self.persist_members().await?;
        Ok(assignment)
    }

    /// The protocol type and the chosen assignor of a group of Kafka clients (what a
    /// SyncGroup answer names), `None` while it has none.
    pub fn classic_protocol(&self) -> Option<(String, String)> {
        let groups = self.coordinator().lock();
        let c = &groups.get(&*self.name)?.members.classic;
        c.is_active()
            .then(|| (c.protocol_type.clone(), c.protocol.clone()))
    }

    /// Kafka's Heartbeat: keeps the member's session alive.
    ///
    /// # Errors
    /// `RebalanceInProgress` (rejoin), `StaleGeneration`, `UnknownMember`,
    /// `GroupNotFound`.
    pub fn classic_heartbeat<'a>(
        &self,
        who: impl Into<ClassicMemberId<'a>>,
        generation: u64,
    ) -> Result<(), GroupError> {
        let who = who.into();
        self.with_classic(false, |g, _| {
            let m = &mut g.members;
            m.classic
                .check(who, generation, m.generation, Instant::now())
                .map_err(|r| self.refused(who.member_id, r, generation))
        })?;
        Ok(())
    }

    /// Kafka's LeaveGroup: removes the members; the others rejoin. Returns the ids that
    /// were not members.
    ///
    /// # Errors
    /// `GroupNotFound`, or the storage failure of writing the emptied group.
    pub async fn classic_leave(&self, member_ids: &[String]) -> Result<Vec<String>, GroupError> {
        let members: Vec<(String, Option<String>)> =
            member_ids.iter().map(|id| (id.clone(), None)).collect();
        let outcomes = self.classic_leave_members(&members).await?;
        Ok(member_ids
            .iter()
            .zip(outcomes)
            .filter(|(_, outcome)| *outcome != LeaveOutcome::Left)
            .map(|(id, _)| id.clone())
            .collect())
    }

    /// Kafka's LeaveGroup v3+: each `(member id, group.instance.id)` leaves. A static
    /// member may name only its instance (an empty member id); a member id its instance
    /// no longer has is fenced. The others rejoin. One outcome per member, in order (a
    /// member named twice leaves once, then is unknown). An emptied group is durable
    /// as such before the answer.
    ///
    /// # Errors
    /// `GroupNotFound`, or the storage failure of writing the emptied group.
    pub async fn classic_leave_members(
        &self,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<LeaveOutcome>, GroupError> {
        let outcomes = self.with_classic(false, |g, changed| {
            let m = &mut g.members;
            let c = &mut m.classic;
            let mut leaving = Vec::new();
            let mut outcomes = Vec::with_capacity(members.len());
            let mut seen = HashSet::new();
            for (member_id, instance) in members {
                let id = match instance.as_deref() {
                    Some(instance) if member_id.is_empty() => c.instance_holder(instance).cloned(),
                    _ => Some(member_id.clone()),
                };
                let who = ClassicMemberId {
                    member_id: id.as_deref().unwrap_or(member_id),
                    group_instance_id: instance.as_deref(),
                };
                let checked = c.check_instance(who);
                let outcome = match (id, checked) {
                    (_, Err(Refusal::Fenced { .. })) => LeaveOutcome::FencedInstanceId,
                    (Some(id), Ok(()))
                        if c.members.contains_key(&id) && seen.insert(id.clone()) =>
                    {
                        leaving.push(id);
                        LeaveOutcome::Left
                    }
                    _ => LeaveOutcome::UnknownMember,
                };
                outcomes.push(outcome);
            }
            if !c
                .remove(&leaving, Instant::now(), &mut m.generation)
                .is_empty()
            {
                changed.notify_waiters();
            }
            Ok(outcomes)
        })?;
        self.persist_members().await?;
        Ok(outcomes)
    }

    /// Kafka's OffsetCommit on one topic: from a member in its generation
    /// (`Some((member, generation))`), or, for a group without Kafka members, from a
    /// client that is no member (`None`, generation −1 in Kafka). Durable before it
    /// returns; keeps each offset's metadata string.
    ///
    /// # Errors
    /// `UnknownMember`, `StaleGeneration`, `RebalanceInProgress`, `GroupHasMembers` (a
    /// commit without a member while kafko's own members read the topic),
    /// `PartitionNotFound`, `TopicDeleted`, `ShuttingDown`, or the write's storage
    /// failure (nothing changes).
    pub async fn classic_commit(
        &self,
        member: Option<(ClassicMemberId<'_>, u64)>,
        topic: &TopicHandle,
        offsets: &[CommitOffset],
    ) -> Result<(), GroupError> {
        self.check_not_closing()?;
        let t = topic.inner();
        t.check_live()?;
        for o in offsets {
            t.partition(o.partition)?;
        }
        let group = &*self.name;
        self.with_classic(true, |g, _| {
            let m = &mut g.members;
            match member {
                Some((who, generation)) => m
                    .classic
                    .check(who, generation, m.generation, Instant::now())
                    .map_err(|r| self.refused(who.member_id, r, generation)),
                None if m.classic.is_active() || m.consumer.is_active() => {
                    Err(self.refused("", Refusal::UnknownMember, 0))
                }
                None if m.count_on(&t.name) > 0 => Err(KafkoError::GroupHasMembers {
                    group: group.to_owned(),
                    topic: t.name.to_string(),
                    members: m.count_on(&t.name),
                }),
                None => Ok(()),
            }
        })?;
        self.coordinator()
            .commit_kafka_offsets(group, &t.name, offsets)
            .await?;
        Ok(())
    }

    /// Kafka's OffsetDelete on one topic: deletes the group's committed offsets of
    /// `partitions` of `topic` durably, unless a live member reads the topic: one of
    /// kafko's own members subscribed to it, or a member of Kafka clients whose
    /// metadata for the chosen protocol `reads_topic` says reads it (given the group's
    /// protocol type and that metadata: a consumer subscription, say). A partition
    /// without a committed offset is no error.
    ///
    /// # Errors
    /// `GroupNotFound`; `GroupHasMembers` while a live member reads the topic (nothing
    /// changes); `ShuttingDown`; or the write's storage failure (nothing changes).
    pub async fn classic_delete_offsets(
        &self,
        topic: &str,
        partitions: &[u32],
        reads_topic: impl Fn(&str, &[u8]) -> bool,
    ) -> Result<(), GroupError> {
        self.check_not_closing()?;
        let group = &*self.name;
        self.with_classic(false, |g, _| {
            let m = &g.members;
            let c = &m.classic;
            let classic = c
                .members
                .values()
                .filter(|member| {
                    let metadata = member
                        .protocols
                        .iter()
                        .find(|p| p.name == c.protocol)
                        .map_or(&[][..], |p| &p.metadata[..]);
                    reads_topic(&c.protocol_type, metadata)
                })
                .count();
            let consumers = m
                .consumer
                .members
                .values()
                .filter(|member| member.subscribed.contains(topic))
                .count();
            let readers = m.count_on(topic) + classic + consumers;
            if readers > 0 {
                return Err(KafkoError::GroupHasMembers {
                    group: group.to_owned(),
                    topic: topic.to_owned(),
                    members: readers,
                });
            }
            Ok(())
        })?;
        self.coordinator()
            .delete_committed_where(group, topic, |_, _| partitions.to_vec(), "offset delete")
            .await?;
        Ok(())
    }

    /// The committed offsets of every topic the group has committed on (OffsetFetch
    /// without a topic list), by topic name.
    ///
    /// # Errors
    /// `GroupNotFound`.
    pub fn classic_committed(&self) -> Result<BTreeMap<String, Vec<CommittedOffset>>, GroupError> {
        let groups = self.coordinator().lock();
        let g = groups
            .get(&*self.name)
            .ok_or_else(|| group_not_found(&self.name))?;
        Ok(g.topics
            .iter()
            .filter(|(_, ts)| !ts.committed.is_empty())
            .map(|(topic, ts)| {
                let offsets = ts
                    .committed
                    .iter()
                    .map(|(&partition, &offset)| CommittedOffset {
                        partition,
                        offset,
                        metadata: ts.metadata.get(&partition).cloned(),
                        leader_epoch: ts.leader_epoch.get(&partition).copied(),
                    })
                    .collect();
                (topic.clone(), offsets)
            })
            .collect())
    }
}

/// A classic group's limit on `resource` is reached.
fn limit(resource: &'static str, limit: usize) -> KafkoError {
    KafkoError::LimitReached {
        resource,
        limit: u64::try_from(limit).unwrap_or(u64::MAX),
    }
}
