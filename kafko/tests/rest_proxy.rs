//! The Kafka REST Proxy API against the real binary: v2 metadata and produce (keys land
//! where `/v1` puts them), a consumer instance's whole life (create, subscribe, read,
//! commit, delete) and its expiry, manual assignment (reads, commits and seeks on the
//! assigned partitions), and the v3 produce: one record answered like a request, a
//! stream answering each record while the request body is still open.

mod common;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{Server, client, create_topic, fresh_server, json, read_lines};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

const V2: &str = "application/vnd.kafka.v2+json";
const BINARY: &str = "application/vnd.kafka.binary.v2+json";
const JSON: &str = "application/vnd.kafka.json.v2+json";

/// Asserts the proxy's error shape; returns the body.
async fn proxy_error(resp: reqwest::Response, status: u16, code: u64) -> Value {
    assert_eq!(resp.status().as_u16(), status);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
    let body = json(resp).await;
    assert_eq!(body["error_code"], code, "{body}");
    assert!(body["message"].is_string(), "{body}");
    assert!(ct == V2 || ct == "application/json", "{ct}");
    body
}

async fn post(c: &reqwest::Client, url: String, ct: &str, body: Value) -> reqwest::Response {
    c.post(url)
        .header("content-type", ct)
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

/// Posts `body` as `application/vnd.kafka.v2+json`; returns the status.
async fn post_v2(c: &reqwest::Client, url: String, body: Value) -> u16 {
    post(c, url, V2, body).await.status().as_u16()
}

/// Posts `body` and asserts the proxy's error answer; returns its body.
async fn post_error(
    c: &reqwest::Client,
    url: String,
    ct: &str,
    body: Value,
    status: u16,
    code: u64,
) -> Value {
    proxy_error(post(c, url, ct, body).await, status, code).await
}

async fn get(c: &reqwest::Client, url: String) -> reqwest::Response {
    c.get(url).send().await.unwrap()
}

async fn get_json(c: &reqwest::Client, url: String) -> Value {
    json(get(c, url).await).await
}

async fn delete(c: &reqwest::Client, url: String) -> reqwest::Response {
    c.delete(url).send().await.unwrap()
}

#[tokio::test]
async fn v2_produce_and_metadata() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "orders", json!({"partitions": 3})).await;
    let b64 = |t: &str| STANDARD.encode(t);
    let r = post(
        &c,
        s.url("/topics/orders"),
        BINARY,
        json!({"records": [
            {"key": b64("k1"), "value": b64("v1")},
            {"value": b64("v2"), "partition": 2},
            {"value": b64("v3"), "partition": 7},
        ]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], V2);
    let body = json(r).await;
    let offsets = body["offsets"].as_array().unwrap();
    assert_eq!(offsets.len(), 3);
    assert!(offsets[0]["offset"].is_u64() && offsets[0]["error_code"].is_null());
    assert_eq!(offsets[1]["partition"], 2);
    // A record for a partition that does not exist fails alone, inside the 200.
    assert_eq!(offsets[2]["error_code"], 40402);
    assert!(offsets[2]["partition"].is_null());
    assert!(body["key_schema_id"].is_null() && body["value_schema_id"].is_null());

    // json embedded format: any JSON value, stored as its text (read back via /v1).
    let r = post(
        &c,
        s.url("/topics/orders/partitions/1"),
        JSON,
        json!({"records": [{"value": {"a": [1, 2]}}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let at = json(r).await["offsets"][0]["offset"].as_u64().unwrap();
    let stored = get(
        &c,
        s.url(&format!("/v1/topics/orders/partitions/1/records/{at}")),
    )
    .await;
    assert_eq!(stored.text().await.unwrap(), r#"{"a":[1,2]}"#);

    let topics = get_json(&c, s.url("/topics")).await;
    assert_eq!(topics, json!(["orders"]));
    let t = get_json(&c, s.url("/topics/orders")).await;
    assert_eq!(t["name"], "orders");
    assert_eq!(t["partitions"].as_array().unwrap().len(), 3);
    assert_eq!(
        t["partitions"][0]["replicas"][0],
        json!({"broker": 0, "leader": true, "in_sync": true})
    );
    assert_eq!(t["configs"]["cleanup.policy"], "delete");
    let o = get_json(&c, s.url("/topics/orders/partitions/2/offsets")).await;
    let k1_there = u64::from(offsets[0]["partition"] == 2);
    assert_eq!(
        o,
        json!({"beginning_offset": 0, "end_offset": 1 + k1_there})
    );
    assert_eq!(
        get_json(&c, s.url("/brokers")).await,
        json!({"brokers": [0]})
    );

    proxy_error(get(&c, s.url("/topics/nope")).await, 404, 40401).await;
    proxy_error(
        get(&c, s.url("/topics/orders/partitions/9")).await,
        404,
        40402,
    )
    .await;
    let refused = [
        (
            "/topics/orders/partitions/9",
            BINARY,
            json!({"records": [{"value": "eA=="}]}),
            404,
            40402,
        ),
        (
            "/topics/orders",
            "application/json",
            json!({"records": []}),
            415,
            415,
        ),
        (
            "/topics/orders",
            "application/vnd.kafka.avro.v2+json",
            json!({"records": [{"value": 1}]}),
            422,
            42205,
        ),
        (
            "/topics/orders",
            BINARY,
            json!({"records": [{"value": "not base64!"}]}),
            422,
            42206,
        ),
    ];
    for (path, media, body, status, code) in refused {
        post_error(&c, s.url(path), media, body, status, code).await;
    }
}

#[tokio::test]
async fn a_key_lands_on_the_same_partition_through_v2_and_v1() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "keyed", json!({"partitions": 7})).await;
    let mut seen = std::collections::HashSet::new();
    for i in 0..40 {
        let key = format!("customer-{i}");
        let v2 = post(
            &c,
            s.url("/topics/keyed"),
            BINARY,
            json!({"records": [{"key": STANDARD.encode(&key), "value": "eA=="}]}),
        )
        .await;
        let v2 = json(v2).await["offsets"][0]["partition"].as_u64().unwrap();
        let v1 = c
            .post(s.url("/v1/topics/keyed/records"))
            .json(&json!({"records": [{"key": key, "value": "x"}]}))
            .send()
            .await
            .unwrap();
        let v1 = json(v1).await["offsets"][0]["partition"].as_u64().unwrap();
        assert_eq!(v2, v1, "{key}");
        seen.insert(v1);
    }
    assert!(seen.len() > 3, "keys spread over partitions: {seen:?}");
}

#[tokio::test]
async fn a_consumer_instance_reads_commits_and_is_deleted() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "events", json!({"partitions": 2})).await;
    let r = post(
        &c,
        s.url("/consumers/g1"),
        V2,
        json!({"name": "c1", "format": "json", "auto.offset.reset": "earliest", "auto.commit.enable": "false"}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let created = json(r).await;
    assert_eq!(created["instance_id"], "c1");
    let base = created["base_uri"].as_str().unwrap().to_owned();
    assert_eq!(base, s.url("/consumers/g1/instances/c1"));
    post_error(
        &c,
        s.url("/consumers/g1"),
        V2,
        json!({"name": "c1"}),
        409,
        40902,
    )
    .await;

    // No subscription yet: an empty list (the response has no lower bound, the request does).
    let sub = get_json(&c, format!("{base}/subscription")).await;
    assert_eq!(sub, json!({"topics": []}));
    post_error(
        &c,
        format!("{base}/subscription"),
        V2,
        json!({"topics": []}),
        422,
        42204,
    )
    .await;
    let r = post(
        &c,
        format!("{base}/subscription"),
        V2,
        json!({"topics": ["events", "later", "events"]}),
    )
    .await;
    assert_eq!(r.status(), 204);
    let sub = get_json(&c, format!("{base}/subscription")).await;
    assert_eq!(
        sub,
        json!({"topics": ["events", "later"]}),
        "named twice, followed once"
    );
    let r = post(
        &c,
        format!("{base}/subscription"),
        V2,
        json!({"topics": ["events"]}),
    )
    .await;
    assert_eq!(r.status(), 204);
    let sub = get_json(&c, format!("{base}/subscription")).await;
    assert_eq!(sub, json!({"topics": ["events"]}));

    let values: Vec<Value> = (0..5).map(|i| json!({"n": i})).collect();
    let records: Vec<Value> = values.iter().map(|v| json!({"value": v})).collect();
    let r = post(
        &c,
        s.url("/topics/events"),
        JSON,
        json!({"records": records}),
    )
    .await;
    assert_eq!(r.status(), 200);

    // A binary Accept on a json instance is 406 / 40601.
    let wrong = read_records(&c, &base, 100, BINARY).await;
    proxy_error(wrong, 406, 40601).await;

    let mut got: Vec<Value> = Vec::new();
    for _ in 0..20 {
        let r = read_records(&c, &base, 500, JSON).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], JSON);
        got.extend(json(r).await.as_array().unwrap().iter().cloned());
        if got.len() >= 5 {
            break;
        }
    }
    assert_eq!(got.len(), 5, "{got:?}");
    for r in &got {
        assert_eq!(r["topic"], "events");
        assert!(r["partition"].is_u64() && r["offset"].is_u64() && r.get("key").is_some());
    }
    let mut read: Vec<Value> = got.iter().map(|r| r["value"].clone()).collect();
    read.sort_by_key(|v| v["n"].as_u64());
    assert_eq!(read, values);

    // Commit the last one read on its partition: the group resumes after it.
    let last = got.last().unwrap();
    let r = post(
        &c,
        format!("{base}/offsets"),
        V2,
        json!({"offsets": [{"topic": "events", "partition": last["partition"], "offset": last["offset"]}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    let (p, o) = (
        last["partition"].as_u64().unwrap(),
        last["offset"].as_u64().unwrap(),
    );
    let got = committed(&c, &base, "events", 2).await;
    assert_eq!(got.iter().find(|(at, _)| *at == p), Some(&(p, o + 1)));
    // An empty commit commits everything consumed.
    assert_eq!(commit_all(&c, &base).await, 200);
    let group = get_json(&c, s.url("/v1/groups/g1")).await;
    let lag = group["topics"][0]["total_lag"].as_u64();
    assert_eq!(lag, Some(0), "{group}");

    let assigned = get_json(&c, format!("{base}/assignments")).await;
    assert_eq!(
        assigned["partitions"].as_array().unwrap().len(),
        2,
        "{assigned}"
    );
    let r = post(
        &c,
        format!("{base}/positions/beginning"),
        V2,
        json!({"partitions": [{"topic": "events", "partition": 0}]}),
    )
    .await;
    assert_eq!(r.status(), 204);
    post_error(
        &c,
        format!("{base}/positions"),
        V2,
        json!({"offsets": [{"topic": "other", "partition": 0, "offset": 0}]}),
        409,
        40903,
    )
    .await;

    let r = delete(&c, base.clone()).await;
    assert_eq!(r.status(), 204);
    proxy_error(delete(&c, base.clone()).await, 404, 40403).await;
    proxy_error(get(&c, format!("{base}/records")).await, 404, 40403).await;
    // The instance left its group: the group can be deleted.
    let r = delete(&c, s.url("/v1/groups/g1")).await;
    assert_eq!(r.status(), 204);
}

/// Creates a consumer instance in `group` with `config`; returns its base URI.
async fn instance(c: &reqwest::Client, s: &Server, group: &str, config: Value) -> String {
    let r = post(c, s.url(&format!("/consumers/{group}")), V2, config).await;
    assert_eq!(r.status(), 200);
    json(r).await["base_uri"].as_str().unwrap().to_owned()
}

/// A records read of an instance that waits up to `timeout_ms`, accepting `accept`.
async fn read_records(
    c: &reqwest::Client,
    base: &str,
    timeout_ms: u64,
    accept: &str,
) -> reqwest::Response {
    c.get(format!("{base}/records?timeout={timeout_ms}"))
        .header("accept", accept)
        .send()
        .await
        .unwrap()
}

/// One binary read of an instance: `(partition, offset)` of each record, in order.
async fn read_positions(c: &reqwest::Client, base: &str, timeout_ms: u64) -> Vec<(u64, u64)> {
    let r = read_records(c, base, timeout_ms, BINARY).await;
    assert_eq!(r.status(), 200);
    common::partition_offsets(&json(r).await)
}

/// Produces `n` binary records to one partition through v2.
async fn produce_to(c: &reqwest::Client, s: &Server, topic: &str, partition: u32, n: usize) {
    let records: Vec<Value> = (0..n)
        .map(|i| json!({"value": STANDARD.encode(format!("r{i}"))}))
        .collect();
    let url = s.url(&format!("/topics/{topic}/partitions/{partition}"));
    let r = post(c, url, BINARY, json!({ "records": records })).await;
    assert_eq!(r.status(), 200);
}

/// `POST {base}/offsets` without a body (commit everything consumed); the status.
async fn commit_all(c: &reqwest::Client, base: &str) -> u16 {
    let r = c.post(format!("{base}/offsets")).header("content-type", V2);
    r.send().await.unwrap().status().as_u16()
}

/// The group's committed offsets of `topic`'s partitions 0..n, as `GET {base}/offsets`
/// answers them (absent ones left out).
async fn committed(c: &reqwest::Client, base: &str, topic: &str, n: u32) -> Vec<(u64, u64)> {
    let partitions: Vec<Value> = (0..n)
        .map(|p| json!({"topic": topic, "partition": p}))
        .collect();
    let r = c
        .get(format!("{base}/offsets"))
        .header("content-type", V2)
        .body(json!({ "partitions": partitions }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    common::partition_offsets(&json(r).await["offsets"])
}

#[tokio::test]
async fn an_assigned_instance_reads_commits_and_seeks_its_partitions() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "logs", json!({"partitions": 3})).await;
    produce_to(&c, &s, "logs", 0, 3).await;
    produce_to(&c, &s, "logs", 1, 2).await;
    produce_to(&c, &s, "logs", 2, 1).await;
    let config = json!({"auto.offset.reset": "earliest", "auto.commit.enable": "false"});
    let base = instance(&c, &s, "ga", config.clone()).await;
    let tp = |p: u32| json!({"topic": "logs", "partition": p});
    let both = json!({"partitions": [tp(0), tp(1)]});
    assert_eq!(
        post_v2(&c, format!("{base}/assignments"), both.clone()).await,
        204
    );
    assert_eq!(get_json(&c, format!("{base}/assignments")).await, both);
    // Assigned or subscribed, never both.
    let topics = json!({"topics": ["logs"]});
    let url = format!("{base}/subscription");
    post_error(&c, url, V2, topics.clone(), 409, 40901).await;
    let subscribed = instance(&c, &s, "gs", json!({})).await;
    assert_eq!(
        post_v2(&c, format!("{subscribed}/subscription"), topics).await,
        204
    );
    let url = format!("{subscribed}/assignments");
    post_error(&c, url, V2, both, 409, 40901).await;
    // Unknown topics and partitions are the proxy's 404s.
    let missing = json!({"partitions": [{"topic": "nope", "partition": 0}]});
    post_error(&c, format!("{base}/assignments"), V2, missing, 404, 40401).await;
    let missing = json!({"partitions": [tp(9)]});
    post_error(&c, format!("{base}/assignments"), V2, missing, 404, 40402).await;

    // Only the assigned partitions are read, each in order; a read moves the positions.
    let mut got = read_positions(&c, &base, 1000).await;
    got.sort_unstable();
    assert_eq!(got, [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1)]);
    assert_eq!(read_positions(&c, &base, 100).await, []);

    // Commits: a body commits offset + 1; a partition not assigned is 40903.
    let one = json!({"offsets": [{"topic": "logs", "partition": 0, "offset": 0}]});
    assert_eq!(post_v2(&c, format!("{base}/offsets"), one).await, 200);
    assert_eq!(committed(&c, &base, "logs", 3).await, [(0, 1)]);
    let other = json!({"offsets": [{"topic": "logs", "partition": 2, "offset": 0}]});
    post_error(&c, format!("{base}/offsets"), V2, other, 409, 40903).await;
    // An empty commit commits every position read.
    assert_eq!(commit_all(&c, &base).await, 200);
    assert_eq!(committed(&c, &base, "logs", 3).await, [(0, 3), (1, 2)]);

    // Seeks move the instance's own positions.
    let at = json!({"offsets": [{"topic": "logs", "partition": 0, "offset": 1}]});
    assert_eq!(post_v2(&c, format!("{base}/positions"), at).await, 204);
    assert_eq!(read_positions(&c, &base, 1000).await, [(0, 1), (0, 2)]);
    let p1 = json!({"partitions": [tp(1)]});
    assert_eq!(
        post_v2(&c, format!("{base}/positions/beginning"), p1.clone()).await,
        204
    );
    assert_eq!(read_positions(&c, &base, 1000).await, [(1, 0), (1, 1)]);
    assert_eq!(
        post_v2(&c, format!("{base}/positions/beginning"), p1.clone()).await,
        204
    );
    assert_eq!(post_v2(&c, format!("{base}/positions/end"), p1).await, 204);
    assert_eq!(read_positions(&c, &base, 100).await, []);
    let p2 = json!({"partitions": [tp(2)]});
    let url = format!("{base}/positions/beginning");
    post_error(&c, url, V2, p2, 409, 40903).await;
    let far = json!({"offsets": [{"topic": "logs", "partition": 0, "offset": 99}]});
    post_error(&c, format!("{base}/positions"), V2, far, 409, 40903).await;
    // A seek commits nothing.
    assert_eq!(committed(&c, &base, "logs", 3).await, [(0, 3), (1, 2)]);

    // Another instance of the group starts at the group's committed offset, and a
    // waiting read wakes for a new record.
    let second = instance(&c, &s, "ga", config).await;
    let p0 = json!({"partitions": [tp(0)]});
    assert_eq!(post_v2(&c, format!("{second}/assignments"), p0).await, 204);
    let started = std::time::Instant::now();
    // The record is produced once the read is waiting: only a wake-up answers it before
    // its 10 s timeout.
    let (read, ()) = tokio::join!(read_positions(&c, &second, 10_000), async {
        common::until_reads_waiting(&c, &s, "rest_proxy", 1).await;
        produce_to(&c, &s, "logs", 0, 1).await;
    });
    assert_eq!(read, [(0, 3)]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "did not wake: {took:?}");

    // An empty assignment drops it: the instance may subscribe again.
    let none = json!({"partitions": []});
    assert_eq!(
        post_v2(&c, format!("{base}/assignments"), none.clone()).await,
        204
    );
    assert_eq!(get_json(&c, format!("{base}/assignments")).await, none);
    let r = delete(&c, base).await;
    assert_eq!(r.status(), 204);
}

#[tokio::test]
async fn an_assigned_instance_with_auto_commit_commits_what_it_was_sent() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "auto", json!({"partitions": 2})).await;
    produce_to(&c, &s, "auto", 1, 4).await;
    let base = instance(&c, &s, "gc", json!({"auto.offset.reset": "earliest"})).await;
    let only = json!({"partitions": [{"topic": "auto", "partition": 1}]});
    assert_eq!(post_v2(&c, format!("{base}/assignments"), only).await, 204);
    assert_eq!(read_positions(&c, &base, 1000).await.len(), 4);
    // Committed by the next read, as a group member's next poll commits.
    assert_eq!(committed(&c, &base, "auto", 2).await, []);
    assert_eq!(read_positions(&c, &base, 100).await, []);
    assert_eq!(committed(&c, &base, "auto", 2).await, [(1, 4)]);
    produce_to(&c, &s, "auto", 1, 1).await;
    assert_eq!(read_positions(&c, &base, 1000).await, [(1, 4)]);
    // ...and by deleting the instance.
    let probe = instance(&c, &s, "gc", json!({})).await;
    let r = delete(&c, base).await;
    assert_eq!(r.status(), 204);
    assert_eq!(committed(&c, &probe, "auto", 2).await, [(1, 5)]);
}

#[tokio::test]
async fn a_record_a_json_instance_cannot_render_stays_in_the_group() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "mixed", json!({})).await;
    let created = json(
        post(
            &c,
            s.url("/consumers/j"),
            V2,
            json!({"format": "json", "auto.offset.reset": "earliest"}),
        )
        .await,
    )
    .await;
    let base = created["base_uri"].as_str().unwrap().to_owned();
    assert_eq!(
        post(
            &c,
            format!("{base}/subscription"),
            V2,
            json!({"topics": ["mixed"]})
        )
        .await
        .status(),
        204
    );
    // Bytes that are not JSON, then a JSON record.
    let r = post(
        &c,
        s.url("/topics/mixed"),
        BINARY,
        json!({"records": [{"value": STANDARD.encode("not json")}]}),
    )
    .await;
    assert_eq!(r.status(), 200);
    for _ in 0..2 {
        let r = read_records(&c, &base, 2000, JSON).await;
        proxy_error(r, 422, 42203).await;
    }
    // Still there for a binary reader of the same group: nothing was skipped.
    let r = get(&c, s.url("/v1/groups/j")).await;
    assert_eq!(
        json(r).await["topics"][0]["partitions"][0]["committed"],
        Value::Null
    );
}

#[tokio::test]
async fn an_idle_instance_expires() {
    let (_tmp, s, c) = fresh_server(&["--consumer-instance-timeout-ms", "300"]).await;
    let created = json(post(&c, s.url("/consumers/g"), V2, json!({})).await).await;
    let base = created["base_uri"].as_str().unwrap().to_owned();
    assert!(
        created["instance_id"]
            .as_str()
            .unwrap()
            .starts_with("rest-consumer-")
    );
    // Used within the timeout: alive.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let r = get(&c, format!("{base}/subscription")).await;
    assert_eq!(r.status(), 200);
    tokio::time::sleep(Duration::from_millis(500)).await;
    proxy_error(get(&c, format!("{base}/subscription")).await, 404, 40403).await;
}

fn chunk(data: &str) -> Vec<u8> {
    format!("{:x}\r\n{data}\r\n", data.len()).into_bytes()
}

#[tokio::test]
async fn v3_produce_streams_a_receipt_per_record_while_the_body_is_open() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "stream", json!({"partitions": 2})).await;
    let mut tcp = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    let head = format!(
        "POST /v3/clusters/kafko/topics/stream/records HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
        s.addr
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(&chunk(r#"{"value":{"type":"JSON","data":{"n":1}}}"#))
        .await
        .unwrap();
    let mut buf = Vec::new();
    // The first receipt arrives before the body is complete.
    let first = read_lines(&mut tcp, &mut buf, 1, Duration::from_secs(10))
        .await
        .0;
    assert_eq!(first[0]["error_code"], 200, "{first:?}");
    assert_eq!(first[0]["topic_name"], "stream");
    assert_eq!(first[0]["value"], json!({"type": "JSON", "size": 7}));
    let head_text = String::from_utf8_lossy(&buf).into_owned();
    assert!(head_text.starts_with("HTTP/1.1 200"), "{head_text}");
    assert!(
        head_text
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head_text}"
    );
    // Two records in one chunk, split across chunk boundaries, and a bad partition.
    let two = r#"{"key":{"type":"STRING","data":"k"},"value":{"type":"BINARY","data":"eA=="},"partition_id":1}{"partition_id":5,"value":{"type":"JSON","data":1}}{"headers":[{"name":"h","value":"aGk="}],"value":{"type":"STR"#;
    tcp.write_all(&chunk(two)).await.unwrap();
    tcp.write_all(&chunk(r#"ING","data":"tail"}}"#))
        .await
        .unwrap();
    let all = read_lines(&mut tcp, &mut buf, 4, Duration::from_secs(10))
        .await
        .0;
    assert_eq!(all[1]["partition_id"], 1);
    assert_eq!(all[1]["key"], json!({"type": "STRING", "size": 1}));
    assert_eq!(
        all[2],
        json!({"error_code": 40402, "message": "Partition not found."})
    );
    assert_eq!(all[3]["error_code"], 200);
    assert_eq!(all[3]["value"]["type"], "STRING");
    tcp.write_all(b"0\r\n\r\n").await.unwrap();
    // Offsets follow one another per partition, in the order sent.
    let o1 = all[0]["offset"].as_u64().unwrap();
    assert!(
        all[3]["partition_id"] != all[0]["partition_id"] || all[3]["offset"].as_u64().unwrap() > o1
    );

    // The headers made it into the log.
    let at = format!(
        "/v1/topics/stream/partitions/{}/records/{}",
        all[3]["partition_id"], all[3]["offset"]
    );
    let stored = get(&c, s.url(&at)).await;
    let header = stored.headers()["kafko-header"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        header,
        format!("{}:{}", STANDARD.encode("h"), STANDARD.encode("hi"))
    );
    assert_eq!(stored.text().await.unwrap(), "tail");

    // A schema-based record is the proxy's error, not a 500.
    let r = c
        .post(s.url("/v3/clusters/kafko/topics/stream/records"))
        .header("content-type", "application/json")
        .body(r#"{"value":{"type":"AVRO","data":{"a":1}}}"#)
        .send()
        .await
        .unwrap();
    proxy_error(r, 400, 400).await;
    proxy_error(
        c.post(s.url("/v3/clusters/other/topics/stream/records"))
            .body("{}")
            .send()
            .await
            .unwrap(),
        404,
        404,
    )
    .await;
    proxy_error(
        c.post(s.url("/v3/clusters/kafko/topics/stream/records"))
            .header("content-type", "application/json")
            .send()
            .await
            .unwrap(),
        422,
        42206,
    )
    .await;
}

/// A v3 body of one record, with a `Content-Length`, is answered like any request: a
/// refused record is the answer's status, and nothing of it is stored.
#[tokio::test]
async fn v3_produce_answers_one_record_with_its_status() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "one", json!({"partitions": 2})).await;
    let url = s.url("/v3/clusters/kafko/topics/one/records");
    let send = |body: &str| {
        c.post(url.clone())
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
    };
    let r = send(r#"{"partition_id":1,"value":{"type":"STRING","data":"kept"}}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("transfer-encoding").is_none(), "{r:?}");
    let receipt = json(r).await;
    assert_eq!(receipt["error_code"], 200);
    assert_eq!(
        (receipt["partition_id"].clone(), receipt["offset"].clone()),
        (json!(1), json!(0))
    );

    for (body, status, code) in [
        // A header without its name: the record does not fit the document.
        (
            r#"{"headers":[{"value":"aGk="}],"value":{"data":1}}"#,
            422,
            422,
        ),
        // serde's derive would read a key given as an array by position.
        (r#"{"key":["JSON",1],"value":{"data":1}}"#, 422, 422),
        (r#"[{"value":{"data":1}}]"#, 422, 422),
        (r#"{"value":{"type":"json","data":1}}"#, 400, 400),
        (
            r#"{"value":{"type":"BINARY","data":"not base64!"}}"#,
            400,
            400,
        ),
        (r#"{"value":{"type":"STRING","data":5}}"#, 400, 400),
        (r#"{"timestamp":"yesterday","value":{"data":1}}"#, 400, 400),
        (r#"{"headers":[{"name":"h","value":"%%"}]}"#, 400, 400),
        (r#"{"partition_id":2,"value":{"data":1}}"#, 404, 40402),
    ] {
        let r = send(body).await.unwrap();
        let answer = proxy_error(r, status, code).await;
        assert!(!answer["message"].as_str().unwrap().is_empty(), "{body}");
    }
    // Several records in one body are a stream: 200, one line each, the bad one skipped.
    let r = send(r#"{"headers":[{}]} {"partition_id":1,"value":{"data":2}}"#)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["error_code"], 422, "{text}");
    assert_eq!(
        (lines[1]["partition_id"].clone(), lines[1]["offset"].clone()),
        (json!(1), json!(1))
    );

    // Only the two accepted records are in the log.
    for (partition, end) in [(0, 0), (1, 2)] {
        let offsets = get_json(
            &c,
            s.url(&format!("/v1/topics/one/partitions/{partition}/offsets")),
        )
        .await;
        assert_eq!(offsets["high_watermark"], end, "{offsets}");
    }
}

#[tokio::test]
async fn v3_clusters_and_topics() {
    let (_tmp, s, c) =
        fresh_server(&["--cluster-id", "dev-cluster", "--auto-create", "false"]).await;
    let clusters = get_json(&c, s.url("/v3/clusters")).await;
    assert_eq!(clusters["kind"], "KafkaClusterList");
    assert_eq!(clusters["data"][0]["cluster_id"], "dev-cluster");
    assert_eq!(
        clusters["data"][0]["metadata"]["self"],
        s.url("/v3/clusters/dev-cluster")
    );
    proxy_error(get(&c, s.url("/v3/clusters/kafko")).await, 404, 404).await;
    // The cluster's resources.
    let at = |rest: &str| s.url(&format!("/v3/clusters/dev-cluster{rest}"));

    let r = post(
        &c,
        at("/topics"),
        "application/json",
        json!({"topic_name": "t", "partitions_count": 3, "configs": [{"name": "cleanup.policy", "value": "compact"}]}),
    )
    .await;
    assert_eq!(r.status(), 201);
    let t = json(r).await;
    assert_eq!(
        (t["kind"].as_str(), t["partitions_count"].as_u64()),
        (Some("KafkaTopic"), Some(3))
    );
    let v1 = get_json(&c, s.url("/v1/topics/t")).await;
    assert_eq!(v1["config"]["cleanup_policy"], "compact");
    // A topic that exists; more replicas than the one broker.
    for refused in [
        json!({"topic_name": "t"}),
        json!({"topic_name": "u", "replication_factor": 3}),
    ] {
        post_error(&c, at("/topics"), "application/json", refused, 400, 40002).await;
    }
    let list = get_json(&c, at("/topics")).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1);
    let parts = get_json(&c, at("/topics/t/partitions")).await;
    assert_eq!(parts["data"][2]["partition_id"], 2);
    let off = get_json(&c, at("/topics/t/partitions/0/offset")).await;
    assert_eq!(
        (
            off["earliest_offset"].as_u64(),
            off["latest_offset"].as_u64()
        ),
        (Some(0), Some(0))
    );
    proxy_error(get(&c, at("/topics/t/partitions/3")).await, 404, 40402).await;
    // Auto-creation off: an unknown topic is refused before streaming.
    proxy_error(
        c.post(at("/topics/nope/records"))
            .body("{}")
            .send()
            .await
            .unwrap(),
        404,
        40403,
    )
    .await;
    let r = delete(&c, at("/topics/t")).await;
    assert_eq!(r.status(), 204);
    proxy_error(get(&c, at("/topics/t")).await, 404, 40403).await;
    proxy_error(delete(&c, at("/topics/t")).await, 404, 40403).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_reads_wait_under_the_servers_waiting_limit() {
    let (_tmp, s, c) = fresh_server(&["--max-waiting-requests", "1"]).await;
    create_topic(&c, &s, "quiet", json!({})).await;
    let mut bases = Vec::new();
    for name in ["w1", "w2"] {
        let base = instance(&c, &s, "gw", json!({ "name": name })).await;
        let topics = json!({"topics": ["quiet"]});
        assert_eq!(
            post_v2(&c, format!("{base}/subscription"), topics).await,
            204
        );
        bases.push(base);
    }
    let read = |base: &str, timeout: u64| {
        client()
            .get(format!("{base}/records?timeout={timeout}"))
            .header("accept", BINARY)
            .send()
    };
    // One read waits for records and holds the only waiting permit.
    let waiting = tokio::spawn(read(&bases[0], 3000));
    let started = std::time::Instant::now();
    while common::metric(&c, &s, "kafko_http_requests_in_flight").await < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the read never waited"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Another is refused in the proxy's shape, with Retry-After.
    let refused = read(&bases[1], 1000).await.unwrap();
    assert_eq!(refused.headers()["retry-after"], "1");
    proxy_error(refused, 429, 429).await;
    // The limit is /v1's: its long-polls are refused too.
    let v1 = get(
        &c,
        s.url("/v1/topics/quiet/records?offset=latest&wait_ms=1000"),
    )
    .await;
    assert_eq!(v1.status(), 503);
    // A read that does not wait is not counted.
    let now = read(&bases[1], 0).await.unwrap();
    assert_eq!(now.status(), 200);
    assert_eq!(waiting.await.unwrap().unwrap().status(), 200);
    assert_eq!(read(&bases[1], 100).await.unwrap().status(), 200);
}

/// Each member's partitions of each topic, as `/v1` describes the group: `(member,
/// topic, partitions)`, and the generations the topics report.
async fn group_members(
    c: &reqwest::Client,
    s: &Server,
    group: &str,
) -> (Vec<(String, String, Vec<u64>)>, Vec<u64>) {
    let d = get_json(c, s.url(&format!("/v1/groups/{group}"))).await;
    let mut members = Vec::new();
    let mut generations = Vec::new();
    for t in d["topics"].as_array().unwrap() {
        generations.push(t["generation"].as_u64().unwrap());
        for m in t["members"].as_array().unwrap() {
            let parts = m["assignment"].as_array().unwrap();
            members.push((
                m["member_id"].as_str().unwrap().to_owned(),
                t["topic"].as_str().unwrap().to_owned(),
                parts.iter().map(|p| p.as_u64().unwrap()).collect(),
            ));
        }
    }
    (members, generations)
}

#[tokio::test]
async fn an_instance_subscribed_to_three_topics_is_one_member_with_one_generation() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    for topic in ["t1", "t2", "t3"] {
        create_topic(&c, &s, topic, json!({"partitions": 2})).await;
        for p in 0..2 {
            produce_to(&c, &s, topic, p, 3).await;
        }
    }
    let subscribe = json!({"topics": ["t1", "t2", "t3"]});
    let config = json!({"format": "binary", "auto.offset.reset": "earliest"});
    let a = instance(&c, &s, "multi", config.clone()).await;
    assert_eq!(
        post_v2(&c, format!("{a}/subscription"), subscribe.clone()).await,
        204
    );
    let (members, generations) = group_members(&c, &s, "multi").await;
    assert_eq!(
        generations,
        [1, 1, 1],
        "one generation over the three topics"
    );
    let ids: std::collections::BTreeSet<&str> = members.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(ids.len(), 1, "one member: {members:?}");
    assert!(members.iter().all(|m| m.2 == [0, 1]), "{members:?}");

    // A second instance: one new generation for the group, each topic split in two.
    let b = instance(&c, &s, "multi", config).await;
    assert_eq!(
        post_v2(&c, format!("{b}/subscription"), subscribe).await,
        204
    );
    let (members, generations) = group_members(&c, &s, "multi").await;
    assert_eq!(generations, [2, 2, 2]);
    let ids: std::collections::BTreeSet<&str> = members.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(ids.len(), 2);
    assert!(members.iter().all(|m| m.2.len() == 1), "{members:?}");
    // The group has one generation: a change on one topic moves all three.
    let r = c
        .post(s.url("/v1/groups/multi/topics/t1/members"))
        .json(&json!({"member_id": "solo", "session_timeout_ms": 30000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(group_members(&c, &s, "multi").await.1, [3, 3, 3]);
    let r = c
        .delete(s.url("/v1/groups/multi/topics/t1/members/solo"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(group_members(&c, &s, "multi").await.1, [4, 4, 4]);

    // Together they read every record once (18), each only its own partitions.
    let mut seen = Vec::new();
    for base in [&a, &b] {
        let r = read_records(&c, base, 500, BINARY).await;
        assert_eq!(r.status(), 200);
        for rec in json(r).await.as_array().unwrap() {
            let topic = rec["topic"].as_str().unwrap().to_owned();
            seen.push((
                topic,
                rec["partition"].as_u64().unwrap(),
                rec["offset"].as_u64().unwrap(),
            ));
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 18, "{seen:?}");
    for base in [&a, &b] {
        assert_eq!(delete(&c, base.clone()).await.status(), 204);
    }
    let (members, _) = group_members(&c, &s, "multi").await;
    assert!(members.is_empty(), "{members:?}");
}
