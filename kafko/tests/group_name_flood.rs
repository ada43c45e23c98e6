//! Polls by ever new group names do not hold memory forever: a group with nothing on
//! disk and no live member is forgotten once idle, and under a flood of names the least
//! recently used such groups go sooner, so the server's memory stays bounded.
mod common;

use std::time::{Duration, Instant};

use common::{create_topic, fresh_server, get_json, memory_mib};
use futures_util::{StreamExt, stream};
use serde_json::json;

/// New group names polled on a 1,024-partition topic: each creates a position per
/// partition (without a bound, about 40 MiB a thousand names).
const NAMES: usize = 6_000;

/// Polls `n` new group names on topic `wide` (8 at a time); returns how long it took.
async fn flood(c: &reqwest::Client, s: &common::Server, n: usize) -> Duration {
    let started = Instant::now();
    let statuses: Vec<u16> = stream::iter(0..n)
        .map(|i| {
            let c = c.clone();
            let url = s.url(&format!("/v1/groups/flood-{i}/topics/wide/poll"));
            async move { c.post(url).send().await.unwrap().status().as_u16() }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    assert!(statuses.iter().all(|&st| st == 200), "a poll failed");
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_new_group_names_holds_bounded_memory() {
    // An idle timeout longer than the test: only the bound on memory forgets groups.
    let (_tmp, s, c) = fresh_server(&["--idle-group-timeout-ms", "600000"]).await;
    create_topic(&c, &s, "wide", json!({"partitions": 1024})).await;
    let (base_rss, _) = memory_mib(s.pid());
    let took = flood(&c, &s, NAMES).await;
    let (rss, hwm) = memory_mib(s.pid());
    eprintln!("{NAMES} names in {took:?}: RSS {base_rss} -> {rss} MiB, peak {hwm} MiB");
    // The bound on groups without offsets: about a million positions.
    assert!(
        hwm < base_rss + 100,
        "peak RSS {hwm} MiB from {base_rss} MiB: group state is not bounded"
    );
    let groups = get_json(&c, &s, "/v1/groups").await;
    let kept = groups["groups"].as_array().map_or(0, Vec::len);
    assert!(kept < NAMES, "all {kept} groups kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_groups_without_offsets_are_forgotten() {
    let (_tmp, s, c) = fresh_server(&["--idle-group-timeout-ms", "1000"]).await;
    create_topic(&c, &s, "wide", json!({"partitions": 1024})).await;
    flood(&c, &s, 200).await;

    // Once idle, every one of them is forgotten.
    let started = Instant::now();
    loop {
        let groups = get_json(&c, &s, "/v1/groups").await;
        let left = groups["groups"].as_array().map_or(usize::MAX, Vec::len);
        if left == 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{left} idle groups were kept: {groups}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
