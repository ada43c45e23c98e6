//! Probes, metrics and the served OpenAPI document.

mod common;

use common::{fresh_server, get, get_json, produce};
use serde_json::json;

#[tokio::test]
async fn probes_metrics_and_openapi() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    assert_eq!(get_json(&c, &s, "/healthz").await, json!({"status": "ok"}));
    assert_eq!(
        get_json(&c, &s, "/readyz").await,
        json!({"status": "ready"})
    );
    produce(&c, &s, "m", "", json!([{"value": "abc"}, {"value": "de"}])).await;
    get(&c, &s, "/v1/topics/m/records").await;
    let r = get(&c, &s, "/metrics").await;
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = r.text().await.unwrap();
    for line in [
        "kafko_records_in_total{topic=\"m\"} 2",
        "kafko_bytes_in_total{topic=\"m\"} 5",
        "kafko_records_out_total{topic=\"m\"} 2",
        "kafko_partition_queue_depth{topic=\"m\",partition=\"0\"} 0",
        "kafko_partition_high_watermark{topic=\"m\",partition=\"0\"} 2",
        // One send of two records: one append, written as one group.
        "kafko_partition_write_groups_total{topic=\"m\",partition=\"0\"} 1",
        "kafko_partition_appends_written_total{topic=\"m\",partition=\"0\"} 1",
        "# TYPE kafko_http_request_duration_seconds histogram",
        "kafko_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/topics/{topic}/records\"} 1",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let served = get(&c, &s, "/openapi.json").await.text().await.unwrap();
    assert_eq!(
        served,
        kafko_http::openapi::json_with(kafko_registry::http::openapi())
    );
}
