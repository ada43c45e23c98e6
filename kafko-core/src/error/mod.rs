//! Errors, one type per operation, as the log's callers meet them:
//! [`OpenError`] (opening a data directory), [`AdminError`] (topics, maintenance,
//! shutdown), [`ProduceError`], [`FetchError`] and [`GroupError`]. Each holds only the
//! failures its operation can have, plus [`StorageError`] (the disk said no) and
//! [`InternalError`] (a bug or a panic), and each has a coarse [`ErrorKind`].
//!
//! [`KafkoError`] is the union of them all, for callers who want one type: every
//! operation error converts into it (`?` works). Inside the crate, the shared layers
//! (segments, partitions, storage) fail with `KafkoError`; each public method turns that
//! into its operation's error, by an exhaustive match, so a failure an operation cannot
//! have shows up as [`InternalError::Unexpected`], never as a plausible-looking answer.
//!
//! Each failure is written once, in a catalog (`catalog.rs`); every enum here is a list
//! of its entries (`declare.rs`), so a failure has one message and one kind in every
//! error that holds it.

#[macro_use]
mod catalog;
#[macro_use]
mod declare;

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

error_enum! {
    /// Every failure of the log, with enough structure to act on: the union of the
    /// operation errors ([`OpenError`], [`AdminError`], [`ProduceError`], [`FetchError`],
    /// [`GroupError`]), each of which converts into it.
    pub enum KafkoError: union {
        AlreadyOpen, TopicNotFound, TopicDeleted, TopicAlreadyExists, InvalidName,
        InvalidConfig, PartitionNotFound, OffsetOutOfRange, RecordTooLarge, KeyRequired,
        InvalidRequest, ProducerRejected, PartiallyAppended, Backpressure, PartitionReadOnly, PartitionPanicked,
        ShuttingDown, StorageFull, TooManyOpenFiles, Corruption, Io, NotCompacted, LimitReached, Internal,
        GroupNotFound, UnknownMember, StaleGeneration, NotAssigned, GroupHasMembers,
        RebalanceInProgress, FencedInstanceId, InconsistentGroupProtocol, NoValidOffset,
    }
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
    /// A conflict with the log's state: a group generation or membership, or a limit
    /// on topics or partitions that is reached.
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
}

#[cfg(test)]
mod tests;
