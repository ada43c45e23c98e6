//! Server-Sent Events: a `follow=true` stream receives records produced after it
//! connected, ids are `partition:offset:topic_id`, and `Last-Event-ID` resumes after that record.

mod common;

use std::time::Duration;

use common::{event_stream, fresh_server_with_topic, get_json, post, post_body, server_with_topic};
use futures_util::StreamExt;

/// Reads SSE events (`(id, data)` of `record` events) until `n` arrived.
async fn read_events(resp: reqwest::Response, n: usize) -> Vec<(String, serde_json::Value)> {
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(15), async {
        while out.len() < n {
            let chunk = stream.next().await.expect("stream ended").expect("chunk");
            buf.push_str(std::str::from_utf8(&chunk).unwrap());
            while let Some(end) = buf.find("\n\n") {
                let event: String = buf.drain(..end + 2).collect();
                let (mut id, mut data, mut kind) = (String::new(), String::new(), String::new());
                for line in event.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("event:") {
                        kind = v.trim().to_owned();
                    }
                }
                if kind == "record" {
                    out.push((id, serde_json::from_str(&data).unwrap()));
                }
            }
        }
    })
    .await
    .expect("events in time");
    out
}

#[tokio::test]
async fn sse_tail_receives_new_records_and_resumes_from_last_event_id() {
    let (_tmp, s, c) = server_with_topic("live").await;
    post_body(&c, &s, "/v1/topics/live/records", "before").await;

    let resp = event_stream(&c, &s, "/v1/topics/live/records?offset=latest&follow=true")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    // `latest` was resolved before the stream's head was sent: every record produced
    // from here on is in the stream, whenever the reader starts reading.
    let reader = tokio::spawn(read_events(resp, 3));
    for v in ["a", "b", "c"] {
        let r = post_body(&c, &s, "/v1/topics/live/records", v).await;
        assert_eq!(r.status(), 201);
    }
    let events = reader.await.unwrap();
    let topic_id = get_json(&c, &s, "/v1/topics/live").await["topic_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let ids: Vec<&str> = events.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["0:1", "0:2", "0:3"].map(|at| format!("{at}:{topic_id}"))
    );
    let values: Vec<&str> = events
        .iter()
        .map(|(_, d)| d["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["a", "b", "c"]);

    // A reconnecting client resumes after the last id it saw.
    let resp = event_stream(&c, &s, "/v1/topics/live/records?follow=true")
        .header("last-event-id", &events[0].0)
        .send()
        .await
        .unwrap();
    let events = read_events(resp, 2).await;
    assert_eq!(events[0].0, format!("0:2:{topic_id}"));
    assert_eq!(events[1].1["value"], "c");

    // A malformed Last-Event-ID is a 400 before any stream starts.
    let r = event_stream(&c, &s, "/v1/topics/live/records")
        .header("last-event-id", "garbage")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn open_follow_streams_do_not_hold_shutdown_open() {
    let (_tmp, mut s, c) = fresh_server_with_topic("live", &["--shutdown-grace-ms", "20000"]).await;
    let resp = event_stream(&c, &s, "/v1/topics/live/records?follow=true")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let started = std::time::Instant::now();
    let r = post(&c, &s, "/v1/admin/shutdown").await;
    assert_eq!(r.status(), 202);
    assert!(s.wait().await.success());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "shutdown waited for the stream"
    );
    // The stream ended cleanly rather than hanging.
    let rest = tokio::time::timeout(Duration::from_secs(5), resp.bytes()).await;
    assert!(rest.is_ok());
}
