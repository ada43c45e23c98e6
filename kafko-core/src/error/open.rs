//! [`OpenError`]: opening (locking and recovering) a data directory.

use std::path::PathBuf;

use super::{ErrorKind, InternalError, KafkoError, StorageError, classify};

/// Why a data directory could not be opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Another process (or another `Kafko` in this one) holds the data directory.
    #[error("data directory {path} is already open by another kafko instance")]
    AlreadyOpen {
        /// The locked data directory.
        path: PathBuf,
    },
    /// Recovery could not read or repair the directory.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A bug or a panic during recovery.
    #[error(transparent)]
    Internal(#[from] InternalError),
}

impl OpenError {
    /// The coarse category of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            OpenError::AlreadyOpen { .. } => ErrorKind::Unavailable,
            OpenError::Storage(e) => e.kind(),
            OpenError::Internal(e) => e.kind(),
        }
    }
}

impl From<OpenError> for KafkoError {
    fn from(e: OpenError) -> Self {
        match e {
            OpenError::AlreadyOpen { path } => KafkoError::AlreadyOpen { path },
            OpenError::Storage(e) => e.into(),
            OpenError::Internal(e) => e.into(),
        }
    }
}

#[doc(hidden)]
impl From<KafkoError> for OpenError {
    /// Classifies a failure of the crate's shared layers (see the module doc).
    fn from(e: KafkoError) -> Self {
        classify!(e, OpenError, "opening the data directory", {
            KafkoError::AlreadyOpen { path } => OpenError::AlreadyOpen { path },
        }
        unexpected: KafkoError::TopicNotFound { .. }
            | KafkoError::TopicDeleted { .. }
            | KafkoError::TopicAlreadyExists { .. }
            | KafkoError::InvalidName { .. }
            | KafkoError::InvalidConfig { .. }
            | KafkoError::PartitionNotFound { .. }
            | KafkoError::OffsetOutOfRange { .. }
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
