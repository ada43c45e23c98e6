//! Every core failure's answer in each front end, side by side: a test at the edge,
//! which knows all the front ends (the front ends do not know one another).

use kafko_core::KafkoError;

use crate::error::ApiError;

/// Which variant of the union `e` is, by an exhaustive match: a new failure does not
/// compile here until the table below answers for it.
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
        KafkoError::InconsistentGroupProtocol { .. } => "InconsistentGroupProtocol",
        KafkoError::NoValidOffset { .. } => "NoValidOffset",
    }
}

/// `/v1`'s status, code and `Retry-After`.
type V1Answer = (u16, &'static str, Option<u32>);
/// The REST Proxy's status and error_code.
type ProxyAnswer = (u16, u32);

/// Every failure of the core (but a partial send, which needs a real send and is
/// answered per partition: `produce_partial`), with what each front end answers:
/// `/v1`'s status, code and `Retry-After`, the REST Proxy's status and error_code.
#[rustfmt::skip]
fn answers() -> Vec<(KafkoError, V1Answer, ProxyAnswer)> {
    use KafkoError as K;
    let t = || "t".to_owned();
    let g = || "g".to_owned();
    let m = || "m".to_owned();
    let x = || std::path::PathBuf::from("/x");
    let panicked = || kafko_core::InternalError::TaskPanicked { task: "t", message: "boom".into() };
    vec![
        (K::AlreadyOpen { path: x() }, (503, "unavailable", Some(5)), (503, 50003)),
        (K::TopicNotFound { topic: t() }, (404, "topic_not_found", None), (404, 40401)),
        (K::TopicDeleted { topic: t() }, (404, "topic_deleted", None), (404, 40401)),
        (K::TopicAlreadyExists { topic: t() }, (409, "topic_exists", None), (400, 40002)),
        (K::InvalidName { name: "..".into(), reason: "dots" }, (400, "invalid_topic_name", None), (422, 42206)),
        (K::InvalidConfig { reason: "r".into() }, (400, "invalid_config", None), (422, 42206)),
        (K::PartitionNotFound { topic: t(), partition: 3, partitions: 1 }, (404, "partition_not_found", None), (404, 40402)),
        (K::OffsetOutOfRange { requested: 9, log_start_offset: 1, high_watermark: 5 }, (416, "offset_out_of_range", None), (409, 40903)),
        (K::RecordTooLarge { size: 2, max: 1 }, (413, "record_too_large", None), (413, 42207)),
        (K::KeyRequired { topic: t() }, (400, "key_required", None), (422, 42206)),
        (K::InvalidRequest { reason: "r".into() }, (400, "invalid_request", None), (422, 42206)),
        (K::Backpressure { topic: t(), partition: 0 }, (503, "backpressure", Some(1)), (503, 50003)),
        (K::PartitionReadOnly { topic: t(), partition: 0, reason: "r".into() }, (503, "partition_read_only", Some(5)), (503, 50003)),
        (K::PartitionPanicked { topic: t(), partition: 0 }, (503, "unavailable", Some(5)), (503, 50003)),
        (K::ShuttingDown, (503, "shutting_down", Some(5)), (503, 50003)),
        (K::StorageFull { op: "writing", path: x() }, (507, "storage_full", None), (507, 50002)),
        (K::TooManyOpenFiles { op: "creating", path: x() }, (503, "too_many_open_files", Some(5)), (503, 50003)),
        (K::Corruption { file: x(), position: 7, reason: "crc".into() }, (500, "corruption", None), (500, 50002)),
        (K::Io { op: "reading", path: x(), source: std::io::Error::other("boom") }, (500, "internal", None), (500, 50002)),
        (K::NotCompacted { topic: t() }, (400, "invalid_request", None), (422, 42206)),
        (K::LimitReached { resource: "topics", limit: 2 }, (409, "limit_reached", None), (409, 40903)),
        (K::Internal(panicked()), (500, "internal", None), (500, 50002)),
        (K::GroupNotFound { group: g() }, (404, "group_not_found", None), (404, 40403)),
        (K::UnknownMember { group: g(), member: m() }, (409, "unknown_member", None), (404, 40403)),
        (K::StaleGeneration { group: g(), current: 3, given: 2 }, (409, "stale_generation", None), (409, 40903)),
        (K::NotAssigned { topic: t(), partition: 1, member: m() }, (409, "not_assigned", None), (409, 40903)),
        (K::GroupHasMembers { group: g(), topic: t(), members: 2 }, (409, "group_has_members", None), (409, 40903)),
        (K::RebalanceInProgress { group: g() }, (409, "rebalance_in_progress", None), (409, 40903)),
        (K::InconsistentGroupProtocol { group: g(), reason: "r".into() }, (409, "inconsistent_group_protocol", None), (409, 40903)),
        (K::NoValidOffset { group: g(), topic: t(), partition: 0 }, (416, "no_valid_offset", None), (409, 40903)),
    ]
}

#[test]
fn every_core_failure_has_its_answer_in_each_front_end() {
    let mut seen = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    for ((e, v1, proxy), (copy, ..)) in answers().into_iter().zip(answers()) {
        let name = variant(&e);
        seen.insert(name);
        let a = ApiError::from(e);
        let p = crate::rest_proxy::error::ProxyError::from(copy);
        let got = (
            (a.status.as_u16(), a.code, a.retry_after),
            (p.status.as_u16(), p.error_code),
        );
        if got != (v1, proxy) {
            wrong.push(format!("{name}: expected {:?}, got {got:?}", (v1, proxy)));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    // Every variant is in the table, but the partial send.
    assert_eq!(seen.len(), 30, "{seen:?}");
    assert!(!seen.contains("PartiallyAppended"));
}
