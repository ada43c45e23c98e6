//! Errors, one type per operation, as the log's callers meet them:
//! [`OpenError`] (opening a data directory), [`AdminError`] (topics, maintenance,
//! shutdown), [`ProduceError`], [`FetchError`] and [`GroupError`]. Each holds only the
//! failures its operation can have, plus [`StorageError`] (the disk said no) and
//! [`InternalError`] (a bug or a panic), and each has a coarse [`ErrorKind`].
//!
//! [`KafkoError`] is the union of them all, for callers who want one type: every
//! operation error converts into it (`?` works). Inside the crate, the shared layers
//! (segments, partitions, storage) fail with `KafkoError`; each public method turns that
//! into its operation's error, by an exhaustive match (`classify!`), so a failure an
//! operation cannot have shows up as [`InternalError::Unexpected`], never as a
//! plausible-looking answer.

mod admin;
mod fetch;
mod group;
mod open;
mod produce;
mod shared;

use std::path::PathBuf;

pub use admin::AdminError;
pub use fetch::FetchError;
pub use group::GroupError;
pub use open::OpenError;
pub use produce::ProduceError;
pub use shared::{InternalError, StorageError};

/// Result alias used throughout the crate.
pub type Result<T, E = KafkoError> = std::result::Result<T, E>;

/// Every failure of the log, with enough structure to act on: the union of the
/// operation errors ([`OpenError`], [`AdminError`], [`ProduceError`], [`FetchError`],
/// [`GroupError`]), each of which converts into it.
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
    /// A compaction was asked of a topic whose cleanup policy does not compact.
    #[error("topic '{topic}' is not compacted (cleanup_policy = delete)")]
    NotCompacted {
        /// Topic name.
        topic: String,
    },
    /// A bug or a panic: nothing the caller did or can fix by retrying.
    #[error(transparent)]
    Internal(InternalError),
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
    /// A bug, a panic, or an I/O failure with no better name.
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
            | KafkoError::NotCompacted { .. }
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
            KafkoError::Io { .. } | KafkoError::Internal(_) => ErrorKind::Internal,
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

    /// A copy used to fail every waiter of one failed write with the same cause. Lossy
    /// only where a field cannot be copied: an OS error keeps its kind and message, and
    /// a partial send (which no writer produces) keeps its description.
    // Long by design: one arm per variant, so a new variant must say how it is copied.
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
            KafkoError::Internal(e) => KafkoError::Internal(e.clone()),
            KafkoError::AlreadyOpen { path } => KafkoError::AlreadyOpen { path: path.clone() },
            KafkoError::TopicNotFound { topic } => KafkoError::TopicNotFound {
                topic: topic.clone(),
            },
            KafkoError::TopicDeleted { topic } => KafkoError::TopicDeleted {
                topic: topic.clone(),
            },
            KafkoError::TopicAlreadyExists { topic } => KafkoError::TopicAlreadyExists {
                topic: topic.clone(),
            },
            KafkoError::InvalidName { name, reason } => KafkoError::InvalidName {
                name: name.clone(),
                reason,
            },
            KafkoError::InvalidConfig { reason } => KafkoError::InvalidConfig {
                reason: reason.clone(),
            },
            KafkoError::PartitionNotFound {
                topic,
                partition,
                partitions,
            } => KafkoError::PartitionNotFound {
                topic: topic.clone(),
                partition: *partition,
                partitions: *partitions,
            },
            KafkoError::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            } => KafkoError::OffsetOutOfRange {
                requested: *requested,
                log_start_offset: *log_start_offset,
                high_watermark: *high_watermark,
            },
            KafkoError::RecordTooLarge { size, max } => KafkoError::RecordTooLarge {
                size: *size,
                max: *max,
            },
            KafkoError::KeyRequired { topic } => KafkoError::KeyRequired {
                topic: topic.clone(),
            },
            KafkoError::InvalidRequest { reason } => KafkoError::InvalidRequest {
                reason: reason.clone(),
            },
            KafkoError::NotCompacted { topic } => KafkoError::NotCompacted {
                topic: topic.clone(),
            },
            KafkoError::PartiallyAppended(p) => KafkoError::Internal(InternalError::Unexpected {
                operation: "copying a write failure",
                error: p.to_string(),
            }),
            KafkoError::Backpressure { topic, partition } => KafkoError::Backpressure {
                topic: topic.clone(),
                partition: *partition,
            },
            KafkoError::PartitionPanicked { topic, partition } => KafkoError::PartitionPanicked {
                topic: topic.clone(),
                partition: *partition,
            },
            KafkoError::GroupNotFound { group } => KafkoError::GroupNotFound {
                group: group.clone(),
            },
            KafkoError::UnknownMember { group, member } => KafkoError::UnknownMember {
                group: group.clone(),
                member: member.clone(),
            },
            KafkoError::StaleGeneration {
                group,
                current,
                given,
            } => KafkoError::StaleGeneration {
                group: group.clone(),
                current: *current,
                given: *given,
            },
            KafkoError::NotAssigned {
                topic,
                partition,
                member,
            } => KafkoError::NotAssigned {
                topic: topic.clone(),
                partition: *partition,
                member: member.clone(),
            },
            KafkoError::GroupHasMembers {
                group,
                topic,
                members,
            } => KafkoError::GroupHasMembers {
                group: group.clone(),
                topic: topic.clone(),
                members: *members,
            },
            KafkoError::NoValidOffset {
                group,
                topic,
                partition,
            } => KafkoError::NoValidOffset {
                group: group.clone(),
                topic: topic.clone(),
                partition: *partition,
            },
        }
    }
}

impl From<StorageError> for KafkoError {
    fn from(e: StorageError) -> Self {
        match e {
            StorageError::Full { op, path } => KafkoError::StorageFull { op, path },
            StorageError::TooManyOpenFiles { op, path } => {
                KafkoError::TooManyOpenFiles { op, path }
            }
            StorageError::Corruption {
                file,
                position,
                reason,
            } => KafkoError::Corruption {
                file,
                position,
                reason,
            },
            StorageError::Io { op, path, source } => KafkoError::Io { op, path, source },
        }
    }
}

impl From<InternalError> for KafkoError {
    fn from(e: InternalError) -> Self {
        KafkoError::Internal(e)
    }
}

/// Turns a crate-internal [`KafkoError`] into the error of one operation: `$op` is the
/// operation's type, `$what` names it for [`InternalError::Unexpected`], the arms map
/// the failures it can have, and `unexpected:` lists every other variant — by name, so
/// a new variant must be placed in every operation. Storage and internal failures are
/// mapped here, the same for every operation.
macro_rules! classify {
    (
        $e:expr, $op:ident, $what:literal,
        { $($pat:pat => $out:expr,)* }
        unexpected: $($unexpected:pat_param)|+
    ) => {{
        use $crate::error::{InternalError, KafkoError, StorageError};
        match $e {
            $($pat => $out,)*
            KafkoError::StorageFull { op, path } => $op::Storage(StorageError::Full { op, path }),
            KafkoError::TooManyOpenFiles { op, path } => {
                $op::Storage(StorageError::TooManyOpenFiles { op, path })
            }
            KafkoError::Corruption { file, position, reason } => {
                $op::Storage(StorageError::Corruption { file, position, reason })
            }
            KafkoError::Io { op, path, source } => $op::Storage(StorageError::Io { op, path, source }),
            KafkoError::Internal(e) => $op::Internal(e),
            e @ ($($unexpected)|+) => $op::Internal(InternalError::Unexpected {
                operation: $what,
                error: e.to_string(),
            }),
        }
    }};
}
pub(crate) use classify;

#[cfg(test)]
mod tests;
