//! Attacks on the Kafka listener's connection layer and reads, against the real binary:
//! large frames before SASL authentication, joins that never end at the connection cap,
//! password guessing and unauthenticated floods, unread and throttled fetch answers, and
//! waiting fetches under a steady producer. After each: the process is alive, bystanders
//! are served, and its memory and CPU stay within a bound.
mod common;

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use common::Server;
use common::kafka::{Kafka, assert_bystanders_served};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::{
    ApiVersionsRequest, FetchRequest, GroupId, JoinGroupRequest, MetadataRequest,
    SaslAuthenticateRequest, SaslHandshakeRequest, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const TOKEN: &str = "s3cret-token";
/// SASL_AUTHENTICATION_FAILED.
const AUTH_FAILED: i16 = 58;

async fn start(extra: &[&str]) -> (tempfile::TempDir, Server) {
    let tmp = tempfile::tempdir().unwrap();
    let mut flags = vec!["--kafka-bind", "127.0.0.1:0"];
    flags.extend_from_slice(extra);
    let server = Server::start(&tmp.path().join("data"), &flags).await;
    (tmp, server)
}

/// SaslHandshake (PLAIN) then SaslAuthenticate with `password`: its error code.
async fn login(k: &mut Kafka, password: &str) -> i16 {
    let handshake = k
        .call(
            &SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
            1,
        )
        .await;
    assert_eq!(handshake.error_code, 0);
    let auth = format!("\0user\0{password}");
    let answer = k
        .call(
            &SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(auth.into_bytes())),
            2,
        )
        .await;
    answer.error_code
}

/// The bystander check of a server run with `--auth-token`: alive, `/healthz` answered
/// 200, and a fresh Kafka connection logs in and is answered a Metadata request, each
/// within 2 s.
async fn assert_authenticated_bystanders_served(server: &Server) {
    let pid = server.pid();
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the server died"
    );
    let health = tokio::time::timeout(
        Duration::from_secs(2),
        common::client().get(server.url("/healthz")).send(),
    )
    .await
    .expect("/healthz within 2 s")
    .expect("/healthz answered");
    assert_eq!(health.status(), 200);
    tokio::time::timeout(Duration::from_secs(2), async {
        let mut k = Kafka::connect(server).await;
        assert_eq!(login(&mut k, TOKEN).await, 0);
        k.call(&MetadataRequest::default().with_topics(Some(vec![])), 9)
            .await
    })
    .await
    .expect("a logged-in Kafka Metadata request answered within 2 s");
}

/// Whether the server closes `stream` (EOF or reset) within `within`, whatever it
/// sends first.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    tokio::time::timeout(within, async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

// ------------------------------------------------------------- frames before SASL

/// 247 unauthenticated connections each announce a 16 MiB frame and trickle 1 MiB of
/// it: each is closed from its size prefix (Kafka's `sasl.server.max.receive.size`,
/// 512 KiB), so the server buffers next to nothing; once logged in, a client's frame may
/// be larger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_large_frames_are_refused_from_their_size_prefix() {
    let (_tmp, server) = start(&["--auth-token", TOKEN]).await;
    let addr = server.kafka.clone().unwrap();
    let pid = server.pid();
    let (base, _) = common::memory_mib(pid);
    let cpu = common::cpu_seconds(pid);
    let started = Instant::now();
    let attackers = (0..247).map(|_| {
        let addr = addr.clone();
        tokio::spawn(async move {
            let mut stream = TcpStream::connect(&addr).await.unwrap();
            // An ApiVersions header, then filler up to the declared 16 MiB.
            let mut head = BytesMut::new();
            head.put_i32(16 << 20);
            head.put_slice(&[0, 18, 0, 0, 0, 0, 0, 1, 0, 0]);
            let mut sent = 0usize;
            if stream.write_all(&head).await.is_ok() {
                let chunk = vec![0u8; 64 * 1024];
                for _ in 0..16 {
                    if stream.write_all(&chunk).await.is_err() {
                        break;
                    }
                    sent += chunk.len();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
            let closed = closed_within(&mut stream, Duration::from_secs(5)).await;
            (closed, sent)
        })
    });
    let mut closed = 0;
    for attacker in attackers.collect::<Vec<_>>() {
        let (was_closed, _sent) = attacker.await.unwrap();
        closed += usize::from(was_closed);
    }
    let (rss, peak) = common::memory_mib(pid);
    let cpu = common::cpu_seconds(pid) - cpu;
    eprintln!(
        "247 x 16 MiB frames before SASL: {closed} closed by the server in {:?}; \
         RSS {base} -> {rss} MiB (peak {peak}), {cpu:.2} s CPU",
        started.elapsed()
    );
    assert_eq!(
        closed, 247,
        "every oversized unauthenticated frame closes its connection"
    );
    assert!(peak < base + 64, "peak RSS {peak} MiB from {base} MiB");
    assert_authenticated_bystanders_served(&server).await;

    // Up to the limit before SASL, and larger once logged in.
    let mut k = Kafka::connect(&server).await;
    k.send(&ApiVersionsRequest::default(), 3, &vec![0u8; 400 * 1024])
        .await;
    let _ = k.recv::<ApiVersionsRequest>(3).await;
    assert_eq!(login(&mut k, TOKEN).await, 0);
    k.send(
        &MetadataRequest::default().with_topics(Some(vec![])),
        9,
        &vec![0u8; 2 << 20],
    )
    .await;
    let _ = k.recv::<MetadataRequest>(9).await;
    // Past it before SASL: closed from the prefix.
    let mut k = Kafka::connect(&server).await;
    k.stream
        .write_all(&(600i32 * 1024).to_be_bytes())
        .await
        .unwrap();
    assert!(closed_within(&mut k.stream, Duration::from_secs(2)).await);
}

/// Without SASL, 64 connections each announce a 16 MiB Produce and trickle what the
/// server takes of it: only `--queued-max-request-bytes` (32 MiB here, Kafka's
/// `queued.max.request.bytes`) of large frames are read at once, the rest wait in the
/// kernel, and small requests (Metadata, `/healthz`) are served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_frames_together_stay_within_the_request_pool() {
    let tmp = tempfile::tempdir().unwrap();
    let pool = (32 << 20).to_string();
    // Through the environment, as a deployment would set it.
    let server = Server::start_env(
        &tmp.path().join("data"),
        &["--kafka-bind", "127.0.0.1:0"],
        &[("KAFKO_QUEUED_MAX_REQUEST_BYTES", &pool)],
    )
    .await;
    let addr = server.kafka.clone().unwrap();
    let pid = server.pid();
    let (base, _) = common::memory_mib(pid);
    let attackers: Vec<_> = (0..64)
        .map(|_| {
            let addr = addr.clone();
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(&addr).await.unwrap();
                let mut head = BytesMut::new();
                head.put_i32(16 << 20);
                head.put_slice(&[0, 0, 0, 9, 0, 0, 0, 1, 0, 0]);
                stream.write_all(&head).await.unwrap();
                let chunk = vec![0u8; 64 * 1024];
                let mut sent = 0usize;
                // Up to 4 MiB, while the server (or the kernel) takes it.
                for _ in 0..64 {
                    let write = stream.write_all(&chunk);
                    match tokio::time::timeout(Duration::from_millis(300), write).await {
                        Ok(Ok(())) => sent += chunk.len(),
                        _ => break,
                    }
                }
                (stream, sent)
            })
        })
        .collect();
    let mut held = Vec::new();
    let mut sent = 0;
    for attacker in attackers {
        let (stream, bytes) = attacker.await.unwrap();
        held.push(stream);
        sent += bytes;
    }
    let (rss, peak) = common::memory_mib(pid);
    eprintln!(
        "64 x 16 MiB frames, pool 32 MiB: {} MiB sent; RSS {base} -> {rss} MiB (peak {peak})",
        sent >> 20
    );
    assert!(peak < base + 32 + 16, "peak RSS {peak} MiB from {base} MiB");
    // Served while the pool is full.
    assert_bystanders_served(&server).await;
    drop(held);
}

// ------------------------------------------------------------- joins that never end

/// The consumer protocol's subscription to no topic.
fn subscription() -> Bytes {
    Bytes::from_static(&[0, 0, 0, 0, 0, 0, 255, 255, 255, 255])
}

fn join(group: &str, member: &str) -> JoinGroupRequest {
    JoinGroupRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_owned())))
        .with_member_id(StrBytes::from_string(member.to_owned()))
        .with_session_timeout_ms(60_000)
        .with_rebalance_timeout_ms(300_000)
        .with_protocol_type(StrBytes::from_static_str("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default()
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(subscription()),
        ])
}

/// 220 joins that wait for a rebalance (a first member that never rejoins, a 5 min
/// rebalance timeout) at `--max-connections 200`: every slot is busy. Once their clients
/// close the sockets, the joins are dropped and the slots freed at once: `/healthz` and
/// new Kafka connections are served within seconds, not after the rebalance timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_whose_clients_closed_free_their_connection_slots() {
    let (_tmp, server) = start(&["--max-connections", "200"]).await;
    let pid = server.pid();
    let cpu = common::cpu_seconds(pid);
    // Ten groups, each with a first member that got its answer and stays silent.
    for g in 0..10 {
        let mut first = Kafka::connect(&server).await;
        let answer = first.call(&join(&format!("g{g}"), ""), 3).await;
        assert_eq!(answer.error_code, 0);
    }
    let mut waiting = Vec::new();
    for i in 0..220 {
        let mut k = Kafka::connect(&server).await;
        k.send(&join(&format!("g{}", i % 10), ""), 3, &[]).await;
        waiting.push(k);
    }
    // Every admitted join handled (the HTTP port is at the cap too: no describe to ask).
    until_idle(pid).await;
    let at_cap = common::client().get(server.url("/healthz")).send().await;
    let at_cap = at_cap.map(|r| r.status().as_u16()).unwrap_or(0);
    eprintln!("220 waiting joins at --max-connections 200: /healthz answered {at_cap}");
    assert_ne!(
        at_cap, 200,
        "every connection slot is held by a waiting join"
    );
    let closed = Instant::now();
    drop(waiting);
    let recovered = loop {
        let health = common::client().get(server.url("/healthz")).send().await;
        if health.is_ok_and(|r| r.status() == 200) {
            break closed.elapsed();
        }
        assert!(
            closed.elapsed() < Duration::from_secs(5),
            "/healthz still refused 5 s after the clients closed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let cpu = common::cpu_seconds(pid) - cpu;
    let (rss, peak) = common::memory_mib(pid);
    eprintln!(
        "clients closed: /healthz 200 after {recovered:?}; RSS {rss} MiB (peak {peak}), {cpu:.2} s CPU"
    );
    assert_bystanders_served(&server).await;
    assert!(peak < 256, "peak RSS {peak} MiB");
}

/// A follower's SyncGroup waits for a leader that never sends its own (the rebalance
/// timeout is 5 min): past its time limit (`--request-timeout-ms`, here at its floor of
/// `--max-wait-ms` + 5 s) the request is cut and its connection closed, rather than
/// holding the slot until the group gives up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_its_time_limit_is_cut() {
    let (_tmp, server) = start(&["--request-timeout-ms", "1000", "--max-wait-ms", "0"]).await;
    let mut leader = Kafka::connect(&server).await;
    let first = leader.call(&join("sync", ""), 3).await;
    assert_eq!(first.error_code, 0);
    let leader_id = first.member_id.to_string();
    let mut follower = Kafka::connect(&server).await;
    follower.send(&join("sync", ""), 3, &[]).await;
    let c = common::client();
    common::until("the follower in the group", async || {
        common::kafka::members(&c, &server, "sync").await == 2
    })
    .await;
    let rejoined = leader.call(&join("sync", &leader_id), 3).await;
    assert_eq!(rejoined.error_code, 0);
    let (_, joined) = follower.recv::<JoinGroupRequest>(3).await;
    assert_eq!(joined.error_code, 0);
    let started = Instant::now();
    follower
        .send(
            &SyncGroupRequest::default()
                .with_group_id(GroupId(StrBytes::from_static_str("sync")))
                .with_generation_id(joined.generation_id)
                .with_member_id(joined.member_id.clone()),
            3,
            &[],
        )
        .await;
    let closed = closed_within(&mut follower.stream, Duration::from_secs(15)).await;
    let after = started.elapsed();
    eprintln!("a SyncGroup waiting for a silent leader: connection closed after {after:?}");
    assert!(closed, "the waiting SyncGroup was not cut within 15 s");
    assert!(after >= Duration::from_secs(4), "cut after only {after:?}");
    assert_bystanders_served(&server).await;
}

// ------------------------------------------------------------- SASL

/// Wrong passwords are answered only after Kafka's
/// `connection.failed.authentication.delay.ms` (100 ms), and close the connection: one
/// try per connection, ten a second per connection slot at most.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentications_are_slowed_and_end_the_connection() {
    let (_tmp, server) = start(&["--auth-token", TOKEN]).await;
    let started = Instant::now();
    let tries = 20;
    for _ in 0..tries {
        let mut k = Kafka::connect(&server).await;
        assert_eq!(login(&mut k, "guess").await, AUTH_FAILED);
        assert!(closed_within(&mut k.stream, Duration::from_secs(2)).await);
    }
    let per_try = started.elapsed() / tries;
    eprintln!("{tries} wrong passwords, one per connection: {per_try:?} each");
    assert!(
        per_try >= Duration::from_millis(95),
        "{per_try:?} per failed try"
    );
    assert_authenticated_bystanders_served(&server).await;
}

/// At the connection cap, a flood of unauthenticated connections (each sent ApiVersions
/// and went idle) closes one another, never the logged-in client that sits idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_connections_never_evict_an_authenticated_one() {
    let (_tmp, server) = start(&["--auth-token", TOKEN, "--max-connections", "20"]).await;
    let mut victim = Kafka::connect(&server).await;
    assert_eq!(login(&mut victim, TOKEN).await, 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut flood = Vec::new();
    for _ in 0..60 {
        let mut k = Kafka::connect(&server).await;
        if k.try_call(&ApiVersionsRequest::default(), 3)
            .await
            .is_some()
        {
            flood.push(k);
        }
        // Idle long enough to be evictable.
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    let after = victim
        .try_call(&MetadataRequest::default().with_topics(Some(vec![])), 9)
        .await;
    eprintln!(
        "60 unauthenticated connections at --max-connections 20: {} answered; the \
         logged-in client {}",
        flood.len(),
        if after.is_some() {
            "still served"
        } else {
            "was evicted"
        }
    );
    assert!(
        after.is_some(),
        "the authenticated idle connection was evicted"
    );
    drop(flood);
    assert_authenticated_bystanders_served(&server).await;
}

// ------------------------------------------------------------- fetch answers

/// Waits (at most 20 s) until the server has worked through what it was sent: less than
/// 20 ms of CPU in 200 ms.
async fn until_idle(pid: u32) {
    let started = Instant::now();
    loop {
        let cpu = common::cpu_seconds(pid);
        tokio::time::sleep(Duration::from_millis(200)).await;
        if common::cpu_seconds(pid) - cpu < 0.02 || started.elapsed() > Duration::from_secs(20) {
            return;
        }
    }
}

/// A Fetch (v4) of `partitions` partitions (0, 1, ...) of `topic` from offset 0.
fn fetch(
    topic: &str,
    partitions: i32,
    partition_max: i32,
    min_bytes: i32,
    wait_ms: i32,
) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(wait_ms)
        .with_min_bytes(min_bytes)
        .with_max_bytes(16 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(common::kafka::name(topic))
                .with_partitions(
                    (0..partitions)
                        .map(|p| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_partition_max_bytes(partition_max)
                        })
                        .collect(),
                ),
        ])
}

/// A client that sends `request` and never reads (a small receive buffer, so the kernel
/// takes little of the answer off the server).
async fn silent_fetcher(server: &Server, request: &FetchRequest) -> Kafka {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let addr = server.kafka.as_deref().unwrap().parse().unwrap();
    let mut k = Kafka {
        stream: socket.connect(addr).await.unwrap(),
        next: 1,
    };
    k.send(request, 4, &[]).await;
    k
}

/// Fills partition 0 of `topic` with `mib` MiB: batches of 16 records of 64 KiB.
async fn fill(server: &Server, topic: &str, mib: usize) {
    let value: &'static [u8] = Box::leak(vec![b'v'; 64 * 1024].into_boxed_slice());
    let records: Vec<_> = (0..16)
        .map(|_| common::kafka::Rec {
            value: Some(value),
            ..Default::default()
        })
        .collect();
    let mut k = Kafka::connect(server).await;
    for _ in 0..mib {
        let batch = common::kafka::batch(&records, 0, None);
        let (error, _) = common::kafka::produce_batch(&mut k, topic, 0, batch).await;
        assert_eq!(error, 0);
    }
}

/// Two clients that never read Fetch answers naming 100,000 partitions of a topic that
/// does not exist: the budget books the bytes their answers hold (about 30 bytes a
/// partition), not an allowance per listed entry, so a consumer's 8 MiB read still fits
/// in a 32 MiB budget and is served, not throttled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_fetch_answers_book_the_bytes_they_hold() {
    let (_tmp, server) = start(&["--max-answer-buffer-bytes", &(32 << 20).to_string()]).await;
    fill(&server, "data", 8).await;
    let (base, _) = common::memory_mib(server.pid());
    let flood = fetch("nope", 100_000, 0, 0, 0);
    let mut silent = Vec::new();
    for _ in 0..2 {
        silent.push(silent_fetcher(&server, &flood).await);
    }
    until_idle(server.pid()).await;
    let mut k = Kafka::connect(&server).await;
    let started = Instant::now();
    let answer = k.call(&fetch("data", 1, 8 << 20, 1, 0), 4).await;
    let records = answer.responses[0].partitions[0]
        .records
        .as_ref()
        .map_or(0, Bytes::len);
    let (rss, peak) = common::memory_mib(server.pid());
    eprintln!(
        "2 unread fetches of 100,000 unknown partitions, budget 32 MiB: an 8 MiB read \
         answered in {:?} with {records} record bytes, throttle {} ms; RSS {base} -> {rss} \
         MiB (peak {peak})",
        started.elapsed(),
        answer.throttle_time_ms
    );
    assert_eq!(answer.throttle_time_ms, 0, "the reader was throttled");
    assert!(rss < base + 32 + 64, "RSS {rss} MiB from {base} MiB");
    // Whole stored batches of 1 MiB: seven of the eight fit the 8 MiB read.
    assert!(records >= 7 << 20, "{records} record bytes");
    drop(silent);
    assert_bystanders_served(&server).await;
}

/// Clients that never read, each asking for 250,000 partitions (answers of 7.5 MB,
/// more than the kernel's socket buffers take): answers past the budget (8 MiB) are
/// throttled, and a throttled answer is inside the budget too (it names no partition
/// when even it finds no room), so the server holds about the budget. (Scaled down from
/// 62 clients and 10^6 partitions: the same shape, a few seconds of a debug build.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttled_fetch_answers_stay_inside_the_answer_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let budget = (8 << 20).to_string();
    // glibc's mmap threshold fixed: large blocks go back to the system when freed, so
    // RSS shows what the server holds rather than what the allocator keeps.
    let server = Server::start_env(
        &tmp.path().join("data"),
        &[
            "--kafka-bind",
            "127.0.0.1:0",
            "--max-answer-buffer-bytes",
            &budget,
        ],
        &[("MALLOC_MMAP_THRESHOLD_", "131072")],
    )
    .await;
    let pid = server.pid();
    let (base, _) = common::memory_mib(pid);
    let cpu = common::cpu_seconds(pid);
    let flood = fetch("nope", 250_000, 0, 0, 0);
    let mut silent = Vec::new();
    let mut held = Vec::new();
    for _ in 0..10 {
        silent.push(silent_fetcher(&server, &flood).await);
        // One request read at a time: what stays is what the answers hold.
        until_idle(pid).await;
        held.push(common::memory_mib(pid).0);
    }
    let (rss, peak) = common::memory_mib(pid);
    let cpu = common::cpu_seconds(pid) - cpu;
    // From the second client on (the allocator's pools are warm): only throttled ones.
    let grew = rss - held[1];
    eprintln!(
        "10 unread fetches of 250,000 partitions, budget 8 MiB: RSS {base} -> {rss} MiB \
         (peak {peak}; after each client {held:?}: +{grew} MiB over the last 8), {cpu:.2} s CPU"
    );
    assert!(
        grew < 8,
        "throttled answers held {grew} MiB past the budget"
    );
    assert!(rss < base + 8 + 40, "RSS {rss} MiB held from {base} MiB");
    assert_bystanders_served(&server).await;
    drop(silent);
}

/// 8 fetches wait for more bytes than a 16 MiB partition can give them while a producer
/// appends small records: a wake-up reads only past what each fetch found (here
/// nothing: its answer is full), so the server's CPU stays low and the producer keeps
/// its pace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_fetches_read_only_what_an_append_adds() {
    let (_tmp, server) = start(&[]).await;
    fill(&server, "big", 16).await;
    let pid = server.pid();
    let mut waiters = Vec::new();
    for _ in 0..8 {
        let mut k = Kafka::connect(&server).await;
        k.send(&fetch("big", 1, 16 << 20, i32::MAX, 30_000), 4, &[])
            .await;
        waiters.push(k);
    }
    // Their first reads done: all eight wait.
    common::until_reads_waiting(&common::client(), &server, "kafka", 8).await;
    let cpu = common::cpu_seconds(pid);
    let started = Instant::now();
    let mut producer = Kafka::connect(&server).await;
    let mut appends = 0u32;
    while started.elapsed() < Duration::from_secs(4) {
        let batch = common::kafka::batch(
            &[common::kafka::Rec {
                value: Some(b"tick"),
                ..Default::default()
            }],
            0,
            None,
        );
        let (error, _) = common::kafka::produce_batch(&mut producer, "big", 0, batch).await;
        assert_eq!(error, 0);
        appends += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = common::cpu_seconds(pid) - cpu;
    let (rss, peak) = common::memory_mib(pid);
    eprintln!(
        "8 waiting fetches on 16 MiB, a producer for {elapsed:.1} s: {appends} appends, \
         {cpu:.2} s CPU ({:.2} s per s); RSS {rss} MiB (peak {peak})",
        cpu / elapsed
    );
    assert!(cpu / elapsed < 0.4, "{cpu:.2} s of CPU in {elapsed:.1} s");
    assert!(appends >= 150, "the producer slowed to {appends} appends");
    drop(waiters);
    assert_bystanders_served(&server).await;
}
