//! Offsets (`…/offsets`): committing what the instance consumed, and reading the
//! group's committed offsets.

use axum::http::StatusCode;
use axum::response::Response;
use kafko_core::PartitionOffset;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::InstanceAt;
use super::assignments::Partitions;
use crate::rest_proxy::api_doc::{InstanceNotFound, InstancePath, NotOwned, V2BadBody};
use crate::rest_proxy::error::{ErrorBody, PARTITION_NOT_FOUND, ProxyError, ProxyResult};
use crate::rest_proxy::v2::assignment::by_topic;
use crate::rest_proxy::v2::instances::Instance;
use crate::rest_proxy::v2::v2_json;
use crate::rest_proxy::{ProxyBody, objects, parse_optional_body, partition_id};

/// Offsets to commit, by topic.
type ByTopic = Vec<(String, Vec<PartitionOffset>)>;

/// One offset to commit.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV2CommitOffset)]
pub(crate) struct CommitOffset {
    topic: String,
    #[serde(deserialize_with = "partition_id")]
    partition: u32,
    /// The last consumed offset (the group resumes after it).
    offset: u64,
    /// Accepted for compatibility; kafko keeps no commit or seek metadata.
    #[serde(default)]
    #[allow(dead_code)]
    metadata: Option<String>,
}

/// Offsets to commit; absent or empty commits everything consumed.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[schema(as = ProxyV2CommitRequest)]
pub(crate) struct CommitRequest {
    #[serde(default, deserialize_with = "objects")]
    offsets: Vec<CommitOffset>,
}

/// Commits offsets.
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/offsets", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Option<CommitRequest>,
        description = "Last consumed offsets (the group resumes at offset + 1); an empty body commits everything consumed"),
    responses(
        V2BadBody,
        (status = 200, description = "Committed", body = Vec<Object>),
        InstanceNotFound,
        NotOwned,
    ))]
pub(crate) async fn commit(at: InstanceAt, ProxyBody(body): ProxyBody) -> ProxyResult<Response> {
    let req: CommitRequest = parse_optional_body(&body)?.unwrap_or_default();
    let mut inst = at.lock().await?;
    let asked = by_topic(req.offsets.iter().map(|o| {
        let next = PartitionOffset {
            partition: o.partition,
            offset: o.offset.saturating_add(1),
        };
        (o.topic.clone(), next)
    }));
    if inst.assignment.is_empty() {
        commit_members(&at, &mut inst, asked).await?;
    } else {
        commit_assigned(&at, &mut inst, asked).await?;
    }
    Ok(v2_json(&Vec::<Value>::new()))
}

/// Commits an assigned instance's offsets: those asked for, all of them in its
/// assignment (40903 otherwise), or, if none are, what it consumed.
async fn commit_assigned(at: &InstanceAt, inst: &mut Instance, asked: ByTopic) -> ProxyResult<()> {
    for (topic, list) in &asked {
        if let Some(o) = list
            .iter()
            .find(|o| !inst.assignment.contains(&(topic.clone(), o.partition)))
        {
            return Err(ProxyError::not_assigned(topic, o.partition));
        }
    }
    let (assignment, source) = inst.assigned(&at.state.kafko, at.timeout());
    let offsets = if asked.is_empty() {
        assignment.consumed()
    } else {
        asked
    };
    assignment.commit(&source.groups, offsets).await?;
    Ok(())
}

/// Commits through a subscribed instance's group members: the offsets asked for (40903
/// for a topic it is not a member on), or, if none are, what each member consumed.
async fn commit_members(at: &InstanceAt, inst: &mut Instance, asked: ByTopic) -> ProxyResult<()> {
    let joined = inst.joined_topics();
    let by_topic = if asked.is_empty() {
        joined.iter().map(|t| (t.clone(), Vec::new())).collect()
    } else {
        asked
    };
    for (topic, offsets) in by_topic {
        let member = inst.member.take().filter(|_| joined.contains(&topic));
        let Some(mut member) = member else {
            let p = offsets.first().map_or(0, |o| o.partition);
            return Err(ProxyError::not_assigned(&topic, p));
        };
        let offsets = (!offsets.is_empty()).then_some(offsets);
        let done = inst
            .groups(&at.state.kafko, at.timeout())
            .commit(&mut member, &inst.subscription, &topic, offsets.as_deref())
            .await;
        inst.member = Some(member);
        done?;
    }
    Ok(())
}

/// A committed offset.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2CommittedOffset)]
pub(crate) struct CommittedOffset {
    topic: String,
    partition: u32,
    /// The next offset the group reads.
    offset: u64,
    metadata: String,
}

/// Committed offsets of the whole response.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2CommittedOffsets)]
pub(crate) struct CommittedOffsets {
    offsets: Vec<CommittedOffset>,
}

/// The group's committed offsets of the partitions named in the body (a GET with a
/// body, as on the proxy).
#[utoipa::path(get, path = "/consumers/{group}/instances/{instance}/offsets", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Partitions),
    responses(
        V2BadBody,
        (status = 200, description = "Committed offsets of those partitions that have one", body = CommittedOffsets),
        (status = 404, description = "error_code 40403 (instance), 40402 (no body)", body = ErrorBody),
    ))]
pub(crate) async fn committed(at: InstanceAt, ProxyBody(body): ProxyBody) -> ProxyResult<Response> {
    let req: Option<Partitions> = parse_optional_body(&body)?;
    let inst = at.lock().await?;
    let Some(req) = req else {
        return Err(ProxyError::new(
            StatusCode::NOT_FOUND,
            PARTITION_NOT_FOUND,
            "Partition not found: name the partitions in the body",
        ));
    };
    let groups = inst.groups(&at.state.kafko, at.timeout());
    let mut offsets = Vec::new();
    for tp in req.partitions {
        if let Some(&offset) = groups.committed(&tp.topic)?.get(&tp.partition) {
            offsets.push(CommittedOffset {
                topic: tp.topic,
                partition: tp.partition,
                offset,
                metadata: String::new(),
            });
        }
    }
    Ok(v2_json(&CommittedOffsets { offsets }))
}
