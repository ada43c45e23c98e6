//! [`AdminError`]: resolving, creating, describing, reconfiguring and deleting topics,
//! and the log-wide maintenance calls (sync, retention, compaction, shutdown).

use super::{ErrorKind, InternalError, KafkoError, StorageError, classify};

/// Why a topic administration or maintenance call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    /// The topic does not exist.
    #[error("topic '{topic}' does not exist")]
    TopicNotFound {
        /// Requested topic.
        topic: String,
    },
    /// The topic a handle was resolved from has been deleted.
    #[error("topic '{topic}' was deleted")]
    TopicDeleted {
        /// Topic name.
        topic: String,
    },
    /// The topic exists with a different configuration.
    #[error("topic '{topic}' already exists with a different configuration")]
    TopicAlreadyExists {
        /// Requested topic.
        topic: String,
    },
    /// A topic name breaks Kafka's naming rule.
    #[error("invalid name '{name}': {reason}")]
    InvalidName {
        /// The rejected name (possibly truncated for display).
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// A configuration value is out of range or inconsistent.
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// Compaction was asked of a topic whose cleanup policy does not compact.
    #[error("topic '{topic}' is not compacted (cleanup_policy = delete)")]
    NotCompacted {
        /// Topic name.
        topic: String,
    },
    /// A partition refuses writes after an fsync or unrecoverable write failure.
    #[error("partition {topic}-{partition} is read-only after a storage failure: {reason}")]
    PartitionReadOnly {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The failure that poisoned the write path.
        reason: String,
    },
    /// A partition's writer task panicked; the partition is unavailable.
    #[error("writer task of partition {topic}-{partition} panicked")]
    PartitionPanicked {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// The log is shutting down (or was shut down).
    #[error("kafko is shutting down")]
    ShuttingDown,
    /// The storage layer failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A bug or a panic.
    #[error(transparent)]
    Internal(#[from] InternalError),
}

impl AdminError {
    /// The coarse category of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AdminError::TopicNotFound { .. } | AdminError::TopicDeleted { .. } => {
                ErrorKind::NotFound
            }
            AdminError::TopicAlreadyExists { .. } => ErrorKind::AlreadyExists,
            AdminError::InvalidName { .. }
            | AdminError::InvalidConfig { .. }
            | AdminError::NotCompacted { .. } => ErrorKind::InvalidInput,
            AdminError::PartitionReadOnly { .. }
            | AdminError::PartitionPanicked { .. }
            | AdminError::ShuttingDown => ErrorKind::Unavailable,
            AdminError::Storage(e) => e.kind(),
            AdminError::Internal(e) => e.kind(),
        }
    }
}

impl From<AdminError> for KafkoError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::TopicNotFound { topic } => KafkoError::TopicNotFound { topic },
            AdminError::TopicDeleted { topic } => KafkoError::TopicDeleted { topic },
            AdminError::TopicAlreadyExists { topic } => KafkoError::TopicAlreadyExists { topic },
            AdminError::InvalidName { name, reason } => KafkoError::InvalidName { name, reason },
            AdminError::InvalidConfig { reason } => KafkoError::InvalidConfig { reason },
            AdminError::NotCompacted { topic } => KafkoError::NotCompacted { topic },
            AdminError::PartitionReadOnly {
                topic,
                partition,
                reason,
            } => KafkoError::PartitionReadOnly {
                topic,
                partition,
                reason,
            },
            AdminError::PartitionPanicked { topic, partition } => {
                KafkoError::PartitionPanicked { topic, partition }
            }
            AdminError::ShuttingDown => KafkoError::ShuttingDown,
            AdminError::Storage(e) => e.into(),
            AdminError::Internal(e) => e.into(),
        }
    }
}

#[doc(hidden)]
impl From<KafkoError> for AdminError {
    /// Classifies a failure of the crate's shared layers (see the module doc).
    fn from(e: KafkoError) -> Self {
        classify!(e, AdminError, "a topic administration call", {
            KafkoError::TopicNotFound { topic } => AdminError::TopicNotFound { topic },
            KafkoError::TopicDeleted { topic } => AdminError::TopicDeleted { topic },
            KafkoError::TopicAlreadyExists { topic } => AdminError::TopicAlreadyExists { topic },
            KafkoError::InvalidName { name, reason } => AdminError::InvalidName { name, reason },
            KafkoError::InvalidConfig { reason } => AdminError::InvalidConfig { reason },
            KafkoError::NotCompacted { topic } => AdminError::NotCompacted { topic },
            KafkoError::PartitionReadOnly { topic, partition, reason } => {
                AdminError::PartitionReadOnly { topic, partition, reason }
            },
            KafkoError::PartitionPanicked { topic, partition } => {
                AdminError::PartitionPanicked { topic, partition }
            },
            KafkoError::ShuttingDown => AdminError::ShuttingDown,
        }
        unexpected: KafkoError::AlreadyOpen { .. }
            | KafkoError::PartitionNotFound { .. }
            | KafkoError::OffsetOutOfRange { .. }
            | KafkoError::RecordTooLarge { .. }
            | KafkoError::KeyRequired { .. }
            | KafkoError::InvalidRequest { .. }
            | KafkoError::PartiallyAppended(_)
            | KafkoError::Backpressure { .. }
            | KafkoError::GroupNotFound { .. }
            | KafkoError::UnknownMember { .. }
            | KafkoError::StaleGeneration { .. }
            | KafkoError::NotAssigned { .. }
            | KafkoError::GroupHasMembers { .. }
            | KafkoError::NoValidOffset { .. })
    }
}
