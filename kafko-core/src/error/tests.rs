//! Every failure's kind and message, which of them each operation error keeps (with the
//! same kind and message, there and back), and the classification of the ones an
//! operation never has.

use std::time::Duration;

use super::*;

fn panicked() -> InternalError {
    InternalError::TaskPanicked {
        task: "t",
        message: "boom".into(),
    }
}

/// One value of each variant of the union (but a partial send, which needs a real send),
/// with its kind and its message.
#[rustfmt::skip]
fn union_cases() -> Vec<(KafkoError, ErrorKind, &'static str)> {
    use ErrorKind::*;
    use KafkoError as K;
    let t = || "t".to_owned();
    let g = || "g".to_owned();
    let m = || "m".to_owned();
    let x = || PathBuf::from("/x");
    vec![
        (K::AlreadyOpen { path: "/d".into() }, Unavailable,
            "data directory /d is already open by another kafko instance"),
        (K::TopicNotFound { topic: t() }, NotFound, "topic 't' does not exist"),
        (K::TopicDeleted { topic: t() }, NotFound, "topic 't' was deleted"),
        (K::TopicAlreadyExists { topic: t() }, AlreadyExists,
            "topic 't' already exists with a different configuration"),
        (K::InvalidName { name: "n".into(), reason: "r" }, InvalidInput, "invalid name 'n': r"),
        (K::InvalidConfig { reason: "r".into() }, InvalidInput, "invalid configuration: r"),
        (K::PartitionNotFound { topic: t(), partition: 3, partitions: 1 }, NotFound,
            "topic 't' has 1 partitions; partition 3 does not exist"),
        (K::OffsetOutOfRange { requested: 9, log_start_offset: 0, high_watermark: 1 }, OutOfRange,
            "offset 9 is out of range; valid offsets are 0..=1"),
        (K::RecordTooLarge { size: 2, max: 1 }, TooLarge,
            "record of 2 bytes exceeds the limit of 1 bytes"),
        (K::KeyRequired { topic: t() }, InvalidInput,
            "topic 't' is compacted: every record needs a key"),
        (K::InvalidRequest { reason: "r".into() }, InvalidInput, "invalid request: r"),
        (K::Backpressure { topic: t(), partition: 0 }, Unavailable,
            "partition t-0 is busy; retry later"),
        (K::PartitionReadOnly { topic: t(), partition: 0, reason: "r".into() }, Unavailable,
            "partition t-0 is read-only after a storage failure: r"),
        (K::PartitionPanicked { topic: t(), partition: 0 }, Unavailable,
            "a write of partition t-0 panicked"),
        (K::ShuttingDown, Unavailable, "kafko is shutting down"),
        (K::StorageFull { op: "writing", path: x() }, StorageFull,
            "no space left on device while writing /x"),
        (K::TooManyOpenFiles { op: "opening", path: x() }, Unavailable,
            "out of file descriptors while opening /x"),
        (K::Corruption { file: x(), position: 7, reason: "crc".into() }, Corruption,
            "corruption in /x at byte 7: crc"),
        (K::Io { op: "reading", path: x(), source: std::io::Error::other("boom") }, Internal,
            "I/O error while reading /x: boom"),
        (K::LimitReached { resource: "topics", limit: 2 }, Conflict,
            "the limit of 2 topics is reached"),
        (K::NotCompacted { topic: t() }, InvalidInput,
            "topic 't' is not compacted (cleanup_policy = delete)"),
        (K::Internal(panicked()), Internal, "internal error: the t task panicked: boom"),
        (K::GroupNotFound { group: g() }, NotFound, "consumer group 'g' does not exist"),
        (K::UnknownMember { group: g(), member: m() }, Conflict,
            "member 'm' is not part of group 'g'"),
        (K::StaleGeneration { group: g(), current: 2, given: 1 }, Conflict,
            "group 'g' is at generation 2; request used generation 1"),
        (K::NotAssigned { topic: t(), partition: 0, member: m() }, Conflict,
            "partition 0 of topic 't' is not assigned to member 'm'"),
        (K::GroupHasMembers { group: g(), topic: t(), members: 2 }, Conflict,
            "group 'g' has 2 active member(s) on topic 't'; join it or wait for them to leave"),
        (K::RebalanceInProgress { group: g() }, Conflict, "group 'g' is rebalancing; rejoin"),
        (K::ProducerRejected { topic: t(), partition: 0, producer_id: 5,
            rejection: crate::ProducerRejection::OutOfOrder { first: 3, expected: 1 } }, Conflict,
            "producer 5 refused on t-0: sequence 3 where 1 was expected"),
        (K::FencedInstanceId { group: g(), instance: "i".into(), member: m() }, Conflict,
            "member 'm' of group 'g' was replaced by a newer instance 'i'"),
        (K::InconsistentGroupProtocol { group: g(), reason: "r".into() }, Conflict,
            "group 'g' has members of another protocol: r"),
        (K::NoValidOffset { group: g(), topic: t(), partition: 0 }, OutOfRange,
            "group 'g' has no valid offset for t-0 and offset_reset=error"),
    ]
}

/// The variant's name, from its `Debug` form.
fn variant(e: &KafkoError) -> String {
    format!("{e:?}")
        .split([' ', '(', '{'])
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn every_failure_has_its_kind_and_message_and_survives_a_copy() {
    for (e, kind, message) in union_cases() {
        assert_eq!((e.kind(), e.to_string()), (kind, message.to_owned()));
        let copy = e.duplicate();
        assert_eq!((copy.kind(), copy.to_string()), (kind, message.to_owned()));
    }
}

/// The failures of the union the operation error `E` keeps, by name: each with the
/// union's kind and message, in `E` and once back in the union. Every other one must
/// have become an internal error that names the operation (`what`).
fn kept<E>(what: &str, kind: impl Fn(&E) -> ErrorKind) -> Vec<String>
where
    E: From<KafkoError> + Into<KafkoError> + std::fmt::Display,
{
    let mut kept = Vec::new();
    for (e, expected, message) in union_cases() {
        let name = variant(&e);
        let op = E::from(e);
        let shown = op.to_string();
        if shown == message {
            assert_eq!(kind(&op), expected, "{name}");
            let back: KafkoError = op.into();
            assert_eq!((back.kind(), back.to_string()), (expected, shown), "{name}");
            kept.push(name);
        } else {
            let unexpected = format!("internal error: {what} failed with an unexpected error: ");
            assert_eq!(shown, format!("{unexpected}{message}"), "{name}");
            assert_eq!(kind(&op), ErrorKind::Internal, "{name}");
        }
    }
    kept
}

const STORAGE: [&str; 4] = ["StorageFull", "TooManyOpenFiles", "Corruption", "Io"];

/// `own` in the union's order, with the storage failures and `Internal` where they
/// stand there.
fn with_shared(own: &[&str]) -> Vec<String> {
    let order: Vec<String> = union_cases().iter().map(|(e, ..)| variant(e)).collect();
    order
        .into_iter()
        .filter(|n| own.contains(&n.as_str()) || STORAGE.contains(&n.as_str()) || n == "Internal")
        .collect()
}

#[test]
fn each_operation_keeps_exactly_the_failures_it_can_have() {
    assert_eq!(
        kept("opening the data directory", OpenError::kind),
        with_shared(&["AlreadyOpen"])
    );
    let admin = [
        "TopicNotFound",
        "TopicDeleted",
        "TopicAlreadyExists",
        "InvalidName",
        "InvalidConfig",
        "NotCompacted",
        "LimitReached",
        "PartitionReadOnly",
        "PartitionPanicked",
        "ShuttingDown",
        "PartitionNotFound",
        "OffsetOutOfRange",
        "InvalidRequest",
    ];
    assert_eq!(
        kept("a topic administration call", AdminError::kind),
        with_shared(&admin)
    );
    let produce = [
        "TopicDeleted",
        "PartitionNotFound",
        "RecordTooLarge",
        "KeyRequired",
        "InvalidRequest",
        "ProducerRejected",
        "Backpressure",
        "PartitionReadOnly",
        "PartitionPanicked",
        "ShuttingDown",
    ];
    assert_eq!(kept("a send", ProduceError::kind), with_shared(&produce));
    let fetch = ["TopicDeleted", "PartitionNotFound", "OffsetOutOfRange"];
    assert_eq!(kept("a read", FetchError::kind), with_shared(&fetch));
    let group = [
        "InvalidName",
        "GroupNotFound",
        "UnknownMember",
        "StaleGeneration",
        "NotAssigned",
        "GroupHasMembers",
        "RebalanceInProgress",
        "FencedInstanceId",
        "InconsistentGroupProtocol",
        "NoValidOffset",
        "OffsetOutOfRange",
        "TopicDeleted",
        "PartitionNotFound",
        "LimitReached",
        "ShuttingDown",
    ];
    assert_eq!(kept("a group call", GroupError::kind), with_shared(&group));
}

#[test]
fn a_refused_session_timeout_is_invalid_input_and_an_invalid_request_in_the_union() {
    let e = GroupError::InvalidSessionTimeout {
        timeout: Duration::ZERO,
        min: Duration::from_millis(1),
        max: Duration::from_secs(3600),
    };
    let message = "session timeout must be between 1 ms and 3600000 ms, got 0 ms";
    assert_eq!(
        (e.kind(), e.to_string()),
        (ErrorKind::InvalidInput, message.into())
    );
    let union = KafkoError::from(e);
    assert!(
        matches!(&union, KafkoError::InvalidRequest { reason } if reason == message),
        "{union:?}"
    );
}

#[test]
fn shared_failures_keep_their_shape_in_every_operation() {
    let full = || KafkoError::StorageFull {
        op: "writing",
        path: "/x".into(),
    };
    assert!(matches!(
        ProduceError::from(full()),
        ProduceError::Storage(StorageError::Full { op: "writing", .. })
    ));
    assert!(matches!(
        GroupError::from(KafkoError::Internal(panicked())),
        GroupError::Internal(InternalError::TaskPanicked { task: "t", .. })
    ));
    assert!(matches!(
        ProduceError::from(KafkoError::InvalidRequest { reason: "r".into() }),
        ProduceError::InvalidBatch { .. }
    ));
    assert!(matches!(
        KafkoError::from(FetchError::from(full())),
        KafkoError::StorageFull { .. }
    ));
}

#[test]
fn a_failure_an_operation_never_has_is_internal_not_a_lookalike() {
    // A fetch never meets a group's membership conflict: if one reaches it, that is a
    // bug, and it must not reach the caller as a conflict it could act on.
    let e = FetchError::from(KafkoError::UnknownMember {
        group: "g".into(),
        member: "m".into(),
    });
    assert!(
        matches!(&e, FetchError::Internal(InternalError::Unexpected { operation: "a read", error })
            if error.contains("member 'm'")),
        "{e:?}"
    );
    assert_eq!(e.kind(), ErrorKind::Internal);
}
