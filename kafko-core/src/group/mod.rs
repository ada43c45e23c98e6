//! Consumer groups with Kafka's semantics, used through a [`GroupHandle`]
//! ([`Kafko::group`](crate::Kafko::group)): committed offsets and server-kept cursors
//! per group and topic, and one membership per group, with one generation over every
//! topic its members read — members assigned by kafko (range, per topic) or Kafka
//! clients speaking the classic protocol (`classic`), never both in one group.
//!
//! - **Offsets.** A group has a committed offset (the next offset to read) per
//!   partition, persisted in `<data>/groups/<group>/<topic>.offsets` before the commit
//!   takes effect in memory (`offsets`), and an in-memory *position* that polls
//!   advance. Without a position a poll starts at the committed offset; without either,
//!   or when the offset left the log (retention), at the group's [`OffsetReset`] policy.
//!   The reset happens once: the offset it picks becomes the position, which later polls
//!   move on from, so no record produced after it is skipped.
//! - **Delivery (at-least-once).** A poll returns a [`GroupPoll`] whose records count
//!   as read only once the caller confirms them; unconfirmed, the position goes back.
//!   With auto-commit, a member's next poll commits what its previous confirmed poll
//!   returned, before reading on (Kafka's auto-commit rule). See [`GroupHandle`].
//! - **Members.** Members join (on one topic or a set of topics) and leave explicitly;
//!   every join, poll, commit and heartbeat keeps the session alive, and a member
//!   silent for longer than its session timeout is removed by the next operation on the
//!   group. Each change starts a new *generation* of the whole group and reassigns each
//!   topic's partitions among the members reading it with the range assignor
//!   (`membership`); positions fall back to the committed offsets, as after an eager
//!   Kafka rebalance. A poll or commit
//!   carrying an older generation fails with [`KafkoError::StaleGeneration`](crate::KafkoError::StaleGeneration); the member
//!   rejoins (same id) to learn its new assignment.
//! - **The implicit member.** Calls without a member (`member: None`) act as one
//!   member owning every partition, for clients that do not coordinate (the HTTP API's
//!   simple path). They are refused with
//!   [`KafkoError::GroupHasMembers`](crate::KafkoError::GroupHasMembers) while explicit members are live.
//!
//! - **Lifetime.** A group that holds nothing on disk (never configured, nothing
//!   committed) and has no live member is in-memory positions only: it is forgotten
//!   once unused for the idle timeout
//!   ([`KafkoOptions::idle_group_timeout`](crate::KafkoOptions::idle_group_timeout)),
//!   and, under a flood of new names, the least recently used such groups are forgotten
//!   sooner, so their memory stays bounded. A forgotten group starts again at its reset
//!   policy, as after a restart.
//!
//! Polls read without holding any lock. A partition whose answer is in flight (read,
//! not yet confirmed or dropped) is leased: other polls skip it until it settles, so
//! concurrent polls never hand out a record twice and a long poll never blocks other
//! members.

mod acknowledge;
mod assignor;
mod classic;
mod classic_calls;
mod classic_types;
mod consumer;
mod consumer_calls;
mod consumer_store;
mod consumer_types;
mod coordinator;
mod delivery;
mod eviction;
mod handle;
mod join;
mod lag;
mod lease;
mod limits;
mod membership;
mod offset_expiry;
mod offsets;
mod offsets_mirror;
mod offsets_records;
mod pending;

use std::time::Duration;

pub use classic::{
    ClassicGroupDescription, ClassicMemberDescription, ClassicMemberId, GroupProtocol,
    JoinGroupAnswer, JoinGroupOutcome, JoinGroupRequest, JoinedMember, LeaveOutcome,
    MemberAssignment,
};
pub use classic_calls::{CommitOffset, CommittedOffset};
pub use consumer_types::{
    ConsumerError, ConsumerGroupDescription, ConsumerHeartbeat, ConsumerHeartbeatAnswer,
    ConsumerMemberDescription, ConsumerRefusal, ConsumerSubscription,
};
pub(crate) use coordinator::Coordinator;
pub use delivery::{Delivery, GroupPoll};
pub(crate) use eviction::DEFAULT_IDLE_GROUP_TIMEOUT;
pub use handle::GroupHandle;
pub use lag::{GroupLag, GroupLagPage};
pub use limits::GroupLimits;

pub use crate::config::{GroupConfig, MAX_SESSION_TIMEOUT, OffsetReset};

/// How long a group without members keeps a committed offset after its commit, by
/// default: Kafka's `offsets.retention.minutes` default, 7 days.
pub const DEFAULT_OFFSETS_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// A member's identity in one generation, carried by its polls and commits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MemberRef {
    /// Id returned by [`GroupHandle::join`].
    pub member_id: String,
    /// Generation of the member's current assignment.
    pub generation: u64,
}

/// A member's place in its group on one topic (see [`GroupMembership`] for a member
/// of several topics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// Group name.
    pub group: String,
    /// Topic name.
    pub topic: String,
    /// The member's id (generated unless the caller chose one).
    pub member_id: String,
    /// Current generation; pass it back with every poll and commit.
    pub generation: u64,
    /// Partitions this member owns, ascending.
    pub assignment: Vec<u32>,
}

/// A member's place in its group after joining on a set of topics: one generation, and
/// the partitions it owns on each of its topics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMembership {
    /// Group name.
    pub group: String,
    /// The member's id.
    pub member_id: String,
    /// The group's generation; pass it back with every poll and commit.
    pub generation: u64,
    /// Each topic the member reads, by name, with the partitions it owns (ascending).
    pub assignment: Vec<(String, Vec<u32>)>,
}

impl GroupMembership {
    /// The reference to poll and commit with.
    pub fn member_ref(&self) -> MemberRef {
        MemberRef {
            member_id: self.member_id.clone(),
            generation: self.generation,
        }
    }

    /// The partitions owned on `topic` (empty if the member does not read it).
    pub fn partitions(&self, topic: &str) -> &[u32] {
        self.assignment
            .iter()
            .find(|(t, _)| t == topic)
            .map_or(&[], |(_, p)| p.as_slice())
    }
}

impl Membership {
    /// The reference to poll and commit with.
    pub fn member_ref(&self) -> MemberRef {
        MemberRef {
            member_id: self.member_id.clone(),
            generation: self.generation,
        }
    }
}

/// How a group poll reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupPollOptions {
    /// Most records returned.
    pub max_records: usize,
    /// Most bytes of keys, values and headers returned (at least one record is).
    pub max_bytes: usize,
    /// How long to wait for records when none are available (0 = return at once).
    pub wait: Duration,
    /// Commit what the caller's previous, delivered poll returned before reading
    /// (Kafka's auto-commit). Without it, only [`GroupHandle::commit`] commits.
    pub auto_commit: bool,
    /// The cursor ([`GroupPoll::cursor`]) of the last answer the caller received: it
    /// acknowledges that answer and the ones before it (so auto-commit may commit
    /// them), and shows that an answer asked for after the same cursor never arrived
    /// (its records are read again). See [`Delivery::sent`].
    pub acknowledged: Option<u64>,
}

impl Default for GroupPollOptions {
    fn default() -> Self {
        GroupPollOptions {
            max_records: 500,
            max_bytes: 1024 * 1024,
            wait: Duration::ZERO,
            auto_commit: true,
            acknowledged: None,
        }
    }
}

/// An offset of one partition (a commit, or a position after a seek).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionOffset {
    /// Partition.
    pub partition: u32,
    /// Next offset to read.
    pub offset: u64,
}

/// One member in [`GroupTopicDescription`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMemberDescription {
    /// Member id.
    pub member_id: String,
    /// Partitions it owns.
    pub assignment: Vec<u32>,
    /// Its session timeout in milliseconds.
    pub session_timeout_ms: u64,
    /// Milliseconds since its last join, poll or commit.
    pub idle_ms: u64,
}

/// One partition in [`GroupTopicDescription`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPartitionDescription {
    /// Partition.
    pub partition: u32,
    /// Owning member, if any.
    pub owner: Option<String>,
    /// Committed offset, if any.
    pub committed: Option<u64>,
    /// In-memory position, when it is ahead of (or differs from) the committed offset.
    pub position: Option<u64>,
    /// First offset still in the partition.
    pub log_start_offset: u64,
    /// One past the last offset of the partition.
    pub high_watermark: u64,
    /// `high_watermark − committed`, when an offset is committed.
    pub lag: Option<u64>,
}

/// A group on one topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupTopicDescription {
    /// Topic name.
    pub topic: String,
    /// The group's generation (0 until the first member joins).
    pub generation: u64,
    /// Live members reading this topic, by id.
    pub members: Vec<GroupMemberDescription>,
    /// Every partition of the topic (empty when the topic no longer exists).
    pub partitions: Vec<GroupPartitionDescription>,
    /// Sum of the partitions' lag.
    pub total_lag: u64,
}

/// Everything about a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    /// Group name.
    pub group: String,
    /// Its options.
    pub config: GroupConfig,
    /// The group's generation (0 until the first member joins).
    pub generation: u64,
    /// One entry per topic the group has used, by name.
    pub topics: Vec<GroupTopicDescription>,
    /// The Kafka-protocol side, when Kafka clients are its members.
    pub classic: Option<ClassicGroupDescription>,
}

/// A line of [`Kafko::list_groups`](crate::Kafko::list_groups).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    /// Group name.
    pub group: String,
    /// Topics it has offsets or members on.
    pub topics: Vec<String>,
    /// Live members.
    pub members: usize,
    /// "consumer" (or another Kafka protocol type) for a group of Kafka clients, empty
    /// for one of kafko's own APIs.
    pub protocol_type: String,
    /// Kafka's state name for a group of Kafka clients ("Empty" otherwise).
    pub state: &'static str,
    /// Whether it is a consumer group of Kafka's consumer protocol (KIP-848): one with
    /// members of that protocol, or emptied and never used otherwise since.
    pub consumer_protocol: bool,
}
