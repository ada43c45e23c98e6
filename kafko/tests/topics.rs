//! Topic endpoints: create (201 / 200 same config / 409 different), list, describe,
//! update, delete, and their error paths — all against the real binary.

mod common;

use common::{delete, fresh_server, get, json, post, problem, put};
use serde_json::json;

#[tokio::test]
async fn topic_lifecycle_and_errors() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    let put = |body: serde_json::Value| c.put(s.url("/v1/topics/orders")).json(&body).send();

    let r = put(json!({"partitions": 3, "compression": "lz4"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let d = json(r).await;
    assert_eq!(d["name"], "orders");
    assert_eq!(d["config"]["partitions"], 3);
    assert_eq!(d["partitions"].as_array().unwrap().len(), 3);
    assert_eq!(d["partitions"][0]["high_watermark"], 0);

    let r = put(json!({"partitions": 3, "compression": "lz4"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "same config is idempotent");
    let r = put(json!({"partitions": 2})).await.unwrap();
    problem(r, 409, "topic_exists").await;

    // Without a body: defaults.
    let r = c.put(s.url("/v1/topics/plain")).send().await.unwrap();
    assert_eq!(r.status(), 201);

    let r = get(&c, &s, "/v1/topics").await;
    assert_eq!(json(r).await, json!({"topics": ["orders", "plain"]}));

    let r = get(&c, &s, "/v1/topics/orders").await;
    assert_eq!(json(r).await["config"]["compression"], "lz4");

    let r = c
        .patch(s.url("/v1/topics/orders"))
        .json(&json!({"retention_ms": null, "fsync": {"mode": "interval_ms", "interval_ms": 50}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let d = json(r).await;
    assert_eq!(d["config"]["retention_ms"], serde_json::Value::Null);
    assert_eq!(
        d["config"]["fsync"],
        json!({"mode": "interval_ms", "interval_ms": 50})
    );

    let r = c
        .patch(s.url("/v1/topics/orders"))
        .json(&json!({"partitions": 5}))
        .send()
        .await
        .unwrap();
    problem(r, 400, "invalid_config").await;
    let r = c
        .patch(s.url("/v1/topics/orders"))
        .json(&json!({"no_such_field": 1}))
        .send()
        .await
        .unwrap();
    problem(r, 400, "invalid_json").await;
    let r = c
        .patch(s.url("/v1/topics/orders"))
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    problem(r, 415, "unsupported_media_type").await;
    let r = c
        .put(s.url("/v1/topics/bad"))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    problem(r, 400, "invalid_json").await;
    let r = put(json!({"partitions": 0})).await.unwrap();
    problem(r, 400, "invalid_config").await;

    let r = delete(&c, &s, "/v1/topics/orders").await;
    assert_eq!(r.status(), 204);
    for r in [
        get(&c, &s, "/v1/topics/orders").await,
        delete(&c, &s, "/v1/topics/orders").await,
        c.patch(s.url("/v1/topics/orders"))
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    ] {
        problem(r, 404, "topic_not_found").await;
    }
    let r = get(&c, &s, "/v1/topics").await;
    assert_eq!(json(r).await, json!({"topics": ["plain"]}));
}

#[tokio::test]
async fn unknown_routes_methods_and_bad_parameters_are_problems() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    problem(get(&c, &s, "/v2/nothing").await, 404, "not_found").await;
    problem(post(&c, &s, "/v1/topics").await, 405, "method_not_allowed").await;
    put(&c, &s, "/v1/topics/t").await;
    for (path, code) in [
        ("/v1/topics/t/records?max_records=lots", "invalid_query"),
        ("/v1/topics/t/records?offset=middle", "invalid_query"),
        ("/v1/topics/t/partitions/x/offsets", "invalid_path"),
        ("/v1/topics/t/records?format=utf16", "invalid_query"),
    ] {
        problem(get(&c, &s, path).await, 400, code).await;
    }
}
