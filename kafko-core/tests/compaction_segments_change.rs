//! Retention removes segments while a compaction pass is rewriting them: the pass sees
//! that the run it planned is gone, discards its cleaned file and reports nothing
//! replaced (an outcome, not an error); the log stays readable, no temp file is left,
//! and the next pass compacts what is left.
mod common;
mod gc_support;

use std::io;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::interposed::{Hook, Interposed};
use gc_support::{keyed, latest, seal_marker, send, send_keyed_and_seal};
use kafko_core::{CleanupPolicy, Kafko, TopicConfig, TopicConfigUpdate};

/// Holds the first creation of a `.cleaned` file until the test lets it go.
#[derive(Clone)]
struct HoldCleaned {
    reached: Arc<Mutex<Option<Sender<()>>>>,
    go: Arc<Mutex<Receiver<()>>>,
}

impl Hook for HoldCleaned {
    fn before(&self, op: &str, path: &Path) -> io::Result<()> {
        if op == "open" && path.to_string_lossy().ends_with(".cleaned") {
            let reached = self.reached.lock().unwrap().take();
            if let Some(reached) = reached {
                reached.send(()).unwrap();
                self.go.lock().unwrap().recv().unwrap();
            }
        }
        Ok(())
    }
}

fn leftovers(dir: &Path) -> Vec<String> {
    let partition = dir.join("topics/t/0");
    std::fs::read_dir(&partition)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_under_a_compaction_pass_skips_the_swap() {
    let dir = tempfile::tempdir().unwrap();
    let (reached_tx, reached_rx) = channel();
    let (go_tx, go_rx) = channel();
    let hook = HoldCleaned {
        reached: Arc::new(Mutex::new(Some(reached_tx))),
        go: Arc::new(Mutex::new(go_rx)),
    };
    let k = Kafko::builder(dir.path())
        .storage(Arc::new(Interposed(hook)))
        .retention_check_interval(Duration::from_secs(86_400))
        .open()
        .await
        .unwrap();
    let config = TopicConfig {
        cleanup_policy: CleanupPolicy::CompactDelete,
        segment_bytes: 4096,
        retention_ms: None,
        min_compaction_lag_ms: 0,
        ..Default::default()
    };
    k.create_topic_with_config("t", config).await.unwrap();
    // Old records first (two hours ago), then recent ones: retention of one hour takes
    // the segments of the old ones, which are the ones the pass rewrites first.
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let old = i64::try_from(now.as_millis()).unwrap() - 2 * 3600 * 1000;
    for i in 0..100u32 {
        let r = keyed(&format!("k{}", i % 6), Some(&format!("old{i:0>80}"))).with_timestamp(old);
        send(&k, "t", r).await;
    }
    send(&k, "t", seal_marker().with_timestamp(old)).await;
    send_keyed_and_seal(&k, "t", (100, 6), |i| format!("new{i:0>80}")).await;
    let start_before = k
        .topic("t")
        .unwrap()
        .partition(0)
        .unwrap()
        .offsets()
        .unwrap()
        .log_start;

    let pass = tokio::spawn({
        let k = k.clone();
        async move { k.compact_now("t").await }
    });
    tokio::task::spawn_blocking(move || reached_rx.recv().unwrap())
        .await
        .unwrap();
    // The pass is rewriting; retention now removes the segments it planned on.
    let update = TopicConfigUpdate {
        retention_ms: Some(Some(3600 * 1000)),
        ..Default::default()
    };
    k.update_topic_config("t", &update).await.unwrap();
    let removed = k.enforce_retention().await.unwrap();
    assert!(removed.segments_deleted > 0, "retention removed nothing");
    let expected = latest(&k, "t");
    go_tx.send(()).unwrap();

    let outcome = pass
        .await
        .unwrap()
        .expect("a changed run is an outcome, not an error");
    assert_eq!(outcome.segments_replaced, 0, "{outcome:?}");
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
    let offsets = k
        .topic("t")
        .unwrap()
        .partition(0)
        .unwrap()
        .offsets()
        .unwrap();
    assert!(offsets.log_start > start_before);
    assert_eq!(latest(&k, "t"), expected);

    // The next pass plans again and compacts what retention left.
    let outcome = k.compact_now("t").await.unwrap();
    assert!(outcome.segments_replaced > 0, "{outcome:?}");
    assert_eq!(latest(&k, "t"), expected);
    assert!(leftovers(dir.path()).is_empty());
    k.shutdown().await.unwrap();
}
