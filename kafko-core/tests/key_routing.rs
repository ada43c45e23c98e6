//! Keyed records stick to one partition (Kafka's murmur2 formula), keyless records spread,
//! an explicit partition wins, and a batch is atomic per partition.
mod common;

use kafko_core::{ProduceError, ProducerRecord, TopicConfig, routing::partition_for_key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_key_same_partition_and_explicit_partition_wins() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic_with_config(
        "t",
        TopicConfig {
            partitions: 4,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let p = k.producer_for("t").unwrap();
    for i in 0..40 {
        let key = format!("user-{}", i % 5);
        let m = p
            .send(Some(key.clone().into()), common::value(i))
            .await
            .unwrap();
        assert_eq!(m.partition, partition_for_key(key.as_bytes(), 4));
    }
    let m = p
        .send_record(
            ProducerRecord::new("x")
                .with_key("user-1")
                .with_partition(3),
        )
        .await
        .unwrap();
    assert_eq!(m.partition, 3);
    let mut seen = std::collections::HashSet::new();
    for i in 0..16 {
        seen.insert(p.send(None, common::value(i)).await.unwrap().partition);
    }
    assert_eq!(
        seen.len(),
        4,
        "keyless records should spread over all partitions"
    );
    let bad = p
        .send_record(ProducerRecord::new("x").with_partition(9))
        .await;
    assert!(matches!(
        bad,
        Err(ProduceError::PartitionNotFound {
            partition: 9,
            partitions: 4,
            ..
        })
    ));
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_batch_lands_contiguously_in_one_partition() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic_with_config(
        "t",
        TopicConfig {
            partitions: 3,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let p = k.producer_for("t").unwrap();
    let meta = p
        .send_batch((0..10).map(common::rec).collect())
        .await
        .unwrap();
    assert!(meta.iter().all(|m| m.partition == meta[0].partition));
    assert!(meta.windows(2).all(|w| w[1].offset == w[0].offset + 1));
    k.shutdown().await.unwrap();
}
