//! All 256 byte values survive key, value and header on every path: JSON + base64,
//! raw body + raw read, NDJSON stream; and `format=string` refuses them with a 406 that
//! names `format=base64` instead of corrupting them.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{fresh_server, get, json, post_typed, problem, produce};
use serde_json::json;

#[tokio::test]
async fn every_byte_value_round_trips_in_key_value_and_header() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    let all: Vec<u8> = (0..=255u8).collect();
    let rev: Vec<u8> = all.iter().rev().copied().collect();
    let b64 = |b: &[u8]| STANDARD.encode(b);
    produce(&c, &s, "bin", "?format=base64", json!([
        {"key": b64(&all), "value": b64(&rev), "headers": [{"name": "bytes", "value": b64(&all)}]}
    ]))
    .await;

    // JSON read with base64.
    let r = get(&c, &s, "/v1/topics/bin/records?format=base64").await;
    let rec = json(r).await["records"][0].clone();
    let d = |v: &serde_json::Value| STANDARD.decode(v.as_str().unwrap()).unwrap();
    assert_eq!(d(&rec["key"]), all);
    assert_eq!(d(&rec["value"]), rev);
    assert_eq!(rec["headers"][0]["name"], "bytes");
    assert_eq!(d(&rec["headers"][0]["value"]), all);

    // Raw read: value verbatim in the body, key and header base64 in response headers.
    let r = get(&c, &s, "/v1/topics/bin/partitions/0/records/0").await;
    assert_eq!(STANDARD.decode(&r.headers()["kafko-key"]).unwrap(), all);
    let (name, value) = r.headers()["kafko-header"]
        .to_str()
        .unwrap()
        .split_once(':')
        .unwrap();
    assert_eq!(STANDARD.decode(name).unwrap(), b"bytes");
    assert_eq!(STANDARD.decode(value).unwrap(), all);
    assert_eq!(r.bytes().await.unwrap().to_vec(), rev);

    // Raw produce of binary bytes with a base64 key.
    let path = format!(
        "/v1/topics/bin/records?key_base64={}",
        urlencode(&b64(&all))
    );
    let r = post_typed(&c, &s, &path, "application/octet-stream", all.clone()).await;
    assert_eq!(r.status(), 201);
    let r = get(&c, &s, "/v1/topics/bin/partitions/0/records/1").await;
    assert_eq!(STANDARD.decode(&r.headers()["kafko-key"]).unwrap(), all);
    assert_eq!(r.bytes().await.unwrap().to_vec(), all);

    // NDJSON stream with base64.
    let r = c
        .get(s.url("/v1/topics/bin/records?format=base64"))
        .header("accept", "application/x-ndjson")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/x-ndjson");
    let text = r.text().await.unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(d(&lines[1]["value"]), all);

    // The default string format refuses, naming base64; never a lossy conversion.
    let r = get(&c, &s, "/v1/topics/bin/records").await;
    let p = problem(r, 406, "not_representable").await;
    assert!(
        p["detail"].as_str().unwrap().contains("format=base64"),
        "{p}"
    );
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
