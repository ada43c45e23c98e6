//! DescribeCluster, DescribeAcls and DeleteGroups: the cluster is this one node (id 0,
//! the controller, at the advertised address), the ACLs what kafko enforces, and a
//! group is deleted with its committed offsets through the same path as `/v1`'s
//! delete, refused while it has live members (NON_EMPTY_GROUP), as Kafka refuses it.
//!
//! kafko has no ACLs: without `--auth-token` every client may do everything, and
//! DescribeAcls answers SECURITY_DISABLED, as a Kafka broker without an authorizer
//! does; with a token every authenticated client may do everything, which no ACL
//! restricts: the answer is an empty list.

use std::collections::HashSet;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{
    BrokerId, DeleteGroupsRequest, DeleteGroupsResponse, DescribeAclsResponse,
    DescribeClusterRequest, DescribeClusterResponse,
};

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
