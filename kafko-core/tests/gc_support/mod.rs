//! Helpers shared by the consumer-group and compaction tests.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::Duration;

use kafko_core::{CleanupPolicy, Kafko, ProducerRecord, Record, TopicConfig};

#[allow(unused_imports)] // each test binary uses some of them
pub use kafko_test_support::reads::{offsets, read, read_all, try_read};

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
        .unwrap()
        .send_record(record)
        .await
        .unwrap()
        .offset
}

/// Sends `count` records to partition 0 of `topic`, record `i` keyed `k{i % keys}` with
/// the value `value(i)`, then a [`seal_marker`], so they are all sealed.
pub async fn send_keyed_and_seal(
    k: &Kafko,
    topic: &str,
    (count, keys): (u32, u32),
    value: impl Fn(u32) -> String,
) {
    for i in 0..count {
        send(k, topic, keyed(&format!("k{}", i % keys), Some(&value(i)))).await;
    }
    send(k, topic, seal_marker()).await;
}

/// The latest value of each key in partition 0 of `topic` (the seal markers left out),
/// by key.
pub fn latest(k: &Kafko, topic: &str) -> Vec<(String, String)> {
    let mut map = std::collections::BTreeMap::new();
    for r in read_all(k, topic, 0) {
        let key = String::from_utf8(r.key().unwrap().to_vec()).unwrap();
        if key != "~seal" {
            map.insert(key, String::from_utf8(r.value().unwrap().to_vec()).unwrap());
        }
    }
    map.into_iter().collect()
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

/// What a test sees of a delivered group poll.
#[derive(Debug)]
pub struct Polled {
    pub records: Vec<Record>,
    pub generation: u64,
    pub positions: Vec<kafko_core::PartitionOffset>,
}

/// The group operations by name, through the handles; every poll is delivered.
#[allow(async_fn_in_trait)]
pub trait GroupOps {
    /// The log the operations run on.
    fn log(&self) -> &Kafko;

    async fn group_poll(
        &self,
        group: &str,
        topic: &str,
        options: &kafko_core::GroupPollOptions,
    ) -> kafko_core::Result<Polled> {
        delivered(self.log(), group, topic, None, options).await
    }
    async fn poll_group_member(
        &self,
        group: &str,
        topic: &str,
        member: &kafko_core::MemberRef,
        options: &kafko_core::GroupPollOptions,
    ) -> kafko_core::Result<Polled> {
        delivered(self.log(), group, topic, Some(member), options).await
    }
    async fn commit_group_offsets(
        &self,
        group: &str,
        topic: &str,
        member: Option<&kafko_core::MemberRef>,
        offsets: Option<&[kafko_core::PartitionOffset]>,
    ) -> kafko_core::Result<Vec<kafko_core::PartitionOffset>> {
        let k = self.log();
        Ok(k.group(group)?
            .commit(&k.topic(topic)?, member, offsets)
            .await?)
    }
    async fn seek_group(
        &self,
        group: &str,
        topic: &str,
        member: Option<&kafko_core::MemberRef>,
        partition: Option<u32>,
        to: kafko_core::SeekTo,
    ) -> kafko_core::Result<Vec<kafko_core::PartitionOffset>> {
        let k = self.log();
        Ok(k.group(group)?
            .seek(&k.topic(topic)?, member, partition, to)
            .await?)
    }
    async fn join_group(
        &self,
        group: &str,
        topic: &str,
        member_id: Option<&str>,
        session_timeout: Duration,
    ) -> kafko_core::Result<kafko_core::Membership> {
        let k = self.log();
        Ok(k.group(group)?
            .join(&k.topic(topic)?, member_id, session_timeout)?)
    }
    async fn leave_group(&self, group: &str, topic: &str, member: &str) -> kafko_core::Result<()> {
        let k = self.log();
        Ok(k.group(group)?
            .leave_topic(&k.topic(topic)?, member)
            .await?)
    }
    async fn delete_group(&self, group: &str) -> kafko_core::Result<()> {
        Ok(self.log().group(group)?.delete().await?)
    }
    async fn set_group_config(
        &self,
        group: &str,
        config: kafko_core::GroupConfig,
    ) -> kafko_core::Result<()> {
        Ok(self.log().group(group)?.configure(config).await?)
    }
}

async fn delivered(
    k: &Kafko,
    group: &str,
    topic: &str,
    member: Option<&kafko_core::MemberRef>,
    options: &kafko_core::GroupPollOptions,
) -> kafko_core::Result<Polled> {
    let polled = k
        .group(group)?
        .poll(&k.topic(topic)?, member, options)
        .await?;
    let (generation, positions) = (polled.generation(), polled.positions().to_vec());
    Ok(Polled {
        records: polled.delivered(),
        generation,
        positions,
    })
}

impl GroupOps for Kafko {
    fn log(&self) -> &Kafko {
        self
    }
}
