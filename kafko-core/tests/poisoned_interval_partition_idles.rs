//! After a failed interval fsync the partition is read-only — and its writer goes idle.
//! Regression: the writer kept computing an interval-fsync deadline for the poisoned,
//! still-dirty partition; the deadline stayed in the past and the writer task spun at
//! 100% CPU forever (found by the power-loss simulation, where it starved the runtime).
mod sim;

use std::path::Path;
use std::time::Duration;

use kafko_core::{FsyncPolicy, ProduceError, TopicConfig};
use sim::{Fault, Op, SimFs};

#[test]
fn a_poisoned_interval_partition_stops_trying_to_fsync() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = sim::paused_runtime();
        rt.block_on(async {
            let fs = SimFs::new(Path::new("/data"));
            let k = sim::model::open(&fs).await.unwrap();
            let config = TopicConfig {
                fsync: FsyncPolicy::IntervalMs { interval_ms: 10 },
                ..Default::default()
            };
            k.create_topic_with_config("t", config).await.unwrap();
            let p = k.producer_for("t").unwrap();
            // The next fsync of a segment fails: that is the interval fsync.
            let syncs = fs.counts().get(&Op::Sync).copied().unwrap_or(0);
            fs.set_fault(Some(Fault {
                op: Op::Sync,
                nth: syncs + 1,
                partial: 0,
            }));
            p.send(None, "a".into()).await.unwrap();
            // With paused time the clock only advances when every task is idle: this
            // sleep completes only if the writer stopped spinning.
            tokio::time::sleep(Duration::from_secs(1)).await;
            assert!(
                fs.fault_hit().is_some(),
                "the interval fsync ran and failed"
            );
            let err = p.send(None, "b".into()).await.unwrap_err();
            assert!(
                matches!(err, ProduceError::PartitionReadOnly { .. }),
                "{err}"
            );
        });
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("the writer of a poisoned interval partition spins instead of idling");
}
