//! Produce requests of many records and their answers, against the real binary: the
//! answer per partition (its size does not grow with the records) and the per-record
//! form on request; `--max-records-per-request` (413, nothing stored or created); large
//! requests stored as bounded batches; the server's memory bounded by a small multiple
//! of the body; `?key=` that is not UTF-8 refused (400 pointing to `key_base64`).

mod common;

use common::on_disk::batches_on_disk;
use common::{
    Server, create_topic, fresh_server, fresh_server_with_topic, get, get_json, high_watermarks,
    json, memory_mib, post_body, post_json, post_typed, problem, server_with_topic,
};
use reqwest::{Client, Response};
use serde_json::json;

/// A JSON batch body of `n` empty records (`{}`: no key, no value).
fn empty_records(n: usize) -> String {
    let mut body = String::with_capacity(n * 3 + 16);
    body.push_str(r#"{"records":["#);
    for i in 0..n {
        if i > 0 {
            body.push(',');
        }
        body.push_str("{}");
    }
    body.push_str("]}");
    body
}

/// POSTs a JSON text as it is.
async fn post_json_text(c: &Client, s: &Server, path: &str, body: String) -> Response {
    post_typed(c, s, path, "application/json", body).await
}

#[tokio::test]
async fn a_batch_is_answered_per_partition_and_per_record_on_request() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "t", json!({"partitions": 3})).await;
    let records = json!({"records": [
        {"value": "a", "partition": 2},
        {"value": "b", "partition": 0},
        {"value": "c", "partition": 2, "timestamp": 7},
    ]});
    let r = post_json(&c, &s, "/v1/topics/t/records", &records).await;
    assert_eq!(r.status(), 201);
    assert_eq!(
        json(r).await,
        json!({"partitions": [
            {"partition": 0, "base_offset": 0, "record_count": 1},
            {"partition": 2, "base_offset": 0, "record_count": 2},
        ]})
    );
    let r = post_json(&c, &s, "/v1/topics/t/records?answer=records", &records).await;
    assert_eq!(r.status(), 201);
    let b = json(r).await;
    assert_eq!(b["partitions"][1]["base_offset"], 2);
    let offsets = common::partition_offsets(&b["offsets"]);
    assert_eq!(offsets, [(2, 2), (0, 1), (2, 3)]);
    assert_eq!(b["offsets"][2]["timestamp"], 7);

    // 100,000 records: the default answer stays the size of one partition's entry.
    let r = post_json_text(&c, &s, "/v1/topics/t/records", empty_records(100_000)).await;
    assert_eq!(r.status(), 201);
    let text = r.text().await.unwrap();
    assert!(text.len() < 100, "{text}");
    let b: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(b["partitions"][0]["record_count"], 100_000);
    assert!(b.get("offsets").is_none());
    // One record: its position is in the default answer, as it costs one entry.
    let r = post_body(&c, &s, "/v1/topics/t/records?partition=1", "v").await;
    assert_eq!(json(r).await["offsets"][0]["partition"], 1);
}

#[tokio::test]
async fn more_records_than_the_limit_is_a_413_and_stores_nothing() {
    let (tmp, s, c) = fresh_server(&["--max-records-per-request", "100"]).await;
    let r = post_json_text(&c, &s, "/v1/topics/auto/records", empty_records(101)).await;
    let b = problem(r, 413, "too_many_records").await;
    assert_eq!(b["max_records_per_request"], 100);
    // The unknown topic was not created by the refused request.
    assert_eq!(get(&c, &s, "/v1/topics/auto").await.status(), 404);
    let ndjson = "{}\n".repeat(101);
    let r = post_typed(
        &c,
        &s,
        "/v1/topics/auto/records",
        "application/x-ndjson",
        ndjson,
    )
    .await;
    problem(r, 413, "too_many_records").await;
    // An existing topic: nothing of the refused request is stored.
    create_topic(&c, &s, "t", json!({})).await;
    let r = post_json_text(&c, &s, "/v1/topics/t/records", empty_records(101)).await;
    problem(r, 413, "too_many_records").await;
    let r = post_json_text(&c, &s, "/v1/topics/t/records", empty_records(100)).await;
    assert_eq!(r.status(), 201);
    assert_eq!(high_watermarks(&c, &s, "t").await, [100]);

    // The environment twin of the flag.
    let s2 = Server::start_env(
        &tmp.path().join("data2"),
        &[],
        &[("KAFKO_MAX_RECORDS_PER_REQUEST", "2")],
    )
    .await;
    let r = post_json_text(&c, &s2, "/v1/topics/t/records", empty_records(3)).await;
    problem(r, 413, "too_many_records").await;
}

#[tokio::test]
async fn a_huge_request_is_stored_as_bounded_batches_within_bounded_memory() {
    let (_tmp, s, c) =
        fresh_server_with_topic("t", &["--max-records-per-request", "10000000"]).await;
    // Warm up, so the baseline includes the runtime's first allocations.
    let r = post_json_text(&c, &s, "/v1/topics/t/records", empty_records(10)).await;
    assert_eq!(r.status(), 201);
    let (_, baseline) = memory_mib(s.pid());
    // 1.5 million `{}` records: 4.5 MB of body.
    let n = 1_500_000;
    let body = empty_records(n);
    let body_mib = body.len() as u64 / (1024 * 1024) + 1;
    let r = post_json_text(&c, &s, "/v1/topics/t/records", body).await;
    assert_eq!(r.status(), 201);
    assert_eq!(json(r).await["partitions"][0]["record_count"], n);
    let (_, peak) = memory_mib(s.pid());
    eprintln!("{n} records in {body_mib} MiB: peak RSS {baseline} -> {peak} MiB");
    assert!(
        peak - baseline <= 12 * body_mib,
        "a {body_mib} MiB request raised the peak RSS from {baseline} to {peak} MiB"
    );

    let batches = batches_on_disk(&s.dir, "t", 0);
    let stored: u64 = batches.iter().map(|&(count, _)| u64::from(count)).sum();
    assert_eq!(stored, n as u64 + 10);
    assert!(
        batches.iter().all(|&(count, _)| count <= 4096),
        "every batch is bounded"
    );
    // Ten records from the middle of the request.
    let middle = "/v1/topics/t/records?partition=0&offset=750000&max_records=10";
    let b = get_json(&c, &s, middle).await;
    assert_eq!(b["records"].as_array().unwrap().len(), 10);
    assert_eq!(b["records"][0]["offset"], 750_000);
}

#[tokio::test]
async fn a_key_that_is_not_utf8_is_refused_and_points_to_key_base64() {
    let (_tmp, s, c) = server_with_topic("t").await;
    for bad in ["%FF", "%FE", "a%C3", "%ED%A0%80"] {
        let r = post_body(&c, &s, &format!("/v1/topics/t/records?key={bad}"), "v").await;
        let b = problem(r, 400, "invalid_key").await;
        assert_eq!(b["parameter"], "key_base64", "{bad}");
        assert!(b["detail"].as_str().unwrap().contains("key_base64"));
    }
    // The replacement character itself is UTF-8 and stored as its three bytes; binary
    // keys travel as key_base64; a plain key with `+` and escapes decodes as a form.
    for (query, stored) in [
        ("key=%EF%BF%BD", "77+9"),
        ("key_base64=%2Fw%3D%3D", "/w=="),
        ("key_base64=/g==", "/g=="),
        ("key=a+b%2Bc", "YSBiK2M="),
    ] {
        let r = post_body(&c, &s, &format!("/v1/topics/t/records?{query}"), "v").await;
        assert_eq!(r.status(), 201, "{query}");
        let offset = json(r).await["offsets"][0]["offset"].as_u64().unwrap();
        let read_back = format!(
            "/v1/topics/t/records?partition=0&offset={offset}&max_records=1&key_format=base64"
        );
        let b = get_json(&c, &s, &read_back).await;
        assert_eq!(b["records"][0]["key"], stored, "{query}");
    }
    assert_eq!(
        high_watermarks(&c, &s, "t").await,
        [4],
        "no refused key was stored"
    );
}
