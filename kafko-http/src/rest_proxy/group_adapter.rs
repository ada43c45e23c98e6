//! The one place where the REST Proxy touches kafko's consumer groups. A consumer
//! instance is a member of its group on each subscribed topic (kafko's groups are per
//! group *and* topic); this module joins, polls, commits, seeks and leaves for it, and
//! handles generations itself: a member whose generation went stale (someone joined or
//! left) rejoins under the same id and retries once, so clients never see generations.
//! Polls are two-phase: the caller confirms a poll's `Delivery` once its answer went
//! out, and a poll dropped unconfirmed puts its records back. An instance with a manual
//! assignment is no member: it commits as the group's implicit member.

use std::collections::HashMap;
use std::time::Duration;

use kafko_core::{
    GroupConfig, GroupError, GroupHandle, GroupPoll, GroupPollOptions, Kafko, KafkoError,
    Membership, OffsetReset, PartitionOffset, SeekTo, TopicHandle,
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

    /// Joins (or heartbeats on) `topic`.
    pub(crate) fn join(&self, topic: &str) -> kafko_core::Result<Membership> {
        let (g, t) = self.handles(topic)?;
        Ok(g.join(&t, Some(self.member_id), self.session)?)
    }

    /// Leaves `topic` (committing what auto-commit owes); a member that is already gone
    /// (expired, or its topic deleted) is not an error.
    pub(crate) async fn leave(&self, topic: &str) -> kafko_core::Result<()> {
        let left = match self.handles(topic) {
            Ok((g, t)) => g.leave(&t, self.member_id).await.map_err(KafkoError::from),
            Err(e) => Err(e),
        };
        match left {
            Err(
                KafkoError::UnknownMember { .. }
                | KafkoError::TopicNotFound { .. }
                | KafkoError::GroupNotFound { .. },
            )
            | Ok(()) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Polls `topic` at once (no wait), rejoining first if the generation moved. The
    /// records count as read only once the poll's delivery is confirmed.
    pub(crate) async fn poll(
        &self,
        member: &mut Membership,
        max_records: usize,
        max_bytes: usize,
        auto_commit: bool,
    ) -> kafko_core::Result<GroupPoll> {
        let options = GroupPollOptions {
            max_records,
            max_bytes,
            wait: Duration::ZERO,
            auto_commit,
            acknowledged: None,
        };
        let (g, t) = self.handles(&member.topic)?;
        match g
            .poll(&t, Some(&member.member_ref()), &options)
            .await
            .map_err(KafkoError::from)
        {
            Err(e) if needs_rejoin(&e) => {
                *member = g.join(&t, Some(self.member_id), self.session)?;
                Ok(g.poll(&t, Some(&member.member_ref()), &options).await?)
            }
            other => other,
        }
    }

    /// Commits `offsets` (next offsets to read), or everything delivered when `None`.
    pub(crate) async fn commit(
        &self,
        member: &mut Membership,
        offsets: Option<&[PartitionOffset]>,
    ) -> kafko_core::Result<Vec<PartitionOffset>> {
        let (g, t) = self.handles(&member.topic)?;
        match g
            .commit(&t, Some(&member.member_ref()), offsets)
            .await
            .map_err(KafkoError::from)
        {
            Err(e) if needs_rejoin(&e) => {
                *member = g.join(&t, Some(self.member_id), self.session)?;
                Ok(g.commit(&t, Some(&member.member_ref()), offsets).await?)
            }
            other => other,
        }
    }

    /// Moves one owned partition to `to` (kafko commits the new position).
    pub(crate) async fn seek(
        &self,
        member: &mut Membership,
        partition: u32,
        to: SeekTo,
    ) -> kafko_core::Result<Vec<PartitionOffset>> {
        let (g, t) = self.handles(&member.topic)?;
        match g
            .seek(&t, Some(&member.member_ref()), Some(partition), to)
            .await
            .map_err(KafkoError::from)
        {
            Err(e) if needs_rejoin(&e) => {
                *member = g.join(&t, Some(self.member_id), self.session)?;
                Ok(g.seek(&t, Some(&member.member_ref()), Some(partition), to)
                    .await?)
            }
            other => other,
        }
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
