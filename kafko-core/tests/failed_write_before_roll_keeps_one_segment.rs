//! A write that fails right after a roll, with the next batch queued behind it, must not
//! roll again. Regression: the writer rolled a second time with the same (unchanged)
//! next offset, so two in-memory segments shared one file; compacting the stale empty
//! twin then deleted the live active segment's file, losing acknowledged records at the
//! next open (found by the I/O-fault sweep).
mod sim;

use std::path::Path;

use kafko_core::{Kafko, ProducerRecord, SendOptions};
use sim::{Fault, Op, SimFs};

fn record(key: &str, size: usize, tag: u8) -> ProducerRecord {
    ProducerRecord::new(vec![tag; size]).with_key(key.to_owned())
}

async fn send(k: &Kafko, r: ProducerRecord) -> Option<u64> {
    k.topic("c")
        .ok()?
        .produce(vec![r], SendOptions::default())
        .await
        .ok()
        .map(|m| m[0].offset)
}

#[test]
fn a_failed_write_after_a_roll_does_not_duplicate_the_segment() {
    let rt = sim::paused_runtime();
    rt.block_on(async {
        let fs = SimFs::new(Path::new("/data"));
        let k = sim::model::open(&fs).await.unwrap();
        let config = sim::small_compacted_topic();
        k.create_topic_with_config("c", config).await.unwrap();
        let mut acked = Vec::new();
        // Fill the first segment to ~3 KiB with one key (so compaction has work).
        for i in 0..3 {
            acked.push((send(&k, record("a", 1000, i)).await.unwrap(), i));
        }
        // X (2.5 KiB) does not fit: it rolls and is buffered; Y (2.5 KiB) is drained in
        // the same group and does not fit beside X: X is flushed — and that write fails.
        let appends = fs.counts().get(&Op::Append).copied().unwrap_or(0);
        fs.set_fault(Some(Fault {
            op: Op::Append,
            nth: appends + 1,
            partial: 0,
        }));
        let (kx, ky) = (k.clone(), k.clone());
        let x = tokio::spawn(async move { send(&kx, record("a", 2500, 10)).await });
        let y = tokio::spawn(async move { send(&ky, record("b", 2500, 11)).await });
        let (x, y) = (x.await.unwrap(), y.await.unwrap());
        assert!(fs.fault_hit().is_some(), "the write of X failed");
        assert_eq!(x, None, "X was not written, so it is not acknowledged");
        if let Some(o) = y {
            acked.push((o, 11));
        }
        for i in 20..23 {
            acked.push((send(&k, record("z", 100, i)).await.unwrap(), i));
        }
        k.compact_now("c").await.unwrap();
        k.shutdown().await.unwrap();
        drop(k);
        let fs = SimFs::from_image(&fs.process_restart_image());
        let k = sim::model::open(&fs).await.unwrap();
        let (got, hw) = sim::read_partition_zero(&k, "c");
        assert_eq!(got.last().map(|r| r.offset + 1), Some(hw));
        // The latest record of every key is there, byte for byte.
        let latest: std::collections::BTreeMap<u8, u64> =
            acked.iter().map(|&(o, tag)| (tag, o)).collect();
        for (o, tag) in [acked[2], *acked.last().unwrap()]
            .iter()
            .chain(acked.iter().filter(|(_, t)| *t == 11))
        {
            let r = got
                .iter()
                .find(|r| r.offset == *o)
                .unwrap_or_else(|| panic!("acknowledged record {o} lost; latest {latest:?}"));
            assert!(r.value.as_ref().unwrap().iter().all(|b| b == tag));
        }
        k.shutdown().await.unwrap();
    });
}
