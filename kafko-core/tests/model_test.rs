//! Model test: random sequences of produce, batch produce, read, seek and restart
//! (clean or unclean) against an in-memory `Vec` oracle per partition.
mod common;

use kafko_core::{Bytes, Compression, Kafko, ProducerRecord, TopicConfig};
use proptest::prelude::*;

/// (key, value) as the oracle remembers a record.
type OracleRecord = (Option<Vec<u8>>, Vec<u8>);

#[derive(Debug, Clone)]
enum Step {
    Send {
        partition: u32,
        value: Vec<u8>,
        key: Option<Vec<u8>>,
    },
    Batch {
        partition: u32,
        count: usize,
    },
    Read {
        partition: u32,
        offset_pct: u8,
        max: usize,
    },
    Restart {
        clean: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0u32..2, proptest::collection::vec(any::<u8>(), 0..600), proptest::option::of(proptest::collection::vec(any::<u8>(), 0..8)))
            .prop_map(|(partition, value, key)| Step::Send { partition, value, key }),
        2 => (0u32..2, 1usize..40).prop_map(|(partition, count)| Step::Batch { partition, count }),
        3 => (0u32..2, any::<u8>(), 1usize..50).prop_map(|(partition, offset_pct, max)| Step::Read { partition, offset_pct, max }),
        1 => any::<bool>().prop_map(|clean| Step::Restart { clean }),
    ]
}

fn run(steps: Vec<Step>, codec: Compression) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let cfg = TopicConfig {
            partitions: 2,
            compression: codec,
            segment_bytes: 4096,
            ..Default::default()
        };
        let mut k = Kafko::open(dir.path()).await.unwrap();
        k.create_topic_with_config("t", cfg).await.unwrap();
        let mut oracle: Vec<Vec<OracleRecord>> = vec![Vec::new(), Vec::new()];
        for s in steps {
            match s {
                Step::Send {
                    partition,
                    value,
                    key,
                } => {
                    let mut r =
                        ProducerRecord::new(Bytes::from(value.clone())).with_partition(partition);
                    r.key = key.clone().map(Bytes::from);
                    let m = k.producer_for("t").unwrap().send_record(r).await.unwrap();
                    assert_eq!(m.offset, oracle[partition as usize].len() as u64);
                    oracle[partition as usize].push((key, value));
                }
                Step::Batch { partition, count } => {
                    let recs: Vec<_> = (0..count)
                        .map(|i| ProducerRecord::new(vec![i as u8; i]).with_partition(partition))
                        .collect();
                    let m = k.producer_for("t").unwrap().send_batch(recs).await.unwrap();
                    assert_eq!(m[0].offset, oracle[partition as usize].len() as u64);
                    for i in 0..count {
                        oracle[partition as usize].push((None, vec![i as u8; i]));
                    }
                }
                Step::Read {
                    partition,
                    offset_pct,
                    max,
                } => {
                    let o = &oracle[partition as usize];
                    let offset = (o.len() * offset_pct as usize / 255) as u64;
                    let f = common::read(&k, ("t", partition), offset, max, 1 << 20);
                    let want = o.len().saturating_sub(offset as usize).min(max);
                    assert_eq!(f.records.len(), want);
                    for r in &f.records {
                        let (key, value) = &o[r.offset as usize];
                        assert_eq!(r.value.as_deref(), Some(&value[..]));
                        assert_eq!(r.key.as_deref(), key.as_deref());
                    }
                }
                Step::Restart { clean } => {
                    k.shutdown().await.unwrap();
                    if !clean {
                        std::fs::remove_file(dir.path().join("clean-shutdown")).unwrap();
                    }
                    k = Kafko::open(dir.path()).await.unwrap();
                    for p in 0..2 {
                        assert_eq!(
                            common::offsets(&k, "t", p).high_watermark,
                            oracle[p as usize].len() as u64
                        );
                    }
                }
            }
        }
        for p in 0..2u32 {
            let all = common::read_all(&k, "t", p);
            assert_eq!(all.len(), oracle[p as usize].len());
        }
        k.shutdown().await.unwrap();
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn log_matches_the_oracle(steps in proptest::collection::vec(step(), 1..60), codec in 0u8..3) {
        let codec = [Compression::None, Compression::Lz4, Compression::Zstd][codec as usize];
        run(steps, codec);
    }
}
