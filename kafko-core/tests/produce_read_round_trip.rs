//! Records come back exactly as sent: dense offsets, keys, values, tombstones, headers,
//! timestamps, for every codec.
mod common;

use kafko_core::{Bytes, Compression, Header, ProducerRecord, TopicConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_field_round_trips_for_every_codec() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
        let topic = format!("t-{codec:?}");
        k.create_topic_with_config(
            &topic,
            TopicConfig {
                compression: codec,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let p = k.producer_for(&topic).unwrap();
        let all_bytes: Vec<u8> = (0..=255u8).collect();
        let sent = vec![
            ProducerRecord::new(Bytes::from(all_bytes.clone()))
                .with_key(all_bytes.clone())
                .with_header("bin", all_bytes.clone()),
            ProducerRecord::tombstone("gone").with_timestamp(1234),
            ProducerRecord {
                key: None,
                value: Some(Bytes::new()),
                ..Default::default()
            }
            .with_header("a", "1")
            .with_header("a", "2"),
        ];
        let meta = p.send_batch(sent.clone()).await.unwrap();
        assert_eq!(
            meta.iter().map(|m| m.offset).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
        let got = common::read(&k, (&topic, 0), 0, 10, 1 << 20);
        assert_eq!(got.records.len(), 3);
        assert_eq!(got.next_offset, 3);
        assert_eq!(got.high_watermark, 3);
        for (r, s) in got.records.iter().zip(&sent) {
            assert_eq!(r.key, s.key);
            assert_eq!(r.value, s.value);
            assert_eq!(r.headers, s.headers);
        }
        assert_eq!(got.records[1].timestamp, 1234);
        assert_eq!(
            got.records[2].headers,
            vec![Header::new("a", "1"), Header::new("a", "2")]
        );
        // Reading from the middle starts at the requested offset.
        let mid = common::read(&k, (&topic, 0), 1, 1, 1 << 20);
        assert_eq!(mid.records.len(), 1);
        assert_eq!(mid.records[0].offset, 1);
        assert_eq!(mid.next_offset, 2);
    }
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_are_dense_across_many_sends_and_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_small_topic(dir.path()).await;
    for i in 0..500u64 {
        let m = p.send(None, common::value(i)).await.unwrap();
        assert_eq!(m.offset, i);
    }
    assert!(
        common::segments(dir.path(), "t", 0).len() > 5,
        "segments should have rolled"
    );
    let all = common::read_all(&k, "t", 0);
    assert_eq!(all.len(), 500);
    for (i, r) in all.iter().enumerate() {
        assert_eq!(r.offset, i as u64);
        assert_eq!(r.value.as_ref().unwrap(), &common::value(i as u64));
    }
    // max_bytes bounds a read but always returns at least one record.
    let one = common::read(&k, ("t", 0), 10, 100, 1);
    assert_eq!(one.records.len(), 1);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_outside_the_log_are_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic("t").await.unwrap();
    k.producer_for("t")
        .unwrap()
        .send(None, "a".into())
        .await
        .unwrap();
    let err = common::try_read(&k, ("t", 0), 5, 10, 100).unwrap_err();
    assert!(matches!(
        err,
        kafko_core::KafkoError::OffsetOutOfRange {
            requested: 5,
            log_start_offset: 0,
            high_watermark: 1
        }
    ));
    assert!(common::read(&k, ("t", 0), 1, 10, 100).records.is_empty());
    assert!(matches!(
        common::try_read(&k, ("t", 3), 0, 10, 100),
        Err(kafko_core::KafkoError::PartitionNotFound { .. })
    ));
    assert!(matches!(
        common::try_read(&k, ("nope", 0), 0, 10, 100),
        Err(kafko_core::KafkoError::TopicNotFound { .. })
    ));
    k.shutdown().await.unwrap();
}
