//! Group polls are at-least-once over HTTP: an answer that does not reach the client in
//! full commits nothing, so its records come again on the group's next poll — whether
//! the client hung up mid-answer or the server was killed right after answering. Only a
//! join, poll, commit or seek creates a group.
mod common;

use common::{Server, create_topic, fresh_server, get_json, json, post, problem, produce};
use reqwest::Method;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn poll(c: &reqwest::Client, s: &Server, query: &str) -> Value {
    let r = post(c, s, &format!("/v1/groups/g/topics/t/poll{query}")).await;
    assert_eq!(r.status(), 200);
    json(r).await
}

fn offsets(body: &Value) -> Vec<u64> {
    body["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn an_answer_the_client_hung_up_on_comes_back() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "t", json!({"partitions": 1})).await;
    // ~14 MiB of records: far more than the socket buffers hold, so the answer cannot
    // be sent in full while the client reads nothing.
    let big = "x".repeat(900 * 1024);
    for _ in 0..4 {
        let records: Vec<Value> = (0..4).map(|_| json!({ "value": big })).collect();
        produce(&c, &s, "t", "", json!(records)).await;
    }

    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut conn = socket.connect(s.addr.parse().unwrap()).await.unwrap();
    conn.write_all(
        b"POST /v1/groups/g/topics/t/poll?max_records=100&max_bytes=16777216 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    )
    .await
    .unwrap();
    let mut head = [0u8; 12];
    conn.read_exact(&mut head).await.unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "the poll answered");
    // Hang up with a reset, leaving the rest of the answer unread.
    conn.set_zero_linger().unwrap();
    drop(conn);

    // The group is back before those records (the long-poll waits out the moment the
    // server needs to notice the reset).
    let b = poll(&c, &s, "?max_records=1&wait_ms=10000").await;
    assert_eq!(offsets(&b), [0], "records of the lost answer were skipped");
    assert_eq!(b["committed"], json!([]));
    // The next poll commits what this answer delivered.
    let b = poll(&c, &s, "?max_records=1").await;
    assert_eq!(offsets(&b), [1]);
    assert_eq!(b["committed"], json!([{"partition": 0, "offset": 1}]));
}

#[tokio::test]
async fn a_poll_answered_right_before_a_sigkill_comes_back_after_the_restart() {
    let (_tmp, mut s, c) = fresh_server(&[]).await;
    let dir = s.dir.clone();
    create_topic(&c, &s, "t", json!({"partitions": 1})).await;
    let records: Vec<Value> = (0..6)
        .map(|i| json!({ "value": format!("v{i}") }))
        .collect();
    produce(&c, &s, "t", "?sync=true", json!(records)).await;

    assert_eq!(offsets(&poll(&c, &s, "?max_records=4").await), [0, 1, 2, 3]);
    s.sigkill().await;
    let mut s = Server::start(&dir, &[]).await;
    // The client never showed it had the records: they come again.
    let b = poll(&c, &s, "?max_records=4").await;
    assert_eq!(offsets(&b), [0, 1, 2, 3]);
    // This poll shows it had them: they are committed, durably, before it answers.
    let b = poll(&c, &s, "?max_records=4").await;
    assert_eq!(offsets(&b), [4, 5]);
    assert_eq!(b["committed"], json!([{"partition": 0, "offset": 4}]));
    s.sigkill().await;
    let s = Server::start(&dir, &[]).await;
    assert_eq!(offsets(&poll(&c, &s, "").await), [4, 5]);
}

#[tokio::test]
async fn leave_describe_and_delete_of_an_unknown_group_create_nothing() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    create_topic(&c, &s, "t", json!({"partitions": 1})).await;
    for (method, path) in [
        (Method::DELETE, "/v1/groups/ghost/topics/t/members/m1"),
        (Method::GET, "/v1/groups/ghost"),
        (Method::DELETE, "/v1/groups/ghost"),
    ] {
        let r = c.request(method, s.url(path)).send().await.unwrap();
        problem(r, 404, "group_not_found").await;
    }
    // A refused poll (unknown member) creates nothing either.
    let path = "/v1/groups/ghost/topics/t/poll?member_id=m1&generation=1";
    problem(post(&c, &s, path).await, 409, "unknown_member").await;
    assert_eq!(get_json(&c, &s, "/v1/groups").await, json!({"groups": []}));
    // A poll creates the group.
    poll(&c, &s, "").await;
    let listed = get_json(&c, &s, "/v1/groups").await;
    assert_eq!(listed["groups"][0]["group"], "g");
}
