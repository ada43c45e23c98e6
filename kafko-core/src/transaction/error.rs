//! [`TxnError`]: how a transaction coordinator request fails, one variant per answer a
//! Kafka client acts on differently.

use crate::error::KafkoError;

use super::TxnPartition;

/// Why a transaction coordinator request failed. Nothing changed unless said.
#[derive(Debug, thiserror::Error)]
pub enum TxnError {
    /// A newer instance of the producer holds the transactional id (Kafka's
    /// PRODUCER_FENCED, INVALID_PRODUCER_EPOCH in older versions): this one must stop.
    #[error("the producer was fenced by a newer instance with the same transactional id")]
    ProducerFenced,
    /// The transactional id is unknown or belongs to another producer id (Kafka's
    /// INVALID_PRODUCER_ID_MAPPING): initialize the producer first.
    #[error("the transactional id is unknown or belongs to another producer id")]
    InvalidProducerIdMapping,
    /// The last transaction is still ending (Kafka's CONCURRENT_TRANSACTIONS): retry.
    #[error("the previous transaction is still being completed")]
    ConcurrentTransactions,
    /// The request does not fit the transaction's state (Kafka's INVALID_TXN_STATE).
    #[error("the request does not fit the transaction's state")]
    InvalidTxnState,
    /// The transaction timeout asked for is not positive or past the server's maximum
    /// (Kafka's INVALID_TRANSACTION_TIMEOUT).
    #[error("the transaction timeout must be between 1 and {max_ms} ms")]
    InvalidTimeout {
        /// The server's `transaction.max.timeout.ms`.
        max_ms: i32,
    },
    /// These partitions do not exist; nothing was added.
    #[error("unknown topic partitions: {0:?}")]
    UnknownTopicOrPartition(Vec<TxnPartition>),
    /// The group name is not one a group can have.
    #[error("invalid group id")]
    InvalidGroupId,
    /// The server keeps this many transactional ids and no new one fits.
    #[error("the server keeps at most {max} transactional ids")]
    TooManyTransactions {
        /// The limit.
        max: usize,
    },
    /// A transaction holds this many partitions, groups and offsets at most.
    #[error("a transaction holds at most {max} partitions, groups and offsets")]
    TooManyPartitions {
        /// The limit.
        max: usize,
    },
    /// The server is shutting down.
    #[error("the server is shutting down")]
    ShuttingDown,
    /// The transaction log could not be written or read: nothing was answered as done.
    #[error(transparent)]
    Kafko(#[from] KafkoError),
}
