//! Retention as Kafka applies it, seen from outside: an idle topic's records all go once
//! the newest is older than `retention_ms`, the active segment with them (rolled, then
//! deleted), and the partition continues at the next offset, also after a restart.
//! `segment_ms` is a topic setting of `/v1` and of Kafka's `segment.ms` alike.

mod common;

use common::kafka::{Kafka, s as text};
use common::{create_topic, fresh_server, get_json, put_json, until};
use kafka_protocol::messages::DescribeConfigsRequest;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use serde_json::{Value, json};

/// `(log_start_offset, high_watermark)` of partition 0.
async fn bounds(c: &reqwest::Client, s: &common::Server, topic: &str) -> (u64, u64) {
    let d = get_json(c, s, &format!("/v1/topics/{topic}")).await;
    let p = &d["partitions"][0];
    (
        p["log_start_offset"].as_u64().unwrap(),
        p["high_watermark"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn an_idle_topic_past_retention_is_emptied_and_continues_at_its_next_offset() {
    let (tmp, mut s, c) = fresh_server(&["--log-retention-check-interval-ms", "50"]).await;
    create_topic(&c, &s, "idle", json!({"retention_ms": 1500})).await;
    create_topic(&c, &s, "kept", json!({"retention_ms": null})).await;
    let records: Vec<Value> = (0..10).map(|i| json!({"value": format!("r{i}")})).collect();
    for topic in ["idle", "kept"] {
        common::produce(&c, &s, topic, "", json!(records)).await;
    }

    until("the idle topic's records are deleted", async || {
        bounds(&c, &s, "idle").await == (10, 10)
    })
    .await;
    let read = get_json(
        &c,
        &s,
        "/v1/topics/idle/records?partition=0&offset=earliest",
    )
    .await;
    assert_eq!(read["records"], json!([]), "{read}");
    assert_eq!(
        bounds(&c, &s, "kept").await,
        (0, 10),
        "no retention: all kept"
    );

    let offsets = common::produce(&c, &s, "idle", "", json!([{"value": "next"}])).await;
    assert_eq!(offsets[0]["offset"], 10);
    s.sigterm().await;
    let s = common::Server::start(&tmp.path().join("data"), &[]).await;
    assert_eq!(bounds(&c, &s, "idle").await, (10, 11));
    let read = get_json(
        &c,
        &s,
        "/v1/topics/idle/records?partition=0&offset=earliest",
    )
    .await;
    assert_eq!(common::record_values(&read), ["next"]);
}

#[tokio::test]
async fn segment_ms_is_a_topic_setting_of_v1_and_of_kafka() {
    let (_tmp, s, c) = fresh_server(&["--kafka-bind", "127.0.0.1:0"]).await;
    create_topic(&c, &s, "t", json!({"segment_ms": 3_600_000})).await;
    let d = get_json(&c, &s, "/v1/topics/t").await;
    assert_eq!(d["config"]["segment_ms"], 3_600_000, "{d}");
    for bad in [json!(0), json!(-1), json!("1")] {
        let r = put_json(&c, &s, "/v1/topics/u", &json!({ "segment_ms": bad })).await;
        assert_eq!(r.status().as_u16(), 400, "segment_ms {bad}");
    }

    let mut k = Kafka::connect(&s).await;
    let describe = DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(text("t"))
            .with_configuration_keys(Some(vec![text("segment.ms")])),
    ]);
    let r = k.call(&describe, 4).await;
    let config = &r.results[0].configs[0];
    assert_eq!(
        (config.name.as_str(), config.value.as_deref()),
        ("segment.ms", Some("3600000"))
    );
}
