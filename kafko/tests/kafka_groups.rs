//! Consumer groups over the Kafka protocol, black-box: the real binary with
//! `--kafka-bind`, classic-protocol requests encoded by the `kafka-protocol` crate. Two
//! members rebalance and, committing as they go, read every record exactly once; stale
//! generations and unknown members are refused; offsets committed over Kafka are the
//! ones `/v1` shows and survive a restart, SIGKILL included, with their metadata;
//! DescribeGroups, ListGroups and any group id.
//! A group of three survives a SIGKILL of the server with no rebalance, and its static
//! member restarts without one, fencing its old id.

mod common;

use std::collections::BTreeSet;

use bytes::{BufMut, Bytes, BytesMut};
use common::kafka::codes::{
    FENCED_INSTANCE_ID, ILLEGAL_GENERATION, MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
};
use common::kafka::{Kafka, s};
use common::{Server, client, create_topic, get_json};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponsePartition;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, DescribeGroupsRequest, GroupId, HeartbeatRequest, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest,
    OffsetFetchRequest, SyncGroupRequest, TopicName,
};
use kafka_protocol::protocol::Encodable;
use serde_json::json;
use tokio::net::TcpStream;

fn join_request(group: &str, member: &str) -> JoinGroupRequest {
    let mut protocol = JoinGroupRequestProtocol::default();
    protocol.name = s("range");
    protocol.metadata = Bytes::from(format!("subscription of {member}"));
    let mut request = JoinGroupRequest::default();
    request.group_id = GroupId(s(group));
    request.session_timeout_ms = 10_000;
    request.rebalance_timeout_ms = 30_000;
    request.member_id = s(member);
    request.protocol_type = s("consumer");
    request.protocols = vec![protocol];
    request
}

/// The member-id handshake, then the join (v5); returns the answer.
async fn join(k: &mut Kafka, group: &str) -> JoinGroupResponse {
    let first = k.call(&join_request(group, ""), 5).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    rejoin(k, group, first.member_id.as_str()).await
}

async fn rejoin(k: &mut Kafka, group: &str, member: &str) -> JoinGroupResponse {
    let answer = k.call(&join_request(group, member), 5).await;
    assert_eq!(answer.error_code, 0, "join of {member}");
    answer
}

/// A consumer-protocol assignment of `partitions` of `topic`.
fn assignment(topic: &str, partitions: &[i32]) -> Bytes {
    let mut tp = TopicPartition::default();
    tp.topic = TopicName(s(topic));
    tp.partitions = partitions.to_vec();
    let mut a = ConsumerProtocolAssignment::default();
    a.assigned_partitions = vec![tp];
    let mut buf = BytesMut::new();
    buf.put_i16(3);
    a.encode(&mut buf, 3).unwrap();
    buf.freeze()
}

async fn sync(
    k: &mut Kafka,
    group: &str,
    member: &str,
    generation: i32,
    assignments: Vec<(&str, Bytes)>,
) -> (i16, Bytes) {
    let mut request = SyncGroupRequest::default();
    request.group_id = GroupId(s(group));
    request.generation_id = generation;
    request.member_id = s(member);
    request.assignments = assignments
        .into_iter()
        .map(|(id, bytes)| {
            let mut a = SyncGroupRequestAssignment::default();
            a.member_id = s(id);
            a.assignment = bytes;
            a
        })
        .collect();
    let answer = k.call(&request, 3).await;
    (answer.error_code, answer.assignment)
}

async fn heartbeat(k: &mut Kafka, group: &str, member: &str, generation: i32) -> i16 {
    let mut request = HeartbeatRequest::default();
    request.group_id = GroupId(s(group));
    request.generation_id = generation;
    request.member_id = s(member);
    k.call(&request, 3).await.error_code
}

/// One partition's commit: (partition, next offset, leader epoch or −1, metadata).
type CommitRow<'a> = (i32, i64, i32, Option<&'a str>);

/// Commits `rows` of `topic` by OffsetCommit v8 as `member` (empty, generation −1: as no
/// member); the partitions' error codes.
async fn commit_rows(
    k: &mut Kafka,
    (group, member, generation): (&str, &str, i32),
    topic: &str,
    rows: &[CommitRow<'_>],
) -> Vec<i16> {
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s(topic));
    t.partitions = rows
        .iter()
        .map(|&(p, o, epoch, metadata)| {
            let mut partition = OffsetCommitRequestPartition::default();
            partition.partition_index = p;
            partition.committed_offset = o;
            partition.committed_leader_epoch = epoch;
            partition.committed_metadata = metadata.map(s);
            partition
        })
        .collect();
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s(group));
    request.generation_id_or_member_epoch = generation;
    request.member_id = s(member);
    request.topics = vec![t];
    let answer = k.call(&request, 8).await;
    answer.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// Commits `offsets` (partition, next offset) of `topic`, with metadata naming the
/// member; the partitions' error codes.
async fn commit(
    k: &mut Kafka,
    who: (&str, &str, i32),
    topic: &str,
    offsets: &[(i32, i64)],
) -> Vec<i16> {
    let by = format!("by {}", who.1);
    let rows: Vec<CommitRow> = offsets
        .iter()
        .map(|&(p, o)| (p, o, -1, Some(&*by)))
        .collect();
    commit_rows(k, who, topic, &rows).await
}

/// OffsetFetch at `version` (before 8: one group) of `partitions` of `topic`; its
/// partitions, after checking the answer's error code.
async fn offset_fetch(
    k: &mut Kafka,
    group: &str,
    topic: &str,
    partitions: &[i32],
    version: i16,
) -> Vec<OffsetFetchResponsePartition> {
    let mut t = OffsetFetchRequestTopic::default();
    t.name = TopicName(s(topic));
    t.partition_indexes = partitions.to_vec();
    let mut request = OffsetFetchRequest::default();
    request.group_id = GroupId(s(group));
    request.topics = Some(vec![t]);
    let mut answer = k.call(&request, version).await;
    assert_eq!(answer.error_code, 0);
    answer.topics.swap_remove(0).partitions
}

/// The committed offset and metadata of each of `partitions` (v7).
async fn fetch_offsets(
    k: &mut Kafka,
    group: &str,
    topic: &str,
    partitions: &[i32],
) -> Vec<(i64, String)> {
    offset_fetch(k, group, topic, partitions, 7)
        .await
        .iter()
        .map(|p| {
            let metadata = p
                .metadata
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            (p.committed_offset, metadata)
        })
        .collect()
}

/// Reads `partition` of `topic` from `from` through `/v1`: the values, and the next
/// offset.
async fn read(server: &Server, topic: &str, partition: i32, from: i64) -> (Vec<String>, i64) {
    let c = client();
    let path =
        format!("/v1/topics/{topic}/records?partition={partition}&offset={from}&max_records=1000");
    let body = get_json(&c, server, &path).await;
    let values: Vec<String> = common::record_values(&body);
    let next = from + i64::try_from(values.len()).unwrap();
    (values, next)
}

async fn start(dir: &std::path::Path) -> Server {
    Server::start(dir, &["--kafka-bind", "127.0.0.1:0"]).await
}

#[tokio::test]
async fn two_members_rebalance_and_read_every_record_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let c = client();
    create_topic(&c, &server, "orders", json!({"partitions": 4})).await;
    for p in 0..4 {
        let records: Vec<_> = (0..10)
            .map(|i| json!({"value": format!("p{p}-{i}"), "partition": p}))
            .collect();
        let r = common::post_json(
            &c,
            &server,
            "/v1/topics/orders/records",
            &json!({"records": records}),
        )
        .await;
        assert_eq!(r.status(), 201);
    }
    let mut a = Kafka::connect(&server).await;
    let joined = join(&mut a, "billing").await;
    let a_id = joined.member_id.to_string();
    assert_eq!(
        (joined.generation_id, joined.leader.as_str()),
        (1, a_id.as_str())
    );
    assert_eq!(joined.members.len(), 1);
    let (code, mine) = sync(
        &mut a,
        "billing",
        &a_id,
        1,
        vec![(&a_id, assignment("orders", &[0, 1, 2, 3]))],
    )
    .await;
    assert_eq!((code, mine), (0, assignment("orders", &[0, 1, 2, 3])));

    // a reads half of each partition and commits.
    let mut seen = BTreeSet::new();
    for p in 0..4 {
        let (values, _) = read(&server, "orders", p, 0).await;
        for v in &values[..5] {
            assert!(seen.insert(v.clone()));
        }
    }
    let codes = commit(
        &mut a,
        ("billing", &a_id, 1),
        "orders",
        &[(0, 5), (1, 5), (2, 5), (3, 5)],
    )
    .await;
    assert_eq!(codes, [0, 0, 0, 0]);

    // b joins on its own connection: its join waits until a rejoins.
    let b_join = tokio::spawn({
        let addr = server.kafka.clone();
        async move {
            let mut b = Kafka {
                stream: TcpStream::connect(addr.unwrap()).await.unwrap(),
                next: 1,
            };
            let answer = join(&mut b, "billing").await;
            (b, answer)
        }
    });
    loop {
        match heartbeat(&mut a, "billing", &a_id, 1).await {
            REBALANCE_IN_PROGRESS => break,
            0 => tokio::task::yield_now().await,
            other => panic!("heartbeat answered {other}"),
        }
    }
    assert!(!b_join.is_finished());
    let a2 = rejoin(&mut a, "billing", &a_id).await;
    let (mut b, b2) = b_join.await.unwrap();
    let b_id = b2.member_id.to_string();
    assert_eq!((a2.generation_id, b2.generation_id), (2, 2));
    assert_eq!(a2.leader.as_str(), a_id);
    assert_eq!(a2.members.len(), 2, "the leader sees every member");
    assert!(b2.members.is_empty());
    let b_metadata = a2
        .members
        .iter()
        .find(|m| m.member_id.as_str() == b_id)
        .unwrap();
    assert_eq!(
        &b_metadata.metadata[..],
        format!("subscription of {b_id}").as_bytes()
    );

    // b's sync waits for the leader's, then gets its assignment byte for byte.
    let b_sync = tokio::spawn({
        let b_id = b_id.clone();
        async move {
            let got = sync(&mut b, "billing", &b_id, 2, Vec::new()).await;
            (b, got)
        }
    });
    let for_a = assignment("orders", &[0, 1]);
    let for_b = assignment("orders", &[2, 3]);
    let (code, mine) = sync(
        &mut a,
        "billing",
        &a_id,
        2,
        vec![(&a_id, for_a.clone()), (&b_id, for_b.clone())],
    )
    .await;
    assert_eq!((code, mine), (0, for_a));
    let (mut b, (code, got)) = b_sync.await.unwrap();
    assert_eq!((code, got), (0, for_b));

    // A commit of the old generation is refused; an unknown member too.
    let stale = commit(&mut a, ("billing", &a_id, 1), "orders", &[(0, 9)]).await;
    assert_eq!(stale, [ILLEGAL_GENERATION]);
    assert_eq!(
        heartbeat(&mut a, "billing", "nobody", 2).await,
        UNKNOWN_MEMBER_ID
    );

    // Each resumes its partitions at the commits and reads the rest.
    for (k, id, partitions) in [(&mut a, &a_id, [0, 1]), (&mut b, &b_id, [2, 3])] {
        let committed = fetch_offsets(k, "billing", "orders", &partitions).await;
        assert_eq!(committed, vec![(5, format!("by {a_id}")); 2]);
        let mut next = Vec::new();
        for (p, (from, _)) in partitions.iter().zip(committed) {
            let (values, end) = read(&server, "orders", *p, from).await;
            for v in values {
                assert!(seen.insert(v.clone()), "{v} read twice");
            }
            next.push((*p, end));
        }
        assert_eq!(commit(k, ("billing", id, 2), "orders", &next).await, [0, 0]);
    }
    assert_eq!(seen.len(), 40, "every record once");

    // /v1 sees the same group: its Kafka side, members and what they were assigned.
    let d = get_json(&c, &server, "/v1/groups/billing").await;
    assert_eq!(d["kafka"]["state"], "Stable");
    assert_eq!(d["kafka"]["protocol"], "range");
    assert_eq!(d["generation"], 2);
    let owners: Vec<&str> = d["topics"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["owner"].as_str().unwrap())
        .collect();
    assert_eq!(owners, [a_id.as_str(), &a_id, &b_id, &b_id]);
    let committed: Vec<u64> = d["topics"][0]["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["committed"].as_u64().unwrap())
        .collect();
    assert_eq!(committed, [10, 10, 10, 10]);

    // DescribeGroups and ListGroups.
    let mut describe = DescribeGroupsRequest::default();
    describe.groups = vec![GroupId(s("billing")), GroupId(s("nothing here"))];
    let described = a.call(&describe, 5).await;
    let billing = &described.groups[0];
    assert_eq!(billing.group_state.as_str(), "Stable");
    assert_eq!(billing.protocol_data.as_str(), "range");
    assert_eq!(billing.members.len(), 2);
    assert_eq!(billing.members[0].client_id.as_str(), "kafko-test");
    assert_eq!(described.groups[1].group_state.as_str(), "Dead");
    let listed = a.call(&ListGroupsRequest::default(), 4).await;
    let names: Vec<&str> = listed.groups.iter().map(|g| g.group_id.as_str()).collect();
    assert_eq!(names, ["billing"]);

    // b leaves; a is told to rejoin.
    let mut leave = LeaveGroupRequest::default();
    leave.group_id = GroupId(s("billing"));
    leave.member_id = s(&b_id);
    assert_eq!(b.call(&leave, 1).await.error_code, 0);
    assert_eq!(
        heartbeat(&mut a, "billing", &a_id, 2).await,
        REBALANCE_IN_PROGRESS
    );
}

#[tokio::test]
async fn offsets_committed_over_kafka_survive_a_restart_and_any_group_id_works() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path()).await;
    let c = client();
    create_topic(&c, &server, "t", json!({"partitions": 2})).await;
    let mut k = Kafka::connect(&server).await;
    // A client that is no member commits to an empty group (generation −1); the id
    // holds characters kafko's names do not.
    let odd = "team a/consumers:v2";
    assert_eq!(
        commit(&mut k, (odd, "", -1), "t", &[(0, 0), (1, 0)]).await,
        [0, 0]
    );
    let r = common::post_json(
        &c,
        &server,
        "/v1/topics/t/records",
        &json!({"records": [{"value": "x", "partition": 1}]}),
    )
    .await;
    assert_eq!(r.status(), 201);
    assert_eq!(commit(&mut k, (odd, "", -1), "t", &[(1, 1)]).await, [0]);
    assert_eq!(
        fetch_offsets(&mut k, odd, "t", &[0, 1]).await,
        [(0, "by ".to_owned()), (1, "by ".to_owned())]
    );
    server.sigterm().await;
    let server = start(dir.path()).await;
    let mut k = Kafka::connect(&server).await;
    // Offsets and their metadata strings, as committed.
    assert_eq!(
        fetch_offsets(&mut k, odd, "t", &[0, 1]).await,
        [(0, "by ".to_owned()), (1, "by ".to_owned())]
    );
    let listed = k.call(&ListGroupsRequest::default(), 4).await;
    let names: Vec<&str> = listed.groups.iter().map(|g| g.group_id.as_str()).collect();
    assert_eq!(names, [odd]);
    // An unknown group has no offsets (-1), and a member id it never gave out is unknown.
    assert_eq!(fetch_offsets(&mut k, "fresh", "t", &[0]).await[0].0, -1);
    let answer = k.call(&join_request("fresh", "made-up"), 5).await;
    assert_eq!(answer.error_code, UNKNOWN_MEMBER_ID);
}

#[tokio::test]
async fn commit_metadata_survives_a_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path()).await;
    let c = client();
    create_topic(&c, &server, "t", json!({"partitions": 4})).await;
    let mut k = Kafka::connect(&server).await;
    // Each partition's commit with its own metadata: none (null), empty, text with
    // multi-byte characters, and the longest allowed (4 KiB).
    let longest = "m".repeat(4096);
    let metadata = [
        None,
        Some(""),
        Some("checkpoint 42 ✓ ünïcode"),
        Some(&*longest),
    ];
    let rows: Vec<CommitRow> = (0..).zip(metadata).map(|(p, m)| (p, 0, -1, m)).collect();
    let codes = commit_rows(&mut k, ("kept", "", -1), "t", &rows).await;
    assert!(codes.iter().all(|&c| c == 0), "{codes:?}");
    let want: Vec<(i64, String)> = metadata
        .iter()
        .map(|m| (0, m.unwrap_or_default().to_owned()))
        .collect();
    assert_eq!(
        fetch_offsets(&mut k, "kept", "t", &[0, 1, 2, 3]).await,
        want
    );
    // Killed, not stopped: nothing is written on the way out.
    server.sigkill().await;
    let server = start(dir.path()).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(
        fetch_offsets(&mut k, "kept", "t", &[0, 1, 2, 3]).await,
        want,
        "the metadata strings after a SIGKILL"
    );
}

/// Commits (OffsetCommit v8, as a client that is no member) `offsets` of `topic`:
/// (partition, next offset, committed leader epoch, −1 for none).
async fn commit_with_epochs(k: &mut Kafka, group: &str, topic: &str, offsets: &[(i32, i64, i32)]) {
    let rows: Vec<CommitRow> = offsets.iter().map(|&(p, o, e)| (p, o, e, None)).collect();
    let codes = commit_rows(k, (group, "", -1), topic, &rows).await;
    assert!(codes.iter().all(|&c| c == 0), "{codes:?}");
}

/// The committed (offset, leader epoch) of each of `partitions`, by OffsetFetch v7 (one
/// group) and v8 (a list of groups), which must agree.
async fn fetch_epochs(
    k: &mut Kafka,
    group: &str,
    topic: &str,
    partitions: &[i32],
) -> Vec<(i64, i32)> {
    let single: Vec<(i64, i32)> = offset_fetch(k, group, topic, partitions, 7)
        .await
        .iter()
        .map(|p| (p.committed_offset, p.committed_leader_epoch))
        .collect();
    let mut topics = OffsetFetchRequestTopics::default();
    topics.name = TopicName(s(topic));
    topics.partition_indexes = partitions.to_vec();
    let mut g = OffsetFetchRequestGroup::default();
    g.group_id = GroupId(s(group));
    g.topics = Some(vec![topics]);
    let mut request = OffsetFetchRequest::default();
    request.groups = vec![g];
    let answer = k.call(&request, 8).await;
    assert_eq!(answer.groups[0].error_code, 0);
    let listed: Vec<(i64, i32)> = answer.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| (p.committed_offset, p.committed_leader_epoch))
        .collect();
    assert_eq!(single, listed, "OffsetFetch v7 and v8 agree");
    single
}

#[tokio::test]
async fn offset_fetch_answers_the_leader_epoch_each_commit_gave() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path()).await;
    let c = client();
    create_topic(&c, &server, "t", json!({"partitions": 2})).await;
    let mut k = Kafka::connect(&server).await;
    commit_with_epochs(&mut k, "epochs", "t", &[(0, 0, 0), (1, 0, -1)]).await;
    assert_eq!(
        fetch_epochs(&mut k, "epochs", "t", &[0, 1]).await,
        [(0, 0), (0, -1)]
    );
    // Versions before 5 have no leader epoch: the offsets alone.
    let answer = offset_fetch(&mut k, "epochs", "t", &[0], 4).await;
    assert_eq!(answer[0].committed_offset, 0);
    server.sigterm().await;
    let server = start(dir.path()).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(
        fetch_epochs(&mut k, "epochs", "t", &[0, 1]).await,
        [(0, 0), (0, -1)]
    );
    // A commit replaces offset and leader epoch together: without one, none is left.
    commit_with_epochs(&mut k, "epochs", "t", &[(0, 0, -1), (1, 0, 3)]).await;
    assert_eq!(
        fetch_epochs(&mut k, "epochs", "t", &[0, 1]).await,
        [(0, -1), (0, 3)]
    );
}

/// A JoinGroup of the static member `instance` (v9, which answers `skip_assignment`).
fn static_join(group: &str, member: &str, instance: &str) -> JoinGroupRequest {
    let mut request = join_request(group, member);
    request.group_instance_id = Some(s(instance));
    request
}

/// A Heartbeat (v4) naming the static member's instance.
async fn static_heartbeat(k: &mut Kafka, group: &str, member: &str, instance: &str) -> i16 {
    let mut request = HeartbeatRequest::default();
    request.group_id = GroupId(s(group));
    request.generation_id = 2;
    request.member_id = s(member);
    request.group_instance_id = Some(s(instance));
    k.call(&request, 4).await.error_code
}

/// `(state, member ids with their assignments)` of `group`, by DescribeGroups.
async fn described(k: &mut Kafka, group: &str) -> (String, Vec<(String, Bytes)>) {
    let mut describe = DescribeGroupsRequest::default();
    describe.groups = vec![GroupId(s(group))];
    let answer = k.call(&describe, 5).await;
    let g = &answer.groups[0];
    let members = g
        .members
        .iter()
        .map(|m| (m.member_id.to_string(), m.member_assignment.clone()))
        .collect();
    (g.group_state.to_string(), members)
}

#[tokio::test]
async fn a_group_survives_sigkill_and_a_static_member_restarts_with_no_rebalance() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path()).await;
    create_topic(&client(), &server, "t", json!({"partitions": 3})).await;
    let g = "survivors";
    let mut k1 = Kafka::connect(&server).await;
    // A static member joins with no handshake and leads generation 1.
    let first = k1.call(&static_join(g, "", "host-1"), 9).await;
    assert_eq!((first.error_code, first.generation_id), (0, 1));
    let one = first.member_id.to_string();

    // Two dynamic members join; their joins wait for the first member to rejoin.
    let mut followers = Vec::new();
    for _ in 0..2 {
        let mut k = Kafka::connect(&server).await;
        followers.push(tokio::spawn(async move {
            let joined = join(&mut k, g).await;
            let member = joined.member_id.to_string();
            let (code, assignment) = sync(&mut k, g, &member, 2, Vec::new()).await;
            assert_eq!(code, 0);
            (k, member, assignment)
        }));
    }
    let mut watch = Kafka::connect(&server).await;
    common::until("three members in the rebalance", async || {
        described(&mut watch, g).await.1.len() == 3
    })
    .await;
    let again = k1.call(&static_join(g, &one, "host-1"), 9).await;
    assert_eq!((again.error_code, again.generation_id), (0, 2));
    assert_eq!(again.leader.as_str(), one);
    let ids: Vec<String> = again
        .members
        .iter()
        .map(|m| m.member_id.to_string())
        .collect();
    let plan: Vec<(&str, Bytes)> = ids
        .iter()
        .zip([0, 1, 2])
        .map(|(id, p)| (id.as_str(), assignment("t", &[p])))
        .collect();
    let (code, _) = sync(&mut k1, g, &one, 2, plan.clone()).await;
    assert_eq!(code, 0);
    let mut others = Vec::new();
    for f in followers {
        let (k, member, got) = f.await.unwrap();
        let planned = plan.iter().find(|(id, _)| *id == member).unwrap();
        assert_eq!(got, planned.1, "{member} got what the leader planned");
        others.push((k, member));
    }
    let before = described(&mut watch, g).await;
    assert_eq!(before.0, "Stable");

    // SIGKILL, restart: every member carries on in generation 2, nobody rejoins.
    server.sigkill().await;
    let server = start(dir.path()).await;
    let mut k = Kafka::connect(&server).await;
    for id in ids.iter() {
        assert_eq!(
            heartbeat(&mut k, g, id, 2).await,
            0,
            "{id} after the restart"
        );
    }
    assert_eq!(described(&mut k, g).await, before);

    // The static member restarts within its session: same generation, same
    // assignment, the leader told to skip assigning; the others see nothing.
    let back = k.call(&static_join(g, "", "host-1"), 9).await;
    assert_eq!((back.error_code, back.generation_id), (0, 2));
    assert!(back.skip_assignment);
    let new_one = back.member_id.to_string();
    assert_ne!(new_one, one);
    assert_eq!(back.leader.as_str(), new_one);
    let (code, mine) = sync(&mut k, g, &new_one, 2, Vec::new()).await;
    assert_eq!(
        (code, mine),
        (
            0,
            plan[ids.iter().position(|i| *i == one).unwrap()].1.clone()
        )
    );
    for (_, member) in &others {
        assert_eq!(heartbeat(&mut k, g, member, 2).await, 0);
    }
    assert_eq!(
        static_heartbeat(&mut k, g, &one, "host-1").await,
        FENCED_INSTANCE_ID
    );
    assert_eq!(static_heartbeat(&mut k, g, &new_one, "host-1").await, 0);
    // JoinGroup v5 (librdkafka's) has no skip_assignment: the same answer without it.
    let v5 = k.call(&static_join(g, "", "host-1"), 5).await;
    assert_eq!((v5.error_code, v5.generation_id), (0, 2));
    assert_eq!(
        (v5.leader.as_str(), v5.members.len()),
        (v5.member_id.as_str(), 3)
    );
    assert_eq!(
        static_heartbeat(&mut k, g, &new_one, "host-1").await,
        FENCED_INSTANCE_ID
    );
    assert_eq!(described(&mut k, g).await.0, "Stable");
}
