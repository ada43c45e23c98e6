//! Consumer groups of Kafka's consumer protocol (KIP-848) over the wire, black-box: the
//! real binary, ConsumerGroupHeartbeat, ConsumerGroupDescribe, OffsetCommit and
//! OffsetFetch v9 encoded by the `kafka-protocol` crate. Members join, leave and fall
//! silent; at every answer no partition is owned by two members, and every partition
//! is eventually owned. Epoch errors, the group's type against classic joins, the
//! listing, and what survives a restart.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::kafka::codes::{INVALID_REQUEST, UNKNOWN_MEMBER_ID};
use common::kafka::{Kafka, join_group_request, s};
use common::{Server, client, create_topic};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
    DescribeGroupsRequest, GroupId, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest,
    TopicName,
};
use serde_json::json;
use uuid::Uuid;

const FENCED_MEMBER_EPOCH: i16 = 110;
const STALE_MEMBER_EPOCH: i16 = 113;
const GROUP_ID_NOT_FOUND: i16 = 69;
const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
const PARTITIONS: usize = 6;

/// A member as a client runs one: it owns what its last assignment named, releasing at
/// once what an assignment no longer names.
#[derive(Debug, Clone)]
struct Member {
    id: String,
    epoch: i32,
    owned: BTreeMap<Uuid, BTreeSet<i32>>,
}

impl Member {
    fn new(id: &str) -> Self {
        Member {
            id: id.to_owned(),
            epoch: 0,
            owned: BTreeMap::new(),
        }
    }

    fn count(&self) -> usize {
        self.owned.values().map(BTreeSet::len).sum()
    }

    fn apply(&mut self, answer: &ConsumerGroupHeartbeatResponse) {
        assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
        if let Some(id) = &answer.member_id {
            self.id = id.to_string();
        }
        self.epoch = answer.member_epoch;
        if let Some(a) = &answer.assignment {
            self.owned = a
                .topic_partitions
                .iter()
                .map(|t| (t.topic_id, t.partitions.iter().copied().collect()))
                .collect();
        }
    }

    fn request(&self, group: &str) -> ConsumerGroupHeartbeatRequest {
        let mut r = ConsumerGroupHeartbeatRequest::default();
        r.group_id = GroupId(s(group));
        r.member_id = s(&self.id);
        r.member_epoch = self.epoch;
        r.topic_partitions = Some(
            self.owned
                .iter()
                .map(|(id, ps)| {
                    let mut t = TopicPartitions::default();
                    t.topic_id = *id;
                    t.partitions = ps.iter().copied().collect();
                    t
                })
                .collect(),
        );
        if self.epoch == 0 {
            r.rebalance_timeout_ms = 10_000;
            r.subscribed_topic_names = Some(vec![TopicName(s("events"))]);
        }
        r
    }
}

/// One heartbeat of `m` (v1).
async fn beat(k: &mut Kafka, group: &str, m: &mut Member) -> ConsumerGroupHeartbeatResponse {
    let answer = k.call(&m.request(group), 1).await;
    if answer.error_code == 0 {
        m.apply(&answer);
    }
    answer
}

/// No partition is owned by two members.
fn check_disjoint(members: &[&Member]) {
    let mut seen = BTreeSet::new();
    for m in members {
        for (t, ps) in &m.owned {
            for p in ps {
                assert!(seen.insert((*t, *p)), "{t}-{p} owned twice: {members:#?}");
            }
        }
    }
}

/// Heartbeats every member in turn, checking ownership after each answer, until
/// `done` holds; fails past the deadline.
async fn settle(
    k: &mut Kafka,
    group: &str,
    members: &mut [Member],
    done: impl Fn(&[Member]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for i in 0..members.len() {
            let answer = beat(k, group, &mut members[i]).await;
            assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
            check_disjoint(&members.iter().collect::<Vec<_>>());
        }
        if done(members) {
            return;
        }
        assert!(Instant::now() < deadline, "not settled: {members:#?}");
        // Members heartbeat at an interval, as clients do; each round's answers are the
        // signal checked above, not the pause.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn balanced(members: &[Member]) -> bool {
    let counts: Vec<usize> = members.iter().map(Member::count).collect();
    let epochs: BTreeSet<i32> = members.iter().map(|m| m.epoch).collect();
    counts.iter().sum::<usize>() == PARTITIONS
        && counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1
        && epochs.len() == 1
}

async fn start(dir: &std::path::Path) -> Server {
    Server::start(
        dir,
        &[
            "--kafka-bind",
            "127.0.0.1:0",
            "--group-consumer-session-timeout-ms",
            "2000",
            "--group-consumer-heartbeat-interval-ms",
            "100",
        ],
    )
    .await
}

#[tokio::test]
async fn members_join_leave_and_expire_and_never_share_a_partition() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let c = client();
    create_topic(&c, &server, "events", json!({"partitions": PARTITIONS})).await;
    let mut k = Kafka::connect(&server).await;
    let group = "g848";

    // v1 needs a member id made by the client.
    let mut anonymous = Member::new("").request(group);
    anonymous.member_id = s("");
    assert_eq!(k.call(&anonymous, 1).await.error_code, INVALID_REQUEST);

    let mut members = vec![Member::new("member-a")];
    let first = beat(&mut k, group, &mut members[0]).await;
    assert_eq!(first.heartbeat_interval_ms, 100);
    assert_eq!(members[0].count(), PARTITIONS);
    assert_eq!(members[0].epoch, 1);

    // b joins: the partitions move only once a has released them.
    members.push(Member::new("member-b"));
    settle(&mut k, group, &mut members, balanced).await;
    // c joins with v0 and no id: the server makes one.
    let mut c0 = Member::new("");
    let answer = k.call(&c0.request(group), 0).await;
    c0.apply(&answer);
    assert!(!c0.id.is_empty());
    members.push(c0);
    check_disjoint(&members.iter().collect::<Vec<_>>());
    settle(&mut k, group, &mut members, balanced).await;
    assert!(members.iter().all(|m| m.count() == 2));

    // Described as stable, with every member and its assignment.
    let mut describe = ConsumerGroupDescribeRequest::default();
    describe.group_ids = vec![GroupId(s(group)), GroupId(s("nobody"))];
    let described = k.call(&describe, 0).await;
    let g = &described.groups[0];
    assert_eq!((g.error_code, g.group_state.as_str()), (0, "Stable"));
    assert_eq!(g.assignor_name.as_str(), "uniform");
    assert_eq!(g.members.len(), 3);
    assert!(g.members.iter().all(|m| m.member_epoch == g.group_epoch));
    assert_eq!(described.groups[1].error_code, GROUP_ID_NOT_FOUND);

    // Epochs are checked.
    let mut wrong = members[0].clone();
    wrong.epoch += 5;
    assert_eq!(
        beat(&mut k, group, &mut wrong).await.error_code,
        FENCED_MEMBER_EPOCH
    );
    let mut stranger = Member::new("stranger");
    stranger.epoch = 1;
    assert_eq!(
        beat(&mut k, group, &mut stranger).await.error_code,
        UNKNOWN_MEMBER_ID
    );

    // Commits carry the member epoch (OffsetCommit v9).
    let epoch = members[0].epoch;
    assert_eq!(commit(&mut k, group, &members[0].id, epoch).await, 0);
    assert_eq!(
        commit(&mut k, group, &members[0].id, epoch - 1).await,
        STALE_MEMBER_EPOCH
    );
    assert_eq!(commit(&mut k, group, "", -1).await, UNKNOWN_MEMBER_ID);
    let mut fetch = OffsetFetchRequest::default();
    let mut asked = OffsetFetchRequestGroup::default();
    asked.group_id = GroupId(s(group));
    asked.member_id = Some(s(&members[0].id));
    asked.member_epoch = epoch;
    let mut t = OffsetFetchRequestTopics::default();
    t.name = TopicName(s("events"));
    t.partition_indexes = vec![0];
    asked.topics = Some(vec![t]);
    fetch.groups = vec![asked];
    let fetched = k.call(&fetch, 9).await;
    assert_eq!(fetched.groups[0].error_code, 0);
    assert_eq!(
        fetched.groups[0].topics[0].partitions[0].committed_offset,
        7
    );

    // The group is a consumer group: classic joins are refused, DescribeGroups does not
    // know it, ListGroups v5 lists it as one.
    let range = || ("consumer", "range", bytes::Bytes::new());
    let join = k.call(&join_group_request(group, "", range()), 3).await;
    assert_eq!(join.error_code, INCONSISTENT_GROUP_PROTOCOL);
    let mut old = DescribeGroupsRequest::default();
    old.groups = vec![GroupId(s(group))];
    assert_eq!(
        k.call(&old, 6).await.groups[0].error_code,
        GROUP_ID_NOT_FOUND
    );
    let mut list = ListGroupsRequest::default();
    list.types_filter = vec![s("consumer")];
    let listed = k.call(&list, 5).await;
    assert!(listed.groups.iter().any(|l| l.group_id.as_str() == group
        && l.group_type.as_str() == "consumer"
        && l.group_state.as_str() == "Stable"));

    // b leaves: a and c share its partitions.
    let mut leave = members[1].request(group);
    leave.member_epoch = -1;
    let left = k.call(&leave, 1).await;
    assert_eq!((left.error_code, left.member_epoch), (0, -1));
    members.remove(1);
    settle(&mut k, group, &mut members, balanced).await;

    // c falls silent: past its session, a gets everything.
    let mut a = vec![members.remove(0)];
    settle(&mut k, group, &mut a, |m| m[0].count() == PARTITIONS).await;
    // a leaves: the empty group becomes a classic one on a JoinGroup, offsets kept.
    let mut leave = a[0].request(group);
    leave.member_epoch = -1;
    assert_eq!(k.call(&leave, 1).await.error_code, 0);
    let join = k.call(&join_group_request(group, "", range()), 3).await;
    assert_eq!(join.error_code, 0);
    let mut list = ListGroupsRequest::default();
    list.types_filter = vec![s("classic")];
    let listed = k.call(&list, 5).await;
    assert!(listed.groups.iter().any(|l| l.group_id.as_str() == group));
    let mut fetch = OffsetFetchRequest::default();
    let mut asked = OffsetFetchRequestGroup::default();
    asked.group_id = GroupId(s(group));
    asked.topics = None;
    fetch.groups = vec![asked];
    let fetched = k.call(&fetch, 9).await;
    assert_eq!(
        fetched.groups[0].topics[0].partitions[0].committed_offset,
        7
    );

    // A classic group with members refuses consumer-protocol members.
    let classic = k.call(&join_group_request("classic", "", range()), 3).await;
    assert_eq!(classic.error_code, 0);
    let intruder = k.call(&Member::new("x").request("classic"), 1).await;
    assert_eq!(intruder.error_code, GROUP_ID_NOT_FOUND);
}

/// Commits offset 7 of partition 0 of `events`; the partition's error code.
async fn commit(k: &mut Kafka, group: &str, member: &str, epoch: i32) -> i16 {
    let mut p = OffsetCommitRequestPartition::default();
    p.partition_index = 0;
    p.committed_offset = 7;
    let mut t = OffsetCommitRequestTopic::default();
    t.name = TopicName(s("events"));
    t.partitions = vec![p];
    let mut request = OffsetCommitRequest::default();
    request.group_id = GroupId(s(group));
    request.member_id = s(member);
    request.generation_id_or_member_epoch = epoch;
    request.topics = vec![t];
    k.call(&request, 9).await.topics[0].partitions[0].error_code
}

/// A stable group, then a SIGKILL: after the restart each member heartbeats on at its
/// epoch with its partitions, and the group epoch has not moved.
#[tokio::test]
async fn a_consumer_group_survives_sigkill_with_no_reassignment() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path()).await;
    create_topic(
        &client(),
        &server,
        "events",
        json!({"partitions": PARTITIONS}),
    )
    .await;
    let group = "kept";
    let mut k = Kafka::connect(&server).await;
    let mut members = vec![Member::new("member-a"), Member::new("member-b")];
    settle(&mut k, group, &mut members, balanced).await;
    let before = members.clone();
    let mut describe = ConsumerGroupDescribeRequest::default();
    describe.group_ids = vec![GroupId(s(group))];
    let epoch = k.call(&describe, 0).await.groups[0].group_epoch;

    server.sigkill().await;
    let server = start(dir.path()).await;
    let mut k = Kafka::connect(&server).await;
    for m in &mut members {
        let answer = beat(&mut k, group, m).await;
        assert_eq!(answer.error_code, 0, "{:?}", answer.error_message);
    }
    for (m, b) in members.iter().zip(&before) {
        assert_eq!((m.epoch, &m.owned), (b.epoch, &b.owned), "{}", m.id);
    }
    let described = k.call(&describe, 0).await;
    assert_eq!(described.groups[0].group_epoch, epoch);
    assert_eq!(described.groups[0].group_state.as_str(), "Stable");
}

/// A subscription by regular expression (v1) takes in the topics it matches, those
/// created later too; a bad expression is refused.
#[tokio::test]
async fn a_regex_subscription_takes_in_new_topics() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let c = client();
    create_topic(&c, &server, "logs-a", json!({"partitions": 2})).await;
    create_topic(&c, &server, "other", json!({"partitions": 2})).await;
    let mut k = Kafka::connect(&server).await;
    let group = "by-regex";
    let mut m = Member::new("member-r");
    let mut join = m.request(group);
    join.subscribed_topic_names = None;
    join.subscribed_topic_regex = Some(s("("));
    assert_eq!(
        k.call(&join, 1).await.error_code,
        128,
        "INVALID_REGULAR_EXPRESSION"
    );
    join.subscribed_topic_regex = Some(s("logs-.*"));
    let answer = k.call(&join, 1).await;
    m.apply(&answer);
    assert_eq!(m.count(), 2);

    create_topic(&c, &server, "logs-b", json!({"partitions": 3})).await;
    let mut ms = vec![m];
    settle(&mut k, group, &mut ms, |m| m[0].count() == 5).await;
    assert_eq!(ms[0].owned.len(), 2, "two topics");
    let mut describe = ConsumerGroupDescribeRequest::default();
    describe.group_ids = vec![GroupId(s(group))];
    let described = k.call(&describe, 0).await;
    let member = &described.groups[0].members[0];
    assert_eq!(
        member.subscribed_topic_regex.as_ref().map(|r| r.as_str()),
        Some("logs-.*")
    );
    let mut topics: Vec<&str> = member
        .assignment
        .topic_partitions
        .iter()
        .map(|t| t.topic_name.as_str())
        .collect();
    topics.sort_unstable();
    assert_eq!(topics, ["logs-a", "logs-b"]);
}
