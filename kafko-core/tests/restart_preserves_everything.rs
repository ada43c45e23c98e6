//! A restart keeps topic configs, offsets and data — after a clean shutdown, after a drop
//! without shutdown, and after an unclean stop (no marker) that forces a scan.
mod common;

use kafko_core::{AdminError, Compression, FsyncPolicy, Kafko, TopicConfig};

fn config() -> TopicConfig {
    TopicConfig {
        partitions: 2,
        compression: Compression::Lz4,
        fsync: FsyncPolicy::IntervalMs { interval_ms: 50 },
        segment_bytes: 8192,
        retention_ms: None,
        ..Default::default()
    }
}

async fn fill(k: &Kafko, n: u64) {
    let p = k.producer_for("t").unwrap();
    for i in 0..n {
        p.send(Some(format!("k{}", i % 7).into()), common::value(i))
            .await
            .unwrap();
    }
}

async fn check(k: &Kafko, n: u64) {
    assert_eq!(k.describe_topic("t").unwrap().config, config());
    let mut total = 0;
    for part in 0..2 {
        let recs = common::read_all(k, "t", part);
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.offset, i as u64);
        }
        total += recs.len() as u64;
    }
    assert_eq!(total, n);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_shutdown_restart_skips_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic_with_config("t", config()).await.unwrap();
    fill(&k, 300).await;
    k.shutdown().await.unwrap();
    let k = common::open(dir.path()).await;
    assert!(k.recovered_clean());
    check(&k, 300).await;
    // Appends continue at the next offset.
    fill(&k, 10).await;
    check(&k, 310).await;
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_without_shutdown_is_still_clean_on_a_multi_thread_runtime() {
    let dir = tempfile::tempdir().unwrap();
    {
        let k = common::open(dir.path()).await;
        k.create_topic_with_config("t", config()).await.unwrap();
        fill(&k, 100).await;
    }
    let k = common::open(dir.path()).await;
    assert!(k.recovered_clean());
    check(&k, 100).await;
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unclean_stop_recovers_by_scanning() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic_with_config("t", config()).await.unwrap();
    fill(&k, 200).await;
    k.shutdown().await.unwrap();
    // Simulate a crash: no marker, and stale (missing) indexes of the active segment.
    std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
    let k = common::open(dir.path()).await;
    assert!(!k.recovered_clean());
    check(&k, 200).await;
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_lifecycle_is_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    assert_eq!(
        k.create_topic("a").await.unwrap(),
        kafko_core::CreateOutcome::Created
    );
    assert_eq!(
        k.create_topic("a").await.unwrap(),
        kafko_core::CreateOutcome::AlreadyExisted
    );
    let differs = k
        .create_topic_with_config(
            "a",
            TopicConfig {
                partitions: 2,
                ..Default::default()
            },
        )
        .await;
    assert!(matches!(
        differs,
        Err(AdminError::TopicAlreadyExists { .. })
    ));
    k.create_topic("b").await.unwrap();
    let update = kafko_core::TopicConfigUpdate {
        retention_ms: Some(None),
        fsync: Some(FsyncPolicy::Always),
        ..Default::default()
    };
    k.update_topic_config("b", &update).await.unwrap();
    k.delete_topic("a").await.unwrap();
    assert!(matches!(
        k.producer_for("a"),
        Err(AdminError::TopicNotFound { .. })
    ));
    k.shutdown().await.unwrap();
    let k = common::open(dir.path()).await;
    assert_eq!(k.list_topics(), vec!["b".to_string()]);
    let b = k.describe_topic("b").unwrap().config;
    assert_eq!(b.retention_ms, None);
    assert_eq!(b.fsync, FsyncPolicy::Always);
    assert!(!dir.path().join("topics").join("a").exists());
    k.shutdown().await.unwrap();
}
