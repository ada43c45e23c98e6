//! Helpers shared by the consumer-group and compaction tests.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::Duration;

use kafko_core::{CleanupPolicy, Kafko, ProducerRecord, Record, TopicConfig};

/// Opens a data directory with the background tick pushed far away, so tests decide
/// when retention and compaction run (and paused time never jumps to a tick).
pub async fn open(dir: &Path) -> Kafko {
    Kafko::builder(dir)
        .retention_check_interval(Duration::from_secs(24 * 3600))
        .open()
        .await
        .unwrap()
}

/// A topic with `partitions` partitions and 4 KiB segments.
pub fn small(partitions: u32) -> TopicConfig {
    TopicConfig {
        partitions,
        segment_bytes: 4096,
        retention_ms: None,
        ..Default::default()
    }
}

/// A compacted topic with 4 KiB segments, no compaction lag and a long tombstone life.
pub fn compacted(partitions: u32) -> TopicConfig {
    TopicConfig {
        cleanup_policy: CleanupPolicy::Compact,
        min_compaction_lag_ms: 0,
        delete_retention_ms: 24 * 3600 * 1000,
        ..small(partitions)
    }
}

/// Every record of a partition, from the log start to the high watermark.
pub fn read_all(k: &Kafko, topic: &str, partition: u32) -> Vec<Record> {
    let (mut offset, hw) = k.offsets(topic, partition).unwrap();
    let mut out = Vec::new();
    while offset < hw {
        let got = k.fetch(topic, partition, offset, 1000, 1 << 20).unwrap();
        assert!(
            got.next_offset > offset,
            "read made no progress at {offset}"
        );
        offset = got.next_offset;
        out.extend(got.records);
    }
    out
}

/// A keyed record pinned to partition 0.
pub fn keyed(key: &str, value: Option<&str>) -> ProducerRecord {
    ProducerRecord {
        key: Some(key.as_bytes().to_vec().into()),
        value: value.map(|v| v.as_bytes().to_vec().into()),
        partition: Some(0),
        ..Default::default()
    }
}

/// Sends one record and returns its offset.
pub async fn send(k: &Kafko, topic: &str, record: ProducerRecord) -> u64 {
    k.producer_for(topic)
        .await
        .unwrap()
        .send_record(record)
        .await
        .unwrap()
        .offset
}

/// A record large enough to roll a 4 KiB segment by itself, so everything before it is
/// sealed (and cleanable) and the active segment holds only this record.
pub fn seal_marker() -> ProducerRecord {
    // Incompressible (pseudo-random bytes), so it rolls the segment under every codec.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let noise: Vec<u8> = (0..8192)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    ProducerRecord {
        value: Some(noise.into()),
        ..keyed("~seal", None)
    }
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else if entry.file_name() != "kafko.lock" {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}
