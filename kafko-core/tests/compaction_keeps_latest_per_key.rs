//! Compaction keeps exactly the latest record of every key in the sealed segments,
//! with its original offset, checked against a `HashMap` oracle over random histories
//! (values, tombstones, batches, codecs); a second pass changes nothing, and the result
//! survives a restart.
mod gc_support;

use std::collections::HashMap;

use gc_support::{compacted, keyed, open, read_all, seal_marker, send, send_keyed_and_seal};
use kafko_core::{Bytes, Compression, TopicConfig};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    /// key index, value length (None = tombstone)
    Put(u8, Option<usize>),
    /// Several puts as one batch.
    Batch(Vec<(u8, Option<usize>)>),
}

fn op() -> impl Strategy<Value = Op> {
    let put = (0u8..12, proptest::option::weighted(0.85, 1usize..300));
    prop_oneof![
        4 => put.clone().prop_map(|(k, v)| Op::Put(k, v)),
        1 => proptest::collection::vec(put, 1..6).prop_map(Op::Batch),
    ]
}

fn value_for(offset_hint: usize, len: usize) -> String {
    format!("{offset_hint:06}:{}", "x".repeat(len))
}

async fn run(ops: Vec<Op>, codec: Compression) {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    let cfg = TopicConfig {
        compression: codec,
        ..compacted(1)
    };
    k.create_topic_with_config("t", cfg).await.unwrap();
    let producer = k.producer_for("t").unwrap();
    // key → (offset, value)
    let mut oracle: HashMap<String, (u64, Option<String>)> = HashMap::new();
    let mut n = 0usize;
    for op in ops {
        let puts = match op {
            Op::Put(k, v) => vec![(k, v)],
            Op::Batch(v) => v,
        };
        let records: Vec<_> = puts
            .iter()
            .map(|&(key, len)| {
                n += 1;
                let value = len.map(|l| value_for(n, l));
                keyed(&format!("k{key}"), value.as_deref())
            })
            .collect();
        let metas = producer.send_batch(records.clone()).await.unwrap();
        for (r, m) in records.iter().zip(metas) {
            let key = String::from_utf8(r.key.clone().unwrap().to_vec()).unwrap();
            let value = r
                .value
                .as_ref()
                .map(|v| String::from_utf8(v.to_vec()).unwrap());
            oracle.insert(key, (m.offset, value));
        }
    }
    let seal_offset = send(&k, "t", seal_marker()).await;
    let check = |k: &kafko_core::Kafko| {
        let records = read_all(k, "t", 0);
        let mut seen: HashMap<String, (u64, Option<String>)> = HashMap::new();
        let mut last = None;
        for r in &records {
            assert!(last < Some(r.offset), "offsets must strictly increase");
            last = Some(r.offset);
            if r.offset == seal_offset {
                continue;
            }
            let key = String::from_utf8(r.key().unwrap().to_vec()).unwrap();
            let value = r.value().map(|v| String::from_utf8(v.to_vec()).unwrap());
            assert!(
                seen.insert(key.clone(), (r.offset, value)).is_none(),
                "key {key} appears twice after compaction"
            );
        }
        assert_eq!(
            seen, oracle,
            "compacted log differs from the latest value per key"
        );
    };
    let first = k.compact_now("t").await.unwrap();
    check(&k);
    let again = k.compact_now("t").await.unwrap();
    assert_eq!(
        again.records_removed, 0,
        "a second pass found more to remove"
    );
    check(&k);
    assert!(first.bytes_out <= first.bytes_in);
    k.shutdown().await.unwrap();
    drop(k);
    let k = open(dir.path()).await;
    check(&k);
    let next = send(&k, "t", keyed("after", Some("restart"))).await;
    assert_eq!(next, seal_offset + 1);
    k.shutdown().await.unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn compaction_keeps_exactly_the_latest_value_per_key(
        ops in proptest::collection::vec(op(), 1..120),
        codec in prop_oneof![Just(Compression::None), Just(Compression::Lz4), Just(Compression::Zstd)],
    ) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(run(ops, codec));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_segments_fit_and_reads_skip_the_gaps() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", compacted(1)).await.unwrap();
    send_keyed_and_seal(&k, "t", (600, 5), |i| format!("{i:0>100}")).await;
    let before = k.describe_topic("t").unwrap().partitions[0].clone();
    let mut total = kafko_core::CompactionOutcome::default();
    // The first pass cleans each full segment alone; later passes merge the small results.
    for _ in 0..3 {
        let o = k.compact_now("t").await.unwrap();
        total.records_removed += o.records_removed;
        total.segments_replaced += o.segments_replaced;
    }
    let after = k.describe_topic("t").unwrap().partitions[0].clone();
    assert_eq!(total.records_removed, 595);
    assert!(
        after.segments < before.segments / 4,
        "{} → {}",
        before.segments,
        after.segments
    );
    assert_eq!(after.high_watermark, before.high_watermark);
    let records = read_all(&k, "t", 0);
    let offsets: Vec<u64> = records.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![595, 596, 597, 598, 599, 600]);
    // Reading from inside a gap continues at the next stored record.
    let got = gc_support::read(&k, ("t", 0), 17, 10, 1 << 20);
    assert_eq!(got.records[0].offset, 595);
    assert_eq!(
        got.records[0].value().unwrap(),
        &Bytes::from(format!("{:0>100}", 595))
    );
    k.shutdown().await.unwrap();
}
