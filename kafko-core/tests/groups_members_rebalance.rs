//! Two members split the partitions (range assignor); a member that stops polling past
//! its session timeout is evicted and its partitions move to the survivor, which picks
//! them up from the group's committed offsets. Time is paused and advanced by hand.
mod gc_support;

use std::time::Duration;

use gc_support::{GroupOps, open, small};
use kafko_core::{Bytes, GroupPollOptions, KafkoError, PartitionOffset};

#[tokio::test(flavor = "current_thread")]
async fn timed_out_members_partitions_move_to_the_survivor() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(4)).await.unwrap();
    let p = k.producer_for("t").unwrap();
    for part in 0..4u32 {
        for i in 0..10u32 {
            p.send_record(
                kafko_core::ProducerRecord::new(Bytes::from(format!("{part}-{i}")))
                    .with_partition(part),
            )
            .await
            .unwrap();
        }
    }
    // Durable commits happen before time is paused: a paused clock jumps ahead whenever
    // the runtime idles on blocking file I/O.
    k.commit_group_offsets(
        "g",
        "t",
        None,
        Some(&[
            PartitionOffset {
                partition: 2,
                offset: 4,
            },
            PartitionOffset {
                partition: 3,
                offset: 7,
            },
        ]),
    )
    .await
    .unwrap();
    tokio::time::pause();
    let timeout = Duration::from_secs(10);
    let a = k.join_group("g", "t", Some("a"), timeout).await.unwrap();
    assert_eq!((a.generation, a.assignment.clone()), (1, vec![0, 1, 2, 3]));
    let b = k.join_group("g", "t", Some("b"), timeout).await.unwrap();
    assert_eq!((b.generation, b.assignment.clone()), (2, vec![2, 3]));
    let a = k.join_group("g", "t", Some("a"), timeout).await.unwrap();
    assert_eq!((a.generation, a.assignment.clone()), (2, vec![0, 1]));

    let opts = GroupPollOptions {
        max_records: 100,
        auto_commit: false,
        ..Default::default()
    };
    let got_a = k
        .poll_group_member("g", "t", &a.member_ref(), &opts)
        .await
        .unwrap();
    assert!(got_a.records.iter().all(|r| r.partition < 2));
    assert_eq!(got_a.records.len(), 20);
    let got_b = k
        .poll_group_member("g", "t", &b.member_ref(), &opts)
        .await
        .unwrap();
    assert!(got_b.records.iter().all(|r| r.partition >= 2));
    // b starts at the committed offsets: 10 − 4 + 10 − 7.
    assert_eq!(got_b.records.len(), 9);

    // a keeps polling; b goes silent.
    for _ in 0..3 {
        tokio::time::advance(Duration::from_secs(4)).await;
        match k.poll_group_member("g", "t", &a.member_ref(), &opts).await {
            Ok(got) => assert!(got.records.is_empty()),
            // The poll that noticed b's expiry moved the group to a new generation.
            Err(KafkoError::StaleGeneration { current, given, .. }) => {
                assert_eq!((current, given), (3, 2));
                break;
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }
    let d = k.group("g").and_then(|g| g.describe()).unwrap();
    assert_eq!(d.topics[0].members.len(), 1, "b was not evicted");
    let a = k.join_group("g", "t", Some("a"), timeout).await.unwrap();
    assert_eq!((a.generation, a.assignment.clone()), (3, vec![0, 1, 2, 3]));
    // b's partitions restart from the committed offsets (b never committed).
    let got = k
        .poll_group_member("g", "t", &a.member_ref(), &opts)
        .await
        .unwrap();
    let mut partitions: Vec<u32> = got.records.iter().map(|r| r.partition).collect();
    partitions.dedup();
    assert_eq!(partitions.iter().filter(|&&p| p >= 2).count(), 2);
    assert_eq!(
        got.records.len(),
        20 + 9,
        "a re-reads uncommitted records of all partitions"
    );
    let err = k
        .poll_group_member("g", "t", &b.member_ref(), &opts)
        .await
        .unwrap_err();
    assert!(matches!(err, KafkoError::UnknownMember { ref member, .. } if member == "b"));

    // Leaving explicitly also rebalances; then the group has no members left.
    k.leave_group("g", "t", "a").await.unwrap();
    assert!(
        k.group("g").and_then(|g| g.describe()).unwrap().topics[0]
            .members
            .is_empty()
    );
    assert_eq!(
        k.group("g").and_then(|g| g.describe()).unwrap().topics[0].generation,
        4
    );
    tokio::time::resume();
    k.shutdown().await.unwrap();
}
