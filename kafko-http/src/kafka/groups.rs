//! The classic consumer-group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, OffsetFetch, DescribeGroups, ListGroups. Until the group coordinator
//! serves them, each answers COORDINATOR_NOT_AVAILABLE (retriable: a client keeps
//! asking), in every group, partition and member slot its answer has. Consumers with
//! manual assignment (assign + seek, no group) need none of these.
//!
//! The coordinator these handlers call, per request:
//! - JoinGroup: (group id, member id or empty, group instance id, protocol type,
//!   protocols [(name, metadata bytes)], session and rebalance timeouts) → waits for the
//!   rebalance → (error, generation, chosen protocol, leader id, own member id, and for
//!   the leader every member's metadata). An empty member id answers
//!   MEMBER_ID_REQUIRED with a new id first.
//! - SyncGroup: (group, generation, member, assignments [(member, bytes)] from the
//!   leader) → waits for the leader's assignment → this member's bytes, forwarded as
//!   sent.
//! - Heartbeat: (group, generation, member) → none, REBALANCE_IN_PROGRESS,
//!   ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID.
//! - LeaveGroup: (group, members) → per-member error.
//! - OffsetCommit: (group, generation or -1, member, [(topic, partition, offset,
//!   metadata string)]) → per-partition error; OffsetFetch: (group, topics or all) →
//!   [(topic, partition, offset or -1, metadata)].
//! - DescribeGroups: state, protocol type and name, members with their metadata and
//!   assignment bytes; ListGroups: (group id, protocol type, state).

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
