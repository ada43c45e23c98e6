//! Descriptor pressure against the real binary run under a low open-files limit: more
//! silent sockets than the server has descriptors still leave `/healthz` answerable in
//! a moment (the connection cap closes silent sockets to make room), and when accept
//! runs out of descriptors with every connection busy, the server backs off (no
//! spinning, one log line for the run) and accepts again once descriptors free up.

mod common;

use std::time::{Duration, Instant};

use common::{Server, client, create_topic, metric, post_body};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// User + system CPU time of a process, from `/proc/PID/stat` (in clock ticks, 100 a
/// second on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("proc stat");
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// `GET /healthz` on fresh connections until one answers 200 (a refused connection is
/// answered 503 or closed; a probe would try again): how long that took.
async fn probe(addr: &str) -> Duration {
    let started = Instant::now();
    loop {
        let status = tokio::time::timeout(Duration::from_secs(10), async {
            let mut sock = TcpStream::connect(addr).await.ok()?;
            sock.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .ok()?;
            let mut buf = Vec::new();
            sock.read_to_end(&mut buf).await.ok()?;
            let text = String::from_utf8_lossy(&buf).into_owned();
            text.split(' ').nth(1).and_then(|s| s.parse::<u16>().ok())
        })
        .await
        .expect("/healthz unanswered for 10 s");
        match status {
            Some(200) => return started.elapsed(),
            Some(503) | None => tokio::time::sleep(Duration::from_millis(100)).await,
            Some(other) => panic!("/healthz answered {other}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "/healthz not answered 200 in 20 s"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_probes_answer_with_more_silent_sockets_than_descriptors() {
    let tmp = tempfile::tempdir().unwrap();
    // 256 descriptors; the default cap keeps a quarter of them for the log.
    let s = Server::start_with_nofile(&tmp.path().join("data"), &[], 256).await;
    let c = client();
    create_topic(&c, &s, "t", json!({"partitions": 4})).await;
    let mut silent = Vec::new();
    for i in 0..400 {
        // A server that stops accepting fills its listen backlog; connects then hang.
        let sock = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&s.addr))
            .await
            .unwrap_or_else(|_| panic!("connect {i} hung: the server stopped accepting"))
            .expect("connect");
        silent.push(sock);
    }
    let mut worst = Duration::ZERO;
    for _ in 0..3 {
        worst = worst.max(probe(&s.addr).await);
    }
    assert!(
        worst <= Duration::from_secs(3),
        "/healthz took {worst:?} under 400 silent sockets"
    );
    // The log still works: a produce and a read on the same crowded server.
    let r = post_body(&c, &s, "/v1/topics/t/records?key=k", "v").await;
    assert_eq!(r.status(), 201);
    // Past the cap (192), a silent socket made room, or, accepted within 100 ms of all
    // the others, was refused.
    let mut closed = 0;
    for reason in ["evicted", "refused"] {
        let series = format!("kafko_http_connections_closed_total{{reason=\"{reason}\"}}");
        let n = metric(&c, &s, &series).await;
        eprintln!("{reason}: {n}");
        closed += n;
    }
    assert!(
        closed >= 200,
        "only {closed} connections closed at the cap of 192"
    );
    drop(silent);
    eprintln!("400 silent sockets against 256 descriptors: /healthz answered in at most {worst:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_backs_off_when_out_of_descriptors_and_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    // No cap below the descriptor limit: accept itself runs out (EMFILE).
    let s = Server::start_with_nofile(&dir, &["--max-connections", "100000"], 128).await;
    let c = client();
    create_topic(&c, &s, "t", json!({})).await;
    // 160 long-polls of 4 s: every descriptor busy with a request in flight, the rest
    // waiting in the listen backlog.
    let mut polls = Vec::new();
    for _ in 0..160 {
        let mut sock = TcpStream::connect(&s.addr).await.expect("connect");
        sock.write_all(
            b"GET /v1/topics/t/records?offset=latest&wait_ms=4000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        polls.push(sock);
    }
    let pressure_began = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = cpu_ticks(s.pid());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let burnt = cpu_ticks(s.pid()) - before;
    let log = std::fs::read_to_string(dir.with_extension("log")).unwrap();
    let failures_logged = log.matches("accept failed").count();
    assert!(
        failures_logged >= 1,
        "accept never ran out of descriptors; the test did not apply pressure:\n{log}"
    );
    assert_eq!(
        failures_logged, 1,
        "one line for a run of failed accepts, not one per try:\n{log}"
    );
    // 2 s of a spinning accept loop is ~200 ticks.
    assert!(
        burnt <= 40,
        "the server used {burnt} CPU ticks in 2 s out of descriptors"
    );

    // The long-polls end after 4 s, their descriptors free up, accept works again.
    let took = probe(&s.addr).await;
    let recovered = pressure_began.elapsed();
    assert!(
        recovered <= Duration::from_secs(9),
        "/healthz answered only {recovered:?} after the pressure began"
    );
    drop(polls);
    eprintln!(
        "out of descriptors: {burnt} CPU ticks in 2 s, {failures_logged} log line; /healthz answered {recovered:?} after the pressure began (probe {took:?})"
    );
}
