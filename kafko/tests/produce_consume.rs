//! Produce in all three body shapes and read back by offset, earliest, latest and
//! timestamp; formats; the raw single-record read; the offsets lookup; error paths.

mod common;

use common::{
    create_topic, fresh_server, get, get_json, json, post_body, post_json, post_typed, problem,
    produce,
};
use serde_json::json;

#[tokio::test]
async fn three_body_shapes_round_trip_with_headers_and_timestamps() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    // Raw body, auto-creating the topic; key and timestamp in the query.
    let path = "/v1/topics/events/records?key=user-1&timestamp=1000&sync=true";
    let r = post_typed(&c, &s, path, "text/plain", "héllo wörld\n").await;
    assert_eq!(r.status(), 201);
    assert_eq!(
        json(r).await,
        json!({
            "partitions": [{"partition": 0, "base_offset": 0, "record_count": 1}],
            "offsets": [{"partition": 0, "offset": 0, "timestamp": 1000}],
        })
    );
    // JSON batch with headers (repeated names keep their order) and a tombstone.
    let offsets = produce(&c, &s, "events", "", json!([
        {"key": "k", "value": "v1", "headers": [{"name": "h", "value": "1"}, {"name": "h", "value": "2"}], "timestamp": 2000},
        {"key": "k", "timestamp": 2100},
    ]))
    .await;
    assert_eq!(offsets[0]["offset"], 1);
    assert_eq!(offsets[1]["offset"], 2);
    // NDJSON, with an embedded JSON document under format=json.
    let path = "/v1/topics/events/records?format=json";
    let ndjson =
        "{\"value\": {\"n\": 1, \"s\": \"x y\"}, \"timestamp\": 3000}\n\n{\"value\": [1, 2]}\n";
    let r = post_typed(&c, &s, path, "application/x-ndjson", ndjson).await;
    assert_eq!(r.status(), 201);
    assert_eq!(
        json(r).await,
        json!({"partitions": [{"partition": 0, "base_offset": 3, "record_count": 2}]})
    );

    // Reads of topic `events`, by query.
    let events = |query: &str| format!("/v1/topics/events/records?{query}");
    let offset_at = |ts: &str| format!("/v1/topics/events/partitions/0/offsets?timestamp={ts}");
    let b = get_json(&c, &s, &events("offset=earliest&max_records=3")).await;
    assert_eq!(b["next_offset"], 3);
    assert_eq!(b["high_watermark"], 5);
    assert_eq!(b["log_start_offset"], 0);
    let recs = b["records"].as_array().unwrap();
    assert_eq!(recs[0]["value"], "héllo wörld\n");
    assert_eq!(recs[0]["key"], "user-1");
    assert_eq!(recs[0]["timestamp"], 1000);
    assert_eq!(
        recs[1]["headers"],
        json!([{"name": "h", "value": "1"}, {"name": "h", "value": "2"}])
    );
    assert_eq!(recs[2]["value"], serde_json::Value::Null, "tombstone");

    // format=json returns the compact document; format=string gives its text.
    let r = get(&c, &s, &events("offset=3&format=json")).await;
    let b = json(r).await;
    assert_eq!(b["records"][0]["value"], json!({"n": 1, "s": "x y"}));
    assert_eq!(b["records"][1]["value"], json!([1, 2]));
    let r = get(&c, &s, &events("offset=3&max_records=1")).await;
    assert_eq!(json(r).await["records"][0]["value"], r#"{"n":1,"s":"x y"}"#);
    // Text that is not JSON cannot be read as json: 406 naming base64.
    let r = get(&c, &s, &events("offset=0&format=json")).await;
    let p = problem(r, 406, "not_representable").await;
    assert!(p["detail"].as_str().unwrap().contains("format=base64"));

    // latest → empty; timestamp → first at or after.
    let b = get_json(&c, &s, &events("offset=latest")).await;
    assert_eq!(b["records"], json!([]));
    assert_eq!(b["next_offset"], 5);
    let b = get_json(&c, &s, &events("timestamp=1500&max_records=1")).await;
    assert_eq!(b["records"][0]["offset"], 1);
    assert_eq!(
        get_json(&c, &s, &offset_at("2500")).await,
        json!({"partition": 0, "log_start_offset": 0, "high_watermark": 5, "last_stable_offset": 5, "offset": 3})
    );
    let b = get_json(&c, &s, &offset_at("99999999999999")).await;
    assert_eq!(b["offset"], serde_json::Value::Null);

    // Out of range: 416 with the valid range.
    let r = get(&c, &s, &events("offset=6")).await;
    let p = problem(r, 416, "offset_out_of_range").await;
    assert_eq!(
        (p["log_start_offset"].clone(), p["high_watermark"].clone()),
        (json!(0), json!(5))
    );
    let r = get(&c, &s, "/v1/topics/events/partitions/0/records/5").await;
    problem(r, 416, "offset_out_of_range").await;
    let r = get(&c, &s, &events("partition=1")).await;
    problem(r, 404, "partition_not_found").await;
}

#[tokio::test]
async fn raw_record_read_puts_metadata_in_headers() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    produce(&c, &s, "t", "", json!([
        {"key": "k1", "value": "payload", "headers": [{"name": "trace", "value": "abc"}], "timestamp": 42},
        {"key": "k1"},
    ]))
    .await;
    let r = get(&c, &s, "/v1/topics/t/partitions/0/records/0").await;
    assert_eq!(r.status(), 200);
    let h = r.headers().clone();
    assert_eq!(h["content-type"], "application/octet-stream");
    assert_eq!(h["kafko-offset"], "0");
    assert_eq!(h["kafko-partition"], "0");
    assert_eq!(h["kafko-timestamp"], "42");
    assert_eq!(h["kafko-key"], "azE="); // base64("k1")
    assert_eq!(h["kafko-header"], "dHJhY2U=:YWJj"); // base64("trace"):base64("abc")
    assert_eq!(r.bytes().await.unwrap().as_ref(), b"payload");
    let r = get(&c, &s, "/v1/topics/t/partitions/0/records/1").await;
    assert_eq!(r.status(), 204);
    assert_eq!(r.headers()["kafko-tombstone"], "true");
}

#[tokio::test]
async fn explicit_partition_and_key_routing() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "p", json!({"partitions": 4})).await;
    let r = post_body(&c, &s, "/v1/topics/p/records?partition=3", "x").await;
    assert_eq!(json(r).await["offsets"][0]["partition"], 3);
    let r = post_body(&c, &s, "/v1/topics/p/records?partition=9", "x").await;
    problem(r, 404, "partition_not_found").await;
    // The same key always lands on the same partition.
    let a = produce(&c, &s, "p", "", json!([{"key": "user-7", "value": "1"}])).await;
    let b = produce(&c, &s, "p", "", json!([{"key": "user-7", "value": "2"}])).await;
    assert_eq!(a[0]["partition"], b[0]["partition"]);
}

#[tokio::test]
async fn produce_errors_are_problems() {
    let (_tmp, s, c) = fresh_server(&["--auto-create", "false"]).await;
    let r = post_body(&c, &s, "/v1/topics/ghost/records", "x").await;
    problem(r, 404, "topic_not_found").await;
    let r = get(&c, &s, "/v1/topics/ghost/records").await;
    problem(r, 404, "topic_not_found").await;
    assert_eq!(get_json(&c, &s, "/v1/topics").await, json!({"topics": []}));
    create_topic(&c, &s, "t", json!({})).await;
    let post = |ct: &'static str, body: &'static str| {
        c.post(s.url("/v1/topics/t/records"))
            .header("content-type", ct)
            .body(body)
            .send()
    };
    problem(
        post("application/json", "{\"records\": [").await.unwrap(),
        400,
        "invalid_json",
    )
    .await;
    problem(
        post("application/json", "{\"records\": []}").await.unwrap(),
        400,
        "invalid_request",
    )
    .await;
    problem(
        post("application/json", "{\"records\": [{\"value\": 5}]}")
            .await
            .unwrap(),
        400,
        "invalid_record",
    )
    .await;
    problem(
        post("application/x-ndjson", "{\"value\":\"a\"}\nnope\n")
            .await
            .unwrap(),
        400,
        "invalid_json",
    )
    .await;
    let not_base64 = json!({"records": [{"value": "!!!"}]});
    let r = post_json(&c, &s, "/v1/topics/t/records?format=base64", &not_base64).await;
    problem(r, 400, "invalid_base64").await;
    // Record over the topic's max_record_bytes.
    c.patch(s.url("/v1/topics/t"))
        .json(&json!({"max_record_bytes": 10}))
        .send()
        .await
        .unwrap();
    let r = post_body(&c, &s, "/v1/topics/t/records", "x".repeat(11)).await;
    problem(r, 413, "record_too_large").await;
}
