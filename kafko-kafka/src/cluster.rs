//! DescribeCluster, DescribeAcls, DeleteGroups and OffsetDelete: the cluster is this
//! one node (id 0, the controller, at the advertised address), the ACLs what kafko
//! enforces, and a group is deleted with its committed offsets through the same path as
//! `/v1`'s delete, refused while it has live members (NON_EMPTY_GROUP), as Kafka
//! refuses it.
//!
//! OffsetDelete deletes a group's committed offsets of the partitions named, as Kafka's
//! coordinator does: an unknown group is GROUP_ID_NOT_FOUND, a group of Kafka clients
//! with members of a protocol type other than `consumer` NON_EMPTY_GROUP (for the whole
//! request); a topic a live member subscribes to is GROUP_SUBSCRIBED_TO_TOPIC for each
//! of its partitions, an unknown topic UNKNOWN_TOPIC_OR_PARTITION; a partition without
//! a committed offset is no error. Topics and partitions named twice are answered once.
//!
//! kafko has no ACLs: without `--auth-token` every client may do everything, and
//! DescribeAcls answers SECURITY_DISABLED, as a Kafka broker without an authorizer
//! does; with a token every authenticated client may do everything, which no ACL
//! restricts: the answer is an empty list.

use std::collections::HashSet;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{
    BrokerId, DeleteGroupsRequest, DeleteGroupsResponse, DescribeAclsResponse,
    DescribeClusterRequest, DescribeClusterResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    TopicName,
};
use kafko_core::GroupError;

use crate::consumer_protocol::subscribes_to;
use crate::groups::{code, group};
use crate::metadata::str;
use crate::{ListenerState, NODE_ID, errors};

/// DescribeCluster's endpoint types: brokers (1) and controllers (2).
const BROKERS: i8 = 1;

/// Answers DescribeCluster.
pub(crate) fn describe_cluster(
    broker: &ListenerState,
    request: &DescribeClusterRequest,
) -> DescribeClusterResponse {
    let mut response = DescribeClusterResponse::default();
    response.endpoint_type = request.endpoint_type;
    response.cluster_authorized_operations = i32::MIN;
    if request.endpoint_type != BROKERS {
        response.error_code = errors::MISMATCHED_ENDPOINT_TYPE;
        response.error_message = Some(str(
            "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
        ));
        return response;
    }
    response.cluster_id = str(&broker.service.config.cluster_id);
    response.controller_id = BrokerId(NODE_ID);
    let mut node = DescribeClusterBroker::default();
    node.broker_id = BrokerId(NODE_ID);
    node.host = str(&broker.advertised.host);
    node.port = i32::from(broker.advertised.port);
    node.rack = None;
    response.brokers = vec![node];
    response
}

/// Answers DescribeAcls.
pub(crate) fn describe_acls(broker: &ListenerState) -> DescribeAclsResponse {
    let mut response = DescribeAclsResponse::default();
    if broker.service.config.auth_token.is_none() {
        response.error_code = errors::SECURITY_DISABLED;
        response.error_message = Some(str("No Authorizer is configured."));
    }
    response
}

/// Answers DeleteGroups: each distinct group once.
pub(crate) async fn delete_groups(
    broker: &ListenerState,
    request: DeleteGroupsRequest,
) -> DeleteGroupsResponse {
    let mut response = DeleteGroupsResponse::default();
    let mut seen = HashSet::new();
    for id in request.groups_names {
        if !seen.insert(id.clone()) {
            continue;
        }
        let mut result = DeletableGroupResult::default();
        result.error_code = match group(broker, id.as_str()) {
            Ok(handle) => match handle.delete().await {
                Ok(()) => errors::NONE,
                Err(e) => code(e),
            },
            Err(c) => c,
        };
        result.group_id = id;
        response.results.push(result);
    }
    response
}

/// The protocol type of groups whose members' metadata is a consumer subscription.
const CONSUMER: &str = "consumer";

/// Answers OffsetDelete.
pub(crate) async fn offset_delete(
    broker: &ListenerState,
    request: OffsetDeleteRequest,
) -> OffsetDeleteResponse {
    let mut response = OffsetDeleteResponse::default();
    let g = match group(broker, request.group_id.as_str()) {
        Ok(g) => g,
        Err(code) => {
            response.error_code = code;
            return response;
        }
    };
    match g.classic_committed() {
        Err(GroupError::GroupNotFound { .. }) => {
            response.error_code = errors::GROUP_ID_NOT_FOUND;
            return response;
        }
        Err(e) => {
            response.error_code = code(e);
            return response;
        }
        Ok(_) => {}
    }
    if g.classic_protocol()
        .is_some_and(|(kind, _)| kind != CONSUMER)
    {
        response.error_code = errors::NON_EMPTY_GROUP;
        return response;
    }
    // Topics in the order first named, each partition once.
    let mut topics: Vec<(TopicName, Vec<i32>)> = Vec::new();
    let mut slot = std::collections::HashMap::new();
    let mut seen = HashSet::new();
    for topic in request.topics {
        let t = *slot.entry(topic.name.clone()).or_insert_with(|| {
            topics.push((topic.name.clone(), Vec::new()));
            topics.len() - 1
        });
        for p in topic.partitions {
            if seen.insert((t, p.partition_index)) {
                topics[t].1.push(p.partition_index);
            }
        }
    }
    for (name, partitions) in topics {
        let known = matches!(broker.service.kafko.find_topic(name.as_str()), Ok(Some(_)));
        let code = if known {
            let stored: Vec<u32> = partitions
                .iter()
                .filter_map(|p| u32::try_from(*p).ok())
                .collect();
            let deleted = g
                .classic_delete_offsets(name.as_str(), &stored, |kind, metadata| {
                    reads_topic(kind, metadata, name.as_str())
                })
                .await;
            match deleted {
                Ok(()) => errors::NONE,
                Err(GroupError::GroupHasMembers { .. }) => errors::GROUP_SUBSCRIBED_TO_TOPIC,
                Err(GroupError::GroupNotFound { .. }) => {
                    // Deleted meanwhile: the whole request is answered so.
                    response.topics.clear();
                    response.error_code = errors::GROUP_ID_NOT_FOUND;
                    return response;
                }
                Err(e) => code(e),
            }
        } else {
            errors::UNKNOWN_TOPIC_OR_PARTITION
        };
        let mut answer = OffsetDeleteResponseTopic::default();
        answer.partitions = partitions
            .into_iter()
            .map(|p| {
                let mut row = OffsetDeleteResponsePartition::default();
                row.partition_index = p;
                row.error_code = code;
                row
            })
            .collect();
        answer.name = name;
        response.topics.push(answer);
    }
    response
}

/// Whether a member of a group of Kafka clients (of protocol type `kind`, with this
/// metadata for the chosen protocol) reads `topic`: its subscription names it, or it
/// cannot be read (as Kafka assumes of a member whose subscription it does not know).
fn reads_topic(kind: &str, metadata: &[u8], topic: &str) -> bool {
    kind != CONSUMER || subscribes_to(metadata, topic) != Some(false)
}
