//! A group's offset reset happens once, when a partition is first read without a
//! committed offset; from then on the group's position moves through every record. With
//! `earliest` the group starts at the log start, with `latest` (Kafka's default) at the
//! high watermark of that first read — and in both cases it then receives every record
//! produced between polls and while a poll waits. Checked through each front end: the
//! `/v1` implicit member, a `/v1` joined member and a REST Proxy consumer instance.
mod common;

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{Server, create_topic, fresh_server, json, post_json, put_json};
use serde_json::{Value, json};

const V2: &str = "application/vnd.kafka.v2+json";
const BINARY_V2: &str = "application/vnd.kafka.binary.v2+json";

/// How a test reads the group: one read, waiting up to `wait_ms`, yields the values.
#[derive(Clone)]
enum Reader {
    /// `/v1` poll without a member.
    Implicit,
    /// `/v1` poll as a joined member.
    Member { member_id: String, generation: u64 },
    /// REST Proxy instance records read.
    Instance { base: String },
}

impl Reader {
    async fn read(&self, c: &reqwest::Client, base_url: &str, wait_ms: u64) -> Vec<String> {
        let body = match self {
            Reader::Implicit | Reader::Member { .. } => {
                let member = match self {
                    Reader::Member {
                        member_id,
                        generation,
                    } => format!("&member_id={member_id}&generation={generation}"),
                    _ => String::new(),
                };
                let path = format!("/v1/groups/g/topics/t/poll?wait_ms={wait_ms}{member}");
                let r = c.post(format!("{base_url}{path}")).send().await.unwrap();
                assert_eq!(r.status(), 200);
                json(r).await["records"].clone()
            }
            Reader::Instance { base } => {
                let r = c
                    .get(format!("{base}/records?timeout={wait_ms}"))
                    .header("accept", BINARY_V2)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                let records = json(r).await;
                let decoded = records.as_array().unwrap().iter().map(|r| {
                    let value = STANDARD.decode(r["value"].as_str().unwrap()).unwrap();
                    json!({ "value": String::from_utf8(value).unwrap() })
                });
                Value::Array(decoded.collect())
            }
        };
        body.as_array()
            .unwrap()
            .iter()
            .map(|r| match &r["value"] {
                Value::String(v) => v.clone(),
                other => panic!("unexpected value {other}"),
            })
            .collect()
    }
}

/// A REST Proxy instance's configuration; `default` leaves `auto.offset.reset` out.
fn instance_config(reset: &str) -> Value {
    match reset {
        "default" => json!({"name": "i1", "format": "binary"}),
        _ => json!({"name": "i1", "format": "binary", "auto.offset.reset": reset}),
    }
}

/// Creates topic `t` and a reader of group `g` with `reset`.
async fn setup(c: &reqwest::Client, s: &Server, reset: &str, kind: &str) -> Reader {
    create_topic(c, s, "t", json!({"partitions": 1})).await;
    match kind {
        "implicit" | "member" => {
            let r = put_json(c, s, "/v1/groups/g", &json!({"offset_reset": reset})).await;
            assert!(r.status().is_success(), "{}", r.status());
            if kind == "implicit" {
                return Reader::Implicit;
            }
            let r = post_json(c, s, "/v1/groups/g/topics/t/members", &json!({})).await;
            assert_eq!(r.status(), 201);
            let m = json(r).await;
            Reader::Member {
                member_id: m["member_id"].as_str().unwrap().to_owned(),
                generation: m["generation"].as_u64().unwrap(),
            }
        }
        _ => {
            let r = c
                .post(s.url("/consumers/g"))
                .header("content-type", V2)
                .body(instance_config(reset).to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            let base = json(r).await["base_uri"].as_str().unwrap().to_owned();
            let r = c
                .post(format!("{base}/subscription"))
                .header("content-type", V2)
                .body(json!({"topics": ["t"]}).to_string())
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 204);
            Reader::Instance { base }
        }
    }
}

/// Produces one record (its value as the raw body) to `t` through `/v1`.
async fn produce(c: &reqwest::Client, s: &Server, value: &str) {
    let r = c
        .post(s.url("/v1/topics/t/records"))
        .body(value.to_owned())
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
}

/// Reads until `want` values arrived (or 5 s passed), each read waiting `wait_ms`.
async fn read_until(reader: &Reader, c: &reqwest::Client, s: &Server, want: usize) -> Vec<String> {
    let started = Instant::now();
    let mut got = Vec::new();
    while got.len() < want && started.elapsed() < Duration::from_secs(5) {
        got.extend(reader.read(c, &s.base, 200).await);
    }
    got
}

/// The whole scenario for one reset and one front end: a record before the first read,
/// one between reads, one while a read waits.
async fn every_record_after_the_reset_arrives(reset: &str, kind: &str) {
    let (_tmp, s, c) = fresh_server(&[]).await;
    let reader = setup(&c, &s, reset, kind).await;
    produce(&c, &s, "before").await;

    // The first read resets the group's position.
    let first = reader.read(&c, &s.base, 200).await;
    let mut got = first.clone();
    match reset {
        "earliest" => assert_eq!(
            first,
            ["before"],
            "{kind}: earliest starts at the log start"
        ),
        _ => assert!(
            first.is_empty(),
            "{kind}: latest skips what came before: {first:?}"
        ),
    }

    produce(&c, &s, "between").await;
    got.extend(read_until(&reader, &c, &s, 1).await);

    // A read that waits is woken by the record produced meanwhile, and returns it.
    let waiting = {
        let (reader, c2, base_url) = (reader.clone(), c.clone(), s.base.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let records = reader.read(&c2, &base_url, 5000).await;
            (records, started.elapsed())
        })
    };
    common::until_requests_waiting(&c, &s, 1).await;
    produce(&c, &s, "during").await;
    let (during, took) = waiting.await.unwrap();
    got.extend(during);
    assert!(
        took < Duration::from_millis(4000),
        "{kind}: the waiting read was not woken by the record ({took:?})"
    );

    let want: &[&str] = match reset {
        "earliest" => &["before", "between", "during"],
        _ => &["between", "during"],
    };
    assert_eq!(got, want, "{kind} with {reset}: a record was skipped");
}

#[tokio::test]
async fn latest_on_the_implicit_member_receives_every_later_record() {
    every_record_after_the_reset_arrives("latest", "implicit").await;
}

#[tokio::test]
async fn latest_on_a_joined_member_receives_every_later_record() {
    every_record_after_the_reset_arrives("latest", "member").await;
}

#[tokio::test]
async fn latest_on_a_rest_proxy_instance_receives_every_later_record() {
    every_record_after_the_reset_arrives("latest", "instance").await;
}

#[tokio::test]
async fn earliest_on_the_implicit_member_receives_every_record() {
    every_record_after_the_reset_arrives("earliest", "implicit").await;
}

#[tokio::test]
async fn earliest_on_a_joined_member_receives_every_record() {
    every_record_after_the_reset_arrives("earliest", "member").await;
}

#[tokio::test]
async fn earliest_on_a_rest_proxy_instance_receives_every_record() {
    every_record_after_the_reset_arrives("earliest", "instance").await;
}

#[tokio::test]
async fn a_rest_proxy_instance_with_the_default_reset_receives_every_later_record() {
    every_record_after_the_reset_arrives("default", "instance").await;
}
