//! Positions (`…/positions[/beginning|/end]`): seeks of owned partitions to an offset,
//! a timestamp, the first offset or the high watermark.

use axum::http::StatusCode;
use kafko_core::{KafkoError, SeekTo};
use serde::Deserialize;

use super::InstanceAt;
use super::assignments::Partitions;
use super::subscription::join_subscribed;
use crate::rest_proxy::api_doc::{InstanceNotFound, InstancePath, NotOwned, V2BadBody, V2NotJson};
use crate::rest_proxy::error::{ErrorBody, ProxyError, ProxyResult};
use crate::rest_proxy::{ProxyBody, objects, parse_body, partition_id};

/// A seek to an offset or a timestamp.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV2SeekOffset)]
pub(crate) struct SeekOffset {
    topic: String,
    #[serde(deserialize_with = "partition_id")]
    partition: u32,
    offset: u64,
    /// Accepted for compatibility; kafko keeps no commit or seek metadata.
    #[serde(default)]
    #[allow(dead_code)]
    metadata: Option<String>,
}

/// A seek to the first offset at or after a time.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV2SeekTimestamp)]
pub(crate) struct SeekTimestamp {
    topic: String,
    #[serde(deserialize_with = "partition_id")]
    partition: u32,
    /// ISO-8601, e.g. `2024-05-01T12:00:00Z`.
    timestamp: String,
    /// Accepted for compatibility; kafko keeps no commit or seek metadata.
    #[serde(default)]
    #[allow(dead_code)]
    metadata: Option<String>,
}

/// Seeks.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[schema(as = ProxyV2SeekRequest)]
pub(crate) struct SeekRequest {
    #[serde(default, deserialize_with = "objects")]
    offsets: Vec<SeekOffset>,
    #[serde(default, deserialize_with = "objects")]
    timestamps: Vec<SeekTimestamp>,
}

/// Moves each target partition: in the manual assignment, or through the group member
/// that owns it (40903 for a partition the instance does not own).
async fn seek_each(
    at: &InstanceAt,
    targets: Vec<(String, u32, SeekTo)>,
) -> ProxyResult<StatusCode> {
    let mut inst = at.lock().await?;
    let state = &at.state;
    if !inst.assignment.is_empty() {
        for (topic, partition, to) in targets {
            inst.assignment
                .seek(&state.kafko, &(topic, partition), to)?;
        }
        return Ok(StatusCode::NO_CONTENT);
    }
    let timeout = at.timeout();
    join_subscribed(state, &mut inst).await?;
    for (topic, partition, to) in targets {
        let Some(mut member) = inst.member.take() else {
            return Err(ProxyError::not_assigned(&topic, partition));
        };
        if !member.assignment.iter().any(|(t, _)| *t == topic) {
            inst.member = Some(member);
            return Err(ProxyError::not_assigned(&topic, partition));
        }
        let done = inst
            .groups(&state.kafko, timeout)
            .seek(&mut member, &inst.subscription, (&topic, partition), to)
            .await;
        inst.member = Some(member);
        match done {
            Err(KafkoError::NotAssigned { .. }) => {
                return Err(ProxyError::not_assigned(&topic, partition));
            }
            other => {
                other?;
            }
        }
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Moves owned partitions to offsets or timestamps (kafko commits the new positions).
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/positions", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = SeekRequest),
    responses(
        V2NotJson,
        (status = 204, description = "Moved"),
        InstanceNotFound,
        (status = 409, description = "error_code 40903: a partition the instance does not own, or an offset outside the log", body = ErrorBody),
        (status = 422, description = "Invalid body or timestamp", body = ErrorBody),
    ))]
pub(crate) async fn seek(at: InstanceAt, ProxyBody(body): ProxyBody) -> ProxyResult<StatusCode> {
    let req: SeekRequest = parse_body(&body)?;
    let mut targets = Vec::new();
    for o in req.offsets {
        targets.push((o.topic, o.partition, SeekTo::Offset(o.offset)));
    }
    for t in req.timestamps {
        let ms = crate::rest_proxy::timestamp::parse_ms(&t.timestamp).ok_or_else(|| {
            ProxyError::plain(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("'{}' is not an ISO-8601 timestamp", t.timestamp),
            )
        })?;
        targets.push((t.topic, t.partition, SeekTo::Timestamp(ms)));
    }
    seek_each(&at, targets).await
}

/// Moves the partitions a body names to `to`.
async fn seek_to(at: InstanceAt, body: &[u8], to: SeekTo) -> ProxyResult<StatusCode> {
    let req: Partitions = parse_body(body)?;
    let targets = req
        .partitions
        .into_iter()
        .map(|tp| (tp.topic, tp.partition, to))
        .collect();
    seek_each(&at, targets).await
}

/// Moves owned partitions to their first offset.
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/positions/beginning", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Partitions),
    responses(
        V2BadBody,
        (status = 204, description = "Moved"),
        InstanceNotFound,
        NotOwned,
    ))]
pub(crate) async fn seek_to_beginning(
    at: InstanceAt,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<StatusCode> {
    seek_to(at, &body, SeekTo::Earliest).await
}

/// Moves owned partitions to their high watermark.
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/positions/end", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Partitions),
    responses(
        V2BadBody,
        (status = 204, description = "Moved"),
        InstanceNotFound,
        NotOwned,
    ))]
pub(crate) async fn seek_to_end(
    at: InstanceAt,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<StatusCode> {
    seek_to(at, &body, SeekTo::Latest).await
}
