//! `__consumer_offsets` over the Kafka protocol, black-box: the real binary with
//! `--kafka-bind`. A group joins, syncs, commits, leaves and is deleted; its records
//! are read back with Fetch from the partition Kafka's rule picks and decoded in Kafka's
//! formats (OffsetCommitKey v1 / OffsetCommitValue, GroupMetadataKey v2 /
//! GroupMetadataValue, tombstones). Metadata lists the topic as internal; Produce,
//! CreateTopics and DeleteTopics refuse it. After a restart the records and offsets
//! read before are unchanged and later records come after them.

mod common;

use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use common::kafka::codes::{INVALID_TOPIC_EXCEPTION, MEMBER_ID_REQUIRED};
use common::kafka::{
    Got, Kafka, Rec, batch, fetch_request, join_group_request, list_offsets_request, name,
    produce_batch, read_batches, s,
};
use common::{Server, client, create_topic, get_json};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::leave_group_request::MemberIdentity;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteGroupsRequest, DeleteTopicsRequest, GroupId, LeaveGroupRequest,
    MetadataRequest, OffsetCommitRequest, SyncGroupRequest, TopicName,
};
use serde_json::json;

const TOPIC: &str = "__consumer_offsets";
const PARTITIONS: i32 = 8;

/// Kafka's partition for a group: `abs(String.hashCode) % partitions`.
fn partition_of(group: &str) -> i32 {
    let h = group
        .encode_utf16()
        .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
    (if h == i32::MIN { 0 } else { h.abs() }) % PARTITIONS
}

fn string(b: &mut Bytes) -> Option<String> {
    let len = b.get_i16();
    (len >= 0).then(|| String::from_utf8(b.split_to(len as usize).to_vec()).unwrap())
}

#[derive(Debug, PartialEq)]
enum Key {
    Offset(String, String, i32),
    Group(String),
}

fn key(raw: &[u8]) -> Key {
    let mut b = Bytes::copy_from_slice(raw);
    match b.get_i16() {
        1 => Key::Offset(
            string(&mut b).unwrap(),
            string(&mut b).unwrap(),
            b.get_i32(),
        ),
        2 => Key::Group(string(&mut b).unwrap()),
        v => panic!("key version {v}"),
    }
}

/// OffsetCommitValue v3: offset, leader epoch, metadata, commit time.
fn offset_value(raw: &[u8]) -> (i64, i32, String, i64) {
    let mut b = Bytes::copy_from_slice(raw);
    assert_eq!(b.get_i16(), 3);
    let v = (
        b.get_i64(),
        b.get_i32(),
        string(&mut b).unwrap(),
        b.get_i64(),
    );
    assert!(b.is_empty());
    v
}

#[derive(Debug, PartialEq)]
struct Member {
    id: String,
    instance: Option<String>,
    client_id: String,
    rebalance_ms: i32,
    session_ms: i32,
    subscription: Vec<u8>,
    assignment: Vec<u8>,
}

/// GroupMetadataValue v3: protocol type, generation, protocol, leader, members.
fn group_value(raw: &[u8]) -> (String, i32, Option<String>, Option<String>, Vec<Member>) {
    let mut b = Bytes::copy_from_slice(raw);
    assert_eq!(b.get_i16(), 3);
    let protocol_type = string(&mut b).unwrap();
    let generation = b.get_i32();
    let protocol = string(&mut b);
    let leader = string(&mut b);
    let _state_time = b.get_i64();
    let members = (0..b.get_i32())
        .map(|_| {
            let id = string(&mut b).unwrap();
            let instance = string(&mut b);
            let client_id = string(&mut b).unwrap();
            let _host = string(&mut b).unwrap();
            let rebalance_ms = b.get_i32();
            let session_ms = b.get_i32();
            let len = b.get_i32() as usize;
            let subscription = b.split_to(len).to_vec();
            let len = b.get_i32() as usize;
            let assignment = b.split_to(len).to_vec();
            Member {
                id,
                instance,
                client_id,
                rebalance_ms,
                session_ms,
                subscription,
                assignment,
            }
        })
        .collect();
    assert!(b.is_empty());
    (protocol_type, generation, protocol, leader, members)
}

/// Every record of `partition` from 0, with Fetch v12.
async fn read_all(k: &mut Kafka, partition: i32) -> Vec<Got> {
    let mut out: Vec<Got> = Vec::new();
    loop {
        let from = out.last().map_or(0, |g| g.offset + 1);
        let r = k.call(&fetch_request(TOPIC, partition, from, 0), 12).await;
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, 0);
        let got: Vec<Got> = p
            .records
            .clone()
            .map(read_batches)
            .unwrap_or_default()
            .into_iter()
            .filter(|g| g.offset >= from)
            .collect();
        if got.is_empty() {
            return out;
        }
        out.extend(got);
    }
}

/// Reads `partition` until `done` holds for its records (10 s deadline).
async fn until(k: &mut Kafka, partition: i32, done: impl Fn(&[Got]) -> bool) -> Vec<Got> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = read_all(k, partition).await;
        if done(&got) {
            return got;
        }
        assert!(Instant::now() < deadline, "never reached: {got:?}");
        // The server answers this long-poll as soon as a record lands past what was read.
        let next = got.last().map_or(0, |g| g.offset + 1);
        k.call(&fetch_request(TOPIC, partition, next, 500), 12)
            .await;
    }
}

/// The latest value per key (`None`: a tombstone).
fn latest(got: &[Got], wanted: &Key) -> Option<Option<Vec<u8>>> {
    got.iter()
        .rev()
        .find(|g| key(g.key.as_deref().unwrap()) == *wanted)
        .map(|g| g.value.clone())
}

async fn commit(k: &mut Kafka, group: &str, member: &str, generation: i32, offsets: &[(i32, i64)]) {
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s("orders"));
    t.partitions = offsets
        .iter()
        .map(|&(p, o)| {
            let mut c = OffsetCommitRequestPartition::default();
            c.partition_index = p;
            c.committed_offset = o;
            c.committed_metadata = Some(s(&format!("m{p}")));
            c
        })
        .collect();
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s(group));
    request.generation_id_or_member_epoch = generation;
    request.member_id = s(member);
    request.topics = vec![t];
    let answer = k.call(&request, 8).await;
    for p in &answer.topics[0].partitions {
        assert_eq!(p.error_code, 0);
    }
}

async fn high_watermark(k: &mut Kafka, partition: i32) -> i64 {
    let r = k.call(&list_offsets_request(TOPIC, partition, -1), 7).await;
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.offset
}

async fn start(dir: &std::path::Path) -> Server {
    Server::start(dir, &["--kafka-bind", "127.0.0.1:0"]).await
}

#[tokio::test]
async fn the_topic_is_internal_listed_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let mut k = Kafka::connect(&server).await;
    for request in [
        MetadataRequest::default().with_topics(None),
        MetadataRequest::default().with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name(TOPIC))),
        ])),
    ] {
        let r = k.call(&request, 12).await;
        let t = r
            .topics
            .iter()
            .find(|t| t.name.as_ref().map(|n| n.as_str()) == Some(TOPIC))
            .expect("listed");
        assert_eq!(t.error_code, 0);
        assert!(t.is_internal);
        assert_eq!(t.partitions.len(), PARTITIONS as usize);
    }
    let records = [Rec {
        key: Some(b"k"),
        value: Some(b"v"),
        headers: Vec::new(),
        timestamp: 1,
    }];
    let produced = produce_batch(&mut k, TOPIC, 0, batch(&records, 0, None)).await;
    assert_eq!(produced.0, INVALID_TOPIC_EXCEPTION);
    let create = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![
            CreatableTopic::default()
                .with_name(name(TOPIC))
                .with_num_partitions(1)
                .with_replication_factor(-1),
        ]);
    assert_eq!(
        k.call(&create, 7).await.topics[0].error_code,
        INVALID_TOPIC_EXCEPTION
    );
    let delete = DeleteTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topic_names(vec![name(TOPIC)]);
    assert_eq!(
        k.call(&delete, 4).await.responses[0].error_code,
        INVALID_TOPIC_EXCEPTION
    );
    // Still there, empty, and not an ordinary topic for /v1.
    assert_eq!(high_watermark(&mut k, 0).await, 0);
    let topics = get_json(&client(), &server, "/v1/topics").await;
    assert!(!topics.to_string().contains(TOPIC), "{topics}");
    assert!(!dir.path().join("topics").join(TOPIC).exists());
}

#[tokio::test]
async fn commits_and_generations_are_records_in_kafkas_formats_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path()).await;
    create_topic(&client(), &server, "orders", json!({"partitions": 2})).await;
    let mut k = Kafka::connect(&server).await;
    let group = "billing";
    let p = partition_of(group);

    // Join (member-id handshake), sync, commit.
    let metadata = Bytes::from_static(b"subscription");
    let join =
        |member: &str| join_group_request(group, member, ("consumer", "range", metadata.clone()));
    let first = k.call(&join(""), 7).await;
    assert_eq!(first.error_code, MEMBER_ID_REQUIRED);
    let member = first.member_id.to_string();
    let joined = k.call(&join(&member), 7).await;
    assert_eq!(joined.error_code, 0);
    let mut sync = SyncGroupRequest::default();
    sync.group_id = GroupId(s(group));
    sync.generation_id = joined.generation_id;
    sync.member_id = s(&member);
    let mut a = SyncGroupRequestAssignment::default();
    a.member_id = s(&member);
    a.assignment = Bytes::from_static(b"assigned");
    sync.assignments = vec![a];
    assert_eq!(k.call(&sync, 3).await.error_code, 0);
    commit(
        &mut k,
        group,
        &member,
        joined.generation_id,
        &[(0, 5), (1, 7)],
    )
    .await;

    let offset_key = |partition| Key::Offset(group.into(), "orders".into(), partition);
    let got = until(&mut k, p, |got| {
        latest(got, &offset_key(1)).is_some() && latest(got, &Key::Group(group.into())).is_some()
    })
    .await;
    for (partition, want) in [(0, 5), (1, 7)] {
        let value = latest(&got, &offset_key(partition)).unwrap().unwrap();
        let (offset, epoch, meta, at) = offset_value(&value);
        assert_eq!(
            (offset, epoch, meta.as_str()),
            (want, -1, format!("m{partition}").as_str())
        );
        assert!(at > 1_600_000_000_000, "commit time {at}");
    }
    let value = latest(&got, &Key::Group(group.into())).unwrap().unwrap();
    let (protocol_type, generation, protocol, leader, members) = group_value(&value);
    assert_eq!(
        (
            protocol_type.as_str(),
            generation,
            protocol.as_deref(),
            leader.as_deref()
        ),
        (
            "consumer",
            joined.generation_id,
            Some("range"),
            Some(member.as_str())
        )
    );
    assert_eq!(
        members,
        [Member {
            id: member.clone(),
            instance: None,
            client_id: "kafko-test".into(),
            rebalance_ms: 30_000,
            session_ms: 30_000,
            subscription: b"subscription".to_vec(),
            assignment: b"assigned".to_vec(),
        }]
    );
    // Offsets grow: no other partition holds the group's records.
    for other in (0..PARTITIONS).filter(|&o| o != p) {
        assert!(read_all(&mut k, other).await.is_empty());
    }

    // The member leaves: an empty group keeps its type and generation.
    let left = k
        .call(
            &LeaveGroupRequest::default()
                .with_group_id(GroupId(s(group)))
                .with_members(vec![MemberIdentity::default().with_member_id(s(&member))]),
            5,
        )
        .await;
    assert_eq!(left.error_code, 0);
    let got = until(&mut k, p, |got| {
        latest(got, &Key::Group(group.into()))
            .flatten()
            .is_some_and(|v| group_value(&v).4.is_empty())
    })
    .await;
    let value = latest(&got, &Key::Group(group.into())).unwrap().unwrap();
    let (protocol_type, generation, protocol, leader, _) = group_value(&value);
    assert_eq!(
        (protocol_type.as_str(), generation, protocol, leader),
        ("consumer", joined.generation_id, None, None)
    );

    // A restart changes nothing already read, and appends nothing when the files and
    // the log agree.
    let before = read_all(&mut k, p).await;
    let end = high_watermark(&mut k, p).await;
    assert_eq!(end, before.last().unwrap().offset + 1);
    server.sigterm().await;
    let server = start(dir.path()).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(read_all(&mut k, p).await, before);
    assert_eq!(high_watermark(&mut k, p).await, end);

    // Deleting the group writes tombstones, after every earlier record.
    let deleted = k
        .call(
            &DeleteGroupsRequest::default().with_groups_names(vec![GroupId(s(group))]),
            2,
        )
        .await;
    assert_eq!(deleted.results[0].error_code, 0);
    let got = until(&mut k, p, |got| {
        [offset_key(0), offset_key(1), Key::Group(group.into())]
            .iter()
            .all(|key| latest(got, key) == Some(None))
    })
    .await;
    assert_eq!(got[..before.len()], before[..]);
    assert!(
        got[before.len()..]
            .iter()
            .all(|g| g.offset >= end && g.value.is_none())
    );

    // A kill -9 and restart keeps them too.
    let mut server = server;
    server.sigkill().await;
    let server = start(dir.path()).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(read_all(&mut k, p).await, got);
}
