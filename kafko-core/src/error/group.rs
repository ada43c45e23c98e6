//! [`GroupError`]: consumer group calls (join, leave, poll, commit, seek, describe,
//! configure, delete).

use std::time::Duration;

use super::{ErrorKind, InternalError, KafkoError, StorageError, classify};
use crate::group::MAX_SESSION_TIMEOUT;

/// Why a consumer group call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// A group name or member id breaks Kafka's naming rule.
    #[error("invalid name '{name}': {reason}")]
    InvalidName {
        /// The rejected name (possibly truncated for display).
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A join's session timeout is zero or above [`MAX_SESSION_TIMEOUT`].
    #[error(
        "session timeout must be between 1 ms and {} s, got {} ms",
        MAX_SESSION_TIMEOUT.as_secs(),
        .timeout.as_millis()
    )]
    InvalidSessionTimeout {
        /// The refused timeout.
        timeout: Duration,
    },
    /// The consumer group does not exist.
    #[error("consumer group '{group}' does not exist")]
    GroupNotFound {
        /// Group name.
        group: String,
    },
    /// The member is not (or no longer) part of the group: rejoin.
    #[error("member '{member}' is not part of group '{group}'")]
    UnknownMember {
        /// Group name.
        group: String,
        /// Member id.
        member: String,
    },
    /// The call carried an old generation: the group rebalanced since; rejoin.
    #[error("group '{group}' is at generation {current}; request used generation {given}")]
    StaleGeneration {
        /// Group name.
        group: String,
        /// The group's current generation.
        current: u64,
        /// The generation the caller sent.
        given: u64,
    },
    /// The member tried to commit or seek a partition it does not own.
    #[error("partition {partition} of topic '{topic}' is not assigned to member '{member}'")]
    NotAssigned {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// Member id.
        member: String,
    },
    /// A call without a member reached a group with members on the topic, or a group
    /// with members was asked to be deleted.
    #[error(
        "group '{group}' has {members} active member(s) on topic '{topic}'; join it or wait for them to leave"
    )]
    GroupHasMembers {
        /// Group name.
        group: String,
        /// Topic name.
        topic: String,
        /// Live members.
        members: usize,
    },
    /// The group has no valid position and its reset policy is `error`: seek.
    #[error("group '{group}' has no valid offset for {topic}-{partition} and offset_reset=error")]
    NoValidOffset {
        /// Group name.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// A commit or seek named an offset outside `[log_start_offset, high_watermark]`.
    #[error(
        "offset {requested} is out of range; valid offsets are {log_start_offset}..={high_watermark}"
    )]
    OffsetOutOfRange {
        /// Requested offset.
        requested: u64,
        /// First offset still in the log.
        log_start_offset: u64,
        /// One past the last offset in the log.
        high_watermark: u64,
    },
    /// The topic was deleted after its handle was resolved.
    #[error("topic '{topic}' was deleted")]
    TopicDeleted {
        /// Topic name.
        topic: String,
    },
    /// A commit or seek named a partition the topic does not have.
    #[error("topic '{topic}' has {partitions} partitions; partition {partition} does not exist")]
    PartitionNotFound {
        /// Topic name.
        topic: String,
        /// Requested partition.
        partition: u32,
        /// Partition count of the topic.
        partitions: u32,
    },
    /// The log is shutting down.
    #[error("kafko is shutting down")]
    ShuttingDown,
    /// Reading records or writing the group's state failed in the storage layer; the
    /// group is where it was.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A bug or a panic.
    #[error(transparent)]
    Internal(#[from] InternalError),
}

impl GroupError {
    /// The coarse category of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            GroupError::InvalidName { .. } | GroupError::InvalidSessionTimeout { .. } => {
                ErrorKind::InvalidInput
            }
            GroupError::GroupNotFound { .. }
            | GroupError::TopicDeleted { .. }
            | GroupError::PartitionNotFound { .. } => ErrorKind::NotFound,
            GroupError::UnknownMember { .. }
            | GroupError::StaleGeneration { .. }
            | GroupError::NotAssigned { .. }
            | GroupError::GroupHasMembers { .. } => ErrorKind::Conflict,
            GroupError::NoValidOffset { .. } | GroupError::OffsetOutOfRange { .. } => {
                ErrorKind::OutOfRange
            }
            GroupError::ShuttingDown => ErrorKind::Unavailable,
            GroupError::Storage(e) => e.kind(),
            GroupError::Internal(e) => e.kind(),
        }
    }
}

impl From<GroupError> for KafkoError {
    fn from(e: GroupError) -> Self {
        match e {
            GroupError::InvalidName { name, reason } => KafkoError::InvalidName { name, reason },
            e @ GroupError::InvalidSessionTimeout { .. } => KafkoError::InvalidRequest {
                reason: e.to_string(),
            },
            GroupError::GroupNotFound { group } => KafkoError::GroupNotFound { group },
            GroupError::UnknownMember { group, member } => {
                KafkoError::UnknownMember { group, member }
            }
            GroupError::StaleGeneration {
                group,
                current,
                given,
            } => KafkoError::StaleGeneration {
                group,
                current,
                given,
            },
            GroupError::NotAssigned {
                topic,
                partition,
                member,
            } => KafkoError::NotAssigned {
                topic,
                partition,
                member,
            },
            GroupError::GroupHasMembers {
                group,
                topic,
                members,
            } => KafkoError::GroupHasMembers {
                group,
                topic,
                members,
            },
            GroupError::NoValidOffset {
                group,
                topic,
                partition,
            } => KafkoError::NoValidOffset {
                group,
                topic,
                partition,
            },
            GroupError::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            } => KafkoError::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            },
            GroupError::TopicDeleted { topic } => KafkoError::TopicDeleted { topic },
            GroupError::PartitionNotFound {
                topic,
                partition,
                partitions,
            } => KafkoError::PartitionNotFound {
                topic,
                partition,
                partitions,
            },
            GroupError::ShuttingDown => KafkoError::ShuttingDown,
            GroupError::Storage(e) => e.into(),
            GroupError::Internal(e) => e.into(),
        }
    }
}

#[doc(hidden)]
impl From<KafkoError> for GroupError {
    /// Classifies a failure of the crate's shared layers (see the module doc).
    fn from(e: KafkoError) -> Self {
        classify!(e, GroupError, "a group call", {
            KafkoError::InvalidName { name, reason } => GroupError::InvalidName { name, reason },
            KafkoError::GroupNotFound { group } => GroupError::GroupNotFound { group },
            KafkoError::UnknownMember { group, member } => {
                GroupError::UnknownMember { group, member }
            },
            KafkoError::StaleGeneration { group, current, given } => {
                GroupError::StaleGeneration { group, current, given }
            },
            KafkoError::NotAssigned { topic, partition, member } => {
                GroupError::NotAssigned { topic, partition, member }
            },
            KafkoError::GroupHasMembers { group, topic, members } => {
                GroupError::GroupHasMembers { group, topic, members }
            },
            KafkoError::NoValidOffset { group, topic, partition } => {
                GroupError::NoValidOffset { group, topic, partition }
            },
            KafkoError::OffsetOutOfRange { requested, log_start_offset, high_watermark } => {
                GroupError::OffsetOutOfRange { requested, log_start_offset, high_watermark }
            },
            KafkoError::TopicDeleted { topic } => GroupError::TopicDeleted { topic },
            KafkoError::PartitionNotFound { topic, partition, partitions } => {
                GroupError::PartitionNotFound { topic, partition, partitions }
            },
            KafkoError::ShuttingDown => GroupError::ShuttingDown,
        }
        unexpected: KafkoError::AlreadyOpen { .. }
            | KafkoError::TopicNotFound { .. }
            | KafkoError::TopicAlreadyExists { .. }
            | KafkoError::InvalidConfig { .. }
            | KafkoError::RecordTooLarge { .. }
            | KafkoError::KeyRequired { .. }
            | KafkoError::InvalidRequest { .. }
            | KafkoError::NotCompacted { .. }
            | KafkoError::PartiallyAppended(_)
            | KafkoError::Backpressure { .. }
            | KafkoError::PartitionReadOnly { .. }
            | KafkoError::PartitionPanicked { .. })
    }
}
