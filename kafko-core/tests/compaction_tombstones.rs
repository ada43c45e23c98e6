//! Tombstone lifecycle on a compacted topic: the tombstone removes older values at
//! once, is itself kept for `delete_retention_ms` (measured from its batch timestamp),
//! then removed; `min_compaction_lag_ms` holds fresh segments back; keyless records are
//! rejected; the background tick compacts without being asked.
mod gc_support;

use std::time::Duration;

use gc_support::{compacted, keyed, open, read_all, seal_marker, send};
use kafko_core::{Bytes, ErrorKind, Kafko, ProduceError, TopicConfigUpdate};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn keys(k: &Kafko) -> Vec<(u64, String, bool)> {
    read_all(k, "t", 0)
        .into_iter()
        .filter(|r| r.key().unwrap() != &Bytes::from("~seal"))
        .map(|r| {
            let key = String::from_utf8(r.key().unwrap().to_vec()).unwrap();
            (r.offset, key, r.value().is_some())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tombstones_outlive_their_values_for_delete_retention_then_go() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    let cfg = kafko_core::TopicConfig {
        delete_retention_ms: 3_600_000,
        ..compacted(1)
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let ten_min_ago = now() - 600_000;
    send(&k, "t", keyed("a", Some("a1")).with_timestamp(ten_min_ago)).await;
    send(&k, "t", keyed("b", Some("b1")).with_timestamp(ten_min_ago)).await;
    send(&k, "t", keyed("a", None).with_timestamp(ten_min_ago)).await;
    send(&k, "t", seal_marker()).await;

    let o = k.compact_now("t").await.unwrap();
    assert_eq!((o.records_removed, o.tombstones_removed), (1, 0));
    assert_eq!(
        keys(&k),
        vec![(1, "b".into(), true), (2, "a".into(), false)],
        "the old value goes, the tombstone stays"
    );
    // Still within delete_retention: a second pass keeps it.
    assert_eq!(k.compact_now("t").await.unwrap().records_removed, 0);

    // Tombstones older than delete_retention are removed by the next pass.
    let update = TopicConfigUpdate {
        delete_retention_ms: Some(60_000),
        ..Default::default()
    };
    k.update_topic_config("t", &update).await.unwrap();
    let o = k.compact_now("t").await.unwrap();
    assert_eq!((o.records_removed, o.tombstones_removed), (1, 1));
    assert_eq!(keys(&k), vec![(1, "b".into(), true)]);
    k.shutdown().await.unwrap();
    drop(k);
    let k = open(dir.path()).await;
    assert_eq!(keys(&k), vec![(1, "b".into(), true)]);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_lag_holds_fresh_segments_and_keyless_records_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    let cfg = kafko_core::TopicConfig {
        min_compaction_lag_ms: 3_600_000,
        ..compacted(1)
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    for v in ["1", "2", "3"] {
        send(&k, "t", keyed("a", Some(v))).await;
    }
    send(&k, "t", seal_marker()).await;
    let o = k.compact_now("t").await.unwrap();
    assert_eq!(
        o.records_removed, 0,
        "records younger than the lag must stay"
    );
    assert_eq!(keys(&k).len(), 3);
    let update = TopicConfigUpdate {
        min_compaction_lag_ms: Some(0),
        ..Default::default()
    };
    k.update_topic_config("t", &update).await.unwrap();
    assert_eq!(k.compact_now("t").await.unwrap().records_removed, 2);
    assert_eq!(keys(&k), vec![(2, "a".into(), true)]);

    let p = k.producer_for("t").unwrap();
    let err = p.send(None, Bytes::from("no key")).await.unwrap_err();
    assert!(matches!(err, ProduceError::KeyRequired { .. }));
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_tick_compacts_and_plain_topics_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let k = Kafko::builder(dir.path())
        .retention_check_interval(Duration::from_millis(50))
        .open()
        .await
        .unwrap();
    k.create_topic_with_config("t", compacted(1)).await.unwrap();
    for i in 0..50 {
        send(&k, "t", keyed("a", Some(&format!("{i:0>120}")))).await;
    }
    send(&k, "t", seal_marker()).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while keys(&k).len() > 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "background compaction never ran"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(keys(&k), vec![(49, "a".into(), true)]);
    k.create_topic("plain").await.unwrap();
    let err = k.compact_now("plain").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_background_cleaner_wakes_up_when_a_tombstone_expires() {
    let dir = tempfile::tempdir().unwrap();
    let k = Kafko::builder(dir.path())
        .retention_check_interval(Duration::from_millis(30))
        .open()
        .await
        .unwrap();
    let cfg = kafko_core::TopicConfig {
        delete_retention_ms: 1500,
        ..compacted(1)
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    send(&k, "t", keyed("a", Some("a1"))).await;
    send(&k, "t", keyed("a", None)).await;
    send(&k, "t", seal_marker()).await;
    let written = tokio::time::Instant::now();
    let deadline = written + Duration::from_secs(10);
    // First the value goes and the tombstone stays …
    while keys(&k).len() != 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "value never compacted"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(keys(&k), vec![(1, "a".into(), false)]);
    // … then, with no new segment to trigger it, the tombstone goes after its deadline.
    while !keys(&k).is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "tombstone never removed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(written.elapsed() >= Duration::from_millis(1400));
    k.shutdown().await.unwrap();
}
