//! The consumer group protocol's APIs (KIP-848): ConsumerGroupHeartbeat and
//! ConsumerGroupDescribe, over the coordinator of kafko-core. Decoding, the request's
//! shape checks (as Kafka makes them), topic ids ↔ names, subscriptions by regular
//! expression, and answering; epochs, assignment and reconciliation are the
//! coordinator's.
//!
//! From v1 the client makes its member id (a v1 heartbeat without one is
//! `INVALID_REQUEST`); v0 joins with an empty id and gets one. A regular expression
//! (v1) is matched whole against the live topic names on each heartbeat of its member,
//! so topics created later join the subscription.

use std::collections::{BTreeSet, HashSet};
use std::time::Duration;

use kafka_protocol::messages::consumer_group_describe_response::{
    Assignment as DescribedAssignment, DescribedGroup, Member, TopicPartitions as DescribedTopic,
};
use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, TopicName,
};
use kafko_core::{ConsumerError, ConsumerHeartbeat, ConsumerRefusal, ConsumerSubscription};

use crate::groups::{Client, group};
use crate::metadata::{str, topic_by_uuid, topic_uuid};
use crate::{ListenerState, errors};

const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const FENCED_MEMBER_EPOCH: i16 = 110;
const UNRELEASED_INSTANCE_ID: i16 = 111;
const UNSUPPORTED_ASSIGNOR: i16 = 112;
const STALE_MEMBER_EPOCH: i16 = 113;
const INVALID_REGULAR_EXPRESSION: i16 = 128;

/// Most topic names one heartbeat may subscribe to.
const MAX_TOPIC_NAMES: usize = 10_000;
/// Most bytes a subscription's regular expression may compile to.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// The Kafka error code of a refusal.
pub(crate) fn refusal_code(refusal: ConsumerRefusal) -> i16 {
    match refusal {
        ConsumerRefusal::UnknownMember => errors::UNKNOWN_MEMBER_ID,
        ConsumerRefusal::FencedMemberEpoch => FENCED_MEMBER_EPOCH,
        ConsumerRefusal::StaleMemberEpoch => STALE_MEMBER_EPOCH,
        ConsumerRefusal::UnreleasedInstanceId => UNRELEASED_INSTANCE_ID,
        ConsumerRefusal::FencedInstanceId => errors::FENCED_INSTANCE_ID,
        ConsumerRefusal::UnsupportedAssignor => UNSUPPORTED_ASSIGNOR,
        ConsumerRefusal::NotConsumerGroup => errors::GROUP_ID_NOT_FOUND,
        ConsumerRefusal::GroupMaxSize => errors::GROUP_MAX_SIZE_REACHED,
        ConsumerRefusal::InvalidRequest => errors::INVALID_REQUEST,
        ConsumerRefusal::UnsupportedVersion => errors::UNSUPPORTED_VERSION,
        ConsumerRefusal::ShuttingDown => COORDINATOR_NOT_AVAILABLE,
    }
}

/// A subscription's regular expression, compiled to match whole topic names.
fn compile(regex: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(&format!("^(?:{regex})$"))
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

/// Checks a heartbeat's shape as Kafka does; the reason when it is invalid.
fn invalid(request: &ConsumerGroupHeartbeatRequest, version: i16) -> Option<&'static str> {
    let empty =
        |s: &Option<kafka_protocol::protocol::StrBytes>| s.as_ref().is_some_and(|s| s.is_empty());
    if request.group_id.is_empty() {
        return Some("GroupId can't be empty.");
    }
    if empty(&request.instance_id) {
        return Some("InstanceId can't be empty.");
    }
    if empty(&request.rack_id) {
        return Some("RackId can't be empty.");
    }
    if version >= 1 && request.member_id.is_empty() {
        return Some("MemberId can't be empty.");
    }
    if request
        .subscribed_topic_names
        .as_ref()
        .is_some_and(|n| n.len() > MAX_TOPIC_NAMES)
    {
        return Some("Too many subscribed topic names.");
    }
    match request.member_epoch {
        e if e > 0 || e == -1 => {
            if request.member_id.is_empty() {
                return Some("MemberId can't be empty.");
            }
        }
        0 => {
            if request.rebalance_timeout_ms == -1 {
                return Some("RebalanceTimeoutMs must be provided in first request.");
            }
            if request
                .topic_partitions
                .as_ref()
                .is_none_or(|t| !t.is_empty())
            {
                return Some("TopicPartitions must be empty when (re-)joining.");
            }
            if request.subscribed_topic_names.is_none() && request.subscribed_topic_regex.is_none()
            {
                return Some(
                    "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
                );
            }
        }
        -2 => {
            if request.member_id.is_empty() {
                return Some("MemberId can't be empty.");
            }
            if request.instance_id.is_none() {
                return Some("InstanceId can't be null.");
            }
        }
        _ => return Some("MemberEpoch is invalid."),
    }
    if request.rebalance_timeout_ms < -1 {
        return Some("RebalanceTimeoutMs is invalid.");
    }
    None
}

/// Answers ConsumerGroupHeartbeat.
pub(crate) async fn heartbeat(
    broker: &ListenerState,
    client: &Client<'_>,
    request: ConsumerGroupHeartbeatRequest,
    version: i16,
) -> ConsumerGroupHeartbeatResponse {
    let mut response = ConsumerGroupHeartbeatResponse::default();
    let fail = |mut response: ConsumerGroupHeartbeatResponse, code: i16, message: &str| {
        response.error_code = code;
        response.error_message = Some(str(message));
        response
    };
    if let Some(reason) = invalid(&request, version) {
        return fail(response, errors::INVALID_REQUEST, reason);
    }
    if let Some(regex) = request.subscribed_topic_regex.as_deref()
        && !regex.is_empty()
        && let Err(e) = compile(regex)
    {
        return fail(response, INVALID_REGULAR_EXPRESSION, &e);
    }
    let g = match group(broker, request.group_id.as_str()) {
        Ok(g) => g,
        Err(code) => return fail(response, code, "invalid group id"),
    };
    let limits = broker.service.kafko.group_limits();
    let member_bytes = request.member_id.len()
        + request.instance_id.as_ref().map_or(0, |s| s.len())
        + request.rack_id.as_ref().map_or(0, |s| s.len())
        + request
            .subscribed_topic_regex
            .as_ref()
            .map_or(0, |s| s.len())
        + request
            .subscribed_topic_names
            .iter()
            .flatten()
            .map(|n| n.len() + 64)
            .sum::<usize>();
    if member_bytes > limits.max_member_bytes {
        return fail(
            response,
            errors::GROUP_MAX_SIZE_REACHED,
            "the member's subscription is too large",
        );
    }
    let owned = request.topic_partitions.as_ref().map(|topics| {
        topics
            .iter()
            .filter_map(|t| {
                let handle = topic_by_uuid(broker, t.topic_id)?;
                let partitions = t
                    .partitions
                    .iter()
                    .filter_map(|p| u32::try_from(*p).ok())
                    .collect();
                Some((handle.name().to_owned(), partitions))
            })
            .collect()
    });
    let subscription = (request.subscribed_topic_names.is_some()
        || request.subscribed_topic_regex.is_some())
    .then(|| ConsumerSubscription {
        topic_names: request
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|n| n.0.to_string()).collect()),
        regex: request
            .subscribed_topic_regex
            .as_ref()
            .map(ToString::to_string),
    });
    let rebalance_timeout = u64::try_from(request.rebalance_timeout_ms)
        .ok()
        .map(|ms| Duration::from_millis(ms).min(limits.max_session_timeout));
    let call = ConsumerHeartbeat {
        member_id: request.member_id.to_string(),
        member_epoch: request.member_epoch,
        instance_id: request.instance_id.as_ref().map(ToString::to_string),
        rack_id: request.rack_id.as_ref().map(ToString::to_string),
        rebalance_timeout,
        subscription,
        server_assignor: request.server_assignor.as_ref().map(ToString::to_string),
        owned,
        client_id: client.id.to_owned(),
        client_host: client.host.to_owned(),
    };
    let kafko = &broker.service.kafko;
    let matching = |regex: &str| -> Option<BTreeSet<String>> {
        let re = compile(regex).ok()?;
        Some(
            kafko
                .list_topics()
                .into_iter()
                .filter(|t| re.is_match(t))
                .collect(),
        )
    };
    match g.consumer_heartbeat(&call, matching).await {
        Ok(answer) => {
            response.member_id = Some(str(&answer.member_id));
            response.member_epoch = answer.member_epoch;
            response.heartbeat_interval_ms =
                i32::try_from(answer.heartbeat_interval.as_millis()).unwrap_or(i32::MAX);
            response.assignment = answer.assignment.map(|topics| {
                let mut assignment = Assignment::default();
                assignment.topic_partitions = topics
                    .into_iter()
                    .filter_map(|(name, partitions)| {
                        let handle = kafko.find_topic(&name).ok().flatten()?;
                        let mut t = TopicPartitions::default();
                        t.topic_id = topic_uuid(&handle);
                        t.partitions = partitions
                            .into_iter()
                            .filter_map(|p| i32::try_from(p).ok())
                            .collect();
                        Some(t)
                    })
                    .collect();
                assignment
            });
            response
        }
        Err(ConsumerError { refusal, message }) => fail(response, refusal_code(refusal), &message),
    }
}

/// Answers ConsumerGroupDescribe: each group named once.
pub(crate) fn describe(
    broker: &ListenerState,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let mut response = ConsumerGroupDescribeResponse::default();
    let mut seen = HashSet::new();
    for id in request.group_ids {
        if !seen.insert(id.clone()) {
            continue;
        }
        let mut described = DescribedGroup::default();
        described.authorized_operations = i32::MIN;
        match group(broker, id.as_str()).map(|g| g.consumer_describe()) {
            Err(code) => described.error_code = code,
            Ok(Err(e)) => {
                described.error_code = refusal_code(e.refusal);
                described.error_message = Some(str(&format!(
                    "Group {} is not a consumer group: {}.",
                    id.as_str(),
                    e.message
                )));
            }
            Ok(Ok(d)) => {
                described.group_state = str(d.state);
                described.group_epoch = d.group_epoch;
                described.assignment_epoch = d.assignment_epoch;
                described.assignor_name = str(d.assignor);
                described.members = d
                    .members
                    .into_iter()
                    .map(|m| {
                        let mut member = Member::default();
                        member.member_id = str(&m.member_id);
                        member.instance_id = m.instance_id.as_deref().map(str);
                        member.rack_id = m.rack_id.as_deref().map(str);
                        member.member_epoch = m.member_epoch;
                        member.client_id = str(&m.client_id);
                        member.client_host = str(&m.client_host);
                        member.subscribed_topic_names = m
                            .subscribed_topic_names
                            .iter()
                            .map(|t| TopicName(str(t)))
                            .collect();
                        member.subscribed_topic_regex =
                            m.subscribed_topic_regex.as_deref().map(str);
                        member.assignment = described_assignment(broker, &m.assignment);
                        member.target_assignment =
                            described_assignment(broker, &m.target_assignment);
                        // A member of the consumer protocol (0 would be classic).
                        member.member_type = 1;
                        member
                    })
                    .collect();
            }
        }
        described.group_id = id;
        response.groups.push(described);
    }
    response
}

fn described_assignment(
    broker: &ListenerState,
    topics: &[(String, Vec<u32>)],
) -> DescribedAssignment {
    let mut out = DescribedAssignment::default();
    out.topic_partitions = topics
        .iter()
        .filter_map(|(name, partitions)| {
            let handle = broker.service.kafko.find_topic(name).ok().flatten()?;
            let mut t = DescribedTopic::default();
            t.topic_id = topic_uuid(&handle);
            t.topic_name = TopicName(str(name));
            t.partitions = partitions
                .iter()
                .filter_map(|p| i32::try_from(*p).ok())
                .collect();
            Some(t)
        })
        .collect();
    out
}
