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
    // The next poll carrying its cursor commits what this answer delivered.
    let cursor = b["cursor"].as_str().unwrap();
    let b = poll(&c, &s, &format!("?max_records=1&cursor={cursor}")).await;
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
    // This poll shows it had them (it carries the answer's cursor): they are
    // committed, durably, before it answers.
    let cursor = b["cursor"].as_str().unwrap();
    let b = poll(&c, &s, &format!("?max_records=4&cursor={cursor}")).await;
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

/// Sends a group poll over a raw socket, reads the first KiB of the answer (it came:
/// `200`), then hangs up leaving the rest unread.
async fn poll_and_hang_up(s: &Server, query: &str) {
    let mut conn = tokio::net::TcpStream::connect(&s.addr).await.unwrap();
    let head = format!(
        "POST /v1/groups/g/topics/t/poll{query} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    );
    conn.write_all(head.as_bytes()).await.unwrap();
    let mut first = vec![0u8; 1024];
    conn.read_exact(&mut first).await.unwrap();
    assert!(first.starts_with(b"HTTP/1.1 200"), "the poll answered");
    conn.set_zero_linger().unwrap();
    drop(conn);
}

/// Records of about 1 KiB each, so an answer of a few of them is far past the first KiB
/// a hanging-up client reads but well inside the kernel's socket buffers: the server
/// hands the whole answer over and cannot tell it was never read.
async fn fill_small(c: &reqwest::Client, s: &Server, n: usize) {
    create_topic(c, s, "t", json!({"partitions": 1})).await;
    let records: Vec<Value> = (0..n)
        .map(|i| json!({ "value": format!("{i:04}{}", "x".repeat(1000)) }))
        .collect();
    produce(c, s, "t", "?sync=true", json!(records)).await;
}

#[tokio::test]
async fn an_answer_cut_short_is_not_committed_by_someone_elses_poll() {
    let (_tmp, mut s, c) = fresh_server(&[]).await;
    let dir = s.dir.clone();
    fill_small(&c, &s, 12).await;
    poll_and_hang_up(&s, "?max_records=8").await;
    // Another client's poll reads on, but commits nothing of the answer it cannot know
    // arrived.
    let b = poll(&c, &s, "?max_records=2").await;
    assert_eq!(offsets(&b), [8, 9]);
    assert_eq!(b["committed"], json!([]), "the cut answer was committed");
    let cursor = b["cursor"].as_str().unwrap();
    let b = poll(&c, &s, &format!("?max_records=2&cursor={cursor}")).await;
    assert_eq!(offsets(&b), [10, 11]);
    assert_eq!(
        b["committed"],
        json!([]),
        "an acknowledged answer committed over the unacknowledged one before it"
    );
    let described = get_json(&c, &s, "/v1/groups/g").await;
    assert_eq!(
        described["topics"][0]["partitions"][0]["committed"],
        Value::Null
    );
    // After a restart the group is back at its committed offset: nothing lost.
    s.sigkill().await;
    let s = Server::start(&dir, &[]).await;
    let b = poll(&c, &s, "?max_records=100").await;
    assert_eq!(offsets(&b), (0..12).collect::<Vec<u64>>());
}

#[tokio::test]
async fn a_client_carrying_its_cursor_gets_a_lost_answer_again() {
    let (_tmp, s, c) = fresh_server(&[]).await;
    fill_small(&c, &s, 10).await;
    let b = poll(&c, &s, "?max_records=2").await;
    assert_eq!(offsets(&b), [0, 1]);
    let cursor = b["cursor"].as_str().unwrap().to_owned();
    // The next answer is lost on the way; the client asks again from the same cursor.
    poll_and_hang_up(&s, &format!("?max_records=3&cursor={cursor}")).await;
    let b = poll(&c, &s, &format!("?max_records=3&cursor={cursor}")).await;
    assert_eq!(
        offsets(&b),
        [2, 3, 4],
        "the lost answer's records were skipped"
    );
    // The lost poll itself had committed what its cursor acknowledged.
    let described = get_json(&c, &s, "/v1/groups/g").await;
    assert_eq!(described["topics"][0]["partitions"][0]["committed"], 2);
    // An answer without records keeps the client's cursor.
    let next = b["cursor"].as_str().unwrap().to_owned();
    let b = poll(&c, &s, &format!("?max_records=100&cursor={next}")).await;
    assert_eq!(offsets(&b), [5, 6, 7, 8, 9]);
    assert_eq!(b["committed"], json!([{"partition": 0, "offset": 5}]));
    let last = b["cursor"].as_str().unwrap().to_owned();
    let b = poll(&c, &s, &format!("?cursor={last}")).await;
    assert_eq!(b["records"], json!([]));
    assert_eq!(b["cursor"], json!(last));
    assert_eq!(b["committed"], json!([{"partition": 0, "offset": 10}]));
    // A cursor that is not one is refused.
    let r = post(&c, &s, "/v1/groups/g/topics/t/poll?cursor=yesterday").await;
    problem(r, 400, "invalid_query").await;
}
