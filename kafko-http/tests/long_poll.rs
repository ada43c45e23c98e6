//! `wait_ms` long-poll: wakes as soon as a record is produced, and answers 200 with an
//! empty list when the time runs out.

mod common;

use std::time::{Duration, Instant};

use common::{Server, client, create_topic, json};
use serde_json::json;

#[tokio::test]
async fn long_poll_wakes_on_produce() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), &[]).await;
    let c = client();
    create_topic(&c, &s, "lp", json!({})).await;
    let started = Instant::now();
    let poll = tokio::spawn({
        let (c, url) = (
            c.clone(),
            s.url("/v1/topics/lp/records?offset=0&wait_ms=20000"),
        );
        async move { json(c.get(url).send().await.unwrap()).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = c
        .post(s.url("/v1/topics/lp/records"))
        .body("wake")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let b = poll.await.unwrap();
    let took = started.elapsed();
    assert_eq!(b["records"][0]["value"], "wake");
    assert!(
        took >= Duration::from_millis(300),
        "returned before the produce: {took:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "did not wake promptly: {took:?}"
    );
}

#[tokio::test]
async fn long_poll_times_out_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start(&tmp.path().join("data"), &[]).await;
    let c = client();
    create_topic(&c, &s, "lp", json!({})).await;
    let started = Instant::now();
    let r = c
        .get(s.url("/v1/topics/lp/records?offset=latest&wait_ms=400"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let b = json(r).await;
    assert_eq!(b["records"], json!([]));
    assert_eq!(b["next_offset"], 0);
    assert!(started.elapsed() >= Duration::from_millis(400));
}
