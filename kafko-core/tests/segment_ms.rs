//! `segment_ms` rolls the active segment before an append whose newest timestamp is that
//! far past the segment's first batch (record time, as Kafka's `segment.ms`), also after
//! a restart, which reads the first batch back.
mod common;

use kafko_core::TopicConfig;

const T: i64 = 1_700_000_000_000;

async fn send_at(p: &kafko_core::Producer, i: u64, timestamp: i64) {
    p.send_record(common::rec(i).with_timestamp(timestamp))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_rolls_once_a_record_is_segment_ms_newer_than_its_first_batch() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    let cfg = TopicConfig {
        segment_ms: 60_000,
        retention_ms: None,
        ..TopicConfig::default()
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let p = k.producer_for("t").unwrap();
    send_at(&p, 0, T).await;
    send_at(&p, 1, T + 59_999).await;
    // Older than the first batch: no roll either.
    send_at(&p, 2, T - 10_000).await;
    assert_eq!(common::segments(dir.path(), "t", 0).len(), 1);
    send_at(&p, 3, T + 60_000).await;
    let files = common::segments(dir.path(), "t", 0);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files[1].ends_with("00000000000000000003.log"), "{files:?}");
    // The new segment counts from its own first batch (T + 60 s).
    send_at(&p, 4, T + 119_999).await;
    assert_eq!(common::segments(dir.path(), "t", 0).len(), 2);
    k.shutdown().await.unwrap();

    // After a restart, the active segment's first batch is read back.
    let k = common::open(dir.path()).await;
    let p = k.producer_for("t").unwrap();
    send_at(&p, 5, T + 110_000).await;
    assert_eq!(common::segments(dir.path(), "t", 0).len(), 2);
    send_at(&p, 6, T + 120_000).await;
    let files = common::segments(dir.path(), "t", 0);
    assert_eq!(files.len(), 3, "{files:?}");
    assert!(files[2].ends_with("00000000000000000006.log"), "{files:?}");
    let offsets: Vec<u64> = common::read_all(&k, "t", 0)
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, (0..7).collect::<Vec<_>>());
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_keeps_a_week_of_records_in_one_segment() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    let cfg = TopicConfig {
        retention_ms: None,
        ..TopicConfig::default()
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let p = k.producer_for("t").unwrap();
    send_at(&p, 0, T).await;
    send_at(&p, 1, T + 7 * 24 * 3600 * 1000 - 1).await;
    assert_eq!(common::segments(dir.path(), "t", 0).len(), 1);
    send_at(&p, 2, T + 7 * 24 * 3600 * 1000).await;
    assert_eq!(common::segments(dir.path(), "t", 0).len(), 2);
    k.shutdown().await.unwrap();
}
