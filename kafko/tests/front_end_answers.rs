//! Every core failure's answer in each front end, side by side: `/v1`'s status, code and
//! `Retry-After`, the REST Proxy's status and `error_code`, and the Kafka error code. A
//! test at the edge, which knows all the front ends (they do not know one another); an
//! exhaustive match makes a new failure fail to compile here until the table answers
//! for it.

use kafko_core::KafkoError;
use kafko_core::ProducerRejection as Rejection;

/// Which variant of the union `e` is, by an exhaustive match.
fn variant(e: &KafkoError) -> &'static str {
    match e {
        KafkoError::AlreadyOpen { .. } => "AlreadyOpen",
        KafkoError::TopicNotFound { .. } => "TopicNotFound",
        KafkoError::TopicDeleted { .. } => "TopicDeleted",
        KafkoError::TopicAlreadyExists { .. } => "TopicAlreadyExists",
        KafkoError::InvalidName { .. } => "InvalidName",
        KafkoError::InvalidConfig { .. } => "InvalidConfig",
        KafkoError::PartitionNotFound { .. } => "PartitionNotFound",
        KafkoError::OffsetOutOfRange { .. } => "OffsetOutOfRange",
        KafkoError::RecordTooLarge { .. } => "RecordTooLarge",
        KafkoError::KeyRequired { .. } => "KeyRequired",
        KafkoError::InvalidRequest { .. } => "InvalidRequest",
        KafkoError::ProducerRejected { .. } => "ProducerRejected",
        KafkoError::PartiallyAppended(_) => "PartiallyAppended",
        KafkoError::Backpressure { .. } => "Backpressure",
        KafkoError::PartitionReadOnly { .. } => "PartitionReadOnly",
        KafkoError::PartitionPanicked { .. } => "PartitionPanicked",
        KafkoError::ShuttingDown => "ShuttingDown",
        KafkoError::StorageFull { .. } => "StorageFull",
        KafkoError::TooManyOpenFiles { .. } => "TooManyOpenFiles",
        KafkoError::Corruption { .. } => "Corruption",
        KafkoError::Io { .. } => "Io",
        KafkoError::NotCompacted { .. } => "NotCompacted",
        KafkoError::LimitReached { .. } => "LimitReached",
        KafkoError::Internal(_) => "Internal",
        KafkoError::GroupNotFound { .. } => "GroupNotFound",
        KafkoError::UnknownMember { .. } => "UnknownMember",
        KafkoError::StaleGeneration { .. } => "StaleGeneration",
        KafkoError::NotAssigned { .. } => "NotAssigned",
        KafkoError::GroupHasMembers { .. } => "GroupHasMembers",
        KafkoError::RebalanceInProgress { .. } => "RebalanceInProgress",
        KafkoError::FencedInstanceId { .. } => "FencedInstanceId",
        KafkoError::InconsistentGroupProtocol { .. } => "InconsistentGroupProtocol",
        KafkoError::NoValidOffset { .. } => "NoValidOffset",
    }
}

/// `/v1`'s status, code and `Retry-After`.
type V1 = (u16, &'static str, Option<u32>);
/// The REST Proxy's status and error_code.
type Proxy = (u16, u32);

// The Kafka error codes of the table, by Kafka's names.
const UNKNOWN_SERVER_ERROR: i16 = -1;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LEADER_NOT_AVAILABLE: i16 = 5;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const REQUEST_TIMED_OUT: i16 = 7;
const MESSAGE_TOO_LARGE: i16 = 10;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const ILLEGAL_GENERATION: i16 = 22;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const UNKNOWN_MEMBER_ID: i16 = 25;
const REBALANCE_IN_PROGRESS: i16 = 27;
const FENCED_INSTANCE_ID: i16 = 82;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const UNKNOWN_PRODUCER_ID: i16 = 59;
const TOPIC_ALREADY_EXISTS: i16 = 36;
const INVALID_CONFIG: i16 = 40;
const INVALID_REQUEST: i16 = 42;
const POLICY_VIOLATION: i16 = 44;
const KAFKA_STORAGE_ERROR: i16 = 56;
const NON_EMPTY_GROUP: i16 = 68;
const GROUP_ID_NOT_FOUND: i16 = 69;
const INVALID_RECORD: i16 = 87;

/// Every failure of the core (but a partial send, which needs a real send and is
/// answered per partition: `produce_partial`), with each front end's answer.
#[rustfmt::skip]
fn answers() -> Vec<(KafkoError, V1, Proxy, i16)> {
    use KafkoError as K;
    let t = || "t".to_owned();
    let g = || "g".to_owned();
    let m = || "m".to_owned();
    let x = || std::path::PathBuf::from("/x");
    let eio = || std::io::Error::from_raw_os_error(5);
    let panicked = || kafko_core::InternalError::TaskPanicked { task: "t", message: "boom".into() };
    vec![
        (K::AlreadyOpen { path: x() }, (503, "unavailable", Some(5)), (503, 50003), LEADER_NOT_AVAILABLE),
        (K::TopicNotFound { topic: t() }, (404, "topic_not_found", None), (404, 40401), UNKNOWN_TOPIC_OR_PARTITION),
        (K::TopicDeleted { topic: t() }, (404, "topic_deleted", None), (404, 40401), UNKNOWN_TOPIC_OR_PARTITION),
        (K::TopicAlreadyExists { topic: t() }, (409, "topic_exists", None), (400, 40002), TOPIC_ALREADY_EXISTS),
        (K::InvalidName { name: "..".into(), reason: "dots" }, (400, "invalid_topic_name", None), (422, 42206), INVALID_TOPIC_EXCEPTION),
        (K::InvalidConfig { reason: "r".into() }, (400, "invalid_config", None), (422, 42206), INVALID_CONFIG),
        (K::PartitionNotFound { topic: t(), partition: 3, partitions: 1 }, (404, "partition_not_found", None), (404, 40402), UNKNOWN_TOPIC_OR_PARTITION),
        (K::OffsetOutOfRange { requested: 9, log_start_offset: 1, high_watermark: 5 }, (416, "offset_out_of_range", None), (409, 40903), OFFSET_OUT_OF_RANGE),
        (K::RecordTooLarge { size: 2, max: 1 }, (413, "record_too_large", None), (413, 42207), MESSAGE_TOO_LARGE),
        (K::KeyRequired { topic: t() }, (400, "key_required", None), (422, 42206), INVALID_RECORD),
        (K::InvalidRequest { reason: "r".into() }, (400, "invalid_request", None), (422, 42206), INVALID_REQUEST),
        (K::Backpressure { topic: t(), partition: 0 }, (503, "backpressure", Some(1)), (503, 50003), REQUEST_TIMED_OUT),
        (K::PartitionReadOnly { topic: t(), partition: 0, reason: "r".into() }, (503, "partition_read_only", Some(5)), (503, 50003), KAFKA_STORAGE_ERROR),
        (K::PartitionPanicked { topic: t(), partition: 0 }, (503, "unavailable", Some(5)), (503, 50003), LEADER_NOT_AVAILABLE),
        (K::ShuttingDown, (503, "shutting_down", Some(5)), (503, 50003), NOT_LEADER_OR_FOLLOWER),
        (K::StorageFull { op: "writing", path: x() }, (507, "storage_full", None), (507, 50002), KAFKA_STORAGE_ERROR),
        (K::TooManyOpenFiles { op: "creating", path: x() }, (503, "too_many_open_files", Some(5)), (503, 50003), KAFKA_STORAGE_ERROR),
        (K::Corruption { file: x(), position: 7, reason: "crc".into() }, (500, "corruption", None), (500, 50002), KAFKA_STORAGE_ERROR),
        (K::Io { op: "appending to", path: x(), source: eio() }, (500, "internal", None), (500, 50002), KAFKA_STORAGE_ERROR),
        (K::NotCompacted { topic: t() }, (400, "invalid_request", None), (422, 42206), INVALID_REQUEST),
        (K::LimitReached { resource: "topics", limit: 2 }, (409, "limit_reached", None), (409, 40903), POLICY_VIOLATION),
        (K::Internal(panicked()), (500, "internal", None), (500, 50002), UNKNOWN_SERVER_ERROR),
        (K::GroupNotFound { group: g() }, (404, "group_not_found", None), (404, 40403), GROUP_ID_NOT_FOUND),
        (K::UnknownMember { group: g(), member: m() }, (409, "unknown_member", None), (404, 40403), UNKNOWN_MEMBER_ID),
        (K::StaleGeneration { group: g(), current: 3, given: 2 }, (409, "stale_generation", None), (409, 40903), ILLEGAL_GENERATION),
        (K::NotAssigned { topic: t(), partition: 1, member: m() }, (409, "not_assigned", None), (409, 40903), UNKNOWN_MEMBER_ID),
        (K::GroupHasMembers { group: g(), topic: t(), members: 2 }, (409, "group_has_members", None), (409, 40903), NON_EMPTY_GROUP),
        (K::RebalanceInProgress { group: g() }, (409, "rebalance_in_progress", None), (409, 40903), REBALANCE_IN_PROGRESS),
        (K::FencedInstanceId { group: g(), instance: "i".into(), member: m() }, (409, "fenced_instance_id", None), (409, 40903), FENCED_INSTANCE_ID),
        (K::ProducerRejected { topic: t(), partition: 0, producer_id: 1, rejection: Rejection::EpochFenced { epoch: 1, current: 2 } }, (409, "producer_rejected", None), (409, 40903), INVALID_PRODUCER_EPOCH),
        (K::ProducerRejected { topic: t(), partition: 0, producer_id: 1, rejection: Rejection::OutOfOrder { first: 5, expected: 0 } }, (409, "producer_rejected", None), (409, 40903), OUT_OF_ORDER_SEQUENCE_NUMBER),
        (K::ProducerRejected { topic: t(), partition: 0, producer_id: 1, rejection: Rejection::UnknownProducer }, (409, "producer_rejected", None), (409, 40903), UNKNOWN_PRODUCER_ID),
        (K::InconsistentGroupProtocol { group: g(), reason: "r".into() }, (409, "inconsistent_group_protocol", None), (409, 40903), INCONSISTENT_GROUP_PROTOCOL),
        (K::NoValidOffset { group: g(), topic: t(), partition: 0 }, (416, "no_valid_offset", None), (409, 40903), OFFSET_OUT_OF_RANGE),
    ]
}

#[test]
fn every_core_failure_has_its_answer_in_each_front_end() {
    let mut seen = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    // A failure is not Clone (it may hold an io::Error): each column gets its own copy.
    let copies = answers().into_iter().zip(answers()).zip(answers());
    for (((e, v1, proxy, kafka), (for_proxy, ..)), (for_kafka, ..)) in copies {
        let name = variant(&e);
        seen.insert(name);
        let got = (
            kafko_http::v1_answer(e),
            kafko_http::rest_proxy_answer(for_proxy),
            kafko_kafka::error_code(for_kafka),
        );
        if got != (v1, proxy, kafka) {
            wrong.push(format!(
                "{name}: expected {:?}, got {got:?}",
                (v1, proxy, kafka)
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Every variant is in the table, but the partial send.
    assert_eq!(seen.len(), 32, "{seen:?}");
    assert!(!seen.contains("PartiallyAppended"));
}
