//! The one place where the REST Proxy touches kafko's consumer groups. A consumer
//! instance is a member of its group on each subscribed topic (kafko's groups are per
//! group *and* topic); this module joins, polls, commits, seeks and leaves for it, and
//! handles generations itself: a member whose generation went stale (someone joined or
//! left) rejoins under the same id and retries once, so clients never see generations.

use std::collections::HashMap;
use std::time::Duration;

use kafko_core::{
    GroupConfig, GroupPollOptions, GroupRecords, Kafko, KafkoError, Membership, OffsetReset,
    PartitionOffset, SeekTo,
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

    /// Sets where the group starts on partitions without a committed offset.
    pub(crate) async fn set_offset_reset(&self, reset: OffsetReset) -> kafko_core::Result<()> {
        self.kafko
            .set_group_config(
                self.group,
                GroupConfig {
                    offset_reset: reset,
                },
            )
            .await
    }

    /// Joins (or heartbeats on) `topic`.
    pub(crate) async fn join(&self, topic: &str) -> kafko_core::Result<Membership> {
        self.kafko
            .join_group(self.group, topic, Some(self.member_id), self.session)
            .await
    }

    /// Leaves `topic`; a member that is already gone (expired) is not an error.
    pub(crate) async fn leave(&self, topic: &str) -> kafko_core::Result<()> {
        match self
            .kafko
            .leave_group(self.group, topic, self.member_id)
            .await
        {
            Err(KafkoError::UnknownMember { .. } | KafkoError::TopicNotFound { .. }) | Ok(()) => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Polls `topic` at once (no wait), rejoining first if the generation moved.
    pub(crate) async fn poll(
        &self,
        member: &mut Membership,
        max_records: usize,
        max_bytes: usize,
        auto_commit: bool,
    ) -> kafko_core::Result<GroupRecords> {
        let options = GroupPollOptions {
            max_records,
            max_bytes,
            wait: Duration::ZERO,
            auto_commit,
        };
        match self
            .kafko
            .poll_group_member(self.group, &member.topic, &member.member_ref(), &options)
            .await
        {
            Err(e) if needs_rejoin(&e) => {
                *member = self.join(&member.topic.clone()).await?;
                self.kafko
                    .poll_group_member(self.group, &member.topic, &member.member_ref(), &options)
                    .await
            }
            other => other,
        }
    }

    /// Commits `offsets` (next offsets to read), or everything consumed when `None`.
    pub(crate) async fn commit(
        &self,
        member: &mut Membership,
        offsets: Option<&[PartitionOffset]>,
    ) -> kafko_core::Result<Vec<PartitionOffset>> {
        let topic = member.topic.clone();
        match self
            .kafko
            .commit_group_offsets(self.group, &topic, Some(&member.member_ref()), offsets)
            .await
        {
            Err(e) if needs_rejoin(&e) => {
                *member = self.join(&topic).await?;
                self.kafko
                    .commit_group_offsets(self.group, &topic, Some(&member.member_ref()), offsets)
                    .await
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
        let topic = member.topic.clone();
        match self
            .kafko
            .seek_group(
                self.group,
                &topic,
                Some(&member.member_ref()),
                Some(partition),
                to,
            )
            .await
        {
            Err(e) if needs_rejoin(&e) => {
                *member = self.join(&topic).await?;
                self.kafko
                    .seek_group(
                        self.group,
                        &topic,
                        Some(&member.member_ref()),
                        Some(partition),
                        to,
                    )
                    .await
            }
            other => other,
        }
    }

    /// The group's committed offsets (next offset to read) on `topic`, by partition.
    pub(crate) fn committed(&self, topic: &str) -> kafko_core::Result<HashMap<u32, u64>> {
        let described = match self.kafko.describe_group(self.group) {
            Ok(d) => d,
            Err(KafkoError::GroupNotFound { .. }) => return Ok(HashMap::new()),
            Err(e) => return Err(e),
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
