//! Consumer groups: server-kept cursors per group and topic (independent groups = fan-out).
//!
//! - `POST …/poll` reads the next records after the group's position; it commits them
//!   unless `auto_commit=false`. Without `member_id`/`generation` the caller is the
//!   group's implicit single member (owns every partition; refused with 409
//!   `group_has_members` while members have joined).
//! - `PUT …/offsets` commits, `POST …/seek` moves (and commits) the group.
//! - `POST …/members` joins (range assignment, a new generation per change), `DELETE
//!   …/members/{member_id}` leaves.
//! - `GET /v1/groups`, `GET|PUT|DELETE /v1/groups/{group}`: list, describe (offsets,
//!   positions, lag, members), configure (`offset_reset`), delete.
//!
//! The long-poll waits here, not in the core: each attempt is a zero-wait core poll, and
//! between attempts the handler sleeps on the topic's activity notifier. A poll is thus
//! never dropped half-way (say between applying its positions and answering) when
//! shutdown ends the wait.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use kafko_core::{GroupPollOptions, GroupRecords, Kafko, MemberRef, PartitionOffset, SeekTo};
use serde_json::json;
use tokio::time::Instant;

use crate::dto::{
    CommitRequest, CommitResponse, FormatQuery, GroupConfig, GroupDescription, GroupList,
    GroupPollQuery, GroupPollResponse, JoinRequest, Membership, PartitionOffsetDto, Problem,
    SeekRequest, SeekTarget,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Json, OptionalJson, Path, Query, check_group, check_member, check_topic};
use crate::routes::records::fetch::read_limits;
use crate::routes::records::{payload_bytes, to_out};
use crate::state::AppState;

/// Session timeout of a member that does not choose one.
const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(30);

/// Validates the group and topic names of a `/v1/groups/{group}/topics/{topic}/…` path.
fn check_names(group: &str, topic: &str) -> ApiResult<()> {
    check_group(group)?;
    check_topic(topic)
}

/// The caller: a joined member (`member_id` with `generation`) or the implicit member.
fn member_ref(member_id: Option<String>, generation: Option<u64>) -> ApiResult<Option<MemberRef>> {
    match (member_id, generation) {
        (None, None) => Ok(None),
        (Some(member_id), Some(generation)) => {
            check_member(&member_id)?;
            Ok(Some(MemberRef {
                member_id,
                generation,
            }))
        }
        _ => Err(ApiError::bad_request(
            "invalid_request",
            "member_id and generation go together: send both (a joined member) or neither (the implicit member)",
        )),
    }
}

fn to_dto(offsets: Vec<PartitionOffset>) -> Vec<PartitionOffsetDto> {
    offsets
        .into_iter()
        .map(|p| PartitionOffsetDto {
            partition: p.partition,
            offset: p.offset,
        })
        .collect()
}

fn from_dto(offsets: &[PartitionOffsetDto]) -> Vec<PartitionOffset> {
    offsets
        .iter()
        .map(|p| PartitionOffset {
            partition: p.partition,
            offset: p.offset,
        })
        .collect()
}

async fn poll_once(
    k: &Kafko,
    group: &str,
    topic: &str,
    member: Option<&MemberRef>,
    options: &GroupPollOptions,
) -> kafko_core::Result<GroupRecords> {
    match member {
        Some(m) => k.poll_group_member(group, topic, m, options).await,
        None => k.group_poll(group, topic, options).await,
    }
}

/// Polls the group's next records (and commits them unless `auto_commit=false`).
#[utoipa::path(post, path = "/v1/groups/{group}/topics/{topic}/poll", tag = "groups",
    params(("group" = String, Path, description = "Group name: [a-zA-Z0-9._-]{1,249}, not . or .."),
        ("topic" = String, Path, description = "Topic name"), GroupPollQuery, FormatQuery),
    responses(
        (status = 200, description = "Records (possibly none) and the caller's positions", body = GroupPollResponse),
        (status = 400, description = "codes invalid_group_name, invalid_topic_name, invalid_member_id, invalid_query, invalid_request", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 406, description = "code not_representable: bytes do not fit the format; the body's `rewind` lists where this poll started per partition (with auto_commit the group is already rewound there, `rewound: true`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "codes unknown_member, stale_generation (rejoin), group_has_members (implicit poll while members are joined)", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "code no_valid_offset (offset_reset=error and no valid offset)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn poll(
    State(state): State<AppState>,
    Path((group, topic)): Path<(String, String)>,
    Query(q): Query<GroupPollQuery>,
    Query(formats): Query<FormatQuery>,
) -> ApiResult<axum::Json<GroupPollResponse>> {
    check_names(&group, &topic)?;
    let member = member_ref(q.member_id, q.generation)?;
    let cfg = &state.config;
    let k = &state.kafko;
    let auto_commit = q.auto_commit.unwrap_or(true);
    let (max_records, max_bytes) = read_limits(cfg, q.max_records, q.max_bytes);
    let options = GroupPollOptions {
        max_records,
        max_bytes,
        wait: Duration::ZERO,
        auto_commit,
    };
    let deadline = Instant::now() + Duration::from_millis(q.wait_ms.unwrap_or(0)).min(cfg.max_wait);
    let activity = k.topic_activity(&topic)?;
    let got = loop {
        let notified = activity.notified();
        tokio::pin!(notified);
        // Registered before the poll looks, so a produce in between still wakes us.
        notified.as_mut().enable();
        let got = poll_once(k, &group, &topic, member.as_ref(), &options).await?;
        if !got.records.is_empty() || Instant::now() >= deadline || state.is_shutting_down() {
            break got;
        }
        tokio::select! {
            () = &mut notified => {}
            () = tokio::time::sleep_until(deadline) => {}
            () = state.shutdown_requested() => {}
        }
    };
    let (value_fmt, key_fmt) = formats.resolve();
    let records = match got
        .records
        .iter()
        .map(|r| to_out(r, value_fmt, key_fmt))
        .collect::<ApiResult<Vec<_>>>()
    {
        Ok(records) => records,
        Err(e) => return Err(rewind(k, &group, &topic, member.as_ref(), &got, e).await),
    };
    let bytes = got.records.iter().map(payload_bytes).sum();
    state.metrics.consumed(&topic, records.len(), bytes);
    Ok(axum::Json(GroupPollResponse {
        records,
        generation: got.generation,
        positions: to_dto(got.positions),
        committed: got.committed,
    }))
}

/// A poll whose records cannot be rendered (406) has already moved the group past them.
/// Names where each partition started; with auto-commit, also moves the group back there
/// (restoring the committed offsets the poll replaced), so nothing is skipped.
async fn rewind(
    k: &Kafko,
    group: &str,
    topic: &str,
    member: Option<&MemberRef>,
    got: &GroupRecords,
    err: ApiError,
) -> ApiError {
    let mut starts: Vec<PartitionOffset> = Vec::new();
    for r in &got.records {
        match starts.iter_mut().find(|s| s.partition == r.partition) {
            Some(s) => s.offset = s.offset.min(r.offset),
            None => starts.push(PartitionOffset {
                partition: r.partition,
                offset: r.offset,
            }),
        }
    }
    starts.sort_by_key(|s| s.partition);
    let rewound = got.committed
        && match k
            .commit_group_offsets(group, topic, member, Some(&starts))
            .await
        {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(group, topic, error = %e, "could not rewind after an unrepresentable poll");
                false
            }
        };
    let mut err = err
        .with("rewind", json!(to_dto(starts)))
        .with("rewound", json!(rewound));
    err.detail.push_str(if rewound {
        "; the group was moved back to where this poll started"
    } else {
        "; the group's position is past these records: seek to `rewind` to read them again"
    });
    err
}

/// Commits offsets; an absent or empty list commits the caller's current positions.
#[utoipa::path(put, path = "/v1/groups/{group}/topics/{topic}/offsets", tag = "groups",
    params(("group" = String, Path, description = "Group name"), ("topic" = String, Path, description = "Topic name")),
    request_body(content = Option<CommitRequest>, content_type = "application/json",
        description = "Offsets (next offset to read) and, for a joined member, member_id and generation; an empty body commits the current positions"),
    responses(
        (status = 200, description = "What was committed", body = CommitResponse),
        (status = 400, description = "Invalid name or body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "codes topic_not_found, partition_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "codes unknown_member, stale_generation, not_assigned, group_has_members", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "code offset_out_of_range (beyond the high watermark)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn commit(
    State(state): State<AppState>,
    Path((group, topic)): Path<(String, String)>,
    OptionalJson(body): OptionalJson<CommitRequest>,
) -> ApiResult<axum::Json<CommitResponse>> {
    check_names(&group, &topic)?;
    let body = body.unwrap_or_default();
    let member = member_ref(body.member_id, body.generation)?;
    let offsets = (!body.offsets.is_empty()).then(|| from_dto(&body.offsets));
    let committed = state
        .kafko
        .commit_group_offsets(&group, &topic, member.as_ref(), offsets.as_deref())
        .await?;
    Ok(axum::Json(CommitResponse {
        offsets: to_dto(committed),
    }))
}

/// Moves the group (one partition, or all the caller owns) and commits the new offsets.
#[utoipa::path(post, path = "/v1/groups/{group}/topics/{topic}/seek", tag = "groups",
    params(("group" = String, Path, description = "Group name"), ("topic" = String, Path, description = "Topic name")),
    request_body(content = SeekRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The committed offsets after the seek", body = CommitResponse),
        (status = 400, description = "Invalid name or body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "codes topic_not_found, partition_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "codes unknown_member, stale_generation, not_assigned, group_has_members", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "code offset_out_of_range", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn seek(
    State(state): State<AppState>,
    Path((group, topic)): Path<(String, String)>,
    Json(body): Json<SeekRequest>,
) -> ApiResult<axum::Json<CommitResponse>> {
    check_names(&group, &topic)?;
    let member = member_ref(body.member_id, body.generation)?;
    let to = match body.to {
        SeekTarget::Earliest => SeekTo::Earliest,
        SeekTarget::Latest => SeekTo::Latest,
        SeekTarget::Offset(o) => SeekTo::Offset(o),
        SeekTarget::Timestamp(t) => SeekTo::Timestamp(t),
    };
    let offsets = state
        .kafko
        .seek_group(&group, &topic, member.as_ref(), body.partition, to)
        .await?;
    Ok(axum::Json(CommitResponse {
        offsets: to_dto(offsets),
    }))
}

/// Joins the group on a topic; a new member starts a new generation (rebalance).
#[utoipa::path(post, path = "/v1/groups/{group}/topics/{topic}/members", tag = "groups",
    params(("group" = String, Path, description = "Group name"), ("topic" = String, Path, description = "Topic name")),
    request_body(content = Option<JoinRequest>, content_type = "application/json", description = "Optional member id and session timeout"),
    responses(
        (status = 201, description = "Joined (or, with a live member's id, heartbeat): id, generation and assigned partitions", body = Membership),
        (status = 400, description = "codes invalid_group_name, invalid_topic_name, invalid_member_id, invalid_request (session timeout)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn join(
    State(state): State<AppState>,
    Path((group, topic)): Path<(String, String)>,
    OptionalJson(body): OptionalJson<JoinRequest>,
) -> ApiResult<(StatusCode, axum::Json<Membership>)> {
    check_names(&group, &topic)?;
    let body = body.unwrap_or_default();
    if let Some(id) = &body.member_id {
        check_member(id)?;
    }
    let timeout = body
        .session_timeout_ms
        .map_or(DEFAULT_SESSION_TIMEOUT, Duration::from_millis);
    let membership = state
        .kafko
        .join_group(&group, &topic, body.member_id.as_deref(), timeout)
        .await?;
    Ok((StatusCode::CREATED, axum::Json(membership.into())))
}

/// Leaves the group; the member's partitions move to the others (a new generation).
#[utoipa::path(delete, path = "/v1/groups/{group}/topics/{topic}/members/{member_id}", tag = "groups",
    params(("group" = String, Path, description = "Group name"), ("topic" = String, Path, description = "Topic name"),
        ("member_id" = String, Path, description = "Member id")),
    responses(
        (status = 204, description = "Left"),
        (status = 400, description = "Invalid name or id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "code unknown_member (not a member, or its session expired)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn leave(
    State(state): State<AppState>,
    Path((group, topic, member_id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    check_names(&group, &topic)?;
    check_member(&member_id)?;
    state.kafko.leave_group(&group, &topic, &member_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Lists groups with their topics and live member counts.
#[utoipa::path(get, path = "/v1/groups", tag = "groups",
    responses((status = 200, description = "Groups, by name", body = GroupList)))]
pub(crate) async fn list(State(state): State<AppState>) -> axum::Json<GroupList> {
    axum::Json(state.kafko.list_groups().into())
}

/// Per topic: committed offsets, positions, high watermarks, lag, members and assignment.
#[utoipa::path(get, path = "/v1/groups/{group}", tag = "groups",
    params(("group" = String, Path, description = "Group name")),
    responses(
        (status = 200, description = "The group", body = GroupDescription),
        (status = 400, description = "code invalid_group_name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code group_not_found", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn describe(
    State(state): State<AppState>,
    Path(group): Path<String>,
) -> ApiResult<axum::Json<GroupDescription>> {
    check_group(&group)?;
    Ok(axum::Json(state.kafko.describe_group(&group)?.into()))
}

/// Sets a group's options (creating the group): `offset_reset` = earliest, latest or error.
#[utoipa::path(put, path = "/v1/groups/{group}", tag = "groups",
    params(("group" = String, Path, description = "Group name")),
    request_body(content = GroupConfig, content_type = "application/json"),
    responses(
        (status = 200, description = "The group", body = GroupDescription),
        (status = 400, description = "code invalid_group_name, or an invalid body", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn configure(
    State(state): State<AppState>,
    Path(group): Path<String>,
    Json(config): Json<GroupConfig>,
) -> ApiResult<axum::Json<GroupDescription>> {
    check_group(&group)?;
    state.kafko.set_group_config(&group, config.into()).await?;
    Ok(axum::Json(state.kafko.describe_group(&group)?.into()))
}

/// Deletes a group and its committed offsets; refused while members are joined.
#[utoipa::path(delete, path = "/v1/groups/{group}", tag = "groups",
    params(("group" = String, Path, description = "Group name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "code invalid_group_name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code group_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "code group_has_members", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path(group): Path<String>,
) -> ApiResult<StatusCode> {
    check_group(&group)?;
    state.kafko.delete_group(&group).await?;
    Ok(StatusCode::NO_CONTENT)
}
