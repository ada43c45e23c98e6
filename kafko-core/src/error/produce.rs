//! [`ProduceError`]: appending records to a topic.

use super::{ErrorKind, InternalError, KafkoError, StorageError, classify};
use crate::send::PartialSend;

/// Why a send (or a producer's sync) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProduceError {
    /// The topic was deleted after the handle was resolved.
    #[error("topic '{topic}' was deleted")]
    TopicDeleted {
        /// Topic name.
        topic: String,
    },
    /// A record named a partition the topic does not have.
    #[error("topic '{topic}' has {partitions} partitions; partition {partition} does not exist")]
    PartitionNotFound {
        /// Topic name.
        topic: String,
        /// Requested partition.
        partition: u32,
        /// Partition count of the topic.
        partitions: u32,
    },
    /// A record (or a batch) exceeds the topic's `max_record_bytes`.
    #[error("record of {size} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// Encoded size of the offending record.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// A compacted topic received a record without a key.
    #[error("topic '{topic}' is compacted: every record needs a key")]
    KeyRequired {
        /// Topic name.
        topic: String,
    },
    /// The send cannot be encoded as it is (no record, or a batch past the format's cap).
    #[error("invalid request: {reason}")]
    InvalidBatch {
        /// What is wrong.
        reason: String,
    },
    /// A partition's inbox is full (with `no_wait`): nothing was appended; retry later.
    #[error("partition {topic}-{partition} is busy; retry later")]
    Backpressure {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// Some partitions appended their records and others did not: retry only
    /// [`PartialSend::failed_records`].
    #[error("{0}")]
    PartiallyAppended(Box<PartialSend>),
    /// The partition refuses writes after an fsync or unrecoverable write failure.
    #[error("partition {topic}-{partition} is read-only after a storage failure: {reason}")]
    PartitionReadOnly {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
        /// The failure that poisoned the write path.
        reason: String,
    },
    /// The partition's writer task panicked; the partition is unavailable.
    #[error("writer task of partition {topic}-{partition} panicked")]
    PartitionPanicked {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    },
    /// The log is shutting down and takes no more records.
    #[error("kafko is shutting down")]
    ShuttingDown,
    /// The write failed in the storage layer; nothing of this partition was appended.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A bug or a panic.
    #[error(transparent)]
    Internal(#[from] InternalError),
}

impl ProduceError {
    /// The coarse category of this error. A partial send takes the category of what
    /// its first failed partition met.
    pub fn kind(&self) -> ErrorKind {
        match self {
            ProduceError::TopicDeleted { .. } | ProduceError::PartitionNotFound { .. } => {
                ErrorKind::NotFound
            }
            ProduceError::RecordTooLarge { .. } => ErrorKind::TooLarge,
            ProduceError::KeyRequired { .. } | ProduceError::InvalidBatch { .. } => {
                ErrorKind::InvalidInput
            }
            ProduceError::Backpressure { .. }
            | ProduceError::PartitionReadOnly { .. }
            | ProduceError::PartitionPanicked { .. }
            | ProduceError::ShuttingDown => ErrorKind::Unavailable,
            ProduceError::PartiallyAppended(p) => p
                .failed
                .first()
                .map_or(ErrorKind::Internal, |f| f.error.kind()),
            ProduceError::Storage(e) => e.kind(),
            ProduceError::Internal(e) => e.kind(),
        }
    }
}

impl From<ProduceError> for KafkoError {
    fn from(e: ProduceError) -> Self {
        match e {
            ProduceError::TopicDeleted { topic } => KafkoError::TopicDeleted { topic },
            ProduceError::PartitionNotFound {
                topic,
                partition,
                partitions,
            } => KafkoError::PartitionNotFound {
                topic,
                partition,
                partitions,
            },
            ProduceError::RecordTooLarge { size, max } => KafkoError::RecordTooLarge { size, max },
            ProduceError::KeyRequired { topic } => KafkoError::KeyRequired { topic },
            ProduceError::InvalidBatch { reason } => KafkoError::InvalidRequest { reason },
            ProduceError::Backpressure { topic, partition } => {
                KafkoError::Backpressure { topic, partition }
            }
            ProduceError::PartiallyAppended(p) => KafkoError::PartiallyAppended(p),
            ProduceError::PartitionReadOnly {
                topic,
                partition,
                reason,
            } => KafkoError::PartitionReadOnly {
                topic,
                partition,
                reason,
            },
            ProduceError::PartitionPanicked { topic, partition } => {
                KafkoError::PartitionPanicked { topic, partition }
            }
            ProduceError::ShuttingDown => KafkoError::ShuttingDown,
            ProduceError::Storage(e) => e.into(),
            ProduceError::Internal(e) => e.into(),
        }
    }
}

#[doc(hidden)]
impl From<KafkoError> for ProduceError {
    /// Classifies a failure of the crate's shared layers (see the module doc).
    fn from(e: KafkoError) -> Self {
        classify!(e, ProduceError, "a send", {
            KafkoError::TopicDeleted { topic } => ProduceError::TopicDeleted { topic },
            KafkoError::PartitionNotFound { topic, partition, partitions } => {
                ProduceError::PartitionNotFound { topic, partition, partitions }
            },
            KafkoError::RecordTooLarge { size, max } => ProduceError::RecordTooLarge { size, max },
            KafkoError::KeyRequired { topic } => ProduceError::KeyRequired { topic },
            KafkoError::InvalidRequest { reason } => ProduceError::InvalidBatch { reason },
            KafkoError::Backpressure { topic, partition } => {
                ProduceError::Backpressure { topic, partition }
            },
            KafkoError::PartiallyAppended(p) => ProduceError::PartiallyAppended(p),
            KafkoError::PartitionReadOnly { topic, partition, reason } => {
                ProduceError::PartitionReadOnly { topic, partition, reason }
            },
            KafkoError::PartitionPanicked { topic, partition } => {
                ProduceError::PartitionPanicked { topic, partition }
            },
            KafkoError::ShuttingDown => ProduceError::ShuttingDown,
        }
        unexpected: KafkoError::AlreadyOpen { .. }
            | KafkoError::TopicNotFound { .. }
            | KafkoError::TopicAlreadyExists { .. }
            | KafkoError::InvalidName { .. }
            | KafkoError::InvalidConfig { .. }
            | KafkoError::OffsetOutOfRange { .. }
            | KafkoError::NotCompacted { .. }
            | KafkoError::GroupNotFound { .. }
            | KafkoError::UnknownMember { .. }
            | KafkoError::StaleGeneration { .. }
            | KafkoError::NotAssigned { .. }
            | KafkoError::GroupHasMembers { .. }
            | KafkoError::NoValidOffset { .. })
    }
}
