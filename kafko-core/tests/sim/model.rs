//! A random workload against a live [`Kafko`] and the model of what it acknowledged,
//! plus the check of a reopened log against that model.
//!
//! The model tracks, per partition, every acknowledged record at its offset and whether
//! it is *durable* (acknowledged under `fsync = always`, with `sync: true`, covered by a
//! successful `sync()`, or by a completed `shutdown()`), and the values of records whose
//! send failed (they may or may not be in the log). After a reopen, [`Model::verify`]
//! reads every partition and checks:
//! - every required record (durable ones after a power cut; every acknowledged one after
//!   a process restart) at or above the log start is there, byte for byte, at its offset
//!   (on compacted topics: it, or a later record with the same key);
//! - each partition is a gap-free run of offsets from its log start (compacted: strictly
//!   increasing), and every record served is one that was sent, at the offset it was
//!   acknowledged at, never a duplicate and never bytes that were not sent;
//! - every topic whose creation was acknowledged exists with its configuration.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use kafko_core::{
    Bytes, CleanupPolicy, Compression, FsyncPolicy, Kafko, KafkoError, ProducerRecord, SendOptions,
    TopicConfig,
};

use super::Rng;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub timestamp: i64,
    pub durable: bool,
}

#[derive(Debug, Clone, Default)]
pub struct PartModel {
    pub known: BTreeMap<u64, Expected>,
    pub log_start: u64,
}

#[derive(Debug, Clone)]
pub struct TopicModel {
    pub config: TopicConfig,
    /// Creation acknowledged (or the topic was seen after a reopen).
    pub confirmed: bool,
    pub parts: Vec<PartModel>,
    /// Values sent without an acknowledgement: may or may not be in the log.
    pub maybe: HashMap<Bytes, (Option<Bytes>, i64)>,
}

/// `(log start, high watermark)` of each partition of the log that crashed.
pub type LiveOffsets = BTreeMap<(String, u32), (u64, u64)>;

/// Which step of the workload was running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Open,
    Create,
    Send,
    Batch,
    Concurrent,
    SyncTopic,
    SyncAll,
    Retention,
    Compact,
    Idle,
    Shutdown,
}

#[derive(Debug, Default, Clone)]
pub struct Model {
    pub topics: BTreeMap<String, TopicModel>,
    pub seq: u64,
    pub seed: u64,
    /// Statistics.
    pub acked: u64,
    pub durable_checked: u64,
    pub records_checked: u64,
    /// Create every topic (the fault sweep wants them all); otherwise each with p = 3/4.
    pub all_topics: bool,
    /// Largest padding of a record value, when not the default (200 bytes).
    pub max_pad: Option<u64>,
}

/// Topic names and how the workload configures them.
pub const TOPICS: [&str; 4] = ["always", "never", "interval", "compact"];

pub fn topic_config(name: &str, rng: &mut Rng) -> TopicConfig {
    let compression = match rng.below(3) {
        0 => Compression::None,
        1 => Compression::Lz4,
        _ => Compression::Zstd,
    };
    let base = TopicConfig {
        partitions: 1 + rng.below(2) as u32,
        segment_bytes: 4096,
        compression,
        retention_ms: None,
        ..Default::default()
    };
    match name {
        "always" => TopicConfig {
            fsync: FsyncPolicy::Always,
            retention_bytes: Some(8_192),
            ..base
        },
        "never" => TopicConfig {
            fsync: FsyncPolicy::Never,
            retention_bytes: rng.chance(1, 2).then_some(8_192),
            ..base
        },
        "interval" => TopicConfig {
            fsync: FsyncPolicy::IntervalMs { interval_ms: 20 },
            ..base
        },
        _ => TopicConfig {
            fsync: if rng.chance(1, 2) {
                FsyncPolicy::Always
            } else {
                FsyncPolicy::Never
            },
            cleanup_policy: CleanupPolicy::Compact,
            // Record timestamps are in 2023: the default (1 day) expires every tombstone.
            delete_retention_ms: if rng.chance(1, 2) {
                u64::MAX / 4
            } else {
                24 * 3600 * 1000
            },
            ..base
        },
    }
}

/// Options every simulated open uses: no background maintenance (the test runs
/// retention and compaction itself, so a seed replays exactly).
pub async fn open(fs: &super::SimFs) -> kafko_core::Result<Kafko> {
    Ok(Kafko::builder("/data")
        .storage(fs.storage())
        .retention_check_interval(Duration::from_secs(10 * 365 * 24 * 3600))
        .open()
        .await?)
}

impl Model {
    pub fn new(seed: u64) -> Self {
        Model {
            seed,
            ..Default::default()
        }
    }

    fn next_record(&mut self, topic: &str, rng: &mut Rng) -> ProducerRecord {
        self.seq += 1;
        let n = self.seq;
        let max = if rng.chance(1, 8) {
            1500
        } else {
            self.max_pad.unwrap_or(200)
        };
        let pad = rng.below(max) as usize;
        let mut v = format!("{:x}/{n}/", self.seed).into_bytes();
        // Incompressible padding, so compressed topics roll segments too.
        v.extend(rng.bytes(pad).iter().map(|b| b'a' + b % 26));
        let t = &self.topics[topic];
        let mut r = ProducerRecord::new(v).with_timestamp(1_700_000_000_000 + n as i64);
        if t.config.cleanup_policy.compacts() {
            r = r.with_key(format!("k{}", rng.below(5)));
            if rng.chance(1, 10) {
                r.value = None;
            }
        } else {
            match rng.below(3) {
                0 => r = r.with_key(format!("k{}", rng.below(20))),
                1 => r = r.with_partition(rng.below(u64::from(t.config.partitions)) as u32),
                _ => {}
            }
            if rng.chance(1, 6) {
                r = r.with_header("h", format!("{n}"));
            }
        }
        r
    }

    /// Records the outcome of a send.
    fn record_send(
        &mut self,
        topic: &str,
        records: &[ProducerRecord],
        sync: bool,
        result: &kafko_core::Result<Vec<kafko_core::RecordMetadata>>,
    ) {
        let t = self.topics.get_mut(topic).expect("topic");
        match result {
            Ok(metas) => {
                let durable = sync || t.config.fsync == FsyncPolicy::Always;
                for (r, m) in records.iter().zip(metas) {
                    let e = Expected {
                        key: r.key.clone(),
                        value: r.value.clone(),
                        timestamp: m.timestamp,
                        durable,
                    };
                    let p = &mut t.parts[m.partition as usize];
                    assert!(
                        !p.known.contains_key(&m.offset),
                        "offset {} of {topic}/{} acknowledged twice",
                        m.offset,
                        m.partition
                    );
                    p.known.insert(m.offset, e);
                    self.acked += 1;
                }
            }
            Err(_) => {
                for r in records {
                    t.maybe.insert(
                        r.value.clone().unwrap_or_else(|| unique_of(r)),
                        (r.key.clone(), r.timestamp.unwrap_or_default()),
                    );
                }
            }
        }
    }

    /// Marks every acknowledged record of `topic` durable (after a successful fsync).
    pub fn mark_durable(&mut self, topic: Option<&str>) {
        for (name, t) in &mut self.topics {
            if topic.is_none_or(|n| n == name) {
                for p in &mut t.parts {
                    for e in p.known.values_mut() {
                        e.durable = true;
                    }
                }
            }
        }
    }

    /// The log start and high watermark of every partition of a live log.
    pub fn capture(&self, k: &Kafko) -> LiveOffsets {
        let mut out = BTreeMap::new();
        for (name, t) in &self.topics {
            for p in 0..t.config.partitions {
                if let Ok(o) = k
                    .topic(name)
                    .map_err(kafko_core::KafkoError::from)
                    .and_then(|t| Ok(t.partition(p)?.offsets()?))
                {
                    out.insert((name.clone(), p), (o.log_start, o.high_watermark));
                }
            }
        }
        out
    }

    /// Creates the topics this seed uses (some may already exist).
    pub async fn create_topics(&mut self, k: &Kafko, rng: &mut Rng) -> Step {
        for name in TOPICS {
            if self.topics.contains_key(name) || (!self.all_topics && rng.chance(1, 4)) {
                continue;
            }
            let config = topic_config(name, rng);
            self.topics.insert(
                name.to_owned(),
                TopicModel {
                    config: config.clone(),
                    confirmed: false,
                    parts: vec![PartModel::default(); config.partitions as usize],
                    maybe: HashMap::new(),
                },
            );
            if k.create_topic_with_config(name, config).await.is_ok() {
                self.topics.get_mut(name).unwrap().confirmed = true;
            }
        }
        Step::Create
    }

    fn pick_topic(&self, rng: &mut Rng) -> Option<String> {
        let names: Vec<&String> = self.topics.keys().collect();
        if names.is_empty() {
            return None;
        }
        Some(names[rng.below(names.len() as u64) as usize].clone())
    }

    /// Runs one random step.
    pub async fn step(&mut self, k: &Kafko, rng: &mut Rng) -> Step {
        let choice = rng.below(20);
        self.step_as(k, rng, choice).await
    }

    /// Runs step number `choice` (0..20: sends 0..=12, syncs 13..=15, retention 16,
    /// compaction 17, idle 18, topic creation 19).
    pub async fn step_as(&mut self, k: &Kafko, rng: &mut Rng, choice: u64) -> Step {
        let Some(topic) = self.pick_topic(rng) else {
            return self.create_topics(k, rng).await;
        };
        match choice {
            0..=6 => {
                let r = self.next_record(&topic, rng);
                let sync = rng.chance(1, 5);
                let res = produce(
                    k,
                    &topic,
                    vec![r.clone()],
                    SendOptions {
                        sync,
                        no_wait: false,
                    },
                )
                .await;
                self.record_send(&topic, &[r], sync, &res);
                Step::Send
            }
            7..=9 => {
                let n = 1 + rng.below(6);
                let records: Vec<_> = (0..n).map(|_| self.next_record(&topic, rng)).collect();
                let sync = rng.chance(1, 4);
                let p = k.producer_for(&topic);
                let res = match p {
                    Ok(p) => p
                        .send_batch_with(
                            records.clone(),
                            SendOptions {
                                sync,
                                no_wait: false,
                            },
                        )
                        .await
                        .map_err(KafkoError::from),
                    Err(e) => Err(e.into()),
                };
                self.record_send(&topic, &records, sync, &res);
                Step::Batch
            }
            10..=12 => {
                let n = 2 + rng.below(6);
                let mut set = tokio::task::JoinSet::new();
                let mut sent = Vec::new();
                for i in 0..n {
                    let r = self.next_record(&topic, rng);
                    let sync = rng.chance(1, 5);
                    let k = k.clone();
                    let t = topic.clone();
                    let rc = r.clone();
                    sent.push((r, sync));
                    set.spawn(async move {
                        let opts = SendOptions {
                            sync,
                            no_wait: false,
                        };
                        (i, produce(&k, &t, vec![rc], opts).await)
                    });
                }
                let mut results: Vec<_> = set.join_all().await;
                results.sort_by_key(|(i, _)| *i);
                for ((_, res), (r, sync)) in results.into_iter().zip(sent) {
                    self.record_send(&topic, &[r], sync, &res);
                }
                Step::Concurrent
            }
            13 | 14 => {
                if let Ok(p) = k.producer_for(&topic)
                    && p.sync().await.is_ok()
                {
                    self.mark_durable(Some(&topic));
                }
                Step::SyncTopic
            }
            15 => {
                if k.sync().await.is_ok() {
                    self.mark_durable(None);
                }
                Step::SyncAll
            }
            16 => {
                let _ = k.enforce_retention().await;
                Step::Retention
            }
            17 => {
                if self.topics.contains_key("compact") {
                    let _ = k.compact_now("compact").await;
                }
                Step::Compact
            }
            18 => {
                tokio::time::sleep(Duration::from_millis(25)).await;
                Step::Idle
            }
            _ => self.create_topics(k, rng).await,
        }
    }

    /// Checks a freshly opened log against the model, then adopts what it holds (all of
    /// it on disk now) as the new model. `all_acked` requires every acknowledged record
    /// (process restart), not just the durable ones (power cut). `live` is the log start
    /// of each partition in the log that crashed, when known, and `retention_in_flight`
    /// says a retention pass was interrupted (so the log start may have moved up).
    pub fn verify(
        &mut self,
        k: &Kafko,
        all_acked: bool,
        live: Option<&LiveOffsets>,
        retention_in_flight: bool,
    ) -> Result<(), String> {
        let listed: HashSet<String> = k.list_topics().into_iter().collect();
        for name in &listed {
            if !self.topics.contains_key(name) {
                return Err(format!("unknown topic {name} after reopen"));
            }
        }
        let names: Vec<String> = self.topics.keys().cloned().collect();
        for name in names {
            let t = self.topics.get_mut(&name).unwrap();
            if !listed.contains(&name) {
                if t.confirmed {
                    return Err(format!("topic {name} was created but is gone"));
                }
                self.topics.remove(&name);
                continue;
            }
            let d = k
                .describe_topic(&name)
                .map_err(|e| format!("describe {name}: {e}"))?;
            if d.config != t.config {
                return Err(format!("topic {name} config changed: {:?}", d.config));
            }
            t.confirmed = true;
            let compacted = t.config.cleanup_policy.compacts();
            for (p, pm) in t.parts.iter_mut().enumerate() {
                let p = p as u32;
                let kafko_core::Offsets {
                    log_start: start,
                    high_watermark: hw,
                    ..
                } = k
                    .topic(&name)
                    .map_err(kafko_core::KafkoError::from)
                    .and_then(|t| Ok(t.partition(p)?.offsets()?))
                    .map_err(|e| format!("offsets {name}/{p}: {e}"))?;
                if start < pm.log_start {
                    return Err(format!(
                        "{name}/{p}: log start went back from {} to {start}",
                        pm.log_start
                    ));
                }
                let mut got: BTreeMap<u64, Expected> = BTreeMap::new();
                let mut at = start;
                while at < hw {
                    let f = k
                        .topic(&name)
                        .map_err(kafko_core::KafkoError::from)
                        .and_then(|t| Ok(t.partition(p)?.read(at, 1000, 1 << 20)?))
                        .map_err(|e| format!("{name}/{p}: read at {at} failed: {e}"))?;
                    if f.next_offset <= at {
                        return Err(format!("{name}/{p}: read made no progress at {at}"));
                    }
                    for r in f.records {
                        if r.offset < at || got.contains_key(&r.offset) {
                            return Err(format!("{name}/{p}: offset {} out of order", r.offset));
                        }
                        got.insert(
                            r.offset,
                            Expected {
                                key: r.key,
                                value: r.value,
                                timestamp: r.timestamp,
                                durable: true,
                            },
                        );
                    }
                    at = f.next_offset;
                }
                // Gap-free: every offset of [start, hw) holds a record (compaction aside).
                if !compacted {
                    let expect: Vec<u64> = (start..hw).collect();
                    let have: Vec<u64> = got.keys().copied().collect();
                    if have != expect {
                        return Err(format!(
                            "{name}/{p}: offsets are not a gap-free run {start}..{hw}: {:?}",
                            &have[..have.len().min(20)]
                        ));
                    }
                }
                // Every record served was sent, at its acknowledged offset.
                let mut seen_maybe = HashSet::new();
                for (o, g) in &got {
                    match pm.known.get(o) {
                        Some(e) => {
                            if (&e.key, &e.value, e.timestamp) != (&g.key, &g.value, g.timestamp) {
                                return Err(format!(
                                    "{name}/{p}@{o}: served {:?} but {:?} was acknowledged",
                                    g.value, e.value
                                ));
                            }
                        }
                        None => {
                            let id = g.value.clone().unwrap_or_else(|| tomb_id(g));
                            let ok = t.maybe.get(&id).is_some_and(|(key, ts)| {
                                *key == g.key && (*ts == g.timestamp || *ts == 0)
                            });
                            if !ok || !seen_maybe.insert(id) {
                                return Err(format!(
                                    "{name}/{p}@{o}: served a record that was never sent there: {:?}",
                                    g.value
                                ));
                            }
                        }
                    }
                }
                // Every required record is still there.
                let required = |e: &Expected| all_acked || e.durable;
                for (o, e) in pm.known.range(start..) {
                    if !required(e) {
                        continue;
                    }
                    self.durable_checked += 1;
                    if got.contains_key(o) {
                        continue;
                    }
                    // Compaction may remove a record with a later one for its key, and
                    // that later one too once it is a tombstone past `delete_retention_ms`.
                    let expired_tombstone =
                        e.value.is_none() && t.config.delete_retention_ms < u64::MAX / 8;
                    let superseded = compacted
                        && (expired_tombstone
                            || got
                                .range(o + 1..)
                                .any(|(_, g)| g.key.is_some() && g.key == e.key)
                            || pm
                                .known
                                .range(o + 1..)
                                .any(|(_, k)| k.value.is_none() && k.key == e.key)
                            || t.maybe.iter().any(|(id, (key, ts))| {
                                id.starts_with(b"tombstone:") && *key == e.key && *ts > e.timestamp
                            }));
                    if !superseded {
                        return Err(format!(
                            "{name}/{p}: acknowledged{} record at {o} lost (log {start}..{hw}): {:?}",
                            if e.durable { " and durable" } else { "" },
                            e.value
                        ));
                    }
                }
                if let Some((&last, _)) = pm.known.iter().rev().find(|(_, e)| required(e))
                    && last >= start
                    && hw <= last
                {
                    return Err(format!(
                        "{name}/{p}: high watermark {hw} below required {last}"
                    ));
                }
                // The log start checkpoint is written before segments are deleted: it
                // is exactly what the crashed log had, unless a retention pass was cut
                // short (then anywhere up to that log's end).
                if let Some(&(live_start, live_hw)) = live.and_then(|l| l.get(&(name.clone(), p))) {
                    let ok = if retention_in_flight {
                        (live_start..=live_hw).contains(&start)
                    } else {
                        start == live_start
                    };
                    if !ok {
                        return Err(format!(
                            "{name}/{p}: log start {start} after reopen, {live_start} before (hw {live_hw})"
                        ));
                    }
                }
                self.records_checked += got.len() as u64;
                pm.known = got;
                pm.log_start = start;
            }
            t.maybe.clear();
        }
        Ok(())
    }
}

/// The identity of a tombstone (no value) in `maybe`: its key.
fn tomb_id(r: &Expected) -> Bytes {
    let mut v = b"tombstone:".to_vec();
    v.extend_from_slice(r.key.as_deref().unwrap_or_default());
    v.extend_from_slice(format!(":{}", r.timestamp).as_bytes());
    Bytes::from(v)
}

fn unique_of(r: &ProducerRecord) -> Bytes {
    tomb_id(&Expected {
        key: r.key.clone(),
        value: None,
        timestamp: r.timestamp.unwrap_or_default(),
        durable: false,
    })
}

/// Whether an error is the dead disk (or a fault we injected) surfacing.
pub fn is_io(e: &KafkoError) -> bool {
    matches!(
        e,
        KafkoError::Io { .. }
            | KafkoError::PartitionReadOnly { .. }
            | KafkoError::ShuttingDown
            | KafkoError::StorageFull { .. }
    )
}

/// Appends through a topic handle resolved for this one send.
async fn produce(
    k: &Kafko,
    topic: &str,
    records: Vec<ProducerRecord>,
    options: SendOptions,
) -> kafko_core::Result<Vec<kafko_core::RecordMetadata>> {
    Ok(k.topic(topic)?.produce(records, options).await?)
}
