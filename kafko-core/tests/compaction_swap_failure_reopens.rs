//! A compaction swap that fails at any step (rename, remove, directory fsync, open,
//! index write) — including past its commit point — followed by more writes and another
//! compaction pass, leaves a log that reopens with the latest record of every key.
//! Regression: after a failure past the commit point the partition kept compacting; a
//! later swap of an overlapping range left the first `.swap` behind, and the next open
//! resurrected it as a segment overlapping its neighbour and refused to open (found by
//! the I/O-fault sweep). Such a partition now stops compacting until a restart (which
//! finishes the swap); writes and reads go on.
mod sim;

use std::collections::BTreeMap;
use std::path::Path;

use kafko_core::{Kafko, ProducerRecord, SendOptions};
use sim::{Fault, Op, SimFs};

async fn fill(k: &Kafko, latest: &mut BTreeMap<String, (u64, Vec<u8>)>, from: u64, n: u64) {
    for i in from..from + n {
        let key = format!("k{}", i % 3);
        let value = format!("{i:04}-{}", "v".repeat(300)).into_bytes();
        let r = ProducerRecord::new(value.clone()).with_key(key.clone());
        let sent = match k.topic("c") {
            Ok(t) => t
                .produce(vec![r], SendOptions::default())
                .await
                .map_err(kafko_core::KafkoError::from),
            Err(e) => Err(e.into()),
        };
        if let Ok(m) = sent {
            latest.insert(key, (m[0].offset, value));
        }
    }
}

async fn scenario(op: Op, extra: u64) -> Option<String> {
    let fs = SimFs::new(Path::new("/data"));
    let k = sim::model::open(&fs).await.unwrap();
    let config = sim::small_compacted_topic();
    k.create_topic_with_config("c", config).await.unwrap();
    let mut latest = BTreeMap::new();
    fill(&k, &mut latest, 0, 60).await;
    let done = fs.counts().get(&op).copied().unwrap_or(0);
    fs.set_fault(Some(Fault {
        op,
        nth: done + extra,
        partial: 0,
    }));
    let _ = k.compact_now("c").await;
    let hit = fs
        .fault_hit()
        .map(|h| format!("{op:?} on {}", h.path.display()));
    fill(&k, &mut latest, 60, 30).await;
    let _ = k.compact_now("c").await;
    let _ = k.shutdown().await;
    drop(k);
    let fs = SimFs::from_image(&fs.process_restart_image());
    let k = sim::model::open(&fs)
        .await
        .unwrap_or_else(|e| panic!("{hit:?}: reopen failed: {e}"));
    let (got, hw) = sim::read_partition_zero(&k, "c");
    assert!(got.last().is_some_and(|r| r.offset + 1 == hw));
    for (key, (offset, value)) in &latest {
        let r = got
            .iter()
            .find(|r| r.offset == *offset)
            .unwrap_or_else(|| panic!("{hit:?}: latest record of {key} at {offset} lost"));
        assert_eq!(r.value.as_deref(), Some(&value[..]));
    }
    k.shutdown().await.unwrap();
    hit
}

#[test]
fn a_failed_compaction_swap_never_keeps_the_log_from_reopening() {
    let rt = sim::paused_runtime();
    let mut hits = Vec::new();
    for op in [
        Op::Rename,
        Op::Remove,
        Op::SyncDir,
        Op::Open,
        Op::WriteSynced,
        Op::Sync,
    ] {
        for extra in 1..=12 {
            if let Some(h) = rt.block_on(scenario(op, extra)) {
                hits.push(h);
            }
        }
    }
    assert!(
        hits.iter()
            .any(|h| h.starts_with("Rename") && h.ends_with(".swap"))
    );
    assert!(
        hits.iter()
            .any(|h| h.starts_with("Remove") && h.ends_with(".log"))
    );
}
