//! Crash loop: the real `kafko` binary under a 16-connection produce load is killed
//! with SIGKILL at a random (seeded) moment, restarted, and read back. Every
//! acknowledged record must be there byte for byte at its acknowledged position, every
//! partition must be a gap-free prefix (each offset below the high watermark readable),
//! and nothing may appear that a client never sent, or twice. A 17th connection produces
//! into a topic that only exists once its first request auto-creates it: an acknowledged
//! topic must survive too. An 18th connection produces over the Kafka protocol (acks=all,
//! batches of 1–4 records): what it was acknowledged must survive the same way.
//!
//! The second test does the same with consumer-group commits in the mix (8 producer
//! and 8 committer connections): after every restart each group's committed offset is
//! at least its last acknowledged commit (and no more than its last attempted one).
//!
//! Default: 20 kills each. `KAFKO_LONG=1`: 200. `KAFKO_CRASH_SEED=N` replays a run (the
//! seed is printed). Process crashes keep the page cache, so this runs with `fsync=never`: the
//! promise is that an ack means the bytes reached the kernel.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use common::kafka::{Kafka, Rec, batch, produce_request};
use common::{Server, client, json};
use serde_json::json;

const PARTITIONS: u64 = 4;
const CONNECTIONS: usize = 16;

/// splitmix64: a seeded, replayable source of "random" moments and payloads.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What the clients know: acknowledged positions, and every payload ever sent.
#[derive(Default)]
struct Ledger {
    /// (partition, offset) → value, from 201 responses only.
    acked: HashMap<(u64, u64), Vec<u8>>,
    /// Every value sent, acknowledged or not (a killed request may still have landed).
    sent: HashSet<Vec<u8>>,
    /// Records acknowledged into auto-created topics: (topic, offset, value).
    auto: Vec<(String, u64, Vec<u8>)>,
}

/// Produces into `auto-{cycle}`, a topic that does not exist until the first request
/// auto-creates it: a topic whose first record was acknowledged must survive the kill.
async fn auto_creator(
    c: reqwest::Client,
    base: String,
    cycle: u64,
    seed: u64,
    ledger: Arc<Mutex<Ledger>>,
) {
    let mut rng = Rng(seed ^ cycle.rotate_left(17));
    let topic = format!("auto-{cycle}");
    for n in 0u64.. {
        let v = payload(&mut rng, &format!("auto-c{cycle}-n{n}"));
        let url = format!("{base}/v1/topics/{topic}/records?partition=0");
        let Ok(resp) = c.post(url).body(v.clone()).send().await else {
            return;
        };
        let status = resp.status().as_u16();
        let Ok(text) = resp.text().await else {
            return;
        };
        match status {
            201 => {
                let b: serde_json::Value = serde_json::from_str(&text).unwrap();
                let offset = b["offsets"][0]["offset"].as_u64().unwrap();
                assert_eq!(offset, n, "auto topic offsets are dense from 0");
                ledger.lock().unwrap().auto.push((topic.clone(), offset, v));
            }
            503 => return,
            other => panic!("auto-create produce answered {other}: {text}"),
        }
    }
}

/// Every auto-created topic acknowledged so far exists; this cycle's records are there
/// byte for byte.
async fn verify_auto(c: &reqwest::Client, s: &Server, ledger: &Ledger, cycle: u64) {
    let list = json(c.get(s.url("/v1/topics")).send().await.unwrap()).await;
    let topics: HashSet<&str> = list["topics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    let current = format!("auto-{cycle}");
    for (topic, offset, value) in &ledger.auto {
        assert!(
            topics.contains(topic.as_str()),
            "cycle {cycle}: acknowledged auto-created topic {topic} is gone"
        );
        if *topic == current {
            let r = c
                .get(s.url(&format!("/v1/topics/{topic}/partitions/0/records/{offset}")))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "cycle {cycle}: {topic}@{offset} lost");
            assert_eq!(r.bytes().await.unwrap().as_ref(), value.as_slice());
        }
    }
}

/// A unique, partly binary payload: the id in text, then bytes from the seed (NUL and
/// non-UTF-8 included), so byte-for-byte comparison means something.
fn payload(rng: &mut Rng, id: &str) -> Vec<u8> {
    let mut v = id.as_bytes().to_vec();
    v.push(0);
    let extra = 8 + rng.below(120) as usize;
    v.extend((0..extra).map(|_| rng.next() as u8));
    v
}

/// One producer connection: raw-body single records (even workers) or JSON batches of
/// 1–4 base64 values (odd workers), until the server goes away.
async fn producer(
    c: reqwest::Client,
    base: String,
    worker: usize,
    cycle: u64,
    seed: u64,
    ledger: Arc<Mutex<Ledger>>,
) -> usize {
    let mut rng = Rng(seed ^ ((cycle << 32) | worker as u64));
    let mut acked = 0;
    for n in 0u64.. {
        let id = format!("c{cycle}-w{worker}-n{n}");
        let partition = rng.below(PARTITIONS);
        let (req, values) = if worker.is_multiple_of(2) {
            let v = payload(&mut rng, &id);
            let url = format!("{base}/v1/topics/crash/records?partition={partition}&key={id}");
            (c.post(url).body(v.clone()), vec![v])
        } else {
            let count = 1 + rng.below(4);
            let values: Vec<Vec<u8>> = (0..count)
                .map(|i| payload(&mut rng, &format!("{id}-{i}")))
                .collect();
            let records: Vec<_> = values
                .iter()
                .map(|v| json!({"value": B64.encode(v), "partition": partition}))
                .collect();
            let url = format!("{base}/v1/topics/crash/records?format=base64&answer=records");
            (c.post(url).json(&json!({ "records": records })), values)
        };
        {
            let mut l = ledger.lock().unwrap();
            for v in &values {
                assert!(l.sent.insert(v.clone()), "payload reused");
            }
        }
        let Ok(resp) = req.send().await else {
            return acked;
        };
        let status = resp.status().as_u16();
        let Ok(text) = resp.text().await else {
            return acked;
        };
        match status {
            201 => {}
            503 => continue,
            other => panic!("produce answered {other}: {text}"),
        }
        let body: serde_json::Value = serde_json::from_str(&text).expect("201 body is JSON");
        let offsets = body["offsets"].as_array().expect("offsets");
        assert_eq!(offsets.len(), values.len(), "{body}");
        let mut l = ledger.lock().unwrap();
        for (o, v) in offsets.iter().zip(values) {
            let p = o["partition"].as_u64().unwrap();
            assert_eq!(p, partition, "record routed to another partition");
            let pos = (p, o["offset"].as_u64().unwrap());
            let previous = l.acked.insert(pos, v);
            assert!(previous.is_none(), "offset {pos:?} acknowledged twice");
            acked += 1;
        }
    }
    acked
}

/// A Kafka-protocol producer on its own connection: batches of 1–4 records to a random
/// partition with acks=all, until the server goes away; every acknowledged record goes
/// into the ledger at the offset the broker gave it.
async fn kafka_producer(addr: String, cycle: u64, seed: u64, ledger: Arc<Mutex<Ledger>>) -> usize {
    let mut rng = Rng(seed ^ (cycle << 32) ^ 0x4b41_464b);
    let Ok(stream) = tokio::net::TcpStream::connect(&addr).await else {
        return 0;
    };
    let mut k = Kafka { stream, next: 1 };
    let mut acked = 0;
    for n in 0u64.. {
        let partition = rng.below(PARTITIONS);
        let count = 1 + rng.below(4);
        let values: Vec<&'static [u8]> = (0..count)
            .map(|i| {
                &*Box::leak(
                    payload(&mut rng, &format!("c{cycle}-kafka-n{n}-{i}")).into_boxed_slice(),
                )
            })
            .collect();
        {
            let mut l = ledger.lock().unwrap();
            for v in &values {
                assert!(l.sent.insert(v.to_vec()), "payload reused");
            }
        }
        let records: Vec<Rec> = values
            .iter()
            .map(|v| Rec {
                value: Some(v),
                timestamp: 1_700_000_000_000,
                ..Rec::default()
            })
            .collect();
        let request = produce_request("crash", partition as i32, batch(&records, 0, None), -1);
        let Some(answer) = k.try_call(&request, 9).await else {
            return acked;
        };
        let p = &answer.responses[0].partition_responses[0];
        match p.error_code {
            0 => {}
            // Busy or stopping: nothing stored, or stored unacknowledged.
            7 | 6 => continue,
            other => panic!("Kafka produce answered error {other}"),
        }
        let mut l = ledger.lock().unwrap();
        for (i, v) in values.iter().enumerate() {
            let pos = (partition, p.base_offset as u64 + i as u64);
            let previous = l.acked.insert(pos, v.to_vec());
            assert!(previous.is_none(), "offset {pos:?} acknowledged twice");
            acked += 1;
        }
    }
    acked
}

/// Reads every partition from offset 0 and checks the ledger against it. Returns the
/// number of records stored.
async fn verify(c: &reqwest::Client, s: &Server, ledger: &Ledger, cycle: u64) -> usize {
    let mut total = 0;
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    for p in 0..PARTITIONS {
        let mut next = 0u64;
        let hw = loop {
            let url = s.url(&format!(
                "/v1/topics/crash/records?partition={p}&offset={next}&max_records=5000&format=base64"
            ));
            let r = c.get(url).send().await.unwrap();
            let st = r.status().as_u16();
            let b = json(r).await;
            assert_eq!(st, 200, "cycle {cycle}: fetch {p}@{next}: {b}");
            assert_eq!(b["log_start_offset"], 0, "nothing is ever deleted here");
            let hw = b["high_watermark"].as_u64().unwrap();
            let records = b["records"].as_array().unwrap();
            for r in records {
                let off = r["offset"].as_u64().unwrap();
                assert_eq!(
                    off, next,
                    "cycle {cycle}: partition {p} has a gap at {next}"
                );
                let value = B64.decode(r["value"].as_str().unwrap()).unwrap();
                assert!(
                    ledger.sent.contains(&value),
                    "cycle {cycle}: {p}@{off} holds bytes no client sent"
                );
                assert!(
                    seen.insert(value.clone()),
                    "cycle {cycle}: {p}@{off} duplicates a record"
                );
                if let Some(acked) = ledger.acked.get(&(p, off)) {
                    assert_eq!(
                        &value, acked,
                        "cycle {cycle}: {p}@{off} differs from its ack"
                    );
                }
                next += 1;
            }
            if next >= hw || records.is_empty() {
                break hw;
            }
        };
        assert_eq!(
            next, hw,
            "cycle {cycle}: partition {p} readable up to {next} of {hw}"
        );
        total += next as usize;
    }
    // Acks below the high watermark were checked in place above; one at or past it
    // would be missing from `seen` (payloads are unique).
    let lost: Vec<_> = ledger
        .acked
        .values()
        .filter(|v| !seen.contains(*v))
        .take(5)
        .collect();
    assert!(
        lost.is_empty(),
        "cycle {cycle}: {} acknowledged records lost",
        lost.len()
    );
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_under_load_loses_no_acknowledged_record() {
    let (kills, seed) = kills_and_seed();
    eprintln!("crash loop: {kills} kills, KAFKO_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // One client per run; 16 producer tasks share its pool, so 16 connections.
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .pool_max_idle_per_host(CONNECTIONS)
        .build()
        .unwrap();
    let ledger: Arc<Mutex<Ledger>> = Arc::default();
    let started = Instant::now();
    let kafka = ["--kafka-bind", "127.0.0.1:0"];
    let mut s = Server::start(&dir, &["--default-partitions", "4", kafka[0], kafka[1]]).await;
    let r = client()
        .put(s.url("/v1/topics/crash"))
        .json(&json!({"partitions": PARTITIONS, "segment_bytes": 65536}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let (mut acked_total, mut kafka_total) = (0, 0);
    for cycle in 0..kills {
        let creator = tokio::spawn(auto_creator(
            c.clone(),
            s.base.clone(),
            cycle,
            seed,
            ledger.clone(),
        ));
        let workers: Vec<_> = (0..CONNECTIONS)
            .map(|w| {
                tokio::spawn(producer(
                    c.clone(),
                    s.base.clone(),
                    w,
                    cycle,
                    seed,
                    ledger.clone(),
                ))
            })
            .collect();
        let kafka_worker = tokio::spawn(kafka_producer(
            s.kafka.clone().expect("started with --kafka-bind"),
            cycle,
            seed,
            ledger.clone(),
        ));
        // A random moment: sometimes right at the start, mostly mid-stream.
        let delay = 20 + rng.below(480);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        s.sigkill().await;
        for w in workers {
            acked_total += w.await.expect("producer panicked");
        }
        let over_kafka = kafka_worker.await.expect("Kafka producer panicked");
        acked_total += over_kafka;
        kafka_total += over_kafka;
        creator.await.expect("auto-creator panicked");
        s = Server::start(&dir, &kafka).await;
        let log = std::fs::read_to_string(dir.with_extension("log")).unwrap();
        assert!(
            log.contains("no clean shutdown marker; scanning active segments"),
            "a restart after SIGKILL must run the recovery scan:\n{log}"
        );
        let stored = {
            let l = std::mem::take(&mut *ledger.lock().unwrap());
            let stored = verify(&c, &s, &l, cycle).await;
            verify_auto(&c, &s, &l, cycle).await;
            *ledger.lock().unwrap() = l;
            stored
        };
        eprintln!(
            "cycle {cycle}: killed after {delay} ms; {stored} records stored, {} acknowledged so far",
            ledger.lock().unwrap().acked.len()
        );
    }
    let l = ledger.lock().unwrap();
    assert_eq!(acked_total, l.acked.len());
    assert!(
        l.acked.len() as u64 > kills * 10,
        "load too light to mean anything: {} acks over {kills} kills",
        l.acked.len()
    );
    assert!(
        kafka_total as u64 >= kills,
        "the Kafka producer was acknowledged only {kafka_total} records"
    );
    let auto_topics: HashSet<&str> = l.auto.iter().map(|a| a.0.as_str()).collect();
    eprintln!(
        "crash loop: {kills} SIGKILLs survived, {} acknowledged records ({kafka_total} over Kafka) verified byte for byte, 0 lost, {} sent; \
         {} auto-created topics ({} acked records in them) all survived; {:.1} s (seed {seed})",
        l.acked.len(),
        l.sent.len(),
        auto_topics.len(),
        l.auto.len(),
        started.elapsed().as_secs_f64()
    );
}

fn kills_and_seed() -> (u64, u64) {
    let long = std::env::var("KAFKO_LONG").is_ok_and(|v| v == "1");
    let seed = std::env::var("KAFKO_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    (if long { 200 } else { 20 }, seed)
}

/// Records per partition produced before the commit loop (commits must stay below the
/// high watermark): enough for ~50 commits per group per cycle.
fn prefill(kills: u64) -> u64 {
    kills * 50
}

/// One committer: group `g{i}` commits ever larger offsets of partition `i % 4` as the
/// implicit member, recording what was acknowledged and what was attempted.
async fn committer(
    c: reqwest::Client,
    base: String,
    i: usize,
    start: u64,
    progress: Arc<Mutex<Vec<(u64, u64)>>>,
    cap: u64,
) {
    let p = (i as u64) % PARTITIONS;
    let url = format!("{base}/v1/groups/g{i}/topics/crash/offsets");
    let mut offset = start;
    while offset < cap {
        offset += 1;
        progress.lock().unwrap()[i].1 = offset;
        let body = json!({"offsets": [{"partition": p, "offset": offset}]});
        let Ok(resp) = c.put(&url).json(&body).send().await else {
            return;
        };
        let status = resp.status().as_u16();
        let Ok(text) = resp.text().await else {
            return;
        };
        match status {
            200 => {
                let b: serde_json::Value = serde_json::from_str(&text).unwrap();
                assert_eq!(b["offsets"][0]["offset"], offset, "{b}");
                progress.lock().unwrap()[i].0 = offset;
            }
            503 => continue,
            other => panic!("commit answered {other}: {text}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_during_group_commits_keeps_every_acknowledged_commit() {
    let (kills, seed) = kills_and_seed();
    eprintln!("group crash loop: {kills} kills, KAFKO_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    let mut s = Server::start(&dir, &[]).await;
    let r = c
        .put(s.url("/v1/topics/crash"))
        .json(&json!({"partitions": PARTITIONS}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let ledger: Arc<Mutex<Ledger>> = Arc::default();
    for p in 0..PARTITIONS {
        for batch in 0..prefill(kills) / 1000 {
            let values: Vec<String> = (0..1000).map(|n| format!("pre-{p}-{batch}-{n}")).collect();
            let records: Vec<_> = values
                .iter()
                .map(|v| json!({"value": v, "partition": p}))
                .collect();
            let r = c
                .post(s.url("/v1/topics/crash/records?answer=records"))
                .json(&json!({ "records": records }))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201);
            let b = json(r).await;
            let mut l = ledger.lock().unwrap();
            for (o, v) in b["offsets"].as_array().unwrap().iter().zip(values) {
                let pos = (p, o["offset"].as_u64().unwrap());
                l.sent.insert(v.clone().into_bytes());
                l.acked.insert(pos, v.into_bytes());
            }
        }
    }
    const COMMITTERS: usize = 8;
    // (last acknowledged, last attempted) per committer / group.
    let progress: Arc<Mutex<Vec<(u64, u64)>>> = Arc::new(Mutex::new(vec![(0, 0); COMMITTERS]));
    let started = Instant::now();
    for cycle in 0..kills {
        let mut tasks = Vec::new();
        for w in 0..CONNECTIONS / 2 {
            tasks.push(tokio::spawn({
                let fut = producer(c.clone(), s.base.clone(), w, cycle, seed, ledger.clone());
                async move {
                    fut.await;
                }
            }));
        }
        for i in 0..COMMITTERS {
            // Resume from what the server has (a commit may have landed unacknowledged).
            let start = progress.lock().unwrap()[i].0;
            tasks.push(tokio::spawn(committer(
                c.clone(),
                s.base.clone(),
                i,
                start,
                progress.clone(),
                prefill(kills),
            )));
        }
        let delay = 20 + rng.below(480);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        s.sigkill().await;
        for t in tasks {
            t.await.expect("load task panicked");
        }
        s = Server::start(&dir, &[]).await;
        let snapshot = progress.lock().unwrap().clone();
        for (i, (acked, attempted)) in snapshot.iter().enumerate() {
            let p = (i as u64) % PARTITIONS;
            let d = json(
                c.get(s.url(&format!("/v1/groups/g{i}")))
                    .send()
                    .await
                    .unwrap(),
            )
            .await;
            let topic = d["topics"]
                .as_array()
                .and_then(|t| t.iter().find(|t| t["topic"] == "crash"));
            let committed = match topic {
                Some(topic) => topic["partitions"][p as usize]["committed"]
                    .as_u64()
                    .unwrap_or(0),
                // A group's first commit, cut off by the kill before it was acknowledged,
                // may not have landed: then the group has no offsets (or does not exist).
                None if *acked == 0 => 0,
                None => panic!("cycle {cycle}: group g{i} lost its topic: {d}"),
            };
            assert!(
                committed >= *acked,
                "cycle {cycle}: g{i} committed {committed} < last acknowledged {acked}"
            );
            assert!(
                committed <= *attempted,
                "cycle {cycle}: g{i} committed {committed} > last attempted {attempted}"
            );
            // Continue from what survived.
            progress.lock().unwrap()[i] = (committed, committed);
        }
        // The records themselves: every 10th restart and the last (the plain crash loop
        // checks them after every kill).
        if cycle % 10 == 9 || cycle + 1 == kills {
            let l = std::mem::take(&mut *ledger.lock().unwrap());
            verify(&c, &s, &l, cycle).await;
            *ledger.lock().unwrap() = l;
        }
    }
    let l = ledger.lock().unwrap();
    let final_progress = progress.lock().unwrap().clone();
    assert!(
        final_progress.iter().all(|(c, _)| *c > 0),
        "some committer never got a commit through: {final_progress:?}"
    );
    // Each commit moves its group one offset on, from where the last restart left it.
    let commits: u64 = final_progress.iter().map(|(c, _)| *c).sum();
    eprintln!(
        "group crash loop: {kills} SIGKILLs survived; {commits} durable commits by {COMMITTERS} groups, \
         committed offset never behind the last ack; {} produce acks verified, 0 lost; {:.1} s (seed {seed})",
        l.acked.len(),
        started.elapsed().as_secs_f64()
    );
}
