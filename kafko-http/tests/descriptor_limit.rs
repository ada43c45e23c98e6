//! Running out of file descriptors while creating a topic: the real server, its
//! descriptor limit lowered with `prlimit`, answers 503 `too_many_open_files` naming the
//! cause (not a 500 `internal`), leaves no half-made topic behind, and keeps serving.
mod common;

use common::{Server, client, json, problem};
use serde_json::json;

/// Sets the open-files limit (soft and hard) of a running process.
fn limit_descriptors(pid: u32, n: u32) {
    let status = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(pid.to_string())
        .arg(format!("--nofile={n}:{n}"))
        .status()
        .expect("prlimit (util-linux)");
    assert!(status.success(), "prlimit failed");
}

#[tokio::test]
async fn a_create_out_of_descriptors_is_503_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut s = Server::start(&data, &[]).await;
    let c = client();
    // Every partition keeps its active segment open: 200 partitions need 200 descriptors.
    limit_descriptors(s.pid(), 64);
    let r = c
        .put(s.url("/v1/topics/wide"))
        .json(&json!({ "partitions": 200 }))
        .send()
        .await
        .unwrap();
    let body = problem(r, 503, "too_many_open_files").await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("file descriptors"),
        "{body}"
    );
    let r = c.get(s.url("/v1/topics/wide")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 404);
    assert!(
        !data.join("topics/wide").exists(),
        "a half-made topic was left"
    );
    let topics = json(c.get(s.url("/v1/topics")).send().await.unwrap()).await;
    assert!(!topics.to_string().contains("wide"), "{topics}");

    // The server keeps working within its limit: a small topic is created and used.
    let r = c
        .put(s.url("/v1/topics/narrow"))
        .json(&json!({ "partitions": 2 }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{}", r.text().await.unwrap());
    let r = c.get(s.url("/healthz")).send().await.unwrap();
    assert!(r.status().is_success());
    assert!(s.sigterm().await.success());
}
