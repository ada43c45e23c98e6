//! A data directory written by an earlier build (`tests/fixtures/data-v1`, made by
//! `make-data-v1.sh`: state-file bodies without a `version` member) still opens, with
//! every topic config, record and committed group offset as written, and keeps working.
mod common;

use std::path::Path;

use kafko_core::{CleanupPolicy, Compression, FsyncPolicy, Kafko, OffsetReset, TopicConfig};

const DAY_MS: u64 = 24 * 3600 * 1000;
/// The timestamp the fixture's records count from (2026-01-01T00:00:00Z).
const T0: i64 = 1_767_225_600_000;

async fn open_fixture(dir: &Path) -> Kafko {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/data-v1");
    common::on_disk::copy_dir(&fixture, dir);
    common::open(dir).await
}

fn expected_configs() -> [(&'static str, TopicConfig); 3] {
    [
        ("events", TopicConfig::default()),
        (
            "orders",
            TopicConfig {
                partitions: 3,
                compression: Compression::Lz4,
                retention_ms: None,
                segment_bytes: 4096,
                fsync: FsyncPolicy::IntervalMs { interval_ms: 100 },
                ..TopicConfig::default()
            },
        ),
        (
            "prices",
            TopicConfig {
                partitions: 1,
                compression: Compression::Zstd,
                retention_ms: Some(7 * DAY_MS),
                retention_bytes: Some(1 << 20),
                segment_bytes: 64 << 20,
                segment_ms: kafko_core::DEFAULT_SEGMENT_MS,
                fsync: FsyncPolicy::Always,
                max_record_bytes: 65536,
                cleanup_policy: CleanupPolicy::Compact,
                min_compaction_lag_ms: 1000,
                delete_retention_ms: 60_000,
                client: Default::default(),
            },
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_data_directory_opens_with_its_configs_records_and_group_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let k = open_fixture(dir.path()).await;
    assert!(k.recovered_clean());
    assert_eq!(k.list_topics(), ["events", "orders", "prices"]);
    for (name, config) in expected_configs() {
        assert_eq!(k.describe_topic(name).unwrap().config, config, "{name}");
    }

    // orders: 8 batches of 30 records, keyed customer-0..4, over several segments.
    let mut orders = Vec::new();
    for partition in 0..3 {
        let records = common::read_all(&k, "orders", partition);
        for (i, r) in records.iter().enumerate() {
            assert_eq!(r.offset, i as u64);
        }
        orders.extend(records);
    }
    assert_eq!(orders.len(), 240);
    assert!(k.describe_topic("orders").unwrap().partitions[1].segments > 1);
    orders.sort_by_key(|r| r.timestamp);
    for (n, r) in orders.iter().enumerate() {
        assert_eq!(r.timestamp, T0 + n as i64);
        let value = std::str::from_utf8(r.value().unwrap()).unwrap();
        assert!(value.starts_with(&format!("order-{n} ")), "{value}");
        assert_eq!(
            r.key().unwrap().as_ref(),
            format!("customer-{}", n % 30 % 5).as_bytes()
        );
        assert_eq!(r.headers.len(), 1);
        assert_eq!(r.headers[0].value.as_ref(), (n / 30).to_string().as_bytes());
    }

    // prices: a compacted topic with a tombstone; events: binary values, default config.
    let prices = common::read_all(&k, "prices", 0);
    let shown: Vec<_> = prices
        .iter()
        .map(|r| (r.key().unwrap().clone(), r.value().cloned()))
        .collect();
    assert_eq!(
        shown,
        [
            ("apple".into(), Some("1.10".into())),
            ("pear".into(), Some("2.20".into())),
            ("apple".into(), Some("1.15".into())),
            ("pear".into(), None),
        ]
    );
    let events = common::read_all(&k, "events", 0);
    assert_eq!(events[0].value().unwrap().as_ref(), [0, 1, 2, 3]);
    assert_eq!(events[0].key(), None);
    assert_eq!(events[1].key().unwrap().as_ref(), [0x6b]);
    assert_eq!(events[1].value().unwrap().as_ref(), [0xff]);

    // Groups: billing (offset_reset latest) and audit, with their committed offsets.
    let billing = k.group("billing").and_then(|g| g.describe()).unwrap();
    assert_eq!(billing.config.offset_reset, OffsetReset::Latest);
    let committed: Vec<_> = billing.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition, p.committed))
        .collect();
    assert_eq!(committed, [(0, Some(7)), (1, Some(0)), (2, Some(12))]);
    let audit = k.group("audit").and_then(|g| g.describe()).unwrap();
    assert_eq!(audit.config.offset_reset, OffsetReset::Earliest);
    let by_topic: Vec<_> = audit
        .topics
        .iter()
        .map(|t| {
            let committed: Vec<_> = t
                .partitions
                .iter()
                .filter_map(|p| p.committed.map(|c| (p.partition, c)))
                .collect();
            (t.topic.clone(), committed)
        })
        .collect();
    assert_eq!(
        by_topic,
        [
            ("events".to_string(), vec![(0, 2)]),
            ("orders".to_string(), vec![(1, 3)]),
        ]
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v1_data_directory_keeps_working_and_reopens_in_the_current_format() {
    let dir = tempfile::tempdir().unwrap();
    let k = open_fixture(dir.path()).await;
    let meta = k
        .producer_for("orders")
        .unwrap()
        .send(Some("customer-0".into()), "order-240".into())
        .await
        .unwrap();
    let update = kafko_core::TopicConfigUpdate {
        retention_ms: Some(Some(DAY_MS)),
        ..Default::default()
    };
    k.update_topic_config("prices", &update).await.unwrap();
    k.shutdown().await.unwrap();

    let k = common::open(dir.path()).await;
    let records = common::read_all(&k, "orders", meta.partition);
    assert_eq!(
        records.last().unwrap().value().unwrap().as_ref(),
        b"order-240"
    );
    assert_eq!(
        k.describe_topic("prices").unwrap().config.retention_ms,
        Some(DAY_MS)
    );
    let billing = k.group("billing").and_then(|g| g.describe()).unwrap();
    assert_eq!(billing.config.offset_reset, OffsetReset::Latest);
    k.shutdown().await.unwrap();
}

/// Format 1 segments stay as they are, beside the format 2 segments written after them:
/// the first write rolls a format 1 active segment, every record reads the same after a
/// clean and an unclean reopen, and compaction rewrites format 1 segments as format 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn format_1_segments_are_read_beside_format_2_ones_and_compacted_into_them() {
    let dir = tempfile::tempdir().unwrap();
    let k = open_fixture(dir.path()).await;
    let before: Vec<_> = (0..3).map(|p| common::read_all(&k, "orders", p)).collect();
    let old_segments = common::segments(dir.path(), "orders", 0);
    let meta = k
        .producer_for("orders")
        .unwrap()
        .send_record(
            kafko_core::ProducerRecord::new("order-240")
                .with_key("customer-0")
                .with_partition(0),
        )
        .await
        .unwrap();
    let segments = common::segments(dir.path(), "orders", 0);
    assert_eq!(segments.len(), old_segments.len() + 1, "{segments:?}");
    assert_eq!(common::base_of(segments.last().unwrap()), meta.offset);
    let newest = std::fs::read(segments.last().unwrap()).unwrap();
    assert_eq!(newest[16], 2, "the new segment holds Kafka record batches");
    assert_eq!(&newest[0..8], &meta.offset.to_be_bytes());
    for old in &old_segments {
        assert_eq!(
            std::fs::read(old).unwrap()[8],
            1,
            "format 1 stays as it was"
        );
    }
    k.shutdown().await.unwrap();

    for clean in [true, false] {
        if !clean {
            std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
        }
        let k = common::open(dir.path()).await;
        for (p, old) in before.iter().enumerate() {
            let after = common::read_all(&k, "orders", p as u32);
            assert_eq!(
                after.len(),
                old.len() + usize::from(p == 0),
                "clean: {clean}"
            );
            assert!(
                after[..old.len()] == old[..],
                "partition {p}, clean: {clean}"
            );
        }
        let last = common::read_all(&k, "orders", 0).pop().unwrap();
        assert_eq!(last.value().unwrap().as_ref(), b"order-240");
        k.shutdown().await.unwrap();
    }

    // prices is compacted: a new value for apple (which rolls the format 1 segment),
    // then a pass over the sealed segment. The active segment is never cleaned, as in
    // Kafka: apple's 1.15 is the latest of the sealed part; pear's tombstone is older
    // than delete.retention.ms, so it goes with the value it deleted.
    let k = common::open(dir.path()).await;
    let producer = k.producer_for("prices").unwrap();
    producer
        .send(Some("apple".into()), "1.20".into())
        .await
        .unwrap();
    k.compact_now("prices").await.unwrap();
    let shown: Vec<_> = common::read_all(&k, "prices", 0)
        .iter()
        .map(|r| (r.key().unwrap().clone(), r.value().cloned()))
        .collect();
    assert_eq!(
        shown,
        [
            ("apple".into(), Some("1.15".into())),
            ("apple".into(), Some("1.20".into())),
        ]
    );
    for log in common::segments(dir.path(), "prices", 0) {
        assert_eq!(std::fs::read(&log).unwrap()[16], 2, "{log:?} is format 2");
    }
    k.shutdown().await.unwrap();
    let k = common::open(dir.path()).await;
    assert_eq!(common::read_all(&k, "prices", 0).len(), 2);
    k.shutdown().await.unwrap();
}
