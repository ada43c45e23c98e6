//! Consumer groups over HTTP, against the real binary: poll/commit and resume after a
//! restart, fan-out to independent groups, members splitting partitions and handing them
//! over on leave, stale generations, seek, describe with lag, delete, group config,
//! unrepresentable records, hostile group names and the long-poll.

mod common;

use std::time::{Duration, Instant};

use common::{
    Server, assert_rejected, client, create_topic, delete, fresh_server, get, get_json,
    hostile_names, json, post, post_body, post_json, problem, produce, put, put_json, raw_request,
    server_with_topic,
};
use serde_json::{Value, json};

fn values(body: &Value) -> Vec<String> {
    common::record_values(body)
}

/// `(partition, offset)` of every record in a poll response.
fn positions(body: &Value) -> Vec<(u64, u64)> {
    common::partition_offsets(&body["records"])
}

async fn poll(c: &reqwest::Client, s: &Server, group: &str, topic: &str, query: &str) -> Value {
    let r = post(
        c,
        s,
        &format!("/v1/groups/{group}/topics/{topic}/poll{query}"),
    )
    .await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    json(r).await
}

async fn join(c: &reqwest::Client, s: &Server, group: &str, topic: &str, id: &str) -> Value {
    let r = post_json(
        c,
        s,
        &format!("/v1/groups/{group}/topics/{topic}/members"),
        &json!({"member_id": id, "session_timeout_ms": 60000}),
    )
    .await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    json(r).await
}

async fn seek(c: &reqwest::Client, s: &Server, path: &str, body: Value) -> reqwest::Response {
    post_json(c, s, &format!("{path}/seek"), &body).await
}

/// Produces `n` records `p{partition}-{i}` to each of `partitions`.
async fn fill(c: &reqwest::Client, s: &Server, topic: &str, partitions: u32, n: u32) {
    let mut records = Vec::new();
    for p in 0..partitions {
        for i in 0..n {
            records.push(json!({"value": format!("p{p}-{i}"), "partition": p}));
        }
    }
    produce(c, s, topic, "", json!(records)).await;
}

#[tokio::test]
async fn poll_commit_and_resume_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut s = Server::start(&dir, &[]).await;
    let c = client();
    create_topic(&c, &s, "orders", json!({"partitions": 1})).await;
    fill(&c, &s, "orders", 1, 10).await;

    // Auto-commit (the default) commits a poll's records only with the next poll that
    // carries the answer's cursor: an anonymous poll without it shows nothing received.
    let b = poll(&c, &s, "billing", "orders", "?max_records=4").await;
    assert_eq!(values(&b), ["p0-0", "p0-1", "p0-2", "p0-3"]);
    assert_eq!(b["committed"], json!([]));
    assert_eq!(b["generation"], 0);
    assert_eq!(b["positions"], json!([{"partition": 0, "offset": 4}]));
    let cursor = b["cursor"].as_str().unwrap().to_owned();
    let b = poll(&c, &s, "billing", "orders", "?max_records=1").await;
    assert_eq!(values(&b), ["p0-4"]);
    assert_eq!(b["committed"], json!([]), "no cursor: nothing committed");
    let query = format!("?max_records=2&cursor={}", b["cursor"].as_str().unwrap());
    let b = poll(&c, &s, "billing", "orders", &query).await;
    assert_eq!(values(&b), ["p0-5", "p0-6"]);
    assert_eq!(
        b["committed"],
        json!([]),
        "p0-4 was acknowledged, but nobody showed p0-0..3 arrived"
    );
    // The first answer's cursor: now everything up to p0-4 is acknowledged.
    let b = poll(
        &c,
        &s,
        "billing",
        "orders",
        &format!("?max_records=1&cursor={cursor}"),
    )
    .await;
    assert_eq!(values(&b), ["p0-7"]);
    assert_eq!(b["committed"], json!([{"partition": 0, "offset": 5}]));

    assert!(s.sigterm().await.success());
    let mut s = Server::start(&dir, &[]).await;
    // What was not acknowledged was never committed: it comes again after the restart.
    // auto_commit=false: the position moves, nothing is committed.
    let b = poll(
        &c,
        &s,
        "billing",
        "orders",
        "?max_records=2&auto_commit=false",
    )
    .await;
    assert_eq!(values(&b), ["p0-5", "p0-6"]);
    assert_eq!(b["committed"], json!([]));
    let offsets = "/v1/groups/billing/topics/orders/offsets";
    // An empty body commits the current positions.
    let r = put(&c, &s, offsets).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        json(r).await,
        json!({"offsets": [{"partition": 0, "offset": 7}]})
    );
    // An explicit commit (backwards is allowed: reprocess from 8... or any offset).
    let r = put_json(
        &c,
        &s,
        offsets,
        &json!({"offsets": [{"partition": 0, "offset": 8}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    // Beyond the high watermark: 416.
    let r = put_json(
        &c,
        &s,
        offsets,
        &json!({"offsets": [{"partition": 0, "offset": 11}]}),
    )
    .await;
    problem(r, 416, "offset_out_of_range").await;
    // Unknown fields and partitions are refused.
    let r = put_json(&c, &s, offsets, &json!({"offset": []})).await;
    problem(r, 400, "invalid_json").await;
    let r = put_json(
        &c,
        &s,
        offsets,
        &json!({"offsets": [{"partition": 3, "offset": 0}]}),
    )
    .await;
    problem(r, 404, "partition_not_found").await;

    assert!(s.sigterm().await.success());
    let s = Server::start(&dir, &[]).await;
    let b = poll(&c, &s, "billing", "orders", "").await;
    assert_eq!(values(&b), ["p0-8", "p0-9"]);
    // Nothing left: an empty answer at once.
    let b = poll(&c, &s, "billing", "orders", "").await;
    assert_eq!(b["records"], json!([]));
    assert_eq!(b["positions"], json!([{"partition": 0, "offset": 10}]));
    // Unknown topic: 404.
    let r = post(&c, &s, "/v1/groups/billing/topics/nope/poll").await;
    problem(r, 404, "topic_not_found").await;
}

#[tokio::test]
async fn independent_groups_each_get_every_record() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "events", json!({"partitions": 3})).await;
    fill(&c, &s, "events", 3, 5).await;
    for group in ["audit", "search"] {
        let mut got = positions(&poll(&c, &s, group, "events", "?max_records=1000").await);
        got.sort();
        let all: Vec<(u64, u64)> = (0..3).flat_map(|p| (0..5).map(move |o| (p, o))).collect();
        assert_eq!(got, all, "{group}");
        let b = poll(&c, &s, group, "events", "").await;
        assert_eq!(b["records"], json!([]), "{group}");
    }
    // Same record shape and formats as the topic read endpoint.
    let b = poll(&c, &s, "raw", "events", "?max_records=1&format=base64").await;
    let r = &b["records"][0];
    assert_eq!(r["value"].as_str().unwrap().len() % 4, 0);
    assert!(r["timestamp"].is_i64() && r["headers"].is_array() && r["key"].is_null());
    let listed = get_json(&c, &s, "/v1/groups").await;
    let names: Vec<&str> = listed["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["audit", "raw", "search"]);
    assert_eq!(listed["groups"][0]["topics"], json!(["events"]));
    assert_eq!(listed["groups"][0]["members"], 0);
}

#[tokio::test]
async fn members_split_partitions_and_hand_them_over_on_leave() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "jobs", json!({"partitions": 4})).await;
    fill(&c, &s, "jobs", 4, 3).await;
    let base = "/v1/groups/workers/topics/jobs";

    let a = join(&c, &s, "workers", "jobs", "a").await;
    assert_eq!(
        (a["generation"].clone(), a["assignment"].clone()),
        (json!(1), json!([0, 1, 2, 3]))
    );
    assert_eq!(a["member_id"], "a");
    let b = join(&c, &s, "workers", "jobs", "b").await;
    assert_eq!(
        (b["generation"].clone(), b["assignment"].clone()),
        (json!(2), json!([2, 3]))
    );
    // a still carries generation 1: refused until it rejoins.
    let r = post(&c, &s, &format!("{base}/poll?member_id=a&generation=1")).await;
    let p = problem(r, 409, "stale_generation").await;
    assert_eq!(p["generation"], 2);
    let a = join(&c, &s, "workers", "jobs", "a").await;
    assert_eq!(
        (a["generation"].clone(), a["assignment"].clone()),
        (json!(2), json!([0, 1]))
    );

    let got_a = poll(&c, &s, "workers", "jobs", "?member_id=a&generation=2").await;
    let got_b = poll(&c, &s, "workers", "jobs", "?member_id=b&generation=2").await;
    assert!(positions(&got_a).iter().all(|(p, _)| *p < 2));
    assert!(positions(&got_b).iter().all(|(p, _)| *p >= 2));
    assert_eq!(positions(&got_a).len() + positions(&got_b).len(), 12);
    assert_eq!(got_a["generation"], 2);

    // Committing a partition one does not own, the implicit member while members are
    // joined, half a member reference, an unknown member: all refused.
    let r = put_json(
        &c,
        &s,
        &format!("{base}/offsets"),
        &json!({"member_id": "a", "generation": 2, "offsets": [{"partition": 2, "offset": 0}]}),
    )
    .await;
    problem(r, 409, "not_assigned").await;
    let r = post(&c, &s, &format!("{base}/poll")).await;
    problem(r, 409, "group_has_members").await;
    let r = post(&c, &s, &format!("{base}/poll?member_id=a")).await;
    problem(r, 400, "invalid_request").await;
    let r = post(&c, &s, &format!("{base}/poll?member_id=zed&generation=2")).await;
    problem(r, 409, "unknown_member").await;

    // b leaves; its partitions go to a in a new generation, from b's commits on.
    fill(&c, &s, "jobs", 4, 1).await;
    let r = delete(&c, &s, &format!("{base}/members/b")).await;
    assert_eq!(r.status(), 204);
    let r = delete(&c, &s, &format!("{base}/members/b")).await;
    problem(r, 409, "unknown_member").await;
    let r = post(&c, &s, &format!("{base}/poll?member_id=a&generation=2")).await;
    problem(r, 409, "stale_generation").await;
    let a = join(&c, &s, "workers", "jobs", "a").await;
    assert_eq!(
        (a["generation"].clone(), a["assignment"].clone()),
        (json!(3), json!([0, 1, 2, 3]))
    );
    let mut got = positions(&poll(&c, &s, "workers", "jobs", "?member_id=a&generation=3").await);
    got.sort();
    assert_eq!(got, [(0, 3), (1, 3), (2, 3), (3, 3)]);

    // A generated id; a bad id and a bad session timeout are 400s.
    let r = post(&c, &s, &format!("{base}/members")).await;
    assert_eq!(r.status(), 201);
    let m = json(r).await;
    assert!(!m["member_id"].as_str().unwrap().is_empty());
    assert_eq!(m["generation"], 4);
    let r = post_json(
        &c,
        &s,
        &format!("{base}/members"),
        &json!({"member_id": "a/b"}),
    )
    .await;
    problem(r, 400, "invalid_member_id").await;
    let r = post_json(
        &c,
        &s,
        &format!("{base}/members"),
        &json!({"session_timeout_ms": 0}),
    )
    .await;
    problem(r, 400, "invalid_request").await;
}

#[tokio::test]
async fn seek_earliest_latest_offset_timestamp() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "ts", json!({"partitions": 1})).await;
    let records: Vec<Value> = (0..5)
        .map(|i| json!({"value": format!("v{i}"), "timestamp": 1_000 * (i + 1)}))
        .collect();
    produce(&c, &s, "ts", "", json!(records)).await;
    let path = "/v1/groups/g/topics/ts";
    assert_eq!(values(&poll(&c, &s, "g", "ts", "").await).len(), 5);

    let r = seek(&c, &s, path, json!({"to": "earliest"})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        json(r).await,
        json!({"offsets": [{"partition": 0, "offset": 0}]})
    );
    assert_eq!(values(&poll(&c, &s, "g", "ts", "").await).len(), 5);

    let r = seek(&c, &s, path, json!({"partition": 0, "to": {"offset": 3}})).await;
    assert_eq!(r.status(), 200);
    assert_eq!(values(&poll(&c, &s, "g", "ts", "").await), ["v3", "v4"]);

    let r = seek(&c, &s, path, json!({"to": {"timestamp": 2_500}})).await;
    assert_eq!(
        json(r).await,
        json!({"offsets": [{"partition": 0, "offset": 2}]})
    );
    assert_eq!(
        values(&poll(&c, &s, "g", "ts", "").await),
        ["v2", "v3", "v4"]
    );

    seek(&c, &s, path, json!({"to": "earliest"})).await;
    let r = seek(&c, &s, path, json!({"to": "latest"})).await;
    assert_eq!(
        json(r).await,
        json!({"offsets": [{"partition": 0, "offset": 5}]})
    );
    assert_eq!(poll(&c, &s, "g", "ts", "").await["records"], json!([]));

    problem(
        seek(&c, &s, path, json!({"to": {"offset": 99}})).await,
        416,
        "offset_out_of_range",
    )
    .await;
    problem(
        seek(&c, &s, path, json!({"partition": 7, "to": "earliest"})).await,
        404,
        "partition_not_found",
    )
    .await;
    problem(
        seek(&c, &s, path, json!({"to": "beginning"})).await,
        400,
        "invalid_json",
    )
    .await;
    let r = post_body(&c, &s, &format!("{path}/seek"), "earliest").await;
    problem(r, 415, "unsupported_media_type").await;
}

#[tokio::test]
async fn describe_shows_lag_and_delete_removes_the_group() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "lag", json!({"partitions": 2})).await;
    produce(
        &c,
        &s,
        "lag",
        "",
        json!(
            (0..10)
                .map(|i| json!({"value": i.to_string(), "partition": 0}))
                .collect::<Vec<_>>()
        ),
    )
    .await;
    let b = poll(&c, &s, "g", "lag", "?max_records=4").await;
    // Acknowledges and commits the first poll's 4; its own 2 are delivered, not yet
    // committed.
    let query = format!("?max_records=2&cursor={}", b["cursor"].as_str().unwrap());
    poll(&c, &s, "g", "lag", &query).await;
    let d = get_json(&c, &s, "/v1/groups/g").await;
    assert_eq!(d["group"], "g");
    assert_eq!(d["config"], json!({"offset_reset": "earliest"}));
    let t = &d["topics"][0];
    assert_eq!(t["topic"], "lag");
    assert_eq!(t["total_lag"], 6);
    assert_eq!(
        t["partitions"][0],
        json!({"partition": 0, "owner": null, "committed": 4, "position": 6,
               "log_start_offset": 0, "high_watermark": 10, "lag": 6})
    );
    assert_eq!(t["partitions"][1]["high_watermark"], 0);
    assert_eq!(t["members"], json!([]));
    let metrics = get(&c, &s, "/metrics").await.text().await.unwrap();
    assert!(
        metrics.contains("kafko_group_lag{group=\"g\",topic=\"lag\"} 6\n"),
        "{metrics}"
    );
    assert!(metrics.contains("kafko_records_out_total{topic=\"lag\"} 6\n"));

    // Members show up, and keep the group from being deleted.
    join(&c, &s, "g", "lag", "m1").await;
    let d = get_json(&c, &s, "/v1/groups/g").await;
    let m = &d["topics"][0]["members"][0];
    assert_eq!(
        (m["member_id"].as_str(), m["assignment"].clone()),
        (Some("m1"), json!([0, 1]))
    );
    assert_eq!(m["session_timeout_ms"], 60000);
    assert_eq!(d["topics"][0]["partitions"][1]["owner"], "m1");
    let r = delete(&c, &s, "/v1/groups/g").await;
    problem(r, 409, "group_has_members").await;
    let r = delete(&c, &s, "/v1/groups/g/topics/lag/members/m1").await;
    assert_eq!(r.status(), 204);
    let r = delete(&c, &s, "/v1/groups/g").await;
    assert_eq!(r.status(), 204);
    let r = get(&c, &s, "/v1/groups/g").await;
    problem(r, 404, "group_not_found").await;
    let r = delete(&c, &s, "/v1/groups/g").await;
    problem(r, 404, "group_not_found").await;
    let listed = get_json(&c, &s, "/v1/groups").await;
    assert_eq!(listed, json!({"groups": []}));
    // A deleted group starts over from its reset policy.
    let b = poll(&c, &s, "g", "lag", "?max_records=100").await;
    assert_eq!(positions(&b).len(), 10);
}

#[tokio::test]
async fn offset_reset_config_and_unrepresentable_records() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "bin", json!({"partitions": 1})).await;
    for body in [b"ok-0".to_vec(), vec![0xff, 0xfe], b"ok-2".to_vec()] {
        let r = post_body(&c, &s, "/v1/topics/bin/records", body).await;
        assert_eq!(r.status(), 201);
    }

    // offset_reset=error: a group without offsets cannot guess where to start.
    let r = put_json(
        &c,
        &s,
        "/v1/groups/strict",
        &json!({"offset_reset": "error"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(r).await["config"]["offset_reset"], "error");
    let r = post(&c, &s, "/v1/groups/strict/topics/bin/poll").await;
    let p = problem(r, 416, "no_valid_offset").await;
    assert_eq!(p["partition"], 0);
    let r = put_json(
        &c,
        &s,
        "/v1/groups/strict",
        &json!({"offset_reset": "sometimes"}),
    )
    .await;
    problem(r, 400, "invalid_json").await;
    seek(
        &c,
        &s,
        "/v1/groups/strict/topics/bin",
        json!({"to": "latest"}),
    )
    .await;
    let b = poll(&c, &s, "strict", "bin", "").await;
    assert_eq!(b["records"], json!([]));

    // A record that is not UTF-8 cannot travel as format=string. The 406 leaves the
    // group before these records, so format=base64 then gets every record.
    let r = post(&c, &s, "/v1/groups/g/topics/bin/poll").await;
    problem(r, 406, "not_representable").await;
    let b = poll(&c, &s, "g", "bin", "?format=base64").await;
    assert_eq!(values(&b), ["b2stMA==", "//4=", "b2stMg=="]);
    // The same without auto-commit.
    seek(&c, &s, "/v1/groups/g/topics/bin", json!({"to": "earliest"})).await;
    let r = post(&c, &s, "/v1/groups/g/topics/bin/poll?auto_commit=false").await;
    problem(r, 406, "not_representable").await;
    let b = poll(&c, &s, "g", "bin", "?format=base64&auto_commit=false").await;
    assert_eq!(values(&b), ["b2stMA==", "//4=", "b2stMg=="]);
}

#[tokio::test]
async fn hostile_group_names_are_rejected_and_touch_nothing() {
    let (tmp, s, c) = server_with_topic("t").await;
    for name in hostile_names() {
        for (method, path, body) in [
            ("GET", format!("/v1/groups/{name}"), ""),
            ("PUT", format!("/v1/groups/{name}"), "{}"),
            ("DELETE", format!("/v1/groups/{name}"), ""),
            ("POST", format!("/v1/groups/{name}/topics/t/poll"), ""),
            ("PUT", format!("/v1/groups/{name}/topics/t/offsets"), ""),
            (
                "POST",
                format!("/v1/groups/{name}/topics/t/seek"),
                r#"{"to":"earliest"}"#,
            ),
            ("POST", format!("/v1/groups/{name}/topics/t/members"), ""),
            (
                "DELETE",
                format!("/v1/groups/{name}/topics/t/members/m"),
                "",
            ),
        ] {
            assert_rejected(&s.addr, method, &path, body, "invalid_group_name").await;
        }
        // A good group with a hostile topic or member id.
        for (method, path, code) in [
            (
                "POST",
                format!("/v1/groups/g/topics/{name}/poll"),
                "invalid_topic_name",
            ),
            (
                "DELETE",
                format!("/v1/groups/g/topics/t/members/{name}"),
                "invalid_member_id",
            ),
            (
                "POST",
                format!("/v1/groups/g/topics/t/poll?member_id={name}&generation=1"),
                "invalid_member_id",
            ),
        ] {
            let req = format!(
                "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let (status, resp) = raw_request(&s.addr, req.as_bytes()).await;
            assert_eq!(status, 400, "{method} {path}: {resp}");
            assert!(resp.contains(code), "{method} {path}: {resp}");
        }
    }
    let mut outside: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    outside.sort();
    assert_eq!(outside, ["data", "data.log"]);
    let groups = tmp.path().join("data/groups");
    if groups.exists() {
        let made: Vec<_> = std::fs::read_dir(&groups).unwrap().collect();
        assert!(made.is_empty(), "groups created: {made:?}");
    }
    let listed = get_json(&c, &s, "/v1/groups").await;
    assert_eq!(listed, json!({"groups": []}));
}

#[tokio::test]
async fn long_poll_wakes_on_produce_and_times_out_empty() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "lp", json!({"partitions": 3})).await;

    let started = Instant::now();
    let b = poll(&c, &s, "g", "lp", "?wait_ms=400").await;
    assert_eq!(b["records"], json!([]));
    assert!(started.elapsed() >= Duration::from_millis(400));

    let started = Instant::now();
    let waiting = tokio::spawn({
        let (c, url) = (
            c.clone(),
            s.url("/v1/groups/g/topics/lp/poll?wait_ms=20000"),
        );
        async move { json(c.post(url).send().await.unwrap()).await }
    });
    // Produced once the poll is waiting: only a wake-up answers it before its 20 s.
    common::until_reads_waiting(&c, &s, "v1", 1).await;
    assert!(!waiting.is_finished(), "returned early");
    let r = post_body(&c, &s, "/v1/topics/lp/records?partition=2", "wake").await;
    assert_eq!(r.status(), 201);
    let b = waiting.await.unwrap();
    let took = started.elapsed();
    assert_eq!(values(&b), ["wake"]);
    assert_eq!(b["records"][0]["partition"], 2);
    assert!(took < Duration::from_secs(5), "did not wake: {took:?}");
    // Committed by the long-poll like by any poll.
    assert_eq!(poll(&c, &s, "g", "lp", "").await["records"], json!([]));
}
