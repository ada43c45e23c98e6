//! Concurrent producers are acknowledged correctly under every fsync policy: every
//! acknowledged record is present exactly once at its acknowledged offset.
mod common;

use kafko_core::{FsyncPolicy, TopicConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_concurrent_producers_all_land_once() {
    for fsync in [
        FsyncPolicy::Never,
        FsyncPolicy::Always,
        FsyncPolicy::IntervalMs { interval_ms: 5 },
    ] {
        let dir = tempfile::tempdir().unwrap();
        let k = common::open(dir.path()).await;
        k.create_topic_with_config(
            "t",
            TopicConfig {
                fsync,
                segment_bytes: 16384,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        let mut tasks = Vec::new();
        for w in 0..16u64 {
            let p = k.producer_for("t").unwrap();
            tasks.push(tokio::spawn(async move {
                let mut acks = Vec::new();
                for i in 0..50u64 {
                    let v = format!("w{w}-{i}");
                    let m = p.send(None, v.clone().into()).await.unwrap();
                    acks.push((m.offset, v));
                }
                acks
            }));
        }
        let mut acked = Vec::new();
        for t in tasks {
            acked.extend(t.await.unwrap());
        }
        let recs = common::read_all(&k, "t", 0);
        assert_eq!(recs.len(), 800);
        for (offset, v) in acked {
            assert_eq!(
                recs[offset as usize].value.as_ref().unwrap(),
                v.as_bytes(),
                "{fsync:?}"
            );
        }
        k.sync().await.unwrap();
        k.shutdown().await.unwrap();
    }
}
