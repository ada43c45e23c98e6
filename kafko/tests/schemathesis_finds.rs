//! Regressions for what schemathesis (scripts/checks/20-schemathesis.sh) found against
//! the committed OpenAPI document, each pinned here so it stays fixed without Python.

mod common;

use common::{Server, client, create_topic, json, problem};
use reqwest::header::HeaderValue;
use serde_json::json;

#[tokio::test]
async fn schemathesis_finds_stay_fixed() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), &[]).await;
    let c = client();
    let send = |m: reqwest::Method, path: &str, body: &str| {
        c.request(m, s.url(path))
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
    };
    use reqwest::Method;

    // retention_ms past i64::MAX wrapped negative in the retention check and expired
    // every sealed segment at once; now refused like any out-of-range setting.
    let r = send(
        Method::PUT,
        "/v1/topics/r",
        r#"{"retention_ms": 9223372036854775808}"#,
    )
    .await
    .unwrap();
    problem(r, 400, "invalid_config").await;
    create_topic(&c, &s, "r", json!({})).await;
    let r = send(
        Method::PATCH,
        "/v1/topics/r",
        r#"{"retention_ms": 18446744073709551615}"#,
    )
    .await
    .unwrap();
    problem(r, 400, "invalid_config").await;
    let r = send(
        Method::PATCH,
        "/v1/topics/r",
        r#"{"retention_ms": 9223372036854775807}"#,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);

    // A JSON array filled a config struct by position (serde's derive reads sequences).
    let r = send(Method::PATCH, "/v1/topics/r", "[null, null]")
        .await
        .unwrap();
    problem(r, 400, "invalid_json").await;
    let r = send(
        Method::POST,
        "/v1/groups/g/topics/r/members",
        "[null, 5000]",
    )
    .await
    .unwrap();
    problem(r, 400, "invalid_json").await;

    // Schema-valid forms that were 400s: `null` members and integral floats.
    let r = send(
        Method::PUT,
        "/v1/topics/n",
        r#"{"compression": null, "fsync": null, "partitions": 2.0, "segment_bytes": 8192.0}"#,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let d = json(c.get(s.url("/v1/topics/n")).send().await.unwrap()).await;
    assert_eq!(d["config"]["partitions"], 2);
    assert_eq!(d["config"]["segment_bytes"], 8192);
    // …while a null that means something keeps its meaning (PATCH: clear retention).
    let r = send(Method::PATCH, "/v1/topics/n", r#"{"retention_ms": null}"#)
        .await
        .unwrap();
    assert_eq!(
        json(r).await["config"]["retention_ms"],
        serde_json::Value::Null
    );
    let r = send(Method::PUT, "/v1/groups/g", r#"{"offset_reset": null}"#)
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    // Fractions are still not integers.
    let r = send(Method::PUT, "/v1/topics/f", r#"{"partitions": 1.5}"#)
        .await
        .unwrap();
    problem(r, 400, "invalid_json").await;
    // An unknown member stays an error even when it is null.
    let r = send(
        Method::PATCH,
        "/v1/topics/n",
        r#"{"compression": null, "": null}"#,
    )
    .await
    .unwrap();
    problem(r, 400, "invalid_json").await;
    let r = send(
        Method::PUT,
        "/v1/topics/m",
        r#"{"compression": null, "nope": null}"#,
    )
    .await
    .unwrap();
    problem(r, 400, "invalid_json").await;
    // Unknown members of a group config are refused (and the spec says so now).
    let r = send(Method::PUT, "/v1/groups/g", r#"{"nope": 1}"#)
        .await
        .unwrap();
    problem(r, 400, "invalid_json").await;

    // An empty Last-Event-ID is "no id" (SSE resets it so), not a 400.
    let read_after = |id: HeaderValue| {
        c.get(s.url("/v1/topics/r/records"))
            .header("last-event-id", id)
            .send()
    };
    let r = read_after(HeaderValue::from_static("")).await.unwrap();
    assert_eq!(r.status(), 200);
    // One that is not visible ASCII is malformed, not absent (it was ignored).
    let odd = HeaderValue::from_bytes(b"\xc2\x84").unwrap();
    let r = read_after(odd).await.unwrap();
    problem(r, 400, "invalid_event_id").await;
    // An optional body is absent or a value; a `null` body is neither (the spec does not
    // allow it, and it was read as absent).
    for path in ["/v1/topics/null-body", "/v1/groups/g/topics/r/members"] {
        let method = if path.starts_with("/v1/topics") {
            Method::PUT
        } else {
            Method::POST
        };
        let r = send(method.clone(), path, "null").await.unwrap();
        problem(r, 400, "invalid_json").await;
        // Nor is whitespace: it is no JSON document (`\r` created a topic with defaults).
        let r = send(method, path, "\r").await.unwrap();
        problem(r, 400, "invalid_json").await;
    }
    assert_eq!(
        c.get(s.url("/v1/topics/null-body"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );
    // The REST Proxy's optional bodies too; an empty body is still an absent one.
    let r = send(Method::POST, "/consumers/g", " \n").await.unwrap();
    assert_eq!(r.status(), 400);
    let r = send(Method::POST, "/consumers/g", "").await.unwrap();
    assert_eq!(r.status(), 200);
    let r = send(Method::PUT, "/v1/topics/empty-body", "")
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
}
