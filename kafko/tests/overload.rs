//! Overload, the `oha -c 256` row of RELIABILITY.md in Rust (so CI always runs it, oha or
//! not): 256 connections hammer produce against `--max-concurrent-requests 32`. Excess
//! gets 503 with `Retry-After` (never another error, never a transport failure), RSS
//! stays bounded (VmRSS/VmHWM from /proc), and every acknowledged record is there.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{create_topic, fresh_server, get, json, memory_mib};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn overload_of_256_connections_gets_503_with_retry_after_and_loses_nothing() {
    let (_tmp, s, c) = fresh_server(&["--max-concurrent-requests", "32"]).await;
    create_topic(&c, &s, "load", json!({"partitions": 4})).await;
    let pid = s.pid();
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for w in 0..256 {
        // One client per task: 256 connections, as `oha -c 256`.
        let c = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap();
        let (url, stop) = (s.url("/v1/topics/load/records"), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            let mut statuses = BTreeMap::<String, usize>::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let value = format!("w{w}-n{n}");
                n += 1;
                let r = c
                    .post(&url)
                    .json(&json!({"records": [{"key": value, "value": value}]}))
                    .send()
                    .await
                    .expect("transport error under overload");
                let status = r.status().as_u16();
                let retry_after = r.headers().get("retry-after").cloned();
                let b: serde_json::Value = r.json().await.expect("JSON body");
                match status {
                    201 => {
                        let o = &b["offsets"][0];
                        acked.push((
                            o["partition"].as_u64().unwrap(),
                            o["offset"].as_u64().unwrap(),
                            value,
                        ));
                        *statuses.entry("201".into()).or_default() += 1;
                    }
                    503 => {
                        assert!(retry_after.is_some(), "503 without Retry-After: {b}");
                        let code = b["code"].as_str().unwrap().to_owned();
                        assert!(
                            code == "overloaded" || code == "backpressure",
                            "unexpected 503 code {code}"
                        );
                        *statuses.entry(format!("503 {code}")).or_default() += 1;
                    }
                    other => panic!("overload answered {other}: {b}"),
                }
            }
            (acked, statuses)
        }));
    }
    let mut peak_rss = 0;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(4) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        peak_rss = peak_rss.max(memory_mib(pid).0);
    }
    stop.store(true, Ordering::Relaxed);
    let mut acked = Vec::new();
    let mut statuses = BTreeMap::<String, usize>::new();
    for t in tasks {
        let (a, st) = t.await.expect("load task failed");
        acked.extend(a);
        for (k, v) in st {
            *statuses.entry(k).or_default() += v;
        }
    }
    let refused: usize = statuses
        .iter()
        .filter(|(k, _)| k.starts_with("503"))
        .map(|(_, v)| v)
        .sum();
    assert!(
        refused > 0,
        "256 connections never exceeded 32 permits: {statuses:?}"
    );
    assert!(acked.len() > 100, "too little got through: {statuses:?}");
    let (_, hwm) = memory_mib(pid);
    assert!(hwm < 256, "peak RSS {hwm} MiB under overload");
    // Nothing acknowledged is lost.
    let mut stored: HashMap<(u64, u64), String> = HashMap::new();
    for p in 0..4u64 {
        let mut next = 0;
        loop {
            let b = json(
                c.get(s.url(&format!(
                    "/v1/topics/load/records?partition={p}&offset={next}&max_records=10000"
                )))
                .send()
                .await
                .unwrap(),
            )
            .await;
            let records = b["records"].as_array().unwrap();
            if records.is_empty() {
                break;
            }
            for r in records {
                let o = r["offset"].as_u64().unwrap();
                stored.insert((p, o), r["value"].as_str().unwrap().to_owned());
                next = o + 1;
            }
        }
    }
    for (p, o, v) in &acked {
        assert_eq!(stored.get(&(*p, *o)), Some(v), "acknowledged {p}@{o} lost");
    }
    assert_eq!(get(&c, &s, "/healthz").await.status(), 200);
    eprintln!(
        "overload: 256 connections for 4 s against 32 permits: {statuses:?}; {} acknowledged, 0 lost; RSS peak {peak_rss} MiB (VmHWM {hwm} MiB)",
        acked.len()
    );
}
