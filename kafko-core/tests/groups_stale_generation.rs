//! A commit (or poll) carrying an old generation is rejected with a typed error after a
//! rebalance; members may only commit partitions they own; the implicit member is
//! refused while explicit members are live.
mod gc_support;

use std::time::Duration;

use gc_support::{GroupOps, open, small};
use kafko_core::{Bytes, ErrorKind, GroupPollOptions, KafkoError, MemberRef, PartitionOffset};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_generation_commit_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(2)).await.unwrap();
    let p = k.producer_for("t").unwrap();
    for i in 0..10u32 {
        p.send(Some(Bytes::from(format!("k{i}"))), Bytes::from("v"))
            .await
            .unwrap();
    }
    let timeout = Duration::from_secs(30);
    let a1 = k.join_group("g", "t", None, timeout).await.unwrap();
    let polled = k
        .poll_group_member("g", "t", &a1.member_ref(), &GroupPollOptions::default())
        .await
        .unwrap();
    assert_eq!(polled.generation, a1.generation);
    let b = k.join_group("g", "t", None, timeout).await.unwrap();
    assert_ne!(a1.member_id, b.member_id);
    assert_eq!(b.generation, a1.generation + 1);

    let commit = [PartitionOffset {
        partition: 0,
        offset: 1,
    }];
    let err = k
        .commit_group_offsets("g", "t", Some(&a1.member_ref()), Some(&commit))
        .await
        .unwrap_err();
    assert!(
        matches!(err, KafkoError::StaleGeneration { current, given, .. } if current == b.generation && given == a1.generation),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::Conflict);
    let err = k
        .poll_group_member("g", "t", &a1.member_ref(), &GroupPollOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, KafkoError::StaleGeneration { .. }));
    assert_eq!(
        k.group("g").and_then(|g| g.describe()).unwrap().topics[0].partitions[0].committed,
        None
    );

    // Rejoining (same id) gives the current generation; commits then succeed, but only
    // for owned partitions.
    let a2 = k
        .join_group("g", "t", Some(&a1.member_id), timeout)
        .await
        .unwrap();
    assert_eq!(a2.generation, b.generation);
    let mine = a2.assignment[0];
    let theirs = b.assignment[0];
    k.commit_group_offsets(
        "g",
        "t",
        Some(&a2.member_ref()),
        Some(&[PartitionOffset {
            partition: mine,
            offset: 1,
        }]),
    )
    .await
    .unwrap();
    let err = k
        .commit_group_offsets(
            "g",
            "t",
            Some(&a2.member_ref()),
            Some(&[PartitionOffset {
                partition: theirs,
                offset: 1,
            }]),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, KafkoError::NotAssigned { partition, .. } if partition == theirs));
    let ghost = MemberRef {
        member_id: "ghost".into(),
        generation: b.generation,
    };
    let err = k
        .commit_group_offsets("g", "t", Some(&ghost), None)
        .await
        .unwrap_err();
    assert!(matches!(err, KafkoError::UnknownMember { .. }));
    let err = k
        .group_poll("g", "t", &GroupPollOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        KafkoError::GroupHasMembers { members: 2, .. }
    ));
    let err = k.delete_group("g").await.unwrap_err();
    assert!(matches!(err, KafkoError::GroupHasMembers { .. }));
    k.shutdown().await.unwrap();
}
