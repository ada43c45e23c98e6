//! Kafka's topic config names and topic creation, one meaning for every front end: a
//! topic created through REST Proxy v3 and one created through the Kafka listener's
//! CreateTopics, with the same configs, get the same configuration (read back through
//! `/v1` and under Kafka's names through REST Proxy v2); the same invalid values are
//! refused by both (v3: 400 with error_code 40002; Kafka: INVALID_CONFIG); and Kafka's
//! internal topic names are refused by every create and auto-create path.

mod common;

use common::kafka::codes::{INVALID_CONFIG, INVALID_TOPIC_EXCEPTION};
use common::kafka::{Kafka, assert_bystanders_served};
use common::{Server, client, get, get_json, post_json};
use serde_json::{Value, json};

/// The REST Proxy v3 error code of an invalid topic or setting.
const V3_BAD_TOPIC: u64 = 40002;

async fn start(dir: &std::path::Path) -> Server {
    Server::start(dir, &["--kafka-bind", "127.0.0.1:0"]).await
}

/// REST Proxy v3's topic create of one topic with one partition: status and body.
async fn v3_create(
    c: &reqwest::Client,
    s: &Server,
    topic: &str,
    configs: &[(&str, Option<&str>)],
) -> (u16, Value) {
    let configs: Vec<Value> = configs
        .iter()
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    let body = json!({"topic_name": topic, "partitions_count": 1, "configs": configs});
    let r = post_json(c, s, "/v3/clusters/kafko/topics", &body).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn v3_and_kafka_create_read_the_same_configs_the_same_way() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d")).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    // Each of these once split the two front ends: the compaction times were unknown
    // to CreateTopics, a negative retention.bytes other than -1 was refused by it, and
    // the list's items are trimmed one by one.
    let configs = [
        ("min.compaction.lag.ms", Some("5000")),
        ("delete.retention.ms", Some("1000")),
        ("retention.ms", Some("-1")),
        ("retention.bytes", Some("-5")),
        ("cleanup.policy", Some(" delete , compact ")),
        ("segment.bytes", Some(" 65536 ")),
        ("compression.type", Some("lz4")),
        ("max.message.bytes", Some("2048")),
    ];
    let (status, body) = v3_create(&c, &s, "by-v3", &configs).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        common::kafka::create_topic(&mut k, "by-kafka", 1, &configs).await,
        0
    );
    let expected = json!({
        "cleanup.policy": "compact,delete",
        "compression.type": "lz4",
        "delete.retention.ms": "1000",
        "max.message.bytes": "2048",
        "min.compaction.lag.ms": "5000",
        "retention.bytes": "-1",
        "retention.ms": "-1",
        "segment.bytes": "65536",
        "segment.ms": "604800000",
    });
    let mut v1_configs = Vec::new();
    for topic in ["by-v3", "by-kafka"] {
        let v2 = get_json(&c, &s, &format!("/topics/{topic}")).await;
        assert_eq!(v2["configs"], expected, "{topic}");
        let v1 = get_json(&c, &s, &format!("/v1/topics/{topic}")).await;
        assert_eq!(v1["config"]["min_compaction_lag_ms"], 5000, "{v1}");
        assert_eq!(v1["config"]["retention_ms"], Value::Null, "{v1}");
        v1_configs.push(v1["config"].clone());
    }
    assert_eq!(v1_configs[0], v1_configs[1]);
    assert_bystanders_served(&s).await;
}

#[tokio::test]
async fn v3_and_kafka_create_refuse_the_same_invalid_values() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d")).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    // Kafka's meanings: retention.ms is at least -1; the policy is a list of delete and
    // compact (an item with a space inside is neither); the compaction times are not
    // negative; a null value is not a config; kafko does not fsync every N messages.
    let refused: [(&str, Option<&str>); 9] = [
        ("retention.ms", Some("-2")),
        ("cleanup.policy", Some("com pact")),
        ("cleanup.policy", Some("delete,")),
        ("cleanup.policy", Some("")),
        ("delete.retention.ms", Some("-1")),
        ("min.compaction.lag.ms", Some("soon")),
        ("segment.bytes", None),
        ("compression.type", Some("brotli")),
        ("flush.messages", Some("1000")),
    ];
    for (i, config) in refused.iter().enumerate() {
        let topic = format!("refused-{i}");
        let (status, body) = v3_create(&c, &s, &topic, &[*config]).await;
        assert_eq!(
            (status, &body["error_code"]),
            (400, &json!(V3_BAD_TOPIC)),
            "{config:?}: {body}"
        );
        assert_eq!(
            common::kafka::create_topic(&mut k, &topic, 1, &[*config]).await,
            INVALID_CONFIG,
            "{config:?}"
        );
        assert_eq!(
            get(&c, &s, &format!("/v1/topics/{topic}")).await.status(),
            404
        );
    }
    assert_bystanders_served(&s).await;
}

#[tokio::test]
async fn no_front_end_creates_or_auto_creates_an_internal_topic() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d")).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    for internal in ["__consumer_offsets", "__transaction_state"] {
        let (status, body) = v3_create(&c, &s, internal, &[]).await;
        assert_eq!(
            (status, &body["error_code"]),
            (400, &json!(V3_BAD_TOPIC)),
            "{body}"
        );
        assert_eq!(
            common::kafka::create_topic(&mut k, internal, 1, &[]).await,
            INVALID_TOPIC_EXCEPTION
        );
        // Auto-create is on: an ordinary name is created by a produce, an internal one is not.
        let records = json!({"records": [{"value": "x"}]});
        let r = post_json(&c, &s, &format!("/v1/topics/{internal}/records"), &records).await;
        assert_eq!(r.status().as_u16(), 404, "{internal}");
        assert_eq!(
            get(&c, &s, &format!("/v1/topics/{internal}"))
                .await
                .status(),
            404
        );
    }
    let r = post_json(
        &c,
        &s,
        "/v1/topics/ordinary/records",
        &json!({"records": [{"value": "x"}]}),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    assert_bystanders_served(&s).await;
}
