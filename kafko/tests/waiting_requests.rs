//! Long-polls wait under a limit of their own (`--max-waiting-requests`): 64 of them
//! against `--max-concurrent-requests 64` leave every permit of the general limit to
//! ordinary produce and fetch, and the waiting limit itself answers 503 when full.

mod common;

use std::time::{Duration, Instant};

use common::{
    Server, client, fresh_server_with_topic, get, json, post, post_body, problem, read_response,
    series_value,
};
use tokio::io::AsyncWriteExt;

/// The `kafko_http_requests_in_flight` gauge, or `None` if `/metrics` was refused.
async fn in_flight(c: &reqwest::Client, s: &Server) -> Option<u64> {
    let r = get(c, s, "/metrics").await;
    if r.status() != 200 {
        return None;
    }
    let text = r.text().await.unwrap();
    Some(series_value(&text, "kafko_http_requests_in_flight"))
}

/// Waits (bounded) until at least `n` requests are in flight, or the server refuses
/// even `/metrics` (every permit taken, which is the same news).
async fn until_in_flight(c: &reqwest::Client, s: &Server, n: u64) {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        match in_flight(c, s).await {
            Some(now) if now < n => tokio::time::sleep(Duration::from_millis(50)).await,
            _ => return,
        }
    }
    panic!("fewer than {n} requests in flight after 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_long_polls_leave_the_general_limit_to_produce_and_fetch() {
    let (_tmp, s, c) = fresh_server_with_topic("t", &["--max-concurrent-requests", "64"]).await;
    // 48 reads and 16 group polls, each waiting up to 20 s for a record.
    let mut polls = Vec::new();
    for i in 0..64 {
        // One client each: one connection each, as independent consumers.
        let c = client();
        let url = if i < 48 {
            s.url("/v1/topics/t/records?offset=0&wait_ms=20000")
        } else {
            s.url(&format!("/v1/groups/g{i}/topics/t/poll?wait_ms=20000"))
        };
        polls.push(tokio::spawn(async move {
            let r = if i < 48 {
                c.get(url).send().await
            } else {
                c.post(url).send().await
            };
            let r = r.expect("long-poll transport");
            let status = r.status().as_u16();
            (status, json(r).await)
        }));
    }
    // 64 long-polls and this /metrics request.
    until_in_flight(&c, &s, 65).await;

    let started = Instant::now();
    let r = post_body(&c, &s, "/v1/topics/t/records", "while-64-wait").await;
    let status = r.status().as_u16();
    let body = json(r).await;
    assert_eq!(status, 201, "produce beside 64 long-polls: {body}");
    let r = get(&c, &s, "/v1/topics/t/records?offset=0").await;
    assert_eq!(r.status(), 200);
    assert_eq!(json(r).await["records"][0]["value"], "while-64-wait");
    let ordinary = started.elapsed();

    // The produce wakes every long-poll with its record.
    for p in polls {
        let (status, body) = p.await.unwrap();
        assert_eq!(status, 200, "a long-poll was refused: {body}");
        assert_eq!(body["records"][0]["value"], "while-64-wait", "{body}");
    }
    eprintln!(
        "64 long-polls against --max-concurrent-requests 64: produce + fetch answered in {ordinary:?}; every long-poll woke with the record"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_waiting_limit_refuses_long_polls_past_it_with_503() {
    let flags = ["--max-waiting-requests=4", "--max-concurrent-requests=4"];
    let (_tmp, s, c) = fresh_server_with_topic("t", &flags).await;
    let mut polls = Vec::new();
    for _ in 0..4 {
        let c = client();
        let url = s.url("/v1/topics/t/records?offset=latest&wait_ms=3000");
        polls.push(tokio::spawn(async move {
            c.get(url).send().await.unwrap().status().as_u16()
        }));
    }
    until_in_flight(&c, &s, 5).await;
    let r = get(&c, &s, "/v1/topics/t/records?offset=latest&wait_ms=3000").await;
    assert!(r.headers().contains_key("retry-after"));
    let body = problem(r, 503, "overloaded").await;
    assert!(
        body["detail"].as_str().unwrap().contains("long-poll"),
        "{body}"
    );
    // A read that does not wait is not a long-poll: the general limit takes it.
    let r = get(&c, &s, "/v1/topics/t/records?offset=latest&wait_ms=0").await;
    assert_eq!(r.status(), 200);
    for p in polls {
        assert_eq!(p.await.unwrap(), 200);
    }
}

/// Only the routes that long-poll (a records read, a group poll) run under the waiting
/// limit: a `wait_ms` in the query of any other route is counted against
/// `--max-concurrent-requests`, so one client cannot double its share by adding it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_ms_on_a_route_that_does_not_long_poll_counts_against_the_concurrent_limit() {
    let flags = ["--max-concurrent-requests=1", "--max-waiting-requests=8"];
    let (_tmp, s, c) = fresh_server_with_topic("t", &flags).await;
    // A produce whose body is still coming holds the one general permit.
    let head = b"POST /v1/topics/t/records HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n";
    let mut hold = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    hold.write_all(head).await.unwrap();
    // The visible signal that it holds it: /metrics (a general request) is refused. A
    // probe can take the permit first, and the produce is then refused itself: send it
    // again on a new connection.
    let started = Instant::now();
    while get(&c, &s, "/metrics").await.status() != 503 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the permit was never taken"
        );
        let mut peek = [0u8; 1];
        let answered = tokio::time::timeout(Duration::from_millis(20), hold.peek(&mut peek)).await;
        if matches!(answered, Ok(Ok(_))) {
            hold = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
            hold.write_all(head).await.unwrap();
        }
    }
    for path in [
        "/v1/topics?wait_ms=1",
        "/v1/topics/t?wait_ms=1000",
        "/v1/groups?x=1&wait_ms=5",
        "/v1/topics/t/partitions/0/offsets?wait_ms=1",
    ] {
        let r = get(&c, &s, path).await;
        let body = problem(r, 503, "overloaded").await;
        assert!(
            body["detail"].as_str().unwrap().contains("concurrent"),
            "GET {path}: {body}"
        );
    }
    let r = post_body(&c, &s, "/v1/topics/t/records?wait_ms=1", "v").await;
    problem(r, 503, "overloaded").await;
    // The routes that do long-poll still wait under their own limit.
    let r = get(&c, &s, "/v1/topics/t/records?offset=0&wait_ms=50").await;
    assert_eq!(r.status(), 200, "{}", json(r).await);
    let r = post(&c, &s, "/v1/groups/g/topics/t/poll?wait_ms=50").await;
    assert_eq!(r.status(), 200, "{}", json(r).await);

    hold.write_all(b"ok").await.unwrap();
    let (status, answer) = read_response(&mut hold).await;
    assert_eq!(status, 201, "{answer}");
}
