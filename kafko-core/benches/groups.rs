//! Criterion benches of consumer groups and compaction:
//! - `group_commit`: durable offset commits per second for one group (each commit is a
//!   state-file replace: write temp, fsync, rename, fsync directory);
//! - `compaction`: cleaner input rate in MB/s of sealed segments (32 MiB over 4,000
//!   keys, 1 KiB values, 1 MiB segments, ~94% of records superseded).
//!
//! `cargo bench -p kafko-core --bench groups` (add `-- --quick` for a fast pass). Data
//! lives under Cargo's target tmp dir, on a real file system, so fsync costs what it costs.

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kafko_core::{Bytes, CleanupPolicy, Kafko, PartitionOffset, ProducerRecord, TopicConfig};

const KEYS: u32 = 4_000;
const VALUE: usize = 1024;
const INPUT_BYTES: usize = 32 * 1024 * 1024;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp dir")
}

async fn open(dir: &Path) -> Kafko {
    Kafko::builder(dir)
        .retention_check_interval(Duration::from_secs(24 * 3600))
        .open()
        .await
        .expect("open")
}

fn group_commit(c: &mut Criterion) {
    let rt = runtime();
    let dir = scratch();
    let k = rt.block_on(async {
        let k = open(dir.path()).await;
        k.create_topic("t").await.expect("topic");
        let p = k.producer_for("t").expect("producer");
        for i in 0..1000u32 {
            p.send(None, Bytes::from(i.to_string()))
                .await
                .expect("send");
        }
        k
    });
    let mut g = c.benchmark_group("group_commit");
    g.throughput(Throughput::Elements(1));
    let mut offset = 0u64;
    g.bench_function("one_group_durable_commit", |b| {
        b.to_async(&rt).iter(|| {
            offset = (offset + 1) % 1000;
            let k = k.clone();
            let at = [PartitionOffset {
                partition: 0,
                offset,
            }];
            async move {
                let topic = k.topic("t").expect("topic");
                k.group("g")
                    .expect("group")
                    .commit(&topic, None, Some(&at))
                    .await
                    .expect("commit")
            }
        })
    });
    g.finish();
    rt.block_on(k.shutdown()).expect("shutdown");
}

/// Writes the compaction input once; each iteration compacts a fresh copy of it.
fn compaction_template(rt: &tokio::runtime::Runtime, dir: &Path) -> u64 {
    rt.block_on(async {
        let k = open(dir).await;
        let cfg = TopicConfig {
            cleanup_policy: CleanupPolicy::Compact,
            segment_bytes: 1024 * 1024,
            retention_ms: None,
            ..Default::default()
        };
        k.create_topic_with_config("t", cfg).await.expect("topic");
        let p = k.producer_for("t").expect("producer");
        let value = Bytes::from(vec![b'v'; VALUE]);
        let n = INPUT_BYTES / (VALUE + 64);
        let mut batch = Vec::with_capacity(64);
        for i in 0..n {
            batch.push(
                ProducerRecord::new(value.clone())
                    .with_key(Bytes::from(format!("key-{}", i as u32 % KEYS)))
                    .with_partition(0),
            );
            if batch.len() == 64 {
                p.send_batch(std::mem::take(&mut batch))
                    .await
                    .expect("send");
            }
        }
        // Seal everything written so far.
        p.send_record(ProducerRecord::new(Bytes::from(vec![0u8; 1_048_000])).with_key("seal"))
            .await
            .expect("seal");
        let d = k.describe_topic("t").expect("describe");
        k.shutdown().await.expect("shutdown");
        d.partitions[0].size_bytes
    })
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "kafko.lock" {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

fn compaction(c: &mut Criterion) {
    let rt = runtime();
    let template = scratch();
    compaction_template(&rt, template.path());
    // Measure the input the cleaner actually reads: every sealed segment.
    let probe = scratch();
    copy_dir(template.path(), probe.path());
    let input = rt.block_on(async {
        let k = open(probe.path()).await;
        let o = k.compact_now("t").await.expect("compact");
        k.shutdown().await.expect("shutdown");
        o.bytes_in
    });
    let mut g = c.benchmark_group("compaction");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Bytes(input));
    g.bench_function("first_pass_32MiB_4000_keys", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = scratch();
                copy_dir(template.path(), dir.path());
                total += rt.block_on(async {
                    let k = open(dir.path()).await;
                    let start = Instant::now();
                    let o = k.compact_now("t").await.expect("compact");
                    let took = start.elapsed();
                    assert_eq!(o.bytes_in, input);
                    k.shutdown().await.expect("shutdown");
                    took
                });
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, group_commit, compaction);
criterion_main!(benches);
