//! The classic consumer-group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, over the one group
//! coordinator of kafko-core (the same committed offsets `/v1` and the REST Proxy
//! read). Decoding and answering only: the barrier, the relay and the generation checks
//! are the coordinator's.
//!
//! Kafka allows any group id; an id outside kafko's name rule is stored under an
//! encoded name (`kafko_core::naming::group_name_for_id`) and listed by its id.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, DescribeGroupsRequest, DescribeGroupsResponse, GroupId,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest,
    OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest,
    SyncGroupResponse, TopicName,
};
use kafka_protocol::protocol::{Decodable, StrBytes};
use kafko_core::naming::{group_id_for_name, group_name_for_id};
use kafko_core::{
    CommitOffset, CommittedOffset, GroupError, GroupHandle, GroupProtocol, JoinGroupOutcome,
    MemberAssignment,
};

use super::metadata::str;
use super::{Broker, errors};
use crate::service::failure::Failure;

/// Who sent a request: the client id of its header and the connection's peer.
pub(crate) struct Client<'a> {
    pub(crate) id: &'a str,
    pub(crate) host: &'a str,
}

/// The group a Kafka group id names, or the error code refusing the id.
fn group(broker: &Broker, id: &str) -> Result<GroupHandle, i16> {
    let name = group_name_for_id(id).ok_or(errors::INVALID_GROUP_ID)?;
    broker
        .state
        .kafko
        .group(&name)
        .map_err(|_| errors::INVALID_GROUP_ID)
}

/// The Kafka error code of a failed group call.
fn code(e: GroupError) -> i16 {
    match e {
        GroupError::InvalidSessionTimeout { .. } => errors::INVALID_SESSION_TIMEOUT,
        other => errors::code(&Failure::from(other)),
    }
}

/// A generation as Kafka carries it (`-1`: none).
fn generation_out(generation: u64) -> i32 {
    i32::try_from(generation).unwrap_or(i32::MAX)
}

fn millis(ms: i32) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// Answers JoinGroup, once the rebalance the member joined has completed.
pub(crate) async fn join_group(
    broker: &Broker,
    client: &Client<'_>,
    request: JoinGroupRequest,
    version: i16,
) -> JoinGroupResponse {
    let mut response = JoinGroupResponse::default();
    response.generation_id = -1;
    response.member_id = request.member_id.clone();
    let g = match group(broker, request.group_id.as_str()) {
        Ok(g) => g,
        Err(code) => {
            response.error_code = code;
            return response;
        }
    };
    let session = millis(request.session_timeout_ms);
    // v0 has no rebalance timeout: the session timeout stands for it.
    let rebalance = if version >= 1 {
        millis(request.rebalance_timeout_ms)
    } else {
        session
    };
    let (Some(session_timeout), Some(rebalance_timeout)) = (session, rebalance) else {
        response.error_code = errors::INVALID_SESSION_TIMEOUT;
        return response;
    };
    let join = kafko_core::JoinGroupRequest {
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.as_ref().map(ToString::to_string),
        session_timeout,
        rebalance_timeout,
        protocol_type: request.protocol_type.to_string(),
        protocols: request
            .protocols
            .iter()
            .map(|p| GroupProtocol {
                name: p.name.to_string(),
                metadata: p.metadata.clone(),
            })
            .collect(),
        client_id: client.id.to_owned(),
        client_host: client.host.to_owned(),
        require_known_member_id: version >= 4,
    };
    match g.join_group(join).await {
        Ok(JoinGroupOutcome::MemberIdRequired(id)) => {
            response.error_code = errors::MEMBER_ID_REQUIRED;
            response.member_id = str(&id);
        }
        Ok(JoinGroupOutcome::Joined(answer)) => {
            response.generation_id = generation_out(answer.generation);
            response.protocol_type = Some(str(&answer.protocol_type));
            response.protocol_name = Some(str(&answer.protocol));
            response.leader = str(&answer.leader);
            response.member_id = str(&answer.member_id);
            response.members = answer
                .members
                .into_iter()
                .map(|m| {
                    let mut member = JoinGroupResponseMember::default();
                    member.member_id = str(&m.member_id);
                    member.group_instance_id = m.group_instance_id.as_deref().map(str);
                    member.metadata = m.metadata;
                    member
                })
                .collect();
        }
        Err(e) => response.error_code = code(e),
    }
    response
}

/// The topic partitions a consumer-protocol assignment names (for descriptions and
/// lag); nothing when the bytes are another protocol's.
fn assigned_partitions(assignment: &Bytes) -> Vec<(String, Vec<u32>)> {
    let mut buf = assignment.clone();
    if buf.len() < 2 {
        return Vec::new();
    }
    let version = i16::from_be_bytes([buf[0], buf[1]]);
    let _ = bytes::Buf::get_i16(&mut buf);
    let Ok(decoded) = ConsumerProtocolAssignment::decode(&mut buf, version.clamp(0, 3)) else {
        return Vec::new();
    };
    decoded
        .assigned_partitions
        .into_iter()
        .map(|tp| {
            let partitions = tp
                .partitions
                .iter()
                .filter_map(|&p| u32::try_from(p).ok())
                .collect();
            (tp.topic.to_string(), partitions)
        })
        .collect()
}

/// Answers SyncGroup: the leader's assignments go in, each member gets its own.
pub(crate) async fn sync_group(
    broker: &Broker,
    request: SyncGroupRequest,
    _version: i16,
) -> SyncGroupResponse {
    let mut response = SyncGroupResponse::default();
    let g = match group(broker, request.group_id.as_str()) {
        Ok(g) => g,
        Err(code) => {
            response.error_code = code;
            return response;
        }
    };
    let Ok(generation) = u64::try_from(request.generation_id) else {
        response.error_code = errors::ILLEGAL_GENERATION;
        return response;
    };
    let assignments = request
        .assignments
        .iter()
        .map(|a| MemberAssignment {
            member_id: a.member_id.to_string(),
            partitions: assigned_partitions(&a.assignment),
            assignment: a.assignment.clone(),
        })
        .collect();
    match g
        .sync_group(request.member_id.as_str(), generation, assignments)
        .await
    {
        Ok(assignment) => {
            response.assignment = assignment;
            if let Some((protocol_type, protocol)) = g.classic_protocol() {
                response.protocol_type = Some(str(&protocol_type));
                response.protocol_name = Some(str(&protocol));
            }
        }
        Err(e) => response.error_code = code(e),
    }
    response
}

/// Answers Heartbeat.
pub(crate) fn heartbeat(
    broker: &Broker,
    request: HeartbeatRequest,
    _version: i16,
) -> HeartbeatResponse {
    let mut response = HeartbeatResponse::default();
    response.error_code = match group(broker, request.group_id.as_str()) {
        Err(code) => code,
        Ok(g) => match u64::try_from(request.generation_id) {
            Err(_) => errors::ILLEGAL_GENERATION,
            Ok(generation) => match g.heartbeat_group(request.member_id.as_str(), generation) {
                Ok(()) => errors::NONE,
                Err(GroupError::GroupNotFound { .. }) => errors::UNKNOWN_MEMBER_ID,
                Err(e) => code(e),
            },
        },
    };
    response
}

/// Answers LeaveGroup: one member (v0–2) or a list (v3+).
pub(crate) fn leave_group(
    broker: &Broker,
    request: LeaveGroupRequest,
    version: i16,
) -> LeaveGroupResponse {
    let mut response = LeaveGroupResponse::default();
    let ids: Vec<String> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| m.member_id.to_string())
            .collect()
    } else {
        vec![request.member_id.to_string()]
    };
    let unknown = match group(broker, request.group_id.as_str()) {
        Err(code) => {
            response.error_code = code;
            return response;
        }
        Ok(g) => match g.leave_classic(&ids) {
            Ok(unknown) => unknown,
            Err(GroupError::GroupNotFound { .. }) => ids.clone(),
            Err(e) => {
                response.error_code = code(e);
                return response;
            }
        },
    };
    if version >= 3 {
        response.members = request
            .members
            .iter()
            .map(|m| {
                let mut answer = MemberResponse::default();
                answer.member_id = m.member_id.clone();
                answer.group_instance_id = m.group_instance_id.clone();
                if unknown.iter().any(|u| u.as_str() == m.member_id.as_str()) {
                    answer.error_code = errors::UNKNOWN_MEMBER_ID;
                }
                answer
            })
            .collect();
    } else if !unknown.is_empty() {
        response.error_code = errors::UNKNOWN_MEMBER_ID;
    }
    response
}

/// Answers OffsetCommit: each topic's offsets are committed durably in one write, from
/// a member in its generation, or from a client that is no member (generation −1) when
/// the group has no Kafka members.
pub(crate) async fn offset_commit(
    broker: &Broker,
    request: OffsetCommitRequest,
    _version: i16,
) -> OffsetCommitResponse {
    let mut response = OffsetCommitResponse::default();
    let g = group(broker, request.group_id.as_str());
    let member = u64::try_from(request.generation_id_or_member_epoch)
        .ok()
        .map(|generation| (request.member_id.to_string(), generation));
    for topic in request.topics {
        let codes = commit_topic(broker, &g, member.as_ref(), &topic).await;
        let mut answer = OffsetCommitResponseTopic::default();
        answer.partitions = topic
            .partitions
            .iter()
            .zip(codes)
            .map(|(p, code)| {
                let mut partition = OffsetCommitResponsePartition::default();
                partition.partition_index = p.partition_index;
                partition.error_code = code;
                partition
            })
            .collect();
        answer.name = topic.name;
        response.topics.push(answer);
    }
    response
}

/// Commits one topic's offsets; the error code of each partition, in request order.
async fn commit_topic(
    broker: &Broker,
    group: &Result<GroupHandle, i16>,
    member: Option<&(String, u64)>,
    topic: &kafka_protocol::messages::offset_commit_request::OffsetCommitRequestTopic,
) -> Vec<i16> {
    let every = |code| vec![code; topic.partitions.len()];
    let g = match group {
        Ok(g) => g,
        Err(code) => return every(*code),
    };
    let handle = match broker.state.kafko.find_topic(topic.name.as_str()) {
        Ok(Some(t)) => t,
        Ok(None) => return every(errors::UNKNOWN_TOPIC_OR_PARTITION),
        Err(e) => return every(errors::code(&Failure::from(e))),
    };
    let mut offsets = Vec::with_capacity(topic.partitions.len());
    for p in &topic.partitions {
        let (Ok(partition), Ok(offset)) = (
            u32::try_from(p.partition_index),
            u64::try_from(p.committed_offset),
        ) else {
            return every(errors::INVALID_REQUEST);
        };
        offsets.push(CommitOffset {
            partition,
            offset,
            metadata: p.committed_metadata.as_ref().map(ToString::to_string),
        });
    }
    let member = member.map(|(id, generation)| (id.as_str(), *generation));
    match g.commit_offsets(member, &handle, &offsets).await {
        Ok(()) => every(errors::NONE),
        Err(e) => every(code(e)),
    }
}

/// A topic's rows in an OffsetFetch answer: each partition asked, with its committed
/// offset if it has one.
type TopicOffsets = (String, Vec<(i32, Option<CommittedOffset>)>);

/// One group's committed offsets for OffsetFetch: of the topics asked, or (`None`) of
/// every topic it committed on. A group that does not exist has none.
fn committed(
    broker: &Broker,
    id: &str,
    asked: Option<Vec<(String, Vec<i32>)>>,
) -> Result<Vec<TopicOffsets>, i16> {
    let stored: BTreeMap<String, Vec<CommittedOffset>> =
        match group(broker, id)?.committed_offsets() {
            Ok(map) => map,
            Err(GroupError::GroupNotFound { .. }) => BTreeMap::new(),
            Err(e) => return Err(code(e)),
        };
    let find = |topic: &str, p: i32| {
        stored.get(topic).and_then(|offsets| {
            offsets
                .iter()
                .find(|o| i64::from(o.partition) == i64::from(p))
                .cloned()
        })
    };
    Ok(match asked {
        Some(topics) => topics
            .into_iter()
            .map(|(topic, partitions)| {
                let rows = partitions.iter().map(|&p| (p, find(&topic, p))).collect();
                (topic, rows)
            })
            .collect(),
        None => stored
            .iter()
            .map(|(topic, offsets)| {
                let rows = offsets
                    .iter()
                    .map(|o| {
                        (
                            i32::try_from(o.partition).unwrap_or(i32::MAX),
                            Some(o.clone()),
                        )
                    })
                    .collect();
                (topic.clone(), rows)
            })
            .collect(),
    })
}

fn offset_out(o: Option<&CommittedOffset>) -> (i64, Option<StrBytes>) {
    match o {
        Some(o) => (
            i64::try_from(o.offset).unwrap_or(i64::MAX),
            Some(str(o.metadata.as_deref().unwrap_or(""))),
        ),
        None => (-1, Some(str(""))),
    }
}

/// The rows of an OffsetFetch answer in the layout of its version: `$topic` and
/// `$partition` are the single-group types (v1–7) or the group-list ones (v8+), which
/// hold the same fields.
macro_rules! offset_rows {
    ($rows:expr, $topic:ty, $partition:ty) => {
        $rows
            .into_iter()
            .map(|(topic, partitions)| {
                let mut t = <$topic>::default();
                t.name = TopicName(str(&topic));
                t.partitions = partitions
                    .iter()
                    .map(|(p, o)| {
                        let mut row = <$partition>::default();
                        row.partition_index = *p;
                        (row.committed_offset, row.metadata) = offset_out(o.as_ref());
                        row.committed_leader_epoch = -1;
                        row
                    })
                    .collect();
                t
            })
            .collect()
    };
}

/// The topics asked of OffsetFetch (`None`: all of them).
fn asked_topics<T>(
    topics: Option<Vec<T>>,
    name_and_partitions: impl Fn(T) -> (String, Vec<i32>),
) -> Option<Vec<(String, Vec<i32>)>> {
    topics.map(|ts| ts.into_iter().map(name_and_partitions).collect())
}

/// Answers OffsetFetch: one group (v1–7; no topics from v2 on means all of them) or a
/// list of groups (v8+).
pub(crate) fn offset_fetch(
    broker: &Broker,
    request: OffsetFetchRequest,
    version: i16,
) -> OffsetFetchResponse {
    let mut response = OffsetFetchResponse::default();
    if version >= 8 {
        for asked in request.groups {
            let mut answer = OffsetFetchResponseGroup::default();
            let topics = asked_topics(asked.topics, |t| (t.name.to_string(), t.partition_indexes));
            match committed(broker, asked.group_id.as_str(), topics) {
                Ok(rows) => {
                    answer.topics = offset_rows!(
                        rows,
                        OffsetFetchResponseTopics,
                        OffsetFetchResponsePartitions
                    );
                }
                Err(code) => answer.error_code = code,
            }
            answer.group_id = asked.group_id;
            response.groups.push(answer);
        }
        return response;
    }
    let topics = asked_topics(request.topics, |t| {
        (t.name.to_string(), t.partition_indexes)
    });
    match committed(broker, request.group_id.as_str(), topics) {
        Ok(rows) => {
            response.topics =
                offset_rows!(rows, OffsetFetchResponseTopic, OffsetFetchResponsePartition);
        }
        Err(code) if version >= 2 => response.error_code = code,
        Err(_) => {}
    }
    response
}

/// Answers DescribeGroups: a group of Kafka clients with its state, protocol, members,
/// their metadata and assignments; a group of kafko's own members as `Stable` (or
/// `Empty`) with their ids; an unknown group as `Dead`.
pub(crate) fn describe_groups(
    broker: &Broker,
    request: DescribeGroupsRequest,
    _version: i16,
) -> DescribeGroupsResponse {
    let mut response = DescribeGroupsResponse::default();
    for id in request.groups {
        let mut described = DescribedGroup::default();
        described.authorized_operations = i32::MIN;
        match group(broker, id.as_str()).map(|g| g.describe()) {
            Err(code) => described.error_code = code,
            Ok(Err(_)) => described.group_state = str("Dead"),
            Ok(Ok(d)) => match d.classic {
                Some(classic) => {
                    described.group_state = str(classic.state);
                    described.protocol_type = str(&classic.protocol_type);
                    described.protocol_data = str(&classic.protocol);
                    described.members = classic
                        .members
                        .into_iter()
                        .map(|m| {
                            let mut member = DescribedGroupMember::default();
                            member.member_id = str(&m.member_id);
                            member.group_instance_id = m.group_instance_id.as_deref().map(str);
                            member.client_id = str(&m.client_id);
                            member.client_host = str(&m.client_host);
                            member.member_metadata = m.metadata;
                            member.member_assignment = m.assignment;
                            member
                        })
                        .collect();
                }
                None => {
                    let mut ids: Vec<String> = d
                        .topics
                        .iter()
                        .flat_map(|t| t.members.iter().map(|m| m.member_id.clone()))
                        .collect();
                    ids.sort();
                    ids.dedup();
                    described.group_state = str(if ids.is_empty() { "Empty" } else { "Stable" });
                    described.protocol_type = str("consumer");
                    described.members = ids
                        .iter()
                        .map(|id| {
                            let mut member = DescribedGroupMember::default();
                            member.member_id = str(id);
                            member
                        })
                        .collect();
                }
            },
        }
        described.group_id = id;
        response.groups.push(described);
    }
    response
}

/// Answers ListGroups: every group, by its Kafka id, with the state and type filters of
/// v4+ and v5+ applied.
pub(crate) fn list_groups(
    broker: &Broker,
    request: ListGroupsRequest,
    _version: i16,
) -> ListGroupsResponse {
    let mut response = ListGroupsResponse::default();
    for listing in broker.state.kafko.list_groups() {
        // A group of kafko's own members holds consumer offsets too.
        let protocol_type = if listing.protocol_type.is_empty() {
            "consumer".to_owned()
        } else {
            listing.protocol_type.clone()
        };
        let state = if listing.protocol_type.is_empty() && listing.members > 0 {
            "Stable"
        } else {
            listing.state
        };
        let state_ok = request.states_filter.is_empty()
            || request
                .states_filter
                .iter()
                .any(|s| s.as_str().eq_ignore_ascii_case(state));
        let type_ok = request.types_filter.is_empty()
            || request
                .types_filter
                .iter()
                .any(|t| t.as_str().eq_ignore_ascii_case("classic"));
        if !(state_ok && type_ok) {
            continue;
        }
        let mut listed = ListedGroup::default();
        listed.group_id = GroupId(str(&group_id_for_name(&listing.group)));
        listed.protocol_type = str(&protocol_type);
        listed.group_state = str(state);
        listed.group_type = str("classic");
        response.groups.push(listed);
    }
    response
}
