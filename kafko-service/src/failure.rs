//! [`Failure`]: a failed operation as every front end answers it, whatever its shape. A
//! core error becomes a `Failure` here, in one exhaustive `match` (no `_` arm: a new
//! core error does not compile until it is placed), and a server-side failure is logged
//! here, in full, once. `/v1` renders a `Failure` as problem+json (`error.rs`), the REST
//! Proxy as `{error_code, message}` (`rest_proxy/error.rs`).

use kafko_core::KafkoError;

/// What failed, with the facts a client acts on (the typed extensions of the answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// The topic does not exist.
    TopicNotFound {
        /// The topic.
        topic: String,
    },
    /// The topic was deleted under the request.
    TopicDeleted,
    /// The partition does not exist.
    PartitionNotFound,
    /// The consumer group does not exist.
    GroupNotFound,
    /// The topic exists with another configuration.
    TopicExists,
    /// A name is not valid.
    InvalidName,
    /// A configuration is not valid.
    InvalidConfig,
    /// A compacted topic's record has no key.
    KeyRequired,
    /// The request is not valid (also: compaction asked of a topic that is not
    /// compacted).
    InvalidRequest,
    /// A record is larger than the limit.
    RecordTooLarge,
    /// A request holds more records than the limit.
    TooManyRecords {
        /// `--max-records-per-request`.
        max: usize,
    },
    /// An offset outside the log.
    OffsetOutOfRange {
        /// The offset asked for.
        requested: u64,
        /// The first offset stored.
        log_start_offset: u64,
        /// One past the last offset.
        high_watermark: u64,
    },
    /// A group has no valid offset for a partition and its reset is `error`.
    NoValidOffset {
        /// The partition.
        partition: u32,
    },
    /// A configured limit (topics, partitions) is reached.
    LimitReached {
        /// What is limited.
        resource: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The member is not (or no longer) part of the group.
    UnknownMember {
        /// The member.
        member: String,
    },
    /// The request used an older generation of the group.
    StaleGeneration {
        /// The group's generation.
        current: u64,
        /// The request's.
        given: u64,
    },
    /// The partition is not assigned to the member.
    NotAssigned {
        /// The partition.
        partition: u32,
    },
    /// The group has active members.
    GroupHasMembers {
        /// How many.
        members: usize,
    },
    /// The group is rebalancing: rejoin.
    RebalanceInProgress,
    /// A newer instance with the same static membership id replaced the caller.
    FencedInstanceId,
    /// An idempotent producer's batch breaks the partition's producer state.
    ProducerRejected(kafko_core::ProducerRejection),
    /// The caller's kind of membership does not fit the group's members.
    InconsistentGroupProtocol,
    /// A partition's write queue is full: nothing stored, retry.
    Backpressure,
    /// The server is stopping.
    ShuttingDown,
    /// The partition takes no writes after a storage failure.
    PartitionReadOnly,
    /// Out of file descriptors for now.
    TooManyOpenFiles,
    /// Temporarily unable otherwise (the data directory, a partition's writer).
    Unavailable,
    /// Out of disk space.
    StorageFull,
    /// Stored data failed verification.
    Corruption,
    /// An I/O failure of the data directory (a write or an fsync met EIO): the
    /// operation failed, a retry may succeed.
    Storage,
    /// A bug or a panic.
    Internal,
}

/// A failed operation: its [`Kind`], the detail a client may see, and how long to wait
/// before a retry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What failed.
    pub kind: Kind,
    /// Seconds a client should wait before retrying, for failures worth a retry.
    pub retry_after: Option<u32>,
    /// What went wrong, safe to show: the core's message for a client's error, a
    /// generic sentence for a server-side one (whose full text is logged).
    pub detail: String,
}

impl Failure {
    /// A failure with no retry hint.
    pub fn new(kind: Kind, detail: impl Into<String>) -> Self {
        Failure {
            kind,
            retry_after: None,
            detail: detail.into(),
        }
    }

    fn retry(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// A server-side failure: logged in full (paths, OS errors, panic text), answered
    /// with a generic detail.
    fn server_side(kind: Kind, message: &str) -> Self {
        tracing::error!(error = %message, kind = ?kind, "request failed");
        let public = match kind {
            Kind::StorageFull => "the server is out of disk space",
            Kind::TooManyOpenFiles => "the server is out of file descriptors; retry later",
            Kind::PartitionReadOnly | Kind::Unavailable => {
                "the partition is temporarily unavailable"
            }
            _ => "internal error; see the server log",
        };
        let failure = Failure::new(kind, public);
        match failure.kind {
            Kind::PartitionReadOnly | Kind::Unavailable | Kind::TooManyOpenFiles => {
                failure.retry(5)
            }
            _ => failure,
        }
    }
}

impl From<KafkoError> for Failure {
    // Long by design: the one table, an arm per core error.
    fn from(e: KafkoError) -> Self {
        let message = e.to_string();
        let client = |kind: Kind| Failure::new(kind, message.clone());
        let server = |kind: Kind| Failure::server_side(kind, &message);
        match e {
            KafkoError::TopicNotFound { topic } => client(Kind::TopicNotFound { topic }),
            KafkoError::TopicDeleted { .. } => client(Kind::TopicDeleted),
            KafkoError::PartitionNotFound { .. } => client(Kind::PartitionNotFound),
            KafkoError::GroupNotFound { .. } => client(Kind::GroupNotFound),
            KafkoError::TopicAlreadyExists { .. } => client(Kind::TopicExists),
            KafkoError::InvalidName { .. } => client(Kind::InvalidName),
            KafkoError::InvalidConfig { .. } => client(Kind::InvalidConfig),
            KafkoError::KeyRequired { .. } => client(Kind::KeyRequired),
            KafkoError::InvalidRequest { .. } | KafkoError::NotCompacted { .. } => {
                client(Kind::InvalidRequest)
            }
            KafkoError::RecordTooLarge { .. } => client(Kind::RecordTooLarge),
            KafkoError::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            } => client(Kind::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            }),
            KafkoError::NoValidOffset { partition, .. } => {
                client(Kind::NoValidOffset { partition })
            }
            // A configured limit, as Kafka refuses what its policy forbids: the request
            // is valid and succeeds once a topic is deleted or the limit raised.
            KafkoError::LimitReached { resource, limit } => {
                client(Kind::LimitReached { resource, limit })
            }
            // Consumer groups: the usual cause of an unknown member is an expired
            // session, and the remedy (as for a stale generation) is to rejoin.
            KafkoError::UnknownMember { member, .. } => client(Kind::UnknownMember { member }),
            KafkoError::StaleGeneration { current, given, .. } => {
                client(Kind::StaleGeneration { current, given })
            }
            KafkoError::NotAssigned { partition, .. } => client(Kind::NotAssigned { partition }),
            KafkoError::GroupHasMembers { members, .. } => {
                client(Kind::GroupHasMembers { members })
            }
            KafkoError::RebalanceInProgress { .. } => client(Kind::RebalanceInProgress),
            KafkoError::FencedInstanceId { .. } => client(Kind::FencedInstanceId),
            KafkoError::InconsistentGroupProtocol { .. } => client(Kind::InconsistentGroupProtocol),
            KafkoError::Backpressure { .. } => client(Kind::Backpressure).retry(1),
            KafkoError::ProducerRejected { rejection, .. } => {
                client(Kind::ProducerRejected(rejection))
            }
            KafkoError::ShuttingDown => client(Kind::ShuttingDown).retry(5),
            // A send some of whose partitions appended, where the front end answers for
            // the whole request: the first failed partition's failure.
            KafkoError::PartiallyAppended(mut partial) => {
                if partial.failed.is_empty() {
                    server(Kind::Internal)
                } else {
                    tracing::warn!(error = %message, "a send appended some partitions only");
                    Failure::from(partial.failed.swap_remove(0).error)
                }
            }
            KafkoError::PartitionReadOnly { .. } => server(Kind::PartitionReadOnly),
            KafkoError::AlreadyOpen { .. } | KafkoError::PartitionPanicked { .. } => {
                server(Kind::Unavailable)
            }
            KafkoError::TooManyOpenFiles { .. } => server(Kind::TooManyOpenFiles),
            KafkoError::StorageFull { .. } => server(Kind::StorageFull),
            KafkoError::Corruption { .. } => server(Kind::Corruption),
            KafkoError::Io { .. } => server(Kind::Storage),
            KafkoError::Internal(_) => server(Kind::Internal),
        }
    }
}

/// Each operation's error is a part of the union, and fails as it does there.
macro_rules! from_operation_errors {
    ($($op:ty),*) => {$(
        impl From<$op> for Failure {
            fn from(e: $op) -> Self {
                KafkoError::from(e).into()
            }
        }
    )*};
}
from_operation_errors!(
    kafko_core::OpenError,
    kafko_core::AdminError,
    kafko_core::ProduceError,
    kafko_core::FetchError,
    kafko_core::GroupError
);
