//! Probes, metrics and the served OpenAPI document.

mod common;

use common::{Server, client, json, produce};
use serde_json::json;

#[tokio::test]
async fn probes_metrics_and_openapi() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), &[]).await;
    let c = client();
    assert_eq!(
        json(c.get(s.url("/healthz")).send().await.unwrap()).await,
        json!({"status": "ok"})
    );
    assert_eq!(
        json(c.get(s.url("/readyz")).send().await.unwrap()).await,
        json!({"status": "ready"})
    );
    produce(&c, &s, "m", "", json!([{"value": "abc"}, {"value": "de"}])).await;
    c.get(s.url("/v1/topics/m/records")).send().await.unwrap();
    let r = c.get(s.url("/metrics")).send().await.unwrap();
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
        "# TYPE kafko_http_request_duration_seconds histogram",
        "kafko_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/topics/{topic}/records\"} 1",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let served = c
        .get(s.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(served, kafko_http::openapi::json());
}
