//! The classic consumer-group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, over the one group
//! coordinator of kafko-core (the same committed offsets `/v1` and the REST Proxy
//! read). Decoding and answering only: the barrier, the relay and the generation checks
//! are the coordinator's.
//!
//! Kafka allows any group id; an id outside kafko's name rule is stored under an
//! encoded name (`kafko_core::naming::group_name_for_id`) and listed by its id.
//!
//! Assignments and member metadata are opaque bytes, relayed unchanged; only a group of
//! protocol type `consumer` has its assignments read (defensively, in
//! `consumer_protocol`) for descriptions and lag. Every list a request names is read as
//! a set, as Kafka does, so an answer is bounded by the distinct names asked.

use std::collections::HashSet;
use std::time::Duration;

use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    DescribeGroupsRequest, DescribeGroupsResponse, GroupId, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, SyncGroupRequest, SyncGroupResponse,
};
use kafko_core::naming::{group_id_for_name, group_name_for_id};
use kafko_core::{
    ClassicMemberId, GroupError, GroupHandle, GroupProtocol, JoinGroupOutcome, LeaveOutcome,
    MemberAssignment,
};

use crate::consumer_protocol::assigned_partitions;
pub(crate) use crate::group_offsets::{offset_commit, offset_fetch};
use crate::metadata::str;
use crate::{ListenerState, errors};
use kafko_service::failure::Failure;

/// Who sent a request: the client id of its header and the connection's peer.
pub(crate) struct Client<'a> {
    pub(crate) id: &'a str,
    pub(crate) host: &'a str,
}

/// The group a Kafka group id names, or the error code refusing the id.
pub(super) fn group(broker: &ListenerState, id: &str) -> Result<GroupHandle, i16> {
    let name = group_name_for_id(id).ok_or(errors::INVALID_GROUP_ID)?;
    broker
        .service
        .kafko
        .group(&name)
        .map_err(|_| errors::INVALID_GROUP_ID)
}

/// The Kafka error code of a failed group call: a classic group's own limits are
/// `GROUP_MAX_SIZE_REACHED`, a join offering too many protocols is `INVALID_REQUEST`.
pub(super) fn code(e: GroupError) -> i16 {
    match e {
        GroupError::InvalidSessionTimeout { .. } => errors::INVALID_SESSION_TIMEOUT,
        GroupError::LimitReached {
            resource: "group members" | "group bytes",
            ..
        } => errors::GROUP_MAX_SIZE_REACHED,
        GroupError::LimitReached {
            resource: "join protocols",
            ..
        } => errors::INVALID_REQUEST,
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
    broker: &ListenerState,
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
    match g.classic_join(join).await {
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
            // Older versions have no such field: their leader computes an assignment
            // that the stable group does not take (its SyncGroup gets its own back).
            response.skip_assignment = answer.skip_assignment && version >= 9;
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

/// Answers SyncGroup: the leader's assignments go in, each member gets its own.
pub(crate) async fn sync_group(
    broker: &ListenerState,
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
    // Other protocol types (Schema Registry's `sr`, Connect's `connect`) have their own
    // layouts: their assignments are relayed and never read.
    let consumer = g
        .classic_protocol()
        .is_some_and(|(protocol_type, _)| protocol_type == "consumer");
    let assignments = request
        .assignments
        .iter()
        .map(|a| MemberAssignment {
            member_id: a.member_id.to_string(),
            partitions: if consumer {
                assigned_partitions(&a.assignment)
            } else {
                Vec::new()
            },
            assignment: a.assignment.clone(),
        })
        .collect();
    let who = ClassicMemberId {
        member_id: request.member_id.as_str(),
        group_instance_id: request.group_instance_id.as_deref(),
    };
    match g.classic_sync(who, generation, assignments).await {
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
    broker: &ListenerState,
    request: HeartbeatRequest,
    _version: i16,
) -> HeartbeatResponse {
    let mut response = HeartbeatResponse::default();
    response.error_code = match group(broker, request.group_id.as_str()) {
        Err(code) => code,
        Ok(g) => match u64::try_from(request.generation_id) {
            Err(_) => errors::ILLEGAL_GENERATION,
            Ok(generation) => match g.classic_heartbeat(
                ClassicMemberId {
                    member_id: request.member_id.as_str(),
                    group_instance_id: request.group_instance_id.as_deref(),
                },
                generation,
            ) {
                Ok(()) => errors::NONE,
                Err(GroupError::GroupNotFound { .. }) => errors::UNKNOWN_MEMBER_ID,
                Err(e) => code(e),
            },
        },
    };
    response
}

/// Answers LeaveGroup: one member (v0–2) or a list (v3+), each by member id or, for a
/// static member, by its instance id.
pub(crate) async fn leave_group(
    broker: &ListenerState,
    request: LeaveGroupRequest,
    version: i16,
) -> LeaveGroupResponse {
    let mut response = LeaveGroupResponse::default();
    let members: Vec<(String, Option<String>)> = if version >= 3 {
        request
            .members
            .iter()
            .map(|m| {
                let instance = m.group_instance_id.as_ref().map(ToString::to_string);
                (m.member_id.to_string(), instance)
            })
            .collect()
    } else {
        vec![(request.member_id.to_string(), None)]
    };
    let outcomes = match group(broker, request.group_id.as_str()) {
        Err(code) => {
            response.error_code = code;
            return response;
        }
        Ok(g) => match g.classic_leave_members(&members).await {
            Ok(outcomes) => outcomes,
            Err(GroupError::GroupNotFound { .. }) => {
                vec![LeaveOutcome::UnknownMember; members.len()]
            }
            Err(e) => {
                response.error_code = code(e);
                return response;
            }
        },
    };
    let code_of = |outcome: &LeaveOutcome| match outcome {
        LeaveOutcome::Left => errors::NONE,
        LeaveOutcome::UnknownMember => errors::UNKNOWN_MEMBER_ID,
        LeaveOutcome::FencedInstanceId => errors::FENCED_INSTANCE_ID,
    };
    if version >= 3 {
        response.members = request
            .members
            .iter()
            .zip(&outcomes)
            .map(|(m, outcome)| {
                let mut answer = MemberResponse::default();
                answer.member_id = m.member_id.clone();
                answer.group_instance_id = m.group_instance_id.clone();
                answer.error_code = code_of(outcome);
                answer
            })
            .collect();
    } else if let Some(outcome) = outcomes.first() {
        response.error_code = code_of(outcome);
    }
    response
}

/// Answers DescribeGroups: a group of Kafka clients with its state, protocol, members,
/// their metadata and assignments; a group of kafko's own members as `Stable` (or
/// `Empty`) with their ids; an unknown group as `Dead`.
pub(crate) fn describe_groups(
    broker: &ListenerState,
    request: DescribeGroupsRequest,
    version: i16,
) -> DescribeGroupsResponse {
    let mut response = DescribeGroupsResponse::default();
    // A group named twice is described once.
    let mut seen = HashSet::new();
    for id in request.groups {
        if !seen.insert(id.clone()) {
            continue;
        }
        let mut described = DescribedGroup::default();
        described.authorized_operations = i32::MIN;
        // A consumer group (KIP-848) is described by ConsumerGroupDescribe: here, as
        // in Kafka, it is no classic group.
        let described_group = group(broker, id.as_str()).map(|g| {
            if g.consumer_describe().is_ok() {
                Err(kafko_core::GroupError::GroupNotFound {
                    group: id.to_string(),
                })
            } else {
                g.describe()
            }
        });
        match described_group {
            Err(code) => described.error_code = code,
            // From v6 an unknown group is an error, not a dead group.
            Ok(Err(_)) if version >= 6 => {
                described.group_state = str("Dead");
                described.error_code = errors::GROUP_ID_NOT_FOUND;
                described.error_message = Some(str(&format!("Group {} not found.", id.as_str())));
            }
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
    broker: &ListenerState,
    request: ListGroupsRequest,
    _version: i16,
) -> ListGroupsResponse {
    let mut response = ListGroupsResponse::default();
    for listing in broker.service.kafko.list_groups() {
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
        let group_type = if listing.consumer_protocol {
            "consumer"
        } else {
            "classic"
        };
        let type_ok = request.types_filter.is_empty()
            || request
                .types_filter
                .iter()
                .any(|t| t.as_str().eq_ignore_ascii_case(group_type));
        if !(state_ok && type_ok) {
            continue;
        }
        let mut listed = ListedGroup::default();
        listed.group_id = GroupId(str(&group_id_for_name(&listing.group)));
        listed.protocol_type = str(&protocol_type);
        listed.group_state = str(state);
        listed.group_type = str(group_type);
        response.groups.push(listed);
    }
    response
}
