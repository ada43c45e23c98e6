//! Clients that ask for large answers and never read them pin at most the server's
//! answer budget (`--max-answer-buffer-bytes`): the reads past it are refused with 503
//! `overloaded` and `Retry-After`, and the server's memory stays bounded while they stay
//! connected.
mod common;

use std::time::{Duration, Instant};

use common::{Server, client, create_topic, get, memory_mib, post_json};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const READERS: usize = 100;
const BUDGET_MIB: u64 = 64;
/// What the server may hold beyond the budget: its own baseline, the answer pool's idle
/// buffers, the allocator's slack.
const SLACK_MIB: u64 = 96;

/// A connection that sends one request and reads nothing (a small receive buffer, so
/// the kernel takes little of the answer off the server).
async fn silent_reader(addr: &str, path: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut sock = socket.connect(addr.parse().unwrap()).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    sock.write_all(request.as_bytes()).await.unwrap();
    sock
}

/// The status of the answer waiting on `sock`.
async fn status(sock: &mut TcpStream) -> u16 {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(30), sock.read(&mut byte))
            .await
            .expect("an answer in time")
            .unwrap();
        assert_eq!(n, 1, "closed before the answer's head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    if head.starts_with("HTTP/1.1 503") {
        assert!(
            head.to_ascii_lowercase().contains("retry-after: 1"),
            "{head}"
        );
    }
    head.split(' ').nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_answers_hold_at_most_the_answer_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let budget = (BUDGET_MIB << 20).to_string();
    // Through the environment, as a deployment would set it.
    let s = Server::start_env(
        &tmp.path().join("data"),
        &[],
        &[("KAFKO_MAX_ANSWER_BUFFER_BYTES", &budget)],
    )
    .await;
    let c = client();
    create_topic(&c, &s, "big", json!({})).await;
    // 16 MiB of records: one fetch of --max-fetch-bytes returns all of it.
    let value = "v".repeat(128 * 1024);
    for _ in 0..4 {
        let records: Vec<_> = (0..32).map(|_| json!({ "value": value })).collect();
        let r = post_json(
            &c,
            &s,
            "/v1/topics/big/records",
            &json!({ "records": records }),
        )
        .await;
        assert_eq!(r.status().as_u16(), 201);
    }
    let (base, _) = memory_mib(s.pid());

    let path = "/v1/topics/big/records?offset=0&max_records=10000&max_bytes=16777216";
    let started = Instant::now();
    let mut readers = Vec::new();
    for _ in 0..READERS {
        readers.push(silent_reader(&s.addr, path).await);
    }
    // Every reader is answered or refused within the budget's wait; sample meanwhile.
    let mut peak = 0;
    while started.elapsed() < Duration::from_secs(8) {
        peak = peak.max(memory_mib(s.pid()).0);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (rss, hwm) = memory_mib(s.pid());
    // The server still answers while the readers hold their answers.
    assert_eq!(get(&c, &s, "/healthz").await.status().as_u16(), 200);
    let mut answered = 0;
    let mut refused = 0;
    for sock in &mut readers {
        match status(sock).await {
            200 => answered += 1,
            503 => refused += 1,
            other => panic!("unexpected status {other}"),
        }
    }
    println!(
        "{READERS} readers that never read, budget {BUDGET_MIB} MiB: {answered} answered 200, {refused} refused 503; RSS {base} MiB before, peak {peak} MiB, {rss} MiB after 8 s, VmHWM {hwm} MiB"
    );
    assert!(
        peak <= BUDGET_MIB + SLACK_MIB,
        "RSS reached {peak} MiB with {READERS} unread answers (budget {BUDGET_MIB} MiB)"
    );
    assert!(answered >= 1, "no reader was answered");
    assert!(refused >= 1, "no reader was refused");
}
