//! Reads by timestamp find the first record at or after T; consumers seek to earliest,
//! latest, an offset or a timestamp, and replay.
mod common;

use kafko_core::{SeekTo, TopicConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offset_for_timestamp_finds_the_first_record_at_or_after() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_small_topic(dir.path()).await;
    // Timestamps 0, 10, 20, … with one out-of-order record at offset 50.
    for i in 0..300i64 {
        let ts = if i == 50 { 5 } else { i * 10 };
        p.send_record(common::rec(i as u64).with_timestamp(ts))
            .await
            .unwrap();
    }
    let partition = k.topic("t").unwrap().partition(0).unwrap();
    for (timestamp, first) in [
        (0, Some(0)),
        (1, Some(1)),
        (995, Some(100)),
        (1000, Some(100)),
        (2990, Some(299)),
        (2991, None),
    ] {
        assert_eq!(
            partition.offset_for_timestamp(timestamp).unwrap(),
            first,
            "at or after {timestamp}"
        );
    }
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_seeks_and_replays_across_partitions() {
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
    let p = k.producer_for("t").unwrap();
    for i in 0..20u64 {
        p.send_record(
            common::rec(i)
                .with_partition((i % 2) as u32)
                .with_timestamp(i as i64 * 100),
        )
        .await
        .unwrap();
    }
    let mut c = k.topic("t").map(|t| t.consumer()).unwrap();
    let mut got = Vec::new();
    for _ in 0..20 {
        got.push(c.next_record().await.unwrap());
    }
    got.sort_by_key(|r| r.timestamp);
    assert_eq!(
        got.iter().map(|r| r.timestamp / 100).collect::<Vec<_>>(),
        (0..20).collect::<Vec<_>>()
    );
    // Replay partition 1 from offset 5.
    c.seek_partition(1, SeekTo::Offset(5)).unwrap();
    c.seek_partition(0, SeekTo::Latest).unwrap();
    let r = c.next_record().await.unwrap();
    assert_eq!((r.partition, r.offset), (1, 5));
    // By timestamp: ts 1500 is record 15 → partition 1, offset 7.
    c.seek_all(SeekTo::Timestamp(1500)).unwrap();
    assert_eq!(c.position(1), Some(7));
    assert_eq!(c.position(0), Some(8));
    c.seek_all(SeekTo::Earliest).unwrap();
    assert_eq!(c.position(0), Some(0));
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_readers_wake_on_produce() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic("t").await.unwrap();
    let reader = k.topic("t").unwrap().partition(0).unwrap();
    let waiter = {
        let reader = reader.clone();
        tokio::spawn(async move {
            let got = reader
                .read_wait(0, 10, 1 << 20, std::time::Duration::from_secs(30))
                .await
                .unwrap();
            !got.records.is_empty()
        })
    };
    let mut c = k.topic("t").map(|t| t.consumer()).unwrap();
    let next = tokio::spawn(async move { c.next_record().await.unwrap() });
    // Produced once both wait: only a wake-up answers them before their deadlines.
    let topic = k.topic("t").unwrap();
    let started = std::time::Instant::now();
    while topic.waiting_readers() < 2 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the readers never waited"
        );
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    assert!(!waiter.is_finished() && !next.is_finished());
    k.producer_for("t")
        .unwrap()
        .send(None, "wake".into())
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap()
    );
    let r = tokio::time::timeout(std::time::Duration::from_secs(5), next)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.value.unwrap(), "wake");
    assert_eq!(topic.waiting_readers(), 0);
    // A wait that nobody satisfies times out empty.
    let got = reader
        .read_wait(1, 10, 1 << 20, std::time::Duration::from_millis(30))
        .await
        .unwrap();
    assert!(got.records.is_empty());
    k.shutdown().await.unwrap();
}
