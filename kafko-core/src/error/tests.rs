//! Each operation error's `kind()`, its agreement with the union's, and the
//! classification of shared-layer failures (including the ones an operation never has).

use std::time::Duration;

use super::*;

fn io() -> StorageError {
    StorageError::Io {
        op: "reading",
        path: "/x".into(),
        source: std::io::Error::other("boom"),
    }
}

fn panicked() -> InternalError {
    InternalError::TaskPanicked {
        task: "t",
        message: "boom".into(),
    }
}

/// Each error's kind, and the same kind once it is a [`KafkoError`].
fn check<E: Into<KafkoError>>(cases: Vec<(E, ErrorKind)>, kind: impl Fn(&E) -> ErrorKind) {
    for (e, expected) in cases {
        assert_eq!(kind(&e), expected);
        assert_eq!(e.into().kind(), expected);
    }
}

#[test]
fn open_errors_have_kinds() {
    check(
        vec![
            (
                OpenError::AlreadyOpen { path: "/d".into() },
                ErrorKind::Unavailable,
            ),
            (OpenError::Storage(io()), ErrorKind::Internal),
            (OpenError::Internal(panicked()), ErrorKind::Internal),
        ],
        OpenError::kind,
    );
}

#[test]
fn admin_errors_have_kinds() {
    let t = || "t".to_owned();
    check(
        vec![
            (
                AdminError::TopicNotFound { topic: t() },
                ErrorKind::NotFound,
            ),
            (AdminError::TopicDeleted { topic: t() }, ErrorKind::NotFound),
            (
                AdminError::TopicAlreadyExists { topic: t() },
                ErrorKind::AlreadyExists,
            ),
            (
                AdminError::InvalidName {
                    name: t(),
                    reason: "r",
                },
                ErrorKind::InvalidInput,
            ),
            (
                AdminError::InvalidConfig { reason: t() },
                ErrorKind::InvalidInput,
            ),
            (
                AdminError::NotCompacted { topic: t() },
                ErrorKind::InvalidInput,
            ),
            (
                AdminError::PartitionPanicked {
                    topic: t(),
                    partition: 0,
                },
                ErrorKind::Unavailable,
            ),
            (AdminError::ShuttingDown, ErrorKind::Unavailable),
            (
                AdminError::Storage(StorageError::Full {
                    op: "w",
                    path: "/x".into(),
                }),
                ErrorKind::StorageFull,
            ),
            (AdminError::Internal(panicked()), ErrorKind::Internal),
        ],
        AdminError::kind,
    );
}

#[test]
fn produce_errors_have_kinds() {
    let t = || "t".to_owned();
    check(
        vec![
            (
                ProduceError::TopicDeleted { topic: t() },
                ErrorKind::NotFound,
            ),
            (
                ProduceError::PartitionNotFound {
                    topic: t(),
                    partition: 3,
                    partitions: 1,
                },
                ErrorKind::NotFound,
            ),
            (
                ProduceError::RecordTooLarge { size: 2, max: 1 },
                ErrorKind::TooLarge,
            ),
            (
                ProduceError::KeyRequired { topic: t() },
                ErrorKind::InvalidInput,
            ),
            (
                ProduceError::InvalidBatch { reason: t() },
                ErrorKind::InvalidInput,
            ),
            (
                ProduceError::Backpressure {
                    topic: t(),
                    partition: 0,
                },
                ErrorKind::Unavailable,
            ),
            (
                ProduceError::PartitionReadOnly {
                    topic: t(),
                    partition: 0,
                    reason: t(),
                },
                ErrorKind::Unavailable,
            ),
            (ProduceError::ShuttingDown, ErrorKind::Unavailable),
            (
                ProduceError::Storage(StorageError::TooManyOpenFiles {
                    op: "o",
                    path: "/x".into(),
                }),
                ErrorKind::Unavailable,
            ),
            (ProduceError::Internal(panicked()), ErrorKind::Internal),
        ],
        ProduceError::kind,
    );
}

#[test]
fn fetch_errors_have_kinds() {
    check(
        vec![
            (
                FetchError::TopicDeleted { topic: "t".into() },
                ErrorKind::NotFound,
            ),
            (
                FetchError::OffsetOutOfRange {
                    requested: 9,
                    log_start_offset: 0,
                    high_watermark: 1,
                },
                ErrorKind::OutOfRange,
            ),
            (
                FetchError::Storage(StorageError::Corruption {
                    file: "/x".into(),
                    position: 0,
                    reason: "crc".into(),
                }),
                ErrorKind::Corruption,
            ),
            (FetchError::Internal(panicked()), ErrorKind::Internal),
        ],
        FetchError::kind,
    );
}

#[test]
fn group_errors_have_kinds() {
    let g = || "g".to_owned();
    check(
        vec![
            (
                GroupError::InvalidName {
                    name: g(),
                    reason: "r",
                },
                ErrorKind::InvalidInput,
            ),
            (
                GroupError::InvalidSessionTimeout {
                    timeout: Duration::ZERO,
                },
                ErrorKind::InvalidInput,
            ),
            (
                GroupError::GroupNotFound { group: g() },
                ErrorKind::NotFound,
            ),
            (
                GroupError::UnknownMember {
                    group: g(),
                    member: g(),
                },
                ErrorKind::Conflict,
            ),
            (
                GroupError::StaleGeneration {
                    group: g(),
                    current: 2,
                    given: 1,
                },
                ErrorKind::Conflict,
            ),
            (
                GroupError::NoValidOffset {
                    group: g(),
                    topic: g(),
                    partition: 0,
                },
                ErrorKind::OutOfRange,
            ),
            (GroupError::ShuttingDown, ErrorKind::Unavailable),
            (GroupError::Storage(io()), ErrorKind::Internal),
            (GroupError::Internal(panicked()), ErrorKind::Internal),
        ],
        GroupError::kind,
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
