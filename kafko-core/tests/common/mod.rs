//! Helpers shared by the integration tests: opening a log in a temp dir and building
//! records; the storage layers that inject faults and the on-disk readers come from
//! `kafko-test-support`, shared with the server's tests.
#![allow(dead_code, unreachable_pub, missing_docs)]

#[allow(unused_imports)] // each test binary uses some of them
pub use kafko_test_support::{failing_appends, faulty, gate, interposed, on_disk, reads};

use std::path::Path;

use kafko_core::{Bytes, Kafko, Producer, ProducerRecord, TopicConfig};

// Each test binary uses some of them.
#[allow(unused_imports)]
pub use {
    interposed::open_interposed,
    on_disk::{last_segment, segments},
    reads::{offsets, read, read_all, try_read},
};

pub async fn open(dir: &Path) -> Kafko {
    Kafko::open(dir).await.expect("open")
}

/// Opens `dir` with topic `t` of `config`, and a producer for it.
pub async fn open_topic(dir: &Path, config: TopicConfig) -> (Kafko, Producer) {
    let k = open(dir).await;
    k.create_topic_with_config("t", config)
        .await
        .expect("create topic");
    let p = k.producer_for("t").expect("producer");
    (k, p)
}

/// Opens `dir` with topic `t` of one partition in 4 KiB segments, and a producer for it.
pub async fn open_small_topic(dir: &Path) -> (Kafko, Producer) {
    open_topic(dir, small_segments(1)).await
}

/// Appends one keyless record to topic `t` and returns its offset.
pub async fn append(k: &Kafko, value: &'static str) -> u64 {
    k.producer_for("t")
        .expect("producer")
        .send(None, value.into())
        .await
        .expect("send")
        .offset
}

pub fn small_segments(partitions: u32) -> TopicConfig {
    TopicConfig {
        partitions,
        segment_bytes: 4096,
        ..Default::default()
    }
}

pub fn value(i: u64) -> Bytes {
    Bytes::from(format!("value-{i:06}-{}", "x".repeat((i % 50) as usize)))
}

pub fn rec(i: u64) -> ProducerRecord {
    ProducerRecord::new(value(i))
}

/// Frames a small state file (FORMAT.md, "State files") with a JSON body.
pub fn state_file(body: &str) -> Vec<u8> {
    let mut out = b"KSTF\x01".to_vec();
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(body.as_bytes()).to_le_bytes());
    out.extend_from_slice(body.as_bytes());
    out
}

/// Sets a partition's recovery point, as a crash would have left it: a power cut before
/// the seal of the segment at `offset` completed leaves the point the previous seal
/// wrote, that segment's base offset.
pub fn set_recovery_point(dir: &Path, topic: &str, partition: u32, offset: u64) {
    let path = dir
        .join("topics")
        .join(topic)
        .join(partition.to_string())
        .join("recovery-point");
    std::fs::write(path, state_file(&offset.to_string())).unwrap();
}

/// The base offset of a segment file, from its name.
pub fn base_of(log: &Path) -> u64 {
    log.file_stem().unwrap().to_str().unwrap().parse().unwrap()
}
