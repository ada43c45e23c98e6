//! Kafka error codes, and the one mapping from a service [`Failure`] to the code a
//! Kafka client acts on (retriable where a retry can succeed): an exhaustive match, so
//! a new failure does not compile until it has its code. Storage failures (an I/O
//! error, a full disk, a partition turned read-only, stored data that fails its check)
//! are KAFKA_STORAGE_ERROR, as Kafka answers for a log directory that failed: clients
//! retry it, where UNKNOWN_SERVER_ERROR is final.

use kafko_core::ProducerRejection;
use kafko_service::failure::{Failure, Kind};

pub(crate) const NONE: i16 = 0;
pub(crate) const UNKNOWN_SERVER_ERROR: i16 = -1;
pub(crate) const OFFSET_OUT_OF_RANGE: i16 = 1;
pub(crate) const CORRUPT_MESSAGE: i16 = 2;
pub(crate) const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
pub(crate) const LEADER_NOT_AVAILABLE: i16 = 5;
pub(crate) const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
pub(crate) const NOT_LEADER_OR_FOLLOWER: i16 = 6;
pub(crate) const REQUEST_TIMED_OUT: i16 = 7;
pub(crate) const MESSAGE_TOO_LARGE: i16 = 10;
pub(crate) const INVALID_TOPIC_EXCEPTION: i16 = 17;
pub(crate) const RECORD_LIST_TOO_LARGE: i16 = 18;
pub(crate) const INVALID_REQUIRED_ACKS: i16 = 21;
pub(crate) const ILLEGAL_GENERATION: i16 = 22;
pub(crate) const UNKNOWN_MEMBER_ID: i16 = 25;
pub(crate) const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
pub(crate) const ILLEGAL_SASL_STATE: i16 = 34;
pub(crate) const UNSUPPORTED_VERSION: i16 = 35;
pub(crate) const TOPIC_ALREADY_EXISTS: i16 = 36;
pub(crate) const INVALID_PARTITIONS: i16 = 37;
pub(crate) const INVALID_REPLICATION_FACTOR: i16 = 38;
pub(crate) const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
pub(crate) const INVALID_CONFIG: i16 = 40;
pub(crate) const INVALID_REQUEST: i16 = 42;
pub(crate) const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = 43;
pub(crate) const POLICY_VIOLATION: i16 = 44;
pub(crate) const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
pub(crate) const INVALID_PRODUCER_EPOCH: i16 = 47;
pub(crate) const INVALID_TXN_STATE: i16 = 48;
pub(crate) const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
pub(crate) const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
pub(crate) const CONCURRENT_TRANSACTIONS: i16 = 51;
pub(crate) const OPERATION_NOT_ATTEMPTED: i16 = 55;
pub(crate) const PRODUCER_FENCED: i16 = 90;
pub(crate) const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;
pub(crate) const COORDINATOR_NOT_AVAILABLE: i16 = 15;
pub(crate) const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
pub(crate) const KAFKA_STORAGE_ERROR: i16 = 56;
pub(crate) const SASL_AUTHENTICATION_FAILED: i16 = 58;
pub(crate) const UNKNOWN_PRODUCER_ID: i16 = 59;
pub(crate) const NON_EMPTY_GROUP: i16 = 68;
pub(crate) const GROUP_ID_NOT_FOUND: i16 = 69;
pub(crate) const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
pub(crate) const UNSUPPORTED_COMPRESSION_TYPE: i16 = 76;
pub(crate) const INVALID_RECORD: i16 = 87;
pub(crate) const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
pub(crate) const INVALID_GROUP_ID: i16 = 24;
pub(crate) const INVALID_SESSION_TIMEOUT: i16 = 26;
pub(crate) const REBALANCE_IN_PROGRESS: i16 = 27;
pub(crate) const MEMBER_ID_REQUIRED: i16 = 79;
pub(crate) const GROUP_MAX_SIZE_REACHED: i16 = 81;
pub(crate) const FENCED_INSTANCE_ID: i16 = 82;
pub(crate) const OFFSET_METADATA_TOO_LARGE: i16 = 12;
pub(crate) const UNKNOWN_TOPIC_ID: i16 = 100;
pub(crate) const SECURITY_DISABLED: i16 = 54;
pub(crate) const MISMATCHED_ENDPOINT_TYPE: i16 = 114;
pub(crate) const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;

/// The Kafka error code for a failed operation.
pub(crate) fn code(failure: &Failure) -> i16 {
    match &failure.kind {
        Kind::TopicNotFound { .. } | Kind::TopicDeleted | Kind::PartitionNotFound => {
            UNKNOWN_TOPIC_OR_PARTITION
        }
        Kind::GroupNotFound => GROUP_ID_NOT_FOUND,
        Kind::TopicExists => TOPIC_ALREADY_EXISTS,
        Kind::InvalidName => INVALID_TOPIC_EXCEPTION,
        Kind::InvalidConfig => INVALID_CONFIG,
        // Kafka refuses a keyless record on a compacted topic as an invalid record.
        Kind::KeyRequired => INVALID_RECORD,
        Kind::InvalidRequest => INVALID_REQUEST,
        Kind::RecordTooLarge => MESSAGE_TOO_LARGE,
        Kind::TooManyRecords { .. } => RECORD_LIST_TOO_LARGE,
        Kind::OffsetOutOfRange { .. } | Kind::NoValidOffset { .. } => OFFSET_OUT_OF_RANGE,
        // A configured limit, as a broker policy refuses it.
        Kind::LimitReached { .. } => POLICY_VIOLATION,
        Kind::UnknownMember { .. } | Kind::NotAssigned { .. } => UNKNOWN_MEMBER_ID,
        Kind::StaleGeneration { .. } => ILLEGAL_GENERATION,
        Kind::GroupHasMembers { .. } => NON_EMPTY_GROUP,
        Kind::RebalanceInProgress => REBALANCE_IN_PROGRESS,
        Kind::FencedInstanceId => FENCED_INSTANCE_ID,
        Kind::ProducerRejected(rejection) => match rejection {
            ProducerRejection::EpochFenced { .. } => INVALID_PRODUCER_EPOCH,
            ProducerRejection::OutOfOrder { .. } => OUT_OF_ORDER_SEQUENCE_NUMBER,
            ProducerRejection::UnknownProducer => UNKNOWN_PRODUCER_ID,
            ProducerRejection::NotInTransaction => INVALID_TXN_STATE,
        },
        Kind::InconsistentGroupProtocol => INCONSISTENT_GROUP_PROTOCOL,
        // A full write queue stored nothing: retriable, as a timed-out request is.
        Kind::Backpressure => REQUEST_TIMED_OUT,
        // Clients refresh their metadata and retry, as when a leader moves.
        Kind::ShuttingDown => NOT_LEADER_OR_FOLLOWER,
        Kind::Unavailable => LEADER_NOT_AVAILABLE,
        Kind::PartitionReadOnly
        | Kind::TooManyOpenFiles
        | Kind::StorageFull
        | Kind::Corruption
        | Kind::Storage => KAFKA_STORAGE_ERROR,
        Kind::Internal => UNKNOWN_SERVER_ERROR,
    }
}
