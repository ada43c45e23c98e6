//! The two failures every operation shares: [`StorageError`] (the disk refused or
//! returned damaged data) and [`InternalError`] (a bug or a panic).

use std::path::PathBuf;

use super::ErrorKind;

/// The storage layer failed: the device is full, descriptors ran out, data on disk
/// failed verification, or another I/O call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StorageError {
    /// The storage device is full: retry once space is freed.
    #[error("no space left on device while {op} {path}")]
    Full {
        /// The operation that failed.
        op: &'static str,
        /// The file involved.
        path: PathBuf,
    },
    /// The process (or the system) has no file descriptor left: retry once descriptors
    /// are free, or raise the limit (`ulimit -n`).
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
    /// Another I/O call failed.
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
}

impl StorageError {
    /// The coarse category of this error.
    pub fn kind(&self) -> ErrorKind {
        match self {
            StorageError::Full { .. } => ErrorKind::StorageFull,
            StorageError::TooManyOpenFiles { .. } => ErrorKind::Unavailable,
            StorageError::Corruption { .. } => ErrorKind::Corruption,
            StorageError::Io { .. } => ErrorKind::Internal,
        }
    }
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
