//! Simulated power loss during the log administration Kafka's admin APIs drive:
//! deleting records below an offset and raising a topic's partition count, with the
//! power cut at a random storage operation inside them and the log reopened on the crash
//! image. The reopen never fails; the log start (or the partition count) is the one
//! before the call or the one after it, and the one after it once the call was
//! acknowledged; no record at or above the start is lost; a second call after the reopen
//! completes (a raise takes up the partition directories a cut raise left).
//!
//! Default: 200 seeds; `KAFKO_LONG=1`: 2,000; `KAFKO_SIM_SEEDS=n` sets the count.
mod sim;

use std::path::Path;

use bytes::Bytes;
use kafko_core::{FsyncPolicy, Kafko, TopicConfig};
use sim::model::open;
use sim::{Reorder, Rng, SimFs};

const RECORDS: u64 = 200;

fn config(partitions: u32) -> TopicConfig {
    TopicConfig {
        partitions,
        segment_bytes: 4096,
        fsync: FsyncPolicy::Always,
        retention_ms: None,
        ..Default::default()
    }
}

/// The log start and high watermark of every partition of `t`.
fn offsets(k: &Kafko) -> Vec<(u64, u64)> {
    k.describe_topic("t")
        .unwrap()
        .partitions
        .iter()
        .map(|p| (p.log_start_offset, p.high_watermark))
        .collect()
}

/// Every record of partition 0 from its log start: their offsets are the start's on.
fn check_records(k: &Kafko) -> Result<(), String> {
    let (records, hw) = sim::read_partition_zero(k, "t");
    let start = offsets(k)[0].0;
    let want: Vec<u64> = (start..hw).collect();
    let got: Vec<u64> = records.iter().map(|r| r.offset).collect();
    if got != want {
        return Err(format!("records {got:?}, want {start}..{hw}"));
    }
    Ok(())
}

async fn run_seed(seed: u64) -> Result<bool, String> {
    let mut rng = Rng::new(seed);
    let reorder = if rng.chance(1, 4) {
        Reorder::Any
    } else {
        Reorder::Ordered
    };
    let fs = SimFs::new(Path::new("/data"));
    let k = open(&fs).await.map_err(|e| format!("open: {e}"))?;
    k.create_topic_with_config("t", config(2)).await.unwrap();
    let p = k.producer_for("t").unwrap();
    for i in 0..RECORDS {
        let value = Bytes::from(format!("value-{i:04}-{}", "x".repeat(40)));
        p.send_record(kafko_core::ProducerRecord {
            partition: Some(0),
            value: Some(value),
            ..Default::default()
        })
        .await
        .map_err(|e| format!("send: {e}"))?;
    }
    let deleting = rng.chance(1, 2);
    let to = 1 + rng.below(RECORDS);
    fs.schedule_crash(1 + rng.below(40), rng.next_u64(), reorder);
    let acked = if deleting {
        let t = k.topic("t").unwrap();
        t.delete_records(0, Some(to)).await.is_ok() && !fs.crashed()
    } else {
        k.create_partitions("t", 4, false).await.is_ok() && !fs.crashed()
    };
    let image = match fs.image() {
        Some(i) => i,
        None => fs.crash_now(),
    };
    drop(k);

    let fs = SimFs::from_image(&image);
    let k = open(&fs).await.map_err(|e| format!("reopen: {e}"))?;
    let after = offsets(&k);
    if after[0].1 != RECORDS {
        return Err(format!("high watermark {} after the reopen", after[0].1));
    }
    if deleting {
        let start = after[0].0;
        let ok = if acked {
            start == to
        } else {
            start == 0 || start == to
        };
        if !ok {
            return Err(format!(
                "log start {start}, deleting below {to} (acked: {acked})"
            ));
        }
    } else {
        let count = after.len();
        let ok = if acked {
            count == 4
        } else {
            count == 2 || count == 4
        };
        if !ok {
            return Err(format!(
                "{count} partitions, raising 2 to 4 (acked: {acked})"
            ));
        }
    }
    check_records(&k)?;
    // The other call, uncut, on the reopened log.
    k.topic("t")
        .unwrap()
        .delete_records(0, Some(RECORDS))
        .await
        .map_err(|e| format!("delete after the reopen: {e}"))?;
    if after.len() < 5 {
        k.create_partitions("t", 5, false)
            .await
            .map_err(|e| format!("raise after the reopen: {e}"))?;
    }
    let last = offsets(&k);
    if last.len() != 5 || last[0] != (RECORDS, RECORDS) {
        return Err(format!("after the second calls: {last:?}"));
    }
    Ok(acked)
}

#[test]
fn deleting_records_and_adding_partitions_survive_power_loss() {
    let seeds = sim::seed_count(200, 2_000);
    let mut acked = 0;
    for seed in 0..seeds {
        let rt = sim::paused_runtime();
        match rt.block_on(run_seed(seed)) {
            Ok(a) => acked += u64::from(a),
            Err(e) => panic!("seed {seed}: {e}"),
        }
    }
    eprintln!("log admin under power loss: {seeds} seeds, {acked} acknowledged calls");
    assert!(
        acked > 0 && acked < seeds,
        "some calls finish, some are cut"
    );
}
