//! Assignments (`…/assignments`): the partitions an instance owns now, and assigning
//! partitions to it by hand (see `assignment` for how those are read).

use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::InstanceAt;
use super::subscription::join_subscribed;
use crate::rest_proxy::api_doc::{InstanceNotFound, InstancePath, V2BadBody};
use crate::rest_proxy::error::{ErrorBody, ProxyError, ProxyResult};
use crate::rest_proxy::v2::v2_json;
use crate::rest_proxy::{ProxyBody, objects, parse_body, partition_id};

/// A topic partition.
#[derive(Deserialize, Serialize, Clone, utoipa::ToSchema)]
#[schema(as = ProxyV2TopicPartition)]
pub(crate) struct TopicPartition {
    pub(super) topic: String,
    #[serde(deserialize_with = "partition_id")]
    pub(super) partition: u32,
}

/// Partitions (committed-offsets query, seeks to the beginning or end, assignments).
#[derive(Deserialize, Serialize, Default, utoipa::ToSchema)]
#[schema(as = ProxyV2Partitions)]
pub(crate) struct Partitions {
    #[serde(default, deserialize_with = "objects")]
    pub(super) partitions: Vec<TopicPartition>,
}

/// The partitions the instance owns now.
#[utoipa::path(get, path = "/consumers/{group}/instances/{instance}/assignments", tag = "rest-proxy-v2",
    params(InstancePath),
    responses(
        (status = 200, description = "Assigned partitions", body = Partitions),
        InstanceNotFound,
    ))]
pub(crate) async fn assignments(at: InstanceAt) -> ProxyResult<Response> {
    let mut inst = at.lock().await?;
    let state = &at.state;
    if !inst.assignment.is_empty() {
        let partitions = inst
            .assignment
            .partitions()
            .map(|(topic, partition)| TopicPartition {
                topic: topic.clone(),
                partition: *partition,
            })
            .collect();
        return Ok(v2_json(&Partitions { partitions }));
    }
    // A join with the member's own id is a heartbeat that reports the current assignment.
    join_subscribed(state, &mut inst).await?;
    let partitions = inst
        .member
        .iter()
        .flat_map(|m| &m.assignment)
        .flat_map(|(topic, owned)| {
            owned.iter().map(|&p| TopicPartition {
                topic: topic.clone(),
                partition: p,
            })
        })
        .collect();
    Ok(v2_json(&Partitions { partitions }))
}

/// Assigns partitions to the instance by hand (replacing its assignment; an empty
/// list drops it). It then reads them from positions of its own, starting at the
/// group's committed offsets.
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/assignments", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Partitions),
    responses(
        V2BadBody,
        (status = 204, description = "Assigned"),
        (status = 404, description = "error_code 40403 (instance), 40401 (topic) or 40402 (partition)", body = ErrorBody),
        (status = 409, description = "error_code 40901: the instance is subscribed to topics", body = ErrorBody),
    ))]
pub(crate) async fn assign(at: InstanceAt, ProxyBody(body): ProxyBody) -> ProxyResult<StatusCode> {
    let req: Partitions = parse_body(&body)?;
    let mut inst = at.lock().await?;
    let state = &at.state;
    if !inst.subscription.is_empty() {
        return Err(ProxyError::subscribed_or_assigned());
    }
    let mut partitions = Vec::with_capacity(req.partitions.len());
    for tp in req.partitions {
        let topic = match state.kafko.topic(&tp.topic) {
            Err(
                kafko_core::AdminError::TopicNotFound { .. }
                | kafko_core::AdminError::InvalidName { .. },
            ) => {
                return Err(ProxyError::topic_not_found(&tp.topic));
            }
            other => other?,
        };
        topic.partition(tp.partition)?;
        partitions.push((tp.topic, tp.partition));
    }
    inst.auto_commit_assigned(&state.kafko, at.timeout()).await;
    inst.assignment.replace(partitions);
    Ok(StatusCode::NO_CONTENT)
}
