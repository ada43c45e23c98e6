//! Connections that never finish a request head, or sit idle, against the real binary:
//! 200 sockets that never send a byte are closed within the header timeout of accept; a
//! keep-alive connection is closed once idle for the idle timeout, while one that keeps
//! asking or streams a follow stays open; h2c connections whose HEADERS never come, never
//! finish, or that go idle after a request, are closed as well.

mod common;

use std::time::{Duration, Instant};

use common::{fresh_server, fresh_server_with_topic, get, metric, post_body, read_response};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads (and discards) until the server closes the socket; `None` if it is still open
/// after `limit`.
async fn closed_within(sock: &mut TcpStream, limit: Duration) -> Option<Instant> {
    let mut buf = [0u8; 4096];
    tokio::time::timeout(limit, async {
        loop {
            match sock.read(&mut buf).await {
                Ok(0) | Err(_) => return Instant::now(),
                Ok(_) => {}
            }
        }
    })
    .await
    .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_silent_connections_are_closed_within_the_header_timeout_of_accept() {
    let (_tmp, s, c) = fresh_server(&["--header-read-timeout-ms", "1000"]).await;
    let opened = Instant::now();
    let mut socks = Vec::new();
    for _ in 0..200 {
        socks.push(TcpStream::connect(&s.addr).await.expect("connect"));
    }
    // And one that starts a head and never finishes it.
    let mut partial = TcpStream::connect(&s.addr).await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHo")
        .await
        .unwrap();
    socks.push(partial);
    let waits: Vec<_> = socks
        .into_iter()
        .map(|mut sock| {
            tokio::spawn(async move { closed_within(&mut sock, Duration::from_secs(6)).await })
        })
        .collect();
    let mut open = 0;
    let mut latest = Duration::ZERO;
    let mut earliest = Duration::MAX;
    for w in waits {
        match w.await.unwrap() {
            Some(at) => {
                latest = latest.max(at - opened);
                earliest = earliest.min(at - opened);
            }
            None => open += 1,
        }
    }
    assert_eq!(
        open, 0,
        "{open} of 201 silent connections still open after 6 s"
    );
    assert!(
        earliest >= Duration::from_millis(900),
        "closed before the header timeout: {earliest:?}"
    );
    assert!(latest <= Duration::from_secs(4), "closed late: {latest:?}");
    assert_eq!(get(&c, &s, "/healthz").await.status(), 200);
    let series = r#"kafko_http_connections_closed_total{reason="no_request_head"}"#;
    assert_eq!(metric(&c, &s, series).await, 201);
    eprintln!(
        "201 silent connections closed between {earliest:?} and {latest:?} after opening (header timeout 1 s)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_close_after_the_idle_timeout_busy_ones_stay() {
    let flags = ["--idle-timeout-ms=1000", "--header-read-timeout-ms=5000"];
    let (_tmp, s, c) = fresh_server_with_topic("t", &flags).await;
    const GET: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

    // A follow stream: its request is in flight as long as it streams.
    let mut follow = TcpStream::connect(&s.addr).await.unwrap();
    follow
        .write_all(b"GET /v1/topics/t/records?follow=true HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        .await
        .unwrap();

    // One request, then silence: closed about 1 s after the answer.
    let mut idle = TcpStream::connect(&s.addr).await.unwrap();
    idle.write_all(GET).await.unwrap();
    assert_eq!(read_response(&mut idle).await.0, 200);
    let answered = Instant::now();
    let idle_closed =
        tokio::spawn(async move { closed_within(&mut idle, Duration::from_secs(5)).await });

    // A request every 400 ms for 2.4 s on one connection: never idle for 1 s.
    let mut busy = TcpStream::connect(&s.addr).await.unwrap();
    for _ in 0..6 {
        busy.write_all(GET).await.unwrap();
        assert_eq!(read_response(&mut busy).await.0, 200);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }

    let closed = idle_closed
        .await
        .unwrap()
        .expect("the idle keep-alive connection is still open 5 s after its last answer");
    let idle_for = closed - answered;
    assert!(
        idle_for >= Duration::from_millis(900) && idle_for <= Duration::from_secs(4),
        "closed {idle_for:?} after the last answer (idle timeout 1 s)"
    );

    // 2.4 s into the stream, far past the idle timeout: a new record still arrives.
    let r = post_body(&c, &s, "/v1/topics/t/records", "late").await;
    assert_eq!(r.status(), 201);
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let got = tokio::time::timeout(Duration::from_secs(5), async {
        while !String::from_utf8_lossy(&seen).contains("\"value\":\"late\"") {
            let n = follow.read(&mut buf).await.expect("read stream");
            assert!(
                n > 0,
                "the follow stream was closed: {}",
                String::from_utf8_lossy(&seen)
            );
            seen.extend_from_slice(&buf[..n]);
        }
    })
    .await;
    assert!(
        got.is_ok(),
        "no record on the follow stream: {}",
        String::from_utf8_lossy(&seen)
    );
    let series = r#"kafko_http_connections_closed_total{reason="idle"}"#;
    // The idle connection, and the test client's own pooled one (idle since it created
    // the topic); not the busy one nor the stream.
    assert_eq!(metric(&c, &s, series).await, 2);

    eprintln!(
        "idle keep-alive closed {idle_for:?} after its answer (idle timeout 1 s); busy connection and a 2.4 s follow stream stayed open"
    );
}

/// The HTTP/2 client preface, and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// A frame header: 24-bit length, type, flags, stream id.
fn frame_head(len: u32, kind: u8, flags: u8, stream: u32) -> Vec<u8> {
    let mut f = len.to_be_bytes()[1..].to_vec();
    f.extend_from_slice(&[kind, flags]);
    f.extend_from_slice(&stream.to_be_bytes());
    f
}

/// A complete HEADERS frame (END_STREAM | END_HEADERS) for `GET /healthz` on stream 1,
/// HPACK-encoded by hand: static-table `:method GET` and `:scheme http`, `:path` as a
/// literal with an indexed name, `:authority` likewise.
fn get_healthz_headers() -> Vec<u8> {
    let mut block = vec![0x82, 0x86, 0x04, 8];
    block.extend_from_slice(b"/healthz");
    block.extend_from_slice(&[0x01, 1, b'x']);
    let mut frame = frame_head(block.len() as u32, 0x1, 0x5, 1);
    frame.extend_from_slice(&block);
    frame
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2c_connections_without_complete_headers_or_gone_idle_are_closed() {
    let flags = ["--header-read-timeout-ms=1000", "--idle-timeout-ms=1500"];
    let (_tmp, s, _) = fresh_server(&flags).await;
    let opened = Instant::now();

    // The preface and SETTINGS, then nothing.
    let mut no_headers = TcpStream::connect(&s.addr).await.unwrap();
    no_headers.write_all(PREFACE).await.unwrap();
    // A HEADERS frame announcing 40 bytes, of which 5 are sent.
    let mut partial = TcpStream::connect(&s.addr).await.unwrap();
    partial.write_all(PREFACE).await.unwrap();
    let mut frame = frame_head(40, 0x1, 0x4, 1);
    frame.extend_from_slice(&[0x82, 0x86, 0x04, 8, b'/']);
    partial.write_all(&frame).await.unwrap();
    // A complete request, answered; then idle.
    let mut asked = TcpStream::connect(&s.addr).await.unwrap();
    asked.write_all(PREFACE).await.unwrap();
    asked.write_all(&get_healthz_headers()).await.unwrap();

    // Frames until the server closes: the answer (HEADERS on stream 1), then GOAWAY.
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut answered = None;
        let mut goaway = false;
        loop {
            match asked.read(&mut chunk).await {
                Ok(0) | Err(_) => return (answered, goaway, Instant::now()),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
            while buf.len() >= 9 {
                let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
                if buf.len() < 9 + len {
                    break;
                }
                let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
                match buf[3] {
                    0x1 if stream == 1 => answered = answered.or(Some(Instant::now())),
                    0x7 => goaway = true,
                    _ => {}
                }
                buf.drain(..9 + len);
            }
        }
    });

    for (name, sock) in [
        ("no HEADERS", &mut no_headers),
        ("partial HEADERS", &mut partial),
    ] {
        let at = closed_within(sock, Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("h2c connection with {name} still open 5 s after accept"));
        let after = at - opened;
        assert!(
            after >= Duration::from_millis(900) && after <= Duration::from_secs(4),
            "h2c with {name} closed {after:?} after accept (header timeout 1 s)"
        );
    }
    let (answered, goaway, closed) = tokio::time::timeout(Duration::from_secs(8), reader)
        .await
        .expect("an idle h2c connection is still open 8 s after its answer")
        .unwrap();
    let answered = answered.expect("the h2c request was answered");
    let idle_for = closed - answered;
    assert!(
        idle_for >= Duration::from_millis(1400) && idle_for <= Duration::from_secs(5),
        "idle h2c closed {idle_for:?} after its answer (idle timeout 1.5 s)"
    );
    assert!(
        goaway,
        "the idle h2c connection was closed without a GOAWAY"
    );
    eprintln!(
        "h2c: silent and partial HEADERS closed after the 1 s header timeout; idle closed {idle_for:?} after its answer, with GOAWAY"
    );
}
