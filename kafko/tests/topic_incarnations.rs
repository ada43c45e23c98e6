//! A deleted topic takes its readers with it: a delete ends every stream on the topic
//! with a final `topic_deleted` event and answers waiting long-polls with 404; a topic
//! created again under the same name is a new incarnation (a new `topic_id`), so a
//! cursor or `Last-Event-ID` of the old one is refused instead of read in the new log.
mod common;

use std::time::Duration;

use common::{
    Server, create_topic, delete, event_stream, get, get_json, problem, produce, record_values,
    server_with_topic,
};
use futures_util::StreamExt;
use serde_json::{Value, json};

async fn topic_id(c: &reqwest::Client, s: &Server, topic: &str) -> String {
    let d = get_json(c, s, &format!("/v1/topics/{topic}")).await;
    d["topic_id"]
        .as_str()
        .expect("describe names the topic id")
        .to_owned()
}

fn values(n: std::ops::Range<u32>, tag: &str) -> Value {
    json!(
        n.map(|i| json!({ "value": format!("{tag}{i}") }))
            .collect::<Vec<_>>()
    )
}

#[tokio::test]
async fn a_delete_ends_streams_and_answers_long_polls_with_404() {
    let (_tmp, s, c) = server_with_topic("x").await;
    produce(&c, &s, "x", "", values(0..3, "old")).await;

    let sse = event_stream(&c, &s, "/v1/topics/x/records?follow=true")
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    let mut body = sse.bytes_stream();
    let mut seen = String::new();
    while seen.matches("event: record").count() < 3 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .expect("records in time")
            .expect("stream open")
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let long_poll = {
        let (c, url) = (
            c.clone(),
            s.url("/v1/topics/x/records?offset=latest&wait_ms=25000"),
        );
        tokio::spawn(async move { c.get(url).send().await.unwrap() })
    };
    // Deleted once the long-poll is waiting: only a wake-up answers it before its 25 s.
    common::until_reads_waiting(&c, &s, "v1", 1).await;
    assert!(
        !long_poll.is_finished(),
        "the long-poll answered before the delete"
    );
    assert_eq!(delete(&c, &s, "/v1/topics/x").await.status(), 204);

    // The stream ends, its last event naming why.
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        let mut rest = String::new();
        while let Some(chunk) = body.next().await {
            rest.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
        rest
    })
    .await
    .expect("the stream outlived its topic");
    assert!(rest.contains("event: error"), "{rest}");
    assert!(rest.contains("\"code\":\"topic_deleted\""), "{rest}");
    // The waiting long-poll is answered at once, not when its wait ends.
    let r = tokio::time::timeout(Duration::from_secs(5), long_poll)
        .await
        .expect("the long-poll was not woken by the delete")
        .unwrap();
    problem(r, 404, "topic_deleted").await;
}

#[tokio::test]
async fn cursors_of_an_earlier_incarnation_are_refused() {
    let (_tmp, s, c) = server_with_topic("x").await;
    produce(&c, &s, "x", "", values(0..3, "old")).await;
    let old = topic_id(&c, &s, "x").await;
    let r = event_stream(&c, &s, "/v1/topics/x/records")
        .send()
        .await
        .unwrap();
    let text = r.text().await.unwrap();
    let last = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .next_back()
        .expect("event ids")
        .to_owned();
    assert_eq!(last, format!("0:2:{old}"));
    let fetched = get_json(&c, &s, "/v1/topics/x/records").await;
    assert_eq!(fetched["topic_id"], old.as_str());

    assert_eq!(delete(&c, &s, "/v1/topics/x").await.status(), 204);
    create_topic(&c, &s, "x", json!({})).await;
    produce(&c, &s, "x", "", values(0..5, "new")).await;
    let new = topic_id(&c, &s, "x").await;
    assert_ne!(new, old, "a re-created topic is a new incarnation");

    // The old stream's Last-Event-ID and the old cursor are refused, not spliced in.
    let r = event_stream(&c, &s, "/v1/topics/x/records?follow=true")
        .header("last-event-id", &last)
        .send()
        .await
        .unwrap();
    problem(r, 404, "topic_deleted").await;
    let cursor = |id: &str| format!("/v1/topics/x/records?offset=3&topic_id={id}");
    problem(get(&c, &s, &cursor(&old)).await, 404, "topic_deleted").await;
    // With the current id the cursor works.
    let b = get_json(&c, &s, &cursor(&new)).await;
    assert_eq!(record_values(&b), ["new3", "new4"]);
    let r = get(&c, &s, "/v1/topics/x/records?topic_id=zz").await;
    problem(r, 400, "invalid_query").await;
}
