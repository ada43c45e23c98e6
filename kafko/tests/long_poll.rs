//! `wait_ms` long-poll: wakes as soon as a record is produced, and answers 200 with an
//! empty list when the time runs out.

mod common;

use std::time::{Duration, Instant};

use common::{get, json, post_body, server_with_topic};
use serde_json::json;

#[tokio::test]
async fn long_poll_wakes_on_produce() {
    let (_tmp, s, c) = server_with_topic("lp").await;
    let started = Instant::now();
    let poll = tokio::spawn({
        let (c, url) = (
            c.clone(),
            s.url("/v1/topics/lp/records?offset=0&wait_ms=20000"),
        );
        async move { json(c.get(url).send().await.unwrap()).await }
    });
    // Produce only once the poll waits.
    common::until_requests_waiting(&c, &s, 1).await;
    assert!(!poll.is_finished(), "returned before the produce");
    let r = post_body(&c, &s, "/v1/topics/lp/records", "wake").await;
    assert_eq!(r.status(), 201);
    let b = poll.await.unwrap();
    let took = started.elapsed();
    assert_eq!(b["records"][0]["value"], "wake");
    assert!(
        took < Duration::from_secs(5),
        "did not wake promptly: {took:?}"
    );
}

#[tokio::test]
async fn long_poll_times_out_empty() {
    let (_tmp, s, c) = server_with_topic("lp").await;
    let started = Instant::now();
    let r = get(&c, &s, "/v1/topics/lp/records?offset=latest&wait_ms=400").await;
    assert_eq!(r.status(), 200);
    let b = json(r).await;
    assert_eq!(b["records"], json!([]));
    assert_eq!(b["next_offset"], 0);
    assert!(started.elapsed() >= Duration::from_millis(400));
}

/// A long-poll whose client hangs up is dropped by the server: it leaves the in-flight
/// gauge and counts as abandoned (the gauge used to keep every such request forever).
#[tokio::test]
async fn a_long_poll_given_up_by_its_client_leaves_the_in_flight_gauge() {
    let (_tmp, s, c) = server_with_topic("lp").await;
    let metric = |text: &str, name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
    };
    let scrape = || async {
        let r = get(&c, &s, "/metrics").await;
        r.text().await.unwrap()
    };
    let gave_up = c
        .get(s.url("/v1/topics/lp/records?offset=0&wait_ms=20000"))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(
        gave_up.is_err(),
        "the long-poll answered early: {gave_up:?}"
    );
    // The scrape counts itself; the abandoned poll must be gone well before its 20 s.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = scrape().await;
        if metric(&text, "kafko_http_requests_in_flight") == 1 {
            assert_eq!(metric(&text, "kafko_http_requests_abandoned_total"), 1);
            break;
        }
        assert!(Instant::now() < deadline, "still in flight:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
