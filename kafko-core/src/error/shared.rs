//! The two failures every operation shares: [`StorageError`] (the disk refused or
//! returned damaged data) and [`InternalError`] (a bug or a panic).

use std::path::PathBuf;

use super::ErrorKind;

error_enum! {
    /// The storage layer failed: the device is full, descriptors ran out, data on disk
    /// failed verification, or another I/O call failed.
    pub enum StorageError: leaf { Full = StorageFull, TooManyOpenFiles, Corruption, Io }
}

/// A bug or a panic inside the log: nothing the caller sent caused it, and retrying
/// the same call may meet it again. Worth a report, with the log line it left.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum InternalError {
    /// A task the operation ran on the blocking pool panicked.
    #[error("internal error: the {task} task panicked: {message}")]
    TaskPanicked {
        /// The work the task did.
        task: &'static str,
        /// The panic's message, when it had one.
        message: String,
    },
    /// A state file's body could not be serialized (the log's own types always
    /// serialize, so this is a bug).
    #[error("internal error: serializing {path}: {reason}")]
    Serialize {
        /// The state file.
        path: PathBuf,
        /// The serializer's message.
        reason: String,
    },
    /// An operation met a failure it never has (a bug): the original, for the log.
    #[error("internal error: {operation} failed with an unexpected error: {error}")]
    Unexpected {
        /// The operation.
        operation: &'static str,
        /// The unexpected error, as text.
        error: String,
    },
}

impl InternalError {
    /// The error for a blocking task that did not finish (it panicked, or its runtime
    /// shut down under it).
    pub(crate) fn task(task: &'static str, join: &tokio::task::JoinError) -> Self {
        InternalError::TaskPanicked {
            task,
            message: join.to_string(),
        }
    }

    /// The coarse category of this error: always [`ErrorKind::Internal`].
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::Internal
    }
}
