//! Retention deletes whole segments by age and by size, advances the log start offset
//! durably, and readers below the start get `OffsetOutOfRange`. The active segment goes
//! too once every segment is past the limits (it is rolled first), as in Kafka.
mod common;

use kafko_core::{KafkoError, TopicConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_by_size_keeps_at_least_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    let cfg = TopicConfig {
        retention_bytes: Some(3 * 4096),
        retention_ms: None,
        ..common::small_segments(1)
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let p = k.producer_for("t").unwrap();
    for i in 0..1000 {
        p.send(None, common::value(i)).await.unwrap();
    }
    let before = k.describe_topic("t").unwrap().partitions[0].clone();
    let out = k.enforce_retention().await.unwrap();
    let after = k.describe_topic("t").unwrap().partitions[0].clone();
    assert!(out.segments_deleted > 0);
    assert!(
        after.size_bytes >= 3 * 4096,
        "Kafka keeps at least retention_bytes"
    );
    assert!(after.size_bytes < before.size_bytes);
    assert!(after.log_start_offset > 0);
    assert_eq!(after.high_watermark, 1000);
    let err = common::try_read(&k, ("t", 0), 0, 1, 100).unwrap_err();
    assert!(
        matches!(err, KafkoError::OffsetOutOfRange { log_start_offset, .. } if log_start_offset == after.log_start_offset)
    );
    let recs = common::read_all(&k, "t", 0);
    assert_eq!(recs.first().unwrap().offset, after.log_start_offset);
    assert_eq!(recs.len() as u64, 1000 - after.log_start_offset);
    k.shutdown().await.unwrap();
    // The log start survives a restart, also an unclean one.
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
    let k = common::open(dir.path()).await;
    let offsets = common::offsets(&k, "t", 0);
    assert_eq!(
        (offsets.log_start, offsets.high_watermark),
        (after.log_start_offset, 1000)
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_by_age_uses_the_newest_timestamp_of_each_segment() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    let cfg = TopicConfig {
        retention_ms: Some(60_000),
        ..common::small_segments(1)
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let p = k.producer_for("t").unwrap();
    let old = kafko_core_now() - 3_600_000;
    for i in 0..300 {
        p.send_record(common::rec(i).with_timestamp(old + i as i64))
            .await
            .unwrap();
    }
    for i in 300..600 {
        p.send(None, common::value(i)).await.unwrap();
    }
    k.enforce_retention().await.unwrap();
    let kafko_core::Offsets {
        log_start: start,
        high_watermark: hw,
        ..
    } = common::offsets(&k, "t", 0);
    assert_eq!(hw, 600);
    assert!(
        start > 200 && start <= 300,
        "old segments gone, new kept: start {start}"
    );
    // Nothing is expired any more: a second pass deletes nothing.
    assert_eq!(k.enforce_retention().await.unwrap().segments_deleted, 0);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_retention_does_not_resurrect_segments() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic_with_config(
        "t",
        TopicConfig {
            retention_bytes: Some(4096),
            retention_ms: None,
            ..common::small_segments(1)
        },
    )
    .await
    .unwrap();
    let p = k.producer_for("t").unwrap();
    for i in 0..400 {
        p.send(None, common::value(i)).await.unwrap();
    }
    let first = common::segments(dir.path(), "t", 0).remove(0);
    let saved = std::fs::read(&first).unwrap();
    k.enforce_retention().await.unwrap();
    let kafko_core::Offsets {
        log_start: start, ..
    } = common::offsets(&k, "t", 0);
    k.shutdown().await.unwrap();
    // Crash between the checkpoint and the unlink: the old segment is still there.
    std::fs::write(&first, saved).unwrap();
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
    let k = common::open(dir.path()).await;
    assert_eq!(common::offsets(&k, "t", 0).log_start, start);
    assert!(
        !first.exists(),
        "segment below the log start is removed on open"
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_topic_past_its_retention_is_emptied_and_goes_on_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    // Large segments: the ten records stay in the active one.
    let cfg = TopicConfig {
        retention_ms: Some(60_000),
        ..TopicConfig::default()
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let p = k.producer_for("t").unwrap();
    let old = kafko_core_now() - 3_600_000;
    for i in 0..10 {
        p.send_record(common::rec(i).with_timestamp(old + i as i64))
            .await
            .unwrap();
    }
    assert_eq!(common::segments(dir.path(), "t", 0).len(), 1);
    let out = k.enforce_retention().await.unwrap();
    assert_eq!(out.segments_deleted, 1);
    let offsets = common::offsets(&k, "t", 0);
    assert_eq!((offsets.log_start, offsets.high_watermark), (10, 10));
    assert!(common::read_all(&k, "t", 0).is_empty());
    let err = common::try_read(&k, ("t", 0), 0, 1, 100).unwrap_err();
    assert!(matches!(
        err,
        KafkoError::OffsetOutOfRange {
            log_start_offset: 10,
            ..
        }
    ));
    // One file left: the new, empty active segment at offset 10.
    let files = common::segments(dir.path(), "t", 0);
    assert_eq!(files.len(), 1);
    assert!(files[0].ends_with("00000000000000000010.log"), "{files:?}");
    // Nothing more to delete; a recent record is kept and gets the next offset.
    assert_eq!(k.enforce_retention().await.unwrap().segments_deleted, 0);
    p.send(None, common::value(10)).await.unwrap();
    assert_eq!(k.enforce_retention().await.unwrap().segments_deleted, 0);
    let recs = common::read_all(&k, "t", 0);
    assert_eq!(recs.iter().map(|r| r.offset).collect::<Vec<_>>(), [10]);
    k.shutdown().await.unwrap();
    // The same after a restart, also an unclean one.
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
    let k = common::open(dir.path()).await;
    let offsets = common::offsets(&k, "t", 0);
    assert_eq!((offsets.log_start, offsets.high_watermark), (10, 11));
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_topic_keeps_its_active_segment() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    let cfg = TopicConfig {
        retention_ms: Some(60_000),
        cleanup_policy: kafko_core::CleanupPolicy::Compact,
        ..TopicConfig::default()
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let p = k.producer_for("t").unwrap();
    let old = kafko_core_now() - 3_600_000;
    p.send_record(common::rec(0).with_key("k").with_timestamp(old))
        .await
        .unwrap();
    assert_eq!(k.enforce_retention().await.unwrap().segments_deleted, 0);
    assert_eq!(common::read_all(&k, "t", 0).len(), 1);
    k.shutdown().await.unwrap();
}

fn kafko_core_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
