//! A bug inside the log answers 500 `internal`, not a client error: here the blocking
//! task that writes a group's config panics (a storage layer that panics on that one
//! file), and the request that ran it gets a problem with code `internal` and no detail.
//! The server runs in this process, on a loopback port, so the storage can be swapped.

mod common;

use common::interposed::{PanicsOn, open_interposed};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicked_blocking_task_is_500_internal() {
    let dir = tempfile::tempdir().unwrap();
    let kafko = open_interposed(dir.path(), PanicsOn("boom")).await;
    let base = common::serve_in_process(kafko.clone()).await;
    let client = reqwest::Client::new();
    let configure = |group: &str| {
        client
            .put(format!("{base}/v1/groups/{group}"))
            .json(&json!({ "offset_reset": "latest" }))
            .send()
    };

    let resp = configure("boom").await.unwrap();
    assert_eq!(resp.status().as_u16(), 500);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let problem: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(problem["code"], "internal", "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        !detail.contains("injected"),
        "the panic stays in the log: {detail}"
    );

    // The server keeps serving, and the group was not configured.
    let resp = configure("fine").await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    kafko.shutdown().await.unwrap();
}
