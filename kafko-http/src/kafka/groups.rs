//! The classic consumer-group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, OffsetFetch, DescribeGroups, ListGroups. Until the group coordinator
//! serves them, each answers COORDINATOR_NOT_AVAILABLE (retriable: a client keeps
//! asking), in every group, partition and member slot its answer has. Consumers with
//! manual assignment (assign + seek, no group) need none of these. FindCoordinator
//! (`metadata`) already answers this node for every group.
//!
//! Wiring: each handler here takes `(&Broker, request, version)` and returns its
//! response; `dispatch` decodes and encodes them (versions: JoinGroup 2–7, SyncGroup
//! 0–5, Heartbeat 0–4, LeaveGroup 0–4, OffsetCommit 2–8, OffsetFetch 1–7,
//! DescribeGroups 0–5, ListGroups 0–4). A handler that waits (JoinGroup, SyncGroup)
//! becomes `async` and its arm in `dispatch` moves from `call_sync!` to `call!`. Its
//! connection answers nothing else meanwhile (answers leave in request order); clients
//! talk to the coordinator on a connection of its own, so their fetches go on. The
//! coordinator is reached through `broker.state.kafko`; its errors map to Kafka codes in
//! `errors::code` (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, NON_EMPTY_GROUP,
//! GROUP_ID_NOT_FOUND already; MEMBER_ID_REQUIRED 79, REBALANCE_IN_PROGRESS 27,
//! INCONSISTENT_GROUP_PROTOCOL 23, INVALID_SESSION_TIMEOUT 26, INVALID_GROUP_ID 24 to
//! add with it).
//!
//! What these handlers need from the coordinator, per request:
//! - JoinGroup: (group id, member id or empty, group instance id, client id and host,
//!   protocol type, protocols [(name, metadata bytes)], session and rebalance
//!   timeouts) → waits until the known members have rejoined or the rebalance timeout
//!   passed (a lone member at once) → (generation, chosen protocol, leader id, own
//!   member id, and for the leader every member's (id, instance id, metadata)). An
//!   empty member id is answered MEMBER_ID_REQUIRED with a new id first.
//! - SyncGroup: (group, generation, member, assignments [(member, bytes)] from the
//!   leader) → waits for the leader's → this member's bytes, forwarded as sent (never
//!   computed here: cooperative assignors depend on it).
//! - Heartbeat: (group, generation, member) → none, REBALANCE_IN_PROGRESS,
//!   ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID; a silent session expires.
//! - LeaveGroup: (group, members) → per-member error.
//! - OffsetCommit: (group, generation or -1 for a group with no members, member,
//!   [(topic, partition, offset, metadata string)]) → per-partition error.
//!   OffsetFetch: (group, topics or none for all) → [(topic, partition, offset or -1,
//!   metadata)]; the metadata strings are kept with the offsets.
//! - DescribeGroups: state, protocol type and name, members with their client id, host,
//!   metadata and assignment bytes; ListGroups: (group id, protocol type, state).

use kafka_protocol::messages::describe_groups_response::DescribedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use kafka_protocol::messages::{
    DescribeGroupsRequest, DescribeGroupsResponse, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse,
};

use super::{Broker, errors};

const UNAVAILABLE: i16 = errors::COORDINATOR_NOT_AVAILABLE;

/// Answers JoinGroup.
pub(crate) fn join_group(
    _: &Broker,
    _request: JoinGroupRequest,
    _version: i16,
) -> JoinGroupResponse {
    let mut response = JoinGroupResponse::default();
    response.error_code = UNAVAILABLE;
    response.generation_id = -1;
    response
}

/// Answers SyncGroup.
pub(crate) fn sync_group(
    _: &Broker,
    _request: SyncGroupRequest,
    _version: i16,
) -> SyncGroupResponse {
    let mut response = SyncGroupResponse::default();
    response.error_code = UNAVAILABLE;
    response
}

/// Answers Heartbeat.
pub(crate) fn heartbeat(
    _: &Broker,
    _request: HeartbeatRequest,
    _version: i16,
) -> HeartbeatResponse {
    let mut response = HeartbeatResponse::default();
    response.error_code = UNAVAILABLE;
    response
}

/// Answers LeaveGroup.
pub(crate) fn leave_group(
    _: &Broker,
    _request: LeaveGroupRequest,
    _version: i16,
) -> LeaveGroupResponse {
    let mut response = LeaveGroupResponse::default();
    response.error_code = UNAVAILABLE;
    response
}

/// Answers OffsetCommit: every partition asked.
pub(crate) fn offset_commit(
    _: &Broker,
    request: OffsetCommitRequest,
    _version: i16,
) -> OffsetCommitResponse {
    let mut response = OffsetCommitResponse::default();
    response.topics = request
        .topics
        .into_iter()
        .map(|t| {
            let mut topic = OffsetCommitResponseTopic::default();
            topic.partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let mut partition = OffsetCommitResponsePartition::default();
                    partition.partition_index = p.partition_index;
                    partition.error_code = UNAVAILABLE;
                    partition
                })
                .collect();
            topic.name = t.name;
            topic
        })
        .collect();
    response
}

/// Answers OffsetFetch: the group's error (v2+), and every partition asked.
pub(crate) fn offset_fetch(
    _: &Broker,
    request: OffsetFetchRequest,
    version: i16,
) -> OffsetFetchResponse {
    let mut response = OffsetFetchResponse::default();
    if version >= 2 {
        response.error_code = UNAVAILABLE;
    }
    response.topics = request
        .topics
        .unwrap_or_default()
        .into_iter()
        .map(|t| {
            let mut topic = OffsetFetchResponseTopic::default();
            topic.partitions = t
                .partition_indexes
                .iter()
                .map(|p| {
                    let mut partition = OffsetFetchResponsePartition::default();
                    partition.partition_index = *p;
                    partition.committed_offset = -1;
                    partition.error_code = UNAVAILABLE;
                    partition
                })
                .collect();
            topic.name = t.name;
            topic
        })
        .collect();
    if version >= 8 {
        response.groups = request
            .groups
            .into_iter()
            .map(|g| {
                let mut group = OffsetFetchResponseGroup::default();
                group.group_id = g.group_id;
                group.error_code = UNAVAILABLE;
                group
            })
            .collect();
    }
    response
}

/// Answers DescribeGroups: every group asked.
pub(crate) fn describe_groups(
    _: &Broker,
    request: DescribeGroupsRequest,
    _version: i16,
) -> DescribeGroupsResponse {
    let mut response = DescribeGroupsResponse::default();
    response.groups = request
        .groups
        .into_iter()
        .map(|id| {
            let mut group = DescribedGroup::default();
            group.group_id = id;
            group.error_code = UNAVAILABLE;
            group
        })
        .collect();
    response
}

/// Answers ListGroups.
pub(crate) fn list_groups(
    _: &Broker,
    _request: ListGroupsRequest,
    _version: i16,
) -> ListGroupsResponse {
    let mut response = ListGroupsResponse::default();
    response.error_code = UNAVAILABLE;
    response
}
