//! Hostile consumer-group requests against the real binary's Kafka listener: opaque
//! assignments of any protocol type, answers that would repeat per listed name,
//! quadratic joins and leaves, joins that would wait for weeks, handshake and ghost-group
//! floods, members and offset metadata that would hold memory without a bound, and the
//! logical offsets of a reset. After each attack the server still serves bystanders, and
//! its CPU time and memory stay within a bound.

mod common;

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use common::kafka::codes::{
    GROUP_MAX_SIZE_REACHED, INVALID_REQUEST, INVALID_SESSION_TIMEOUT, MEMBER_ID_REQUIRED,
    OFFSET_METADATA_TOO_LARGE, UNKNOWN_MEMBER_ID,
};
use common::kafka::{Kafka, assert_bystanders_served, s};
use common::{Server, cpu_seconds, create_topic, get, memory_mib};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    DescribeGroupsRequest, GroupId, HeartbeatRequest, JoinGroupRequest, JoinGroupResponse,
    LeaveGroupRequest, OffsetCommitRequest, OffsetFetchRequest, RequestHeader, SyncGroupRequest,
    TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server with the Kafka listener and the topic `t` (one partition).
async fn start(flags: &[&str]) -> (tempfile::TempDir, Server, reqwest::Client) {
    let mut all = vec!["--kafka-bind", "127.0.0.1:0"];
    all.extend_from_slice(flags);
    let (tmp, server, c) = common::fresh_server(&all).await;
    create_topic(&c, &server, "t", json!({})).await;
    (tmp, server, c)
}

/// Prints and returns the CPU seconds since `cpu_before` and the RSS and peak RSS (MiB).
fn figures(label: &str, server: &Server, cpu_before: f64) -> (f64, u64, u64) {
    let cpu = cpu_seconds(server.pid()) - cpu_before;
    let (rss, peak) = memory_mib(server.pid());
    eprintln!("{label}: {cpu:.2} s CPU, RSS {rss} MiB, peak {peak} MiB");
    (cpu, rss, peak)
}

fn join_request(
    group: &str,
    member: &str,
    protocol_type: &str,
    protocols: Vec<(String, Bytes)>,
) -> JoinGroupRequest {
    let mut request = JoinGroupRequest::default();
    request.group_id = GroupId(s(group));
    request.session_timeout_ms = 10_000;
    request.rebalance_timeout_ms = 30_000;
    request.member_id = s(member);
    request.protocol_type = s(protocol_type);
    request.protocols = protocols
        .into_iter()
        .map(|(name, metadata)| {
            let mut p = JoinGroupRequestProtocol::default();
            p.name = s(&name);
            p.metadata = metadata;
            p
        })
        .collect();
    request
}

fn range(metadata: Bytes) -> Vec<(String, Bytes)> {
    vec![("range".to_owned(), metadata)]
}

/// The member-id handshake, then the join (v5).
async fn handshake_join(k: &mut Kafka, mut request: JoinGroupRequest) -> JoinGroupResponse {
    let first = k.call(&request, 5).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    request.member_id = first.member_id;
    let answer = k.call(&request, 5).await;
    assert_eq!(answer.error_code, 0, "the join after the handshake");
    answer
}

async fn sync(
    k: &mut Kafka,
    group: &str,
    member: &str,
    generation: i32,
    assignment: Bytes,
) -> (i16, Bytes) {
    let mut request = SyncGroupRequest::default();
    request.group_id = GroupId(s(group));
    request.generation_id = generation;
    request.member_id = s(member);
    let mut a = SyncGroupRequestAssignment::default();
    a.member_id = s(member);
    a.assignment = assignment;
    request.assignments = vec![a];
    let answer = k.call(&request, 3).await;
    (answer.error_code, answer.assignment)
}

/// A request frame (size prefix included) with correlation id `correlation`.
fn frame<R: Request>(request: &R, version: i16, correlation: i32) -> Vec<u8> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation)
        .with_client_id(Some(s("hostile")));
    let mut body = BytesMut::new();
    header
        .encode(&mut body, R::header_version(version))
        .unwrap();
    request.encode(&mut body, version).unwrap();
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&i32::try_from(body.len()).unwrap().to_be_bytes());
    out.extend_from_slice(&body);
    out
}

/// Sends `frames` on one connection without waiting (a writer task) while reading
/// their answers; returns each answer's body (header included).
async fn pipeline(server: &Server, frames: Vec<Vec<u8>>) -> Vec<Bytes> {
    let stream = TcpStream::connect(server.kafka.as_deref().unwrap())
        .await
        .unwrap();
    let (mut read, mut write) = stream.into_split();
    let n = frames.len();
    let writer = tokio::spawn(async move {
        for f in frames {
            write.write_all(&f).await.unwrap();
        }
        write
    });
    let mut answers = Vec::with_capacity(n);
    for _ in 0..n {
        let mut size = [0u8; 4];
        tokio::time::timeout(Duration::from_secs(60), read.read_exact(&mut size))
            .await
            .expect("an answer in time")
            .expect("an answer");
        let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(size)).unwrap()];
        read.read_exact(&mut body).await.unwrap();
        answers.push(Bytes::from(body));
    }
    drop(writer.await.unwrap());
    answers
}

/// Decodes an answer body of `R` at `version`.
fn decode<R: Request>(mut body: Bytes, version: i16) -> R::Response {
    let _ = kafka_protocol::messages::ResponseHeader::decode(
        &mut body,
        R::Response::header_version(version),
    )
    .unwrap();
    R::Response::decode(&mut body, version).unwrap()
}

/// Sends one request and returns the answer's size in bytes and the answer.
async fn call_sized<R: Request>(k: &mut Kafka, request: &R, version: i16) -> (usize, R::Response) {
    k.send(request, version, &[]).await;
    let body = k.read_frame().await;
    (body.len(), decode::<R>(body, version))
}

/// A consumer-protocol assignment whose topic array claims `i32::MAX` entries.
fn hostile_assignment() -> Bytes {
    let mut b = BytesMut::new();
    b.put_i16(0);
    b.put_i32(i32::MAX);
    b.put_slice(b"not enough bytes for even one topic");
    b.freeze()
}

#[tokio::test(flavor = "multi_thread")]
async fn assignments_of_other_protocol_types_are_opaque_and_consumer_ones_read_defensively() {
    let (_tmp, server, c) = start(&[]).await;
    let cpu0 = cpu_seconds(server.pid());
    let mut k = Kafka::connect(&server).await;
    // Karapace and Schema Registry elect their leader through a group of type "sr".
    let metadata = Bytes::from_static(
        br#"{"version":2,"host":"registry","port":8081,"scheme":"http","master_eligibility":true}"#,
    );
    let request = join_request("schemas", "", "sr", vec![("v0".into(), metadata.clone())]);
    let joined = handshake_join(&mut k, request).await;
    let member = joined.member_id.to_string();
    let elected = Bytes::from(format!(
        r#"{{"error":0,"master":"{member}","master_identity":{{"host":"registry","port":8081}}}}"#
    ));
    let (code, got) = sync(
        &mut k,
        "schemas",
        &member,
        joined.generation_id,
        elected.clone(),
    )
    .await;
    assert_eq!(
        (code, got),
        (0, elected.clone()),
        "the JSON assignment is relayed"
    );

    // A consumer group whose leader claims 2^31 - 1 topics.
    let joined = handshake_join(
        &mut k,
        join_request("liar", "", "consumer", range(Bytes::new())),
    )
    .await;
    let liar = joined.member_id.to_string();
    let (code, got) = sync(
        &mut k,
        "liar",
        &liar,
        joined.generation_id,
        hostile_assignment(),
    )
    .await;
    assert_eq!((code, got), (0, hostile_assignment()));

    let mut describe = DescribeGroupsRequest::default();
    describe.groups = vec![GroupId(s("schemas")), GroupId(s("liar"))];
    let described = k.call(&describe, 5).await;
    let sr = &described.groups[0];
    assert_eq!(sr.protocol_type.as_str(), "sr");
    assert_eq!(sr.members[0].member_metadata, metadata);
    assert_eq!(sr.members[0].member_assignment, elected);
    assert_eq!(
        described.groups[1].members[0].member_assignment,
        hostile_assignment()
    );
    for group in ["schemas", "liar"] {
        let r = get(&c, &server, &format!("/v1/groups/{group}")).await;
        assert_eq!(r.status(), 200, "/v1 describes {group}");
    }
    let metrics = get(&c, &server, "/metrics").await;
    assert_eq!(metrics.status(), 200, "the lag of every group");

    assert_bystanders_served(&server).await;
    let (cpu, _, peak) = figures("opaque assignments", &server, cpu0);
    assert!(peak < 200, "peak RSS {peak} MiB");
    assert!(cpu < 5.0, "{cpu} s CPU");
}

#[tokio::test(flavor = "multi_thread")]
async fn describe_groups_and_offset_fetch_answer_each_name_once() {
    let (_tmp, server, _c) = start(&[]).await;
    let cpu0 = cpu_seconds(server.pid());
    let mut k = Kafka::connect(&server).await;
    // One member with 512 KiB of metadata: 20,000 descriptions of it would be 10 GiB.
    let big = Bytes::from(vec![7u8; 512 * 1024]);
    handshake_join(
        &mut k,
        join_request("wide", "", "consumer", range(big.clone())),
    )
    .await;
    let mut describe = DescribeGroupsRequest::default();
    describe.groups = vec![GroupId(s("wide")); 20_000];
    let (size, described) = call_sized(&mut k, &describe, 5).await;
    eprintln!("DescribeGroups naming one group 20,000 times: {size} B answer");
    assert_eq!(described.groups.len(), 1);
    assert_eq!(described.groups[0].members[0].member_metadata, big);
    assert!(size < 600 * 1024, "{size} B");

    // A 4 KiB metadata string (the most allowed), fetched 100,000 times by name.
    let committed = commit(&mut k, "fetched", "t", &[(0, 0, Some("m".repeat(4096)))]).await;
    assert_eq!(committed, vec![0]);
    let mut topic = OffsetFetchRequestTopic::default();
    topic.name = TopicName(s("t"));
    topic.partition_indexes = vec![0; 100_000];
    let mut fetch = OffsetFetchRequest::default();
    fetch.group_id = GroupId(s("fetched"));
    fetch.topics = Some(vec![topic.clone(), topic]);
    let (size, fetched) = call_sized(&mut k, &fetch, 7).await;
    eprintln!("OffsetFetch naming one partition 200,000 times: {size} B answer");
    assert_eq!(fetched.topics.len(), 1);
    assert_eq!(fetched.topics[0].partitions.len(), 1);
    assert!(size < 8 * 1024, "{size} B");
    assert_bystanders_served(&server).await;
    let (cpu, _, peak) = figures("repeated names", &server, cpu0);
    assert!(peak < 200, "peak RSS {peak} MiB");
    assert!(cpu < 5.0, "{cpu} s CPU");
}

/// Commits `(partition, offset, metadata)` rows of `topic` for `group` from a client
/// that is no member; the partitions' error codes.
async fn commit(
    k: &mut Kafka,
    group: &str,
    topic: &str,
    rows: &[(i32, i64, Option<String>)],
) -> Vec<i16> {
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s(topic));
    t.partitions = rows
        .iter()
        .map(|(p, o, m)| {
            let mut row = OffsetCommitRequestPartition::default();
            row.partition_index = *p;
            row.committed_offset = *o;
            row.committed_metadata = m.as_deref().map(s);
            row
        })
        .collect();
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s(group));
    request.generation_id_or_member_epoch = -1;
    request.topics = vec![t];
    let answer = k.call(&request, 8).await;
    answer.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// The committed offset of `topic` partition `partition` for `group` (−1: none).
async fn fetch_committed(k: &mut Kafka, group: &str, topic: &str, partition: i32) -> i64 {
    let mut t = OffsetFetchRequestTopic::default();
    t.name = TopicName(s(topic));
    t.partition_indexes = vec![partition];
    let mut fetch = OffsetFetchRequest::default();
    fetch.group_id = GroupId(s(group));
    fetch.topics = Some(vec![t]);
    k.call(&fetch, 7).await.topics[0].partitions[0].committed_offset
}

#[tokio::test(flavor = "multi_thread")]
async fn a_join_offering_many_protocols_is_refused_at_once() {
    let (_tmp, server, _c) = start(&[]).await;
    let cpu0 = cpu_seconds(server.pid());
    let mut k = Kafka::connect(&server).await;
    // 50,000 assignors (about 1 MB): their checks were quadratic under the groups' lock.
    let many: Vec<(String, Bytes)> = (0..50_000)
        .map(|i| (format!("assignor-{i:06}"), Bytes::new()))
        .collect();
    let started = Instant::now();
    let answer = k
        .call(&join_request("assignors", "", "consumer", many), 3)
        .await;
    let took = started.elapsed();
    eprintln!("a join of 50,000 protocols answered in {took:?}");
    assert_eq!(answer.error_code, INVALID_REQUEST);
    // Up to the limit (32), the join goes through and the leader's first choice wins.
    let some: Vec<(String, Bytes)> = (0..32)
        .map(|i| (format!("assignor-{i:02}"), Bytes::new()))
        .collect();
    let joined = handshake_join(&mut k, join_request("assignors", "", "consumer", some)).await;
    assert_eq!(joined.protocol_name.as_deref(), Some("assignor-00"));

    assert_bystanders_served(&server).await;
    let (cpu, _, peak) = figures("many protocols", &server, cpu0);
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(cpu < 3.0, "{cpu} s CPU");
    assert!(peak < 200, "peak RSS {peak} MiB");
}

#[tokio::test(flavor = "multi_thread")]
async fn session_and_rebalance_timeouts_are_bounded() {
    let (_tmp, server, _c) = start(&[
        "--group-min-session-timeout-ms",
        "6000",
        "--group-max-session-timeout-ms",
        "7000",
    ])
    .await;
    let cpu0 = cpu_seconds(server.pid());
    let mut k = Kafka::connect(&server).await;
    for session in [0, 1_000, 5_999, 7_001, i32::MAX] {
        let mut request = join_request("timeouts", "", "consumer", range(Bytes::new()));
        request.session_timeout_ms = session;
        let answer = k.call(&request, 5).await;
        assert_eq!(
            answer.error_code, INVALID_SESSION_TIMEOUT,
            "session {session} ms"
        );
    }
    // A stable member that heartbeats but never rejoins, and a newcomer asking for a
    // rebalance of 2^31 - 1 ms (24.8 days): the wait is cut to the longest session.
    let mut request = join_request("timeouts", "", "consumer", range(Bytes::new()));
    request.session_timeout_ms = 6_000;
    request.rebalance_timeout_ms = i32::MAX;
    let first = handshake_join(&mut k, request.clone()).await;
    let (first_id, generation) = (first.member_id.to_string(), first.generation_id);
    assert_eq!(
        sync(&mut k, "timeouts", &first_id, generation, Bytes::new())
            .await
            .0,
        0
    );
    let heartbeats = {
        let server_kafka = Kafka::connect(&server).await;
        tokio::spawn(async move {
            let mut k = server_kafka;
            loop {
                let mut beat = HeartbeatRequest::default();
                beat.group_id = GroupId(s("timeouts"));
                beat.generation_id = generation;
                beat.member_id = s(&first_id);
                if k.try_call(&beat, 3).await.is_none() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    let mut newcomer = Kafka::connect(&server).await;
    let started = Instant::now();
    let second = handshake_join(&mut newcomer, request).await;
    let waited = started.elapsed();
    heartbeats.abort();
    eprintln!("a join with a 24.8-day rebalance timeout answered after {waited:?}");
    assert!(waited < Duration::from_secs(12), "{waited:?}");
    assert_eq!(
        second.leader, second.member_id,
        "the silent member was removed"
    );

    assert_bystanders_served(&server).await;
    let (cpu, _, peak) = figures("timeouts", &server, cpu0);
    assert!(cpu < 3.0, "{cpu} s CPU");
    assert!(peak < 200, "peak RSS {peak} MiB");
}

#[tokio::test(flavor = "multi_thread")]
async fn leave_group_with_many_member_ids_is_linear() {
    let (_tmp, server, _c) = start(&[]).await;
    let cpu0 = cpu_seconds(server.pid());
    let mut k = Kafka::connect(&server).await;
    let joined = handshake_join(
        &mut k,
        join_request("leaving", "", "consumer", range(Bytes::new())),
    )
    .await;
    let member = joined.member_id.to_string();
    // 60,000 ids (about 1 MB), the real member's last, against a group and a stranger.
    for group in ["nobody-here", "leaving"] {
        let mut leave = LeaveGroupRequest::default();
        leave.group_id = GroupId(s(group));
        leave.members = (0..60_000)
            .map(|i| {
                let mut m = MemberIdentity::default();
                m.member_id = if i == 59_999 && group == "leaving" {
                    s(&member)
                } else {
                    s(&format!("ghost-{i:06}"))
                };
                m
            })
            .collect();
        let started = Instant::now();
        let answer = k.call(&leave, 3).await;
        eprintln!(
            "LeaveGroup of 60,000 ids on {group}: {:?}",
            started.elapsed()
        );
        assert_eq!(answer.members.len(), 60_000);
        let unknown = answer
            .members
            .iter()
            .filter(|m| m.error_code == UNKNOWN_MEMBER_ID)
            .count();
        assert_eq!(unknown, if group == "leaving" { 59_999 } else { 60_000 });
    }

    assert_bystanders_served(&server).await;
    let (cpu, _, peak) = figures("leave of 60,000 ids", &server, cpu0);
    assert!(cpu < 4.0, "{cpu} s CPU");
    assert!(peak < 300, "peak RSS {peak} MiB");
}

#[tokio::test(flavor = "multi_thread")]
async fn pending_member_ids_are_bounded_and_expire() {
    let (_tmp, server, _c) = start(&["--group-max-size", "1000"]).await;
    let cpu0 = cpu_seconds(server.pid());
    // 30,000 handshakes on one group, pipelined: each used to scan every pending id.
    let frames = (0..30_000)
        .map(|i| {
            frame(
                &join_request("handshakes", "", "consumer", range(Bytes::new())),
                4,
                i,
            )
        })
        .collect();
    let started = Instant::now();
    let answers = pipeline(&server, frames).await;
    eprintln!("30,000 handshakes answered in {:?}", started.elapsed());
    let ids: Vec<String> = answers
        .into_iter()
        .map(|a| {
            let answer = decode::<JoinGroupRequest>(a, 4);
            assert_eq!(answer.error_code, MEMBER_ID_REQUIRED);
            answer.member_id.to_string()
        })
        .collect();
    let mut k = Kafka::connect(&server).await;
    // The group keeps the latest 1,000 (its size): the first id is gone, the last joins.
    let first = join_request("handshakes", &ids[0], "consumer", range(Bytes::new()));
    assert_eq!(k.call(&first, 4).await.error_code, UNKNOWN_MEMBER_ID);
    let last = join_request("handshakes", &ids[29_999], "consumer", range(Bytes::new()));
    assert_eq!(k.call(&last, 4).await.error_code, 0);
    let (cpu, _, peak) = figures("30,000 handshakes", &server, cpu0);

    // A pending id lives for its join's session timeout (6 s here), as in Kafka.
    let mut request = join_request("expiring", "", "consumer", range(Bytes::new()));
    request.session_timeout_ms = 6_000;
    let pending = k.call(&request, 4).await;
    assert_eq!(pending.error_code, MEMBER_ID_REQUIRED);
    tokio::time::sleep(Duration::from_millis(6_500)).await;
    request.member_id = pending.member_id;
    assert_eq!(k.call(&request, 4).await.error_code, UNKNOWN_MEMBER_ID);

    assert_bystanders_served(&server).await;
    assert!(cpu < 8.0, "{cpu} s CPU");
    assert!(peak < 200, "peak RSS {peak} MiB");
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_server_wide_pending_ids_members_join_without_the_handshake() {
    let (_tmp, server, _c) = start(&["--groups-max-pending-members", "3"]).await;
    let cpu0 = cpu_seconds(server.pid());
    let mut k = Kafka::connect(&server).await;
    let mut codes = Vec::new();
    for i in 0..5 {
        let request = join_request(&format!("pending-{i}"), "", "consumer", range(Bytes::new()));
        codes.push(k.call(&request, 4).await.error_code);
    }
    assert_eq!(
        codes,
        [
            MEMBER_ID_REQUIRED,
            MEMBER_ID_REQUIRED,
            MEMBER_ID_REQUIRED,
            0,
            0
        ]
    );
    assert_bystanders_served(&server).await;
    let (cpu, _, peak) = figures("server-wide pending ids", &server, cpu0);
    assert!(cpu < 2.0, "{cpu} s CPU");
    assert!(peak < 200, "peak RSS {peak} MiB");
}

/// Sends a v3 join (no handshake) on a fresh connection; the connection, to read the
/// answer from later.
async fn join_without_waiting(server: &Server, group: &str, metadata: Bytes) -> Kafka {
    let mut k = Kafka::connect(server).await;
    k.send(
        &join_request(group, "", "consumer", range(metadata)),
        3,
        &[],
    )
    .await;
    k
}

/// The error code of an answer that has arrived within `wait`, `None` if none has.
async fn answered(k: &mut Kafka, wait: Duration) -> Option<i16> {
    let mut size = [0u8; 4];
    tokio::time::timeout(wait, k.stream.read_exact(&mut size))
        .await
        .ok()?
        .ok()?;
    let mut body = vec![0u8; usize::try_from(i32::from_be_bytes(size)).unwrap()];
    k.stream.read_exact(&mut body).await.unwrap();
    Some(decode::<JoinGroupRequest>(Bytes::from(body), 3).error_code)
}

#[tokio::test(flavor = "multi_thread")]
async fn group_members_and_their_bytes_are_capped() {
    let (_tmp, server, c) = start(&["--group-max-size", "20"]).await;
    let cpu0 = cpu_seconds(server.pid());
    let (rss0, _) = memory_mib(server.pid());
    eprintln!("RSS before the attack: {rss0} MiB");
    // 20 joins of 4 MiB each: past the 1 MiB a member may hold.
    let huge = Bytes::from(vec![1u8; 4 * 1024 * 1024]);
    for _ in 0..20 {
        let mut k = join_without_waiting(&server, "huge", huge.clone()).await;
        assert_eq!(
            answered(&mut k, Duration::from_secs(5)).await,
            Some(GROUP_MAX_SIZE_REACHED)
        );
    }
    // Twenty members, then one more (the others wait in the rebalance they started).
    let mut waiting = Vec::new();
    for _ in 0..20 {
        waiting.push(join_without_waiting(&server, "twenty", Bytes::new()).await);
    }
    common::until("twenty members", async || {
        common::kafka::members(&c, &server, "twenty").await == 20
    })
    .await;
    let mut extra = join_without_waiting(&server, "twenty", Bytes::new()).await;
    assert_eq!(
        answered(&mut extra, Duration::from_secs(5)).await,
        Some(GROUP_MAX_SIZE_REACHED)
    );
    // 900 KiB members: the group holds at most 16 MiB of them.
    let mut heavy = Vec::new();
    let metadata = Bytes::from(vec![2u8; 900 * 1024]);
    for _ in 0..30 {
        heavy.push(join_without_waiting(&server, "heavy", metadata.clone()).await);
    }
    // Every join handled: a refusal is answered at once, the others are members waiting
    // in the rebalance.
    let mut refused = 0;
    common::until("every heavy join a member or refused", async || {
        let mut waiting_joins = Vec::new();
        for mut k in std::mem::take(&mut heavy) {
            if answered(&mut k, Duration::ZERO).await == Some(GROUP_MAX_SIZE_REACHED) {
                refused += 1;
            } else {
                waiting_joins.push(k);
            }
        }
        heavy = waiting_joins;
        common::kafka::members(&c, &server, "heavy").await + refused == 30
    })
    .await;
    eprintln!("30 joins of 900 KiB into one group: {refused} refused");
    assert!((10..=14).contains(&refused), "{refused} refused");

    assert_bystanders_served(&server).await;
    let (cpu, rss, peak) = figures("group caps", &server, cpu0);
    assert!(rss < rss0 + 64, "RSS {rss0} -> {rss} MiB");
    assert!(peak < 250, "peak RSS {peak} MiB");
    assert!(cpu < 5.0, "{cpu} s CPU");
    drop(waiting);
}

#[tokio::test(flavor = "multi_thread")]
async fn offset_metadata_past_the_limit_is_refused_per_partition() {
    let (_tmp, server, c) = start(&[]).await;
    create_topic(&c, &server, "two", json!({"partitions": 2})).await;
    let cpu0 = cpu_seconds(server.pid());
    let (rss0, _) = memory_mib(server.pid());
    eprintln!("RSS before the attack: {rss0} MiB");
    let mut k = Kafka::connect(&server).await;
    let rows = [
        (0, 0, Some("x".repeat(4097))),
        (1, 0, Some("fine".to_owned())),
    ];
    assert_eq!(
        commit(&mut k, "meta", "two", &rows).await,
        vec![OFFSET_METADATA_TOO_LARGE, 0]
    );
    assert_eq!(fetch_committed(&mut k, "meta", "two", 0).await, -1);
    assert_eq!(fetch_committed(&mut k, "meta", "two", 1).await, 0);
    // 32 commits of 8 MiB strings: each refused, none kept.
    let huge = "y".repeat(8 * 1024 * 1024);
    for i in 0..32 {
        let rows = [(0, 0, Some(huge.clone()))];
        let group = format!("meta-{i}");
        assert_eq!(
            commit(&mut k, &group, "two", &rows).await,
            vec![OFFSET_METADATA_TOO_LARGE]
        );
    }

    assert_bystanders_served(&server).await;
    let (cpu, rss, _) = figures("offset metadata", &server, cpu0);
    assert!(rss < rss0 + 64, "RSS {rss0} -> {rss} MiB");
    assert!(cpu < 5.0, "{cpu} s CPU");
}

#[tokio::test(flavor = "multi_thread")]
async fn ghost_groups_of_handshakes_are_bounded_by_bytes() {
    let (_tmp, server, _c) = start(&["--idle-groups-max-bytes", "8388608"]).await;
    let cpu0 = cpu_seconds(server.pid());
    let (rss0, _) = memory_mib(server.pid());
    eprintln!("RSS before the attack: {rss0} MiB");
    // 100,000 handshakes on as many new group names, pipelined in batches.
    let mut answered = 0;
    for batch in 0..4 {
        let frames = (0..25_000)
            .map(|i| {
                let group = format!("ghost-{batch}-{i:05}");
                frame(
                    &join_request(&group, "", "consumer", range(Bytes::new())),
                    4,
                    i,
                )
            })
            .collect();
        answered += pipeline(&server, frames).await.len();
    }
    assert_eq!(answered, 100_000);

    assert_bystanders_served(&server).await;
    let (cpu, rss, _) = figures("100,000 ghost groups", &server, cpu0);
    assert!(rss < rss0 + 60, "RSS {rss0} -> {rss} MiB");
    assert!(cpu < 30.0, "{cpu} s CPU");
}

#[tokio::test(flavor = "multi_thread")]
async fn logical_offsets_reset_a_group_to_the_earliest_or_latest_offset() {
    let (_tmp, server, c) = start(&[]).await;
    let cpu0 = cpu_seconds(server.pid());
    let records: Vec<_> = (0..10).map(|i| json!({"value": format!("r{i}")})).collect();
    common::produce(&c, &server, "t", "", json!(records)).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(commit(&mut k, "reset", "t", &[(0, 7, None)]).await, vec![0]);
    // kafkajs' admin.resetOffsets: −2 is the earliest offset, −1 the latest.
    assert_eq!(
        commit(&mut k, "reset", "t", &[(0, -1, None)]).await,
        vec![0]
    );
    assert_eq!(fetch_committed(&mut k, "reset", "t", 0).await, 10);
    assert_eq!(
        commit(&mut k, "reset", "t", &[(0, -2, None)]).await,
        vec![0]
    );
    assert_eq!(fetch_committed(&mut k, "reset", "t", 0).await, 0);
    assert_eq!(
        commit(&mut k, "reset", "t", &[(0, -3, None)]).await,
        vec![INVALID_REQUEST]
    );
    // A consumer of the group now starts at the earliest record.
    let r = common::post(&c, &server, "/v1/groups/reset/topics/t/poll").await;
    assert_eq!(r.status(), 200);
    let body = common::json(r).await;
    assert_eq!(body["records"][0]["offset"], 0, "{body}");
    assert_bystanders_served(&server).await;
    let (cpu, _, peak) = figures("logical offsets", &server, cpu0);
    assert!(cpu < 2.0, "{cpu} s CPU");
    assert!(peak < 200, "peak RSS {peak} MiB");
}
