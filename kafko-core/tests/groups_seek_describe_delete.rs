//! Seeking a group (earliest, latest, offset, timestamp; one partition or all) commits
//! the new position; describe reports committed offsets, high watermarks and lag;
//! deleting a group removes its offsets for good, and deleting a topic drops them.
mod gc_support;

use std::time::Duration;

use gc_support::{GroupOps, open, small};
use kafko_core::{
    Bytes, GroupError, GroupPollOptions, KafkoError, PartitionOffset, ProducerRecord, SeekTo,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seek_describe_list_and_delete() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(2)).await.unwrap();
    let p = k.producer_for("t").unwrap();
    for part in 0..2u32 {
        for i in 0..10i64 {
            p.send_record(
                ProducerRecord::new(Bytes::from("v"))
                    .with_partition(part)
                    .with_timestamp(1_000 + i * 10),
            )
            .await
            .unwrap();
        }
    }
    let at = |part: u32, offset: u64| PartitionOffset {
        partition: part,
        offset,
    };
    let seek = |partition, to| {
        let k = k.clone();
        async move { k.seek_group("g", "t", None, partition, to).await.unwrap() }
    };
    assert_eq!(seek(None, SeekTo::Latest).await, vec![at(0, 10), at(1, 10)]);
    assert_eq!(seek(Some(1), SeekTo::Offset(4)).await, vec![at(1, 4)]);
    assert_eq!(
        seek(Some(0), SeekTo::Timestamp(1_055)).await,
        vec![at(0, 6)]
    );
    let err = k
        .seek_group("g", "t", None, Some(0), SeekTo::Offset(11))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        KafkoError::OffsetOutOfRange { requested: 11, .. }
    ));

    let d = k.group("g").and_then(|g| g.describe()).unwrap();
    let parts = &d.topics[0].partitions;
    assert_eq!(
        (parts[0].committed, parts[0].high_watermark, parts[0].lag),
        (Some(6), 10, Some(4))
    );
    assert_eq!((parts[1].committed, parts[1].lag), (Some(4), Some(6)));
    assert_eq!(d.topics[0].total_lag, 10);

    // Polling without commit moves the position, not the committed offset.
    let got = k
        .group_poll("g", "t", &GroupPollOptions::default())
        .await
        .unwrap();
    assert_eq!(got.records.len(), 10);
    let d = k.group("g").and_then(|g| g.describe()).unwrap();
    assert_eq!(d.topics[0].partitions[0].committed, Some(6));
    assert_eq!(d.topics[0].partitions[0].position, Some(10));
    // Committing "current positions" takes them.
    let committed = k.commit_group_offsets("g", "t", None, None).await.unwrap();
    assert_eq!(committed, vec![at(0, 10), at(1, 10)]);
    assert_eq!(
        k.group("g").and_then(|g| g.describe()).unwrap().topics[0].total_lag,
        0
    );
    assert_eq!(seek(None, SeekTo::Earliest).await, vec![at(0, 0), at(1, 0)]);

    // A member seeks only what it owns.
    let m = k
        .join_group("g", "t", None, Duration::from_secs(30))
        .await
        .unwrap();
    let moved = k
        .seek_group("g", "t", Some(&m.member_ref()), None, SeekTo::Offset(2))
        .await
        .unwrap();
    assert_eq!(moved, vec![at(0, 2), at(1, 2)]);
    k.leave_group("g", "t", &m.member_id).await.unwrap();

    // Listing and deleting.
    k.seek_group("other", "t", None, None, SeekTo::Latest)
        .await
        .unwrap();
    let names: Vec<String> = k.list_groups().into_iter().map(|g| g.group).collect();
    assert_eq!(names, vec!["g".to_string(), "other".to_string()]);
    k.delete_group("g").await.unwrap();
    assert!(matches!(
        k.group("g").and_then(|g| g.describe()),
        Err(GroupError::GroupNotFound { .. })
    ));
    assert!(matches!(
        k.delete_group("g").await,
        Err(KafkoError::GroupNotFound { .. })
    ));
    assert!(!dir.path().join("groups/g").exists());
    assert!(dir.path().join("groups/other/t.offsets").exists());
    k.delete_topic("t").await.unwrap();
    assert!(!dir.path().join("groups/other/t.offsets").exists());
    k.shutdown().await.unwrap();
    drop(k);
    let k = open(dir.path()).await;
    let names: Vec<String> = k.list_groups().into_iter().map(|g| g.group).collect();
    assert_eq!(names, vec!["other".to_string()]);
    assert!(
        k.group("other")
            .and_then(|g| g.describe())
            .unwrap()
            .topics
            .is_empty()
    );
    k.shutdown().await.unwrap();
}
