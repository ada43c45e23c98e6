//! The one error type of `kafko-core`, and the coarse [`ErrorKind`] a caller (such as the
//! HTTP layer) maps to its own vocabulary.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = KafkoError> = std::result::Result<T, E>;

/// Everything that can go wrong in the log, with enough structure to act on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KafkoError {
    /// Another process (or another `Kafko` in this one) holds the data directory.
    #[error("data directory {path} is already open by another kafko instance")]
    AlreadyOpen {
        /// The locked data directory.
        path: PathBuf,
    },
    /// The topic does not exist.
    #[error("topic '{topic}' does not exist")]
    TopicNotFound {
        /// Requested topic.
        topic: String,
    },
    /// The topic a handle (or a cursor) was bound to has been deleted; a topic created
    /// again under the same name is a different topic.
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
    /// A topic or group name breaks Kafka's naming rule.
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
    /// A record (or batch) exceeds the topic's `max_record_bytes`.
    #[error("record of {size} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// Encoded size of the offending record.
        size: usize,
        /// The topic's limit.
        max: usize,
    },
    /// A compacted topic received a record without a key (Kafka rejects these too).
    #[error("topic '{topic}' is compacted: every record needs a key")]
    KeyRequired {
        /// Topic name.
        topic: String,
    },
    /// The request itself is malformed (empty batch, bad argument).
    #[error("invalid request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// A send appended the records of some partitions and not those of others: retry
    /// only [`PartialSend::failed_records`](crate::PartialSend::failed_records).
    #[error("{0}")]
    PartiallyAppended(Box<crate::send::PartialSend>),
    /// The partition's write queue is full: retry later (backpressure).
    #[error("partition {topic}-{partition} is busy; retry later")]
    Backpressure {
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    },
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
    /// The log is shutting down (or was shut down) and takes no more work.
    #[error("kafko is shutting down")]
    ShuttingDown,
    /// The storage device is full.
    #[error("no space left on device while {op} {path}")]
    StorageFull {
        /// The operation that failed.
        op: &'static str,
        /// The file involved.
        path: PathBuf,
    },
    /// The process (or the system) has no file descriptor left for this operation:
    /// retry once descriptors are free, or raise the limit (`ulimit -n`).
    #[error("out of file descriptors while {op} {path}")]
    TooManyOpenFiles {
        /// The operation that failed.
        op: &'static str,
        /// The file involved.
        path: PathBuf,
    },
    /// Data on disk failed verification.
    #[error("corruption in {file} at byte {position}: {reason}")]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte position of the damage.
        position: u64,
        /// What failed.
        reason: String,
    },
    /// An I/O operation failed.
    #[error("I/O error while {op} {path}: {source}")]
    Io {
        /// The operation that failed.
        op: &'static str,
        /// The file involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The consumer group does not exist.
    #[error("consumer group '{group}' does not exist")]
    GroupNotFound {
        /// Group name.
        group: String,
    },
    /// The member is not (or no longer) part of the group.
    #[error("member '{member}' is not part of group '{group}'")]
    UnknownMember {
        /// Group name.
        group: String,
        /// Member id.
        member: String,
    },
    /// A commit or poll carried an old generation: the group rebalanced since.
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
    /// A request without a member (the implicit single member) reached a group that has
    /// members on this topic, or a group with members was asked to be deleted.
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
    /// The group has no valid position and its reset policy is `error`.
    #[error("group '{group}' has no valid offset for {topic}-{partition} and offset_reset=error")]
    NoValidOffset {
        /// Group name.
        group: String,
        /// Topic name.
        topic: String,
        /// Partition.
        partition: u32,
    },
}

/// Coarse classification of a [`KafkoError`], decided in one exhaustive match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A named thing does not exist.
    NotFound,
    /// Creation clashed with an existing, different thing.
    AlreadyExists,
    /// The caller sent something invalid.
    InvalidInput,
    /// Too large for a limit.
    TooLarge,
    /// An offset outside the log's range.
    OutOfRange,
    /// A group generation or membership conflict.
    Conflict,
    /// Temporarily unable: retry later.
    Unavailable,
    /// Out of disk space.
    StorageFull,
    /// Data failed verification.
    Corruption,
    /// Anything else: a bug or an environment failure.
    Internal,
}

impl KafkoError {
    /// The coarse category of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            KafkoError::TopicNotFound { .. }
            | KafkoError::TopicDeleted { .. }
            | KafkoError::PartitionNotFound { .. }
            | KafkoError::GroupNotFound { .. } => ErrorKind::NotFound,
            KafkoError::TopicAlreadyExists { .. } => ErrorKind::AlreadyExists,
            KafkoError::InvalidName { .. }
            | KafkoError::InvalidConfig { .. }
            | KafkoError::KeyRequired { .. }
            | KafkoError::InvalidRequest { .. } => ErrorKind::InvalidInput,
            KafkoError::RecordTooLarge { .. } => ErrorKind::TooLarge,
            KafkoError::OffsetOutOfRange { .. } | KafkoError::NoValidOffset { .. } => {
                ErrorKind::OutOfRange
            }
            KafkoError::UnknownMember { .. }
            | KafkoError::StaleGeneration { .. }
            | KafkoError::NotAssigned { .. }
            | KafkoError::GroupHasMembers { .. } => ErrorKind::Conflict,
            KafkoError::Backpressure { .. }
            | KafkoError::PartitionReadOnly { .. }
            | KafkoError::PartitionPanicked { .. }
            | KafkoError::ShuttingDown
            | KafkoError::TooManyOpenFiles { .. }
            | KafkoError::AlreadyOpen { .. } => ErrorKind::Unavailable,
            KafkoError::StorageFull { .. } => ErrorKind::StorageFull,
            KafkoError::Corruption { .. } => ErrorKind::Corruption,
            KafkoError::Io { .. } => ErrorKind::Internal,
            // Classified by what the failed partitions met.
            KafkoError::PartiallyAppended(p) => p
                .failed
                .first()
                .map_or(ErrorKind::Internal, |f| f.error.kind()),
        }
    }

    /// Wraps an I/O error, turning "no space left" into [`KafkoError::StorageFull`] and
    /// "too many open files" (per process or system wide) into
    /// [`KafkoError::TooManyOpenFiles`]: both are conditions a caller can wait out.
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        const ENFILE: i32 = 23;
        const EMFILE: i32 = 24;
        const ENOSPC: i32 = 28;
        let path = path.into();
        match source.raw_os_error() {
            _ if source.kind() == std::io::ErrorKind::StorageFull => {
                KafkoError::StorageFull { op, path }
            }
            Some(ENOSPC) => KafkoError::StorageFull { op, path },
            Some(EMFILE | ENFILE) => KafkoError::TooManyOpenFiles { op, path },
            _ => KafkoError::Io { op, path, source },
        }
    }

    /// A corruption error for `file` at `position`.
    pub(crate) fn corruption(
        file: impl Into<PathBuf>,
        position: u64,
        reason: impl Into<String>,
    ) -> Self {
        KafkoError::Corruption {
            file: file.into(),
            position,
            reason: reason.into(),
        }
    }

    /// A cheap, lossy copy used to fail every waiter of one failed write with the same cause.
    pub(crate) fn duplicate(&self) -> Self {
        match self {
            KafkoError::Io { op, path, source } => KafkoError::Io {
                op,
                path: path.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            KafkoError::StorageFull { op, path } => KafkoError::StorageFull {
                op,
                path: path.clone(),
            },
            KafkoError::TooManyOpenFiles { op, path } => KafkoError::TooManyOpenFiles {
                op,
                path: path.clone(),
            },
            KafkoError::Corruption {
                file,
                position,
                reason,
            } => KafkoError::Corruption {
                file: file.clone(),
                position: *position,
                reason: reason.clone(),
            },
            KafkoError::PartitionReadOnly {
                topic,
                partition,
                reason,
            } => KafkoError::PartitionReadOnly {
                topic: topic.clone(),
                partition: *partition,
                reason: reason.clone(),
            },
            KafkoError::ShuttingDown => KafkoError::ShuttingDown,
            other => KafkoError::InvalidRequest {
                reason: other.to_string(),
            },
        }
    }
}
