//! A topic's partition count raised on a live log: handles, producers and consumers
//! resolved before the raise see the new partitions, keyed records route over the new
//! count, and the count survives a restart. Lowering, or keeping, the count is refused.
mod common;

use kafko_core::{AdminError, ProducerRecord, SeekTo, TopicConfig, routing::partition_for_key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partitions_added_are_served_to_handles_resolved_before() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic_with_config(
        "t",
        TopicConfig {
            partitions: 2,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let handle = k.topic("t").unwrap();
    let producer = handle.producer();
    let mut consumer = handle.consumer();
    producer.send(None, common::value(0)).await.unwrap();

    for refused in [1, 2] {
        assert!(matches!(
            k.create_partitions("t", refused, false).await,
            Err(AdminError::InvalidConfig { .. })
        ));
    }
    assert!(matches!(
        k.create_partitions("nope", 3, false).await,
        Err(AdminError::TopicNotFound { .. })
    ));
    let checked = k.create_partitions("t", 3, true).await.unwrap();
    assert_eq!((checked.partitions, handle.partitions()), (3, 2));
    let raised = k.create_partitions("t", 3, false).await.unwrap();
    assert_eq!(raised.partitions, 3);
    assert_eq!(handle.partitions(), 3);
    assert_eq!(k.describe_topic("t").unwrap().partitions.len(), 3);

    // The producer resolved before writes to the new partition; keys route over 3.
    let placed = producer
        .send_record(ProducerRecord {
            partition: Some(2),
            value: Some(common::value(1)),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!((placed.partition, placed.offset), (2, 0));
    for i in 0..30u64 {
        let key = format!("key-{i}");
        let placed = producer
            .send(Some(key.clone().into()), common::value(i))
            .await
            .unwrap();
        assert_eq!(placed.partition, partition_for_key(key.as_bytes(), 3));
    }

    // The consumer made before reads the new partition from its start.
    let mut read = Vec::new();
    while read.len() < 32 {
        let got = consumer.poll_now(100).unwrap();
        assert!(!got.is_empty(), "read {} of 32", read.len());
        read.extend(got);
    }
    assert!(read.iter().any(|r| r.partition == 2 && r.offset == 0));
    consumer.seek_partition(2, SeekTo::Earliest).unwrap();
    assert_eq!(consumer.position(2), Some(0));

    k.shutdown().await.unwrap();
    let k = common::open(dir.path()).await;
    assert_eq!(k.topic("t").unwrap().partitions(), 3);
    assert_eq!(
        common::offsets(&k, "t", 2).high_watermark,
        1 + (0..30)
            .filter(|i| partition_for_key(format!("key-{i}").as_bytes(), 3) == 2)
            .count() as u64
    );
    k.shutdown().await.unwrap();
}
