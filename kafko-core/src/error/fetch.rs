//! [`FetchError`]: reading a partition (a reader, a consumer).

use super::{ErrorKind, InternalError, KafkoError, StorageError, classify};

/// Why a read failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// The topic was deleted after the handle was resolved.
    #[error("topic '{topic}' was deleted")]
    TopicDeleted {
        /// Topic name.
        topic: String,
    },
    /// The partition number is not below the topic's partition count.
    #[error("topic '{topic}' has {partitions} partitions; partition {partition} does not exist")]
    PartitionNotFound {
        /// Topic name.
        topic: String,
        /// Requested partition.
        partition: u32,
        /// Partition count of the topic.
        partitions: u32,
    },
    /// The requested offset is outside `[log_start_offset, high_watermark]`.
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
    /// The read failed in the storage layer (damaged data, an I/O error).
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A bug or a panic.
    #[error(transparent)]
    Internal(#[from] InternalError),
}

impl FetchError {
    /// The coarse category of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            FetchError::TopicDeleted { .. } | FetchError::PartitionNotFound { .. } => {
                ErrorKind::NotFound
            }
            FetchError::OffsetOutOfRange { .. } => ErrorKind::OutOfRange,
            FetchError::Storage(e) => e.kind(),
            FetchError::Internal(e) => e.kind(),
        }
    }
}

impl From<FetchError> for KafkoError {
    fn from(e: FetchError) -> Self {
        match e {
            FetchError::TopicDeleted { topic } => KafkoError::TopicDeleted { topic },
            FetchError::PartitionNotFound {
                topic,
                partition,
                partitions,
            } => KafkoError::PartitionNotFound {
                topic,
                partition,
                partitions,
            },
            FetchError::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            } => KafkoError::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            },
            FetchError::Storage(e) => e.into(),
            FetchError::Internal(e) => e.into(),
        }
    }
}

#[doc(hidden)]
impl From<KafkoError> for FetchError {
    /// Classifies a failure of the crate's shared layers (see the module doc).
    fn from(e: KafkoError) -> Self {
        classify!(e, FetchError, "a read", {
            KafkoError::TopicDeleted { topic } => FetchError::TopicDeleted { topic },
            KafkoError::PartitionNotFound { topic, partition, partitions } => {
                FetchError::PartitionNotFound { topic, partition, partitions }
            },
            KafkoError::OffsetOutOfRange { requested, log_start_offset, high_watermark } => {
                FetchError::OffsetOutOfRange { requested, log_start_offset, high_watermark }
            },
        }
        unexpected: KafkoError::AlreadyOpen { .. }
            | KafkoError::TopicNotFound { .. }
            | KafkoError::TopicAlreadyExists { .. }
            | KafkoError::InvalidName { .. }
            | KafkoError::InvalidConfig { .. }
            | KafkoError::RecordTooLarge { .. }
            | KafkoError::KeyRequired { .. }
            | KafkoError::InvalidRequest { .. }
            | KafkoError::NotCompacted { .. }
            | KafkoError::PartiallyAppended(_)
            | KafkoError::Backpressure { .. }
            | KafkoError::PartitionReadOnly { .. }
            | KafkoError::PartitionPanicked { .. }
            | KafkoError::ShuttingDown
            | KafkoError::GroupNotFound { .. }
            | KafkoError::UnknownMember { .. }
            | KafkoError::StaleGeneration { .. }
            | KafkoError::NotAssigned { .. }
            | KafkoError::GroupHasMembers { .. }
            | KafkoError::NoValidOffset { .. })
    }
}
