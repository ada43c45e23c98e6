//! The one place where the REST Proxy touches kafko's consumer groups. A subscribed
//! consumer instance is one member of its group, reading every subscribed topic that
//! exists, in the group's one generation; this module joins, polls, commits, seeks and
//! leaves for it, and handles generations itself: a member whose generation went stale
//! (someone joined or left) rejoins under the same id and retries once, so clients never
//! see generations.
//! Polls are two-phase: the caller confirms a poll's `Delivery` once its answer went
//! out, and a poll dropped unconfirmed puts its records back. An instance with a manual
//! assignment is no member: it commits as the group's implicit member.

use std::collections::HashMap;
use std::time::Duration;

use kafko_core::{
    GroupConfig, GroupError, GroupHandle, GroupMembership, GroupPoll, GroupPollOptions, Kafko,
    KafkoError, MemberRef, OffsetReset, PartitionOffset, SeekTo, TopicHandle,
};

/// Longest member session kafko accepts.
const MAX_SESSION: Duration = kafko_core::group::MAX_SESSION_TIMEOUT;

/// A member's session: at least 1 ms, at most kafko's maximum.
fn session(timeout: Duration) -> Duration {
    timeout.clamp(Duration::from_millis(1), MAX_SESSION)
}

/// Whether a failure means "rejoin and try again".
fn needs_rejoin(e: &KafkoError) -> bool {
    matches!(
        e,
        KafkoError::StaleGeneration { .. } | KafkoError::UnknownMember { .. }
    )
}

/// Group operations of one consumer instance.
pub(crate) struct GroupAdapter<'a> {
    kafko: &'a Kafko,
    group: &'a str,
    member_id: &'a str,
    session: Duration,
}

impl<'a> GroupAdapter<'a> {
    pub(crate) fn new(
        kafko: &'a Kafko,
        group: &'a str,
        member_id: &'a str,
        session_timeout: Duration,
    ) -> Self {
        GroupAdapter {
            kafko,
            group,
            member_id,
            session: session(session_timeout),
        }
    }

    /// The group's name.
    pub(crate) fn group(&self) -> &str {
        self.group
    }

    fn handles(&self, topic: &str) -> kafko_core::Result<(GroupHandle, TopicHandle)> {
        Ok((self.kafko.group(self.group)?, self.kafko.topic(topic)?))
    }

    /// Sets where the group starts on partitions without a committed offset.
    pub(crate) async fn set_offset_reset(&self, reset: OffsetReset) -> kafko_core::Result<()> {
        self.kafko
            .group(self.group)?
            .configure(GroupConfig {
                offset_reset: reset,
            })
            .await?;
        Ok(())
    }

    /// Joins (or heartbeats) as one member reading every topic of `subscription` that
    /// exists now (Kafka waits for a subscribed topic to appear; so does a later read).
    /// `None` when none exists yet.
    pub(crate) fn join(
        &self,
        subscription: &[String],
    ) -> kafko_core::Result<Option<GroupMembership>> {
        let mut handles = Vec::new();
        for topic in subscription {
            if let Some(t) = self.kafko.find_topic(topic)? {
                handles.push(t);
            }
        }
        if handles.is_empty() {
            return Ok(None);
        }
        let topics: Vec<&TopicHandle> = handles.iter().collect();
        let group = self.kafko.group(self.group)?;
        Ok(Some(group.join_topics(
            &topics,
            Some(self.member_id),
            self.session,
        )?))
    }

    /// Leaves the group (committing what auto-commit owes); a member that is already
    /// gone (expired, or its topics deleted) is not an error.
    pub(crate) async fn leave(&self) -> kafko_core::Result<()> {
        match self.kafko.group(self.group)?.leave(self.member_id).await {
            Err(GroupError::UnknownMember { .. } | GroupError::GroupNotFound { .. }) | Ok(()) => {
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Runs `op` as `member` on `topic`; if the group moved on (a stale generation, or
    /// the member expired), rejoins under the same id with `subscription` and runs it
    /// once more, so clients never see generations.
    async fn as_member(
        &self,
        member: &mut GroupMembership,
        subscription: &[String],
        topic: &str,
        op: MemberOp<'_>,
    ) -> kafko_core::Result<Done> {
        let (g, t) = self.handles(topic)?;
        match op.run(&g, &t, &member.member_ref()).await {
            Err(e) if needs_rejoin(&e) => {
                let Some(rejoined) = self.join(subscription)? else {
                    return Err(e);
                };
                *member = rejoined;
                op.run(&g, &t, &member.member_ref()).await
            }
            other => other,
        }
    }

    /// Polls `topic` at once (no wait). The records count as read only once the poll's
    /// delivery is confirmed.
    pub(crate) async fn poll(
        &self,
        member: &mut GroupMembership,
        subscription: &[String],
        topic: &str,
        (max_records, max_bytes): (usize, usize),
        auto_commit: bool,
    ) -> kafko_core::Result<GroupPoll> {
        let options = GroupPollOptions {
            max_records,
            max_bytes,
            wait: Duration::ZERO,
            auto_commit,
            acknowledged: None,
        };
        let done = self
            .as_member(member, subscription, topic, MemberOp::Poll(&options))
            .await?;
        done.polled()
    }

    /// Commits `offsets` (next offsets to read) on `topic`, or everything delivered
    /// there when `None`.
    pub(crate) async fn commit(
        &self,
        member: &mut GroupMembership,
        subscription: &[String],
        topic: &str,
        offsets: Option<&[PartitionOffset]>,
    ) -> kafko_core::Result<Vec<PartitionOffset>> {
        let done = self
            .as_member(member, subscription, topic, MemberOp::Commit(offsets))
            .await?;
        done.offsets()
    }

    /// Moves one owned partition of `topic` to `to` (kafko commits the new position).
    pub(crate) async fn seek(
        &self,
        member: &mut GroupMembership,
        subscription: &[String],
        (topic, partition): (&str, u32),
        to: SeekTo,
    ) -> kafko_core::Result<Vec<PartitionOffset>> {
        let done = self
            .as_member(member, subscription, topic, MemberOp::Seek(partition, to))
            .await?;
        done.offsets()
    }

    /// Commits `offsets` (next offsets to read) on `topic` as the group's implicit
    /// member, for an instance with a manual assignment (no membership): refused with
    /// `GroupHasMembers` while members are subscribed to `topic`.
    pub(crate) async fn commit_unowned(
        &self,
        topic: &str,
        offsets: &[PartitionOffset],
    ) -> kafko_core::Result<Vec<PartitionOffset>> {
        let (g, t) = self.handles(topic)?;
        Ok(g.commit(&t, None, Some(offsets)).await?)
    }

    /// The group's committed offsets (next offset to read) on `topic`, by partition.
    pub(crate) fn committed(&self, topic: &str) -> kafko_core::Result<HashMap<u32, u64>> {
        let described = match self.kafko.group(self.group)?.describe() {
            Ok(d) => d,
            Err(GroupError::GroupNotFound { .. }) => return Ok(HashMap::new()),
            Err(e) => return Err(e.into()),
        };
        Ok(described
            .topics
            .into_iter()
            .filter(|t| t.topic == topic)
            .flat_map(|t| t.partitions)
            .filter_map(|p| p.committed.map(|c| (p.partition, c)))
            .collect())
    }
}

/// A member's operation on one topic, run again after a rejoin.
#[derive(Clone, Copy)]
enum MemberOp<'a> {
    Poll(&'a GroupPollOptions),
    Commit(Option<&'a [PartitionOffset]>),
    Seek(u32, SeekTo),
}

/// What a [`MemberOp`] returned.
enum Done {
    Polled(Box<GroupPoll>),
    Offsets(Vec<PartitionOffset>),
}

impl Done {
    /// A poll's answer (a poll always answers `Polled`).
    fn polled(self) -> kafko_core::Result<GroupPoll> {
        match self {
            Done::Polled(p) => Ok(*p),
            Done::Offsets(_) => Err(mismatched("a poll")),
        }
    }

    /// A commit's or seek's offsets (they always answer `Offsets`).
    fn offsets(self) -> kafko_core::Result<Vec<PartitionOffset>> {
        match self {
            Done::Offsets(o) => Ok(o),
            Done::Polled(_) => Err(mismatched("a commit")),
        }
    }
}

fn mismatched(operation: &'static str) -> KafkoError {
    KafkoError::Internal(kafko_core::InternalError::Unexpected {
        operation,
        error: "the group call answered another kind of result".into(),
    })
}

impl MemberOp<'_> {
    async fn run(
        self,
        g: &GroupHandle,
        t: &TopicHandle,
        m: &MemberRef,
    ) -> kafko_core::Result<Done> {
        Ok(match self {
            MemberOp::Poll(options) => Done::Polled(Box::new(g.poll(t, Some(m), options).await?)),
            MemberOp::Commit(offsets) => Done::Offsets(g.commit(t, Some(m), offsets).await?),
            MemberOp::Seek(p, to) => Done::Offsets(g.seek(t, Some(m), Some(p), to).await?),
        })
    }
}
