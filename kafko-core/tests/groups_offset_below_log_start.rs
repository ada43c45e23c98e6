//! A committed offset that retention removed from the log resumes at the log start
//! (Kafka's `auto.offset.reset=earliest`); the reset policy is a durable group option:
//! `latest` jumps to the high watermark, `error` fails with `NoValidOffset`.
mod gc_support;

use gc_support::{GroupOps, open, small};
use kafko_core::{
    Bytes, ErrorKind, GroupConfig, GroupPollOptions, KafkoError, OffsetReset, PartitionOffset,
    ProducerRecord, TopicConfig,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offset_below_log_start_resumes_at_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    let cfg = TopicConfig {
        retention_ms: Some(60_000),
        ..small(1)
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let p = k.producer_for("t").unwrap();
    // Old records fill several segments; the new ones stay.
    let old = kafko_core_now() - 3_600_000;
    for i in 0..200u32 {
        p.send_record(
            ProducerRecord::new(Bytes::from(vec![b'o'; 100])).with_timestamp(old + i64::from(i)),
        )
        .await
        .unwrap();
    }
    for _ in 0..5u32 {
        p.send(None, Bytes::from("new")).await.unwrap();
    }
    for g in ["early", "late", "strict"] {
        k.commit_group_offsets(
            g,
            "t",
            None,
            Some(&[PartitionOffset {
                partition: 0,
                offset: 3,
            }]),
        )
        .await
        .unwrap();
    }
    k.set_group_config(
        "late",
        GroupConfig {
            offset_reset: OffsetReset::Latest,
        },
    )
    .await
    .unwrap();
    k.set_group_config(
        "strict",
        GroupConfig {
            offset_reset: OffsetReset::Error,
        },
    )
    .await
    .unwrap();
    assert!(k.enforce_retention().await.unwrap().segments_deleted > 0);
    let kafko_core::Offsets {
        log_start,
        high_watermark: hw,
        ..
    } = gc_support::offsets(&k, "t", 0);
    assert!(
        log_start > 3,
        "retention must have passed the committed offset"
    );
    k.shutdown().await.unwrap();
    drop(k);

    // After a restart the options and offsets are read back from disk.
    let k = open(dir.path()).await;
    let opts = GroupPollOptions {
        max_records: 1,
        ..Default::default()
    };
    let got = k.group_poll("early", "t", &opts).await.unwrap();
    assert_eq!(got.records[0].offset, log_start);
    let got = k.group_poll("late", "t", &opts).await.unwrap();
    assert!(got.records.is_empty());
    assert_eq!(
        got.positions,
        vec![PartitionOffset {
            partition: 0,
            offset: hw
        }]
    );
    let err = k.group_poll("strict", "t", &opts).await.unwrap_err();
    assert!(
        matches!(err, KafkoError::NoValidOffset { partition: 0, .. }),
        "{err}"
    );
    assert_eq!(err.kind(), ErrorKind::OutOfRange);
    assert_eq!(
        k.group("strict")
            .and_then(|g| g.describe())
            .unwrap()
            .config
            .offset_reset,
        OffsetReset::Error
    );
    k.shutdown().await.unwrap();
}

fn kafko_core_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
