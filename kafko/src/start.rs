//! [`StartError`]: why the server could not start, or could not stop cleanly.

use kafko_core::{AdminError, OpenError};

/// Start-up and shutdown failures of the server process.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// A flag's value is invalid.
    #[error("{0}")]
    Config(String),
    /// A listen address could not be bound: most often another server (a local Kafka,
    /// another kafko) holds the port.
    #[error("binding {addr}: {source} (another server on this port? choose another with {flag})")]
    Bind {
        /// The address.
        addr: String,
        /// The flag that sets it.
        flag: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The log could not be opened.
    #[error("opening the data directory: {0}")]
    Open(#[source] OpenError),
    /// The schema registry could not open or replay its `_schemas` topic.
    #[error("opening the schema registry: {0}")]
    Registry(#[source] kafko_registry::RegistryError),
    /// The log's shutdown failed (it could not drain, fsync or mark the directory
    /// clean); the next open recovers as after a crash.
    #[error("shutting down the data directory: {0}")]
    Shutdown(#[source] AdminError),
    /// Another I/O failure while serving.
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}
