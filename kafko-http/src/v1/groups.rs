//! Consumer groups: server-kept cursors per group and topic (independent groups = fan-out),
//! and one membership per group over the topics its members join.
//!
//! - `POST …/poll` reads the next records after the group's position. Delivery is
//!   at-least-once: a record counts as consumed only once committed, and with
//!   `auto_commit` (the default) a poll first commits what the caller showed it
//!   received: a joined member's previous answers, or the answers up to the `cursor`
//!   the poll carries. An answer cut off (connection dropped, server killed) commits
//!   nothing: its records come again. Without
//!   `member_id`/`generation` the caller is the group's implicit single member (owns
//!   every partition; refused with 409 `group_has_members` while members have joined).
//! - `PUT …/offsets` commits, `POST …/seek` moves (and commits) the group.
//! - `POST …/members` joins (range assignment, a new generation per change), `DELETE
//!   …/members/{member_id}` leaves (committing what the member was delivered).
//! - `GET /v1/groups`, `GET|PUT|DELETE /v1/groups/{group}`: list, describe (offsets,
//!   positions, lag, members), configure (`offset_reset`), delete. Only a join, poll,
//!   commit, seek or configure creates a group; the others answer 404 `group_not_found`.
//!
//! The long-poll waits here, not in the core: each attempt is a zero-wait core poll, and
//! between attempts the handler sleeps on the topic's activity notifier, so shutdown can
//! end the wait between attempts.

use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use kafko_core::{ActivityWatch, Delivery, GroupPollOptions, MemberRef, PartitionOffset, SeekTo};
use tokio::time::Instant;

use crate::dto::{
    CommitRequest, CommitResponse, FormatQuery, GroupConfig, GroupDescription, GroupList,
    GroupPollQuery, GroupPollResponse, JoinRequest, Membership, PartitionOffsetDto, Problem,
    SeekRequest, SeekTarget,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Json, OptionalJson, Path, Query, check_group, check_member, check_topic};
use crate::state::AppState;
use crate::v1::records::fetch::{answers_full, read_limits, reserve_answer};
use crate::v1::records::{payload_bytes, to_out};
use kafko_service::answer_budget::Reservation;
use kafko_service::metrics::FrontEnd;
use kafko_service::wait::Waiter;

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

/// Polls the group's next records (at-least-once; see the module doc for the rule).
#[utoipa::path(post, path = "/v1/groups/{group}/topics/{topic}/poll", operation_id = "poll_group", tag = "groups",
    description = "Reads the group's next records. Delivery is at-least-once: a record counts as consumed only once committed. With auto_commit (the default) a poll first commits, durably, what the caller's earlier answers returned once it showed it received them, then reads on: a joined member shows it by polling again (Kafka's auto-commit rule), anyone by passing the last answer's `cursor`. The implicit member (no member_id) is anonymous: a poll without a cursor commits nothing, and an acknowledged answer is committed only up to the first answer nobody acknowledged. An answer not sent in full (connection dropped, server killed) comes again on the group's next poll; one sent but never read comes again on the next poll carrying the cursor that poll carried, and otherwise stays uncommitted (it comes again after a restart). With auto_commit=false only PUT …/offsets commits. A poll whose commit cannot be written fails (507 storage_full) and leaves the group where it was.",
    params(("group" = String, Path, description = "Group name: [a-zA-Z0-9._-]{1,249}, not . or .."),
        ("topic" = String, Path, description = "Topic name"), GroupPollQuery, FormatQuery),
    responses(
        (status = 200, description = "Records (possibly none), the caller's positions, and what this poll committed", body = GroupPollResponse),
        (status = 400, description = "codes invalid_group_name, invalid_topic_name, invalid_member_id, invalid_query, invalid_request", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found, topic_deleted", body = Problem, content_type = "application/problem+json"),
        (status = 406, description = "code not_representable: bytes do not fit the format; the group stays before these records (poll with format=base64)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "codes unknown_member, stale_generation (rejoin), group_has_members (implicit poll while members are joined), limit_reached (the call would create a group past --max-groups)", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "code no_valid_offset (offset_reset=error and no valid offset)", body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "code storage_full: the commit could not be written; the group did not move", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn poll(
    State(state): State<AppState>,
    Path((group, topic)): Path<(String, String)>,
    Query(q): Query<GroupPollQuery>,
    Query(formats): Query<FormatQuery>,
) -> ApiResult<Response> {
    check_names(&group, &topic)?;
    let member = member_ref(q.member_id, q.generation)?;
    let cfg = &state.config;
    let g = state.kafko.group(&group)?;
    let t = state.kafko.topic(&topic)?;
    let (max_records, max_bytes) = read_limits(cfg, q.max_records, q.max_bytes);
    let acknowledged = q.cursor.as_deref().map(parse_cursor).transpose()?;
    let options = GroupPollOptions {
        max_records,
        max_bytes,
        wait: Duration::ZERO,
        auto_commit: q.auto_commit.unwrap_or(true),
        acknowledged,
    };
    let deadline = Instant::now() + Duration::from_millis(q.wait_ms.unwrap_or(0)).min(cfg.max_wait);
    // Taken before the poll looks, so a produce in between still ends the wait.
    let mut watch = ActivityWatch::new([t.activity()]);
    let mut waiter = Waiter::new(&state, FrontEnd::V1, deadline);
    let mut committed = Vec::new();
    let (got, room) = loop {
        // Room for the records and their JSON before they are read (none held while
        // the poll waits).
        let room = reserve_answer(&state, max_records, max_bytes).await?;
        let got = g.poll(&t, member.as_ref(), &options).await?;
        committed.extend_from_slice(got.committed());
        if !got.records().is_empty() || waiter.over() {
            break (got, room);
        }
        drop(room);
        waiter.wait(&mut watch).await;
    };
    let (value_fmt, key_fmt) = formats.resolve();
    let cursor = got.cursor().or(acknowledged).map(|c| c.to_string());
    // Unrepresentable records: `got` is dropped undelivered, so the group stays before them.
    let records = got
        .records()
        .iter()
        .map(|r| to_out(r, value_fmt, key_fmt))
        .collect::<ApiResult<Vec<_>>>()
        .map_err(|e| {
            let mut e = e;
            e.detail
                .push_str("; the group stays before these records: poll with format=base64");
            e
        })?;
    let bytes = got.records().iter().map(payload_bytes).sum();
    state.metrics.consumed(&topic, records.len(), bytes);
    committed.sort_by_key(|p| p.partition);
    let body = GroupPollResponse {
        records,
        generation: got.generation(),
        positions: to_dto(got.positions().to_vec()),
        committed: to_dto(committed),
        cursor,
    };
    let (_, delivery) = got.into_parts();
    let estimate = crate::json::records_estimate(body.records.len(), bytes);
    delivered_on_send(&state, &body, estimate, delivery, room).await
}

/// A poll's `cursor` parameter: a cursor an earlier answer carried.
fn parse_cursor(cursor: &str) -> ApiResult<u64> {
    cursor.parse().map_err(|_| {
        ApiError::bad_request(
            "invalid_query",
            "cursor must be the `cursor` of an earlier poll answer",
        )
    })
}

/// A JSON response whose `delivery` counts as sent once the whole body was handed to
/// the connection (which does not show the client read it: see `Delivery::sent`); a
/// response dropped before that (the client went away, the server stopped) returns the
/// records to the group. It holds `room` of the answer budget (fitted to its size) until
/// then.
async fn delivered_on_send(
    state: &AppState,
    body: &GroupPollResponse,
    estimate: usize,
    delivery: Delivery,
    mut room: Reservation,
) -> ApiResult<Response> {
    let json =
        crate::json::to_bytes(body, estimate).map_err(|e| crate::json::serialize_failed(&e))?;
    if !room.fit(&state.answers, json.len()).await {
        // Unconfirmed: the records go back to the group.
        return Err(answers_full());
    }
    let sent = move || {
        delivery.sent();
        drop(room);
    };
    Ok((
        [(header::CONTENT_TYPE, "application/json")],
        crate::on_sent::body(json, sent),
    )
        .into_response())
}

/// Commits offsets; an absent or empty list commits the caller's current positions.
#[utoipa::path(put, path = "/v1/groups/{group}/topics/{topic}/offsets", operation_id = "commit_group_offsets", tag = "groups",
    params(("group" = String, Path, description = "Group name"), ("topic" = String, Path, description = "Topic name")),
    request_body(content = Option<CommitRequest>, content_type = "application/json",
        description = "Offsets (next offset to read) and, for a joined member, member_id and generation; an empty body commits the current positions"),
    responses(
        (status = 200, description = "What was committed", body = CommitResponse),
        (status = 400, description = "Invalid name or body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "codes topic_not_found, partition_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "codes unknown_member, stale_generation, not_assigned, group_has_members, limit_reached (the call would create a group past --max-groups)", body = Problem, content_type = "application/problem+json"),
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
    let t = state.kafko.topic(&topic)?;
    let committed = state
        .kafko
        .group(&group)?
        .commit(&t, member.as_ref(), offsets.as_deref())
        .await?;
    Ok(axum::Json(CommitResponse {
        offsets: to_dto(committed),
    }))
}

/// Moves the group (one partition, or all the caller owns) and commits the new offsets.
#[utoipa::path(post, path = "/v1/groups/{group}/topics/{topic}/seek", operation_id = "seek_group", tag = "groups",
    params(("group" = String, Path, description = "Group name"), ("topic" = String, Path, description = "Topic name")),
    request_body(content = SeekRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The committed offsets after the seek", body = CommitResponse),
        (status = 400, description = "Invalid name or body", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "codes topic_not_found, partition_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "codes unknown_member, stale_generation, not_assigned, group_has_members, limit_reached (the call would create a group past --max-groups)", body = Problem, content_type = "application/problem+json"),
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
    let t = state.kafko.topic(&topic)?;
    let offsets = state
        .kafko
        .group(&group)?
        .seek(&t, member.as_ref(), body.partition, to)
        .await?;
    Ok(axum::Json(CommitResponse {
        offsets: to_dto(offsets),
    }))
}

/// Joins the group on a topic; a new member starts a new generation (rebalance).
#[utoipa::path(post, path = "/v1/groups/{group}/topics/{topic}/members", operation_id = "join_group", tag = "groups",
    params(("group" = String, Path, description = "Group name"), ("topic" = String, Path, description = "Topic name")),
    request_body(content = Option<JoinRequest>, content_type = "application/json", description = "Optional member id and session timeout"),
    responses(
        (status = 201, description = "Joined (or, with a live member's id, heartbeat): id, generation and assigned partitions", body = Membership),
        (status = 400, description = "codes invalid_group_name, invalid_topic_name, invalid_member_id, invalid_request (session timeout)", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "code limit_reached (joining would create a group past --max-groups)", body = Problem, content_type = "application/problem+json"),
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
    let t = state.kafko.topic(&topic)?;
    let membership = state
        .kafko
        .group(&group)?
        .join(&t, body.member_id.as_deref(), timeout)?;
    Ok((StatusCode::CREATED, axum::Json(membership.into())))
}

/// Leaves the group, committing what the member was delivered; its partitions move to
/// the others (a new generation).
#[utoipa::path(delete, path = "/v1/groups/{group}/topics/{topic}/members/{member_id}", operation_id = "leave_group", tag = "groups",
    params(("group" = String, Path, description = "Group name"), ("topic" = String, Path, description = "Topic name"),
        ("member_id" = String, Path, description = "Member id")),
    responses(
        (status = 204, description = "Left"),
        (status = 400, description = "Invalid name or id", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "codes topic_not_found, group_not_found (nothing is created)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "code unknown_member (not a member, or its session expired)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn leave(
    State(state): State<AppState>,
    Path((group, topic, member_id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    check_names(&group, &topic)?;
    check_member(&member_id)?;
    let t = state.kafko.topic(&topic)?;
    state
        .kafko
        .group(&group)?
        .leave_topic(&t, &member_id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Lists groups with their topics and live member counts.
#[utoipa::path(get, path = "/v1/groups", operation_id = "list_groups", tag = "groups",
    responses((status = 200, description = "Groups, by name", body = GroupList)))]
pub(crate) async fn list(State(state): State<AppState>) -> axum::Json<GroupList> {
    axum::Json(state.kafko.list_groups().into())
}

/// Per topic: committed offsets, positions, high watermarks, lag, members and assignment.
#[utoipa::path(get, path = "/v1/groups/{group}", operation_id = "describe_group", tag = "groups",
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
    Ok(axum::Json(state.kafko.group(&group)?.describe()?.into()))
}

/// Sets a group's options (creating the group): `offset_reset` = earliest, latest or error.
#[utoipa::path(put, path = "/v1/groups/{group}", operation_id = "configure_group", tag = "groups",
    params(("group" = String, Path, description = "Group name")),
    request_body(content = GroupConfig, content_type = "application/json"),
    responses(
        (status = 200, description = "The group", body = GroupDescription),
        (status = 400, description = "code invalid_group_name, or an invalid body", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "code limit_reached (configuring would create a group past --max-groups)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn configure(
    State(state): State<AppState>,
    Path(group): Path<String>,
    Json(config): Json<GroupConfig>,
) -> ApiResult<axum::Json<GroupDescription>> {
    check_group(&group)?;
    let g = state.kafko.group(&group)?;
    g.configure(config.into()).await?;
    Ok(axum::Json(g.describe()?.into()))
}

/// Deletes a group and its committed offsets; refused while members are joined.
#[utoipa::path(delete, path = "/v1/groups/{group}", operation_id = "delete_group", tag = "groups",
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
    state.kafko.group(&group)?.delete().await?;
    Ok(StatusCode::NO_CONTENT)
}
