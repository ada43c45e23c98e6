//! `GET /v1/topics/{topic}/records`: a stateless read by offset, `earliest`, `latest` or
//! timestamp, with `wait_ms` long-poll; by `Accept` it becomes an NDJSON or SSE stream.
//! Reads are read committed unless `isolation=read_uncommitted`.

use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};

use kafko_core::{Isolation, KafkoError, PartitionReader, TopicId};

use crate::dto::{FetchQuery, FetchResponse, FormatQuery, IsolationParam, Problem};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Path, Query, check_topic};
use crate::json;
use crate::state::AppState;
use kafko_service::config::ServerConfig;
use kafko_service::metrics::FrontEnd;
use kafko_service::wait::Waiter;

use super::stream;
use super::{payload_bytes, to_out};

/// Records per read when `max_records` is absent.
pub(crate) const DEFAULT_MAX_RECORDS: usize = 500;
/// Bytes per read when `max_bytes` is absent.
pub(crate) const DEFAULT_MAX_BYTES: usize = 1024 * 1024;

/// `(max_records, max_bytes)` for one read: the requested values or the defaults,
/// clamped to at least 1 and at most the server's per-fetch limits.
pub(crate) fn read_limits(
    cfg: &ServerConfig,
    max_records: Option<usize>,
    max_bytes: Option<usize>,
) -> (usize, usize) {
    (
        max_records
            .unwrap_or(DEFAULT_MAX_RECORDS)
            .clamp(1, cfg.max_records_per_fetch),
        max_bytes
            .unwrap_or(DEFAULT_MAX_BYTES)
            .clamp(1, cfg.max_fetch_bytes),
    )
}

/// Reads a partition; streams when `Accept` asks for NDJSON or Server-Sent Events.
#[utoipa::path(get, path = "/v1/topics/{topic}/records", operation_id = "fetch_records", tag = "records",
    params(("topic" = String, Path, description = "Topic name"), FetchQuery, FormatQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "SSE resume point `partition:offset:topic_id` (an event's id); the stream continues after it. An id of an earlier incarnation of the topic (deleted and created again since) is refused with 404 topic_deleted")),
    responses(
        (status = 200, description = "Records: a `FetchResponse` by default (`application/json`). Streams are chosen by the Accept header and are text: `application/x-ndjson`, one `RecordOut` JSON object per line; `text/event-stream`, one event `record` per record (data: a `RecordOut`, id: `partition:offset:topic_id`, resumable with Last-Event-ID; `follow=true` keeps it open). A stream whose topic is deleted ends with a final error line or `error` event (code topic_deleted)",
            content(
                (FetchResponse = "application/json"),
                (String = "application/x-ndjson"),
                (String = "text/event-stream"),
            )),
        (status = 400, description = "Invalid name or parameter", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found / partition_not_found; topic_deleted when the topic was deleted during a long-poll, or `topic_id`/Last-Event-ID names an earlier incarnation", body = Problem, content_type = "application/problem+json"),
        (status = 406, description = "code not_representable: bytes do not fit the format; use format=base64", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "code offset_out_of_range, with log_start_offset and high_watermark", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn fetch(
    State(state): State<AppState>,
    Path(topic): Path<String>,
    Query(q): Query<FetchQuery>,
    Query(formats): Query<FormatQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    check_topic(&topic)?;
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let read = ReadSpec::new(&state, &topic, &q, &headers)?;
    if accept.contains("text/event-stream") {
        return Ok(stream::sse(state, read, formats.resolve()));
    }
    if accept.contains("application/x-ndjson") {
        return Ok(stream::ndjson(state, read, formats.resolve()));
    }
    let (value_fmt, key_fmt) = formats.resolve();
    let reader = &read.reader;
    if !read.wait.is_zero() {
        // A long-poll waits for a record holding no budget; the read itself follows.
        // Counted from before its first look, which does not yield to another task.
        let deadline = tokio::time::Instant::now() + read.wait;
        let mut waiter = Waiter::new(&state, FrontEnd::V1, deadline);
        if let Some(r) = waiter
            .until(reader.read_wait_with(read.start, 1, 1, read.wait, read.isolation))
            .await
        {
            r?;
        }
    }
    // Room for the records and their JSON before they are read.
    let mut room = reserve_answer(&state, read.max_records, read.max_bytes).await?;
    let fetched = reader.read_with(read.start, read.max_records, read.max_bytes, read.isolation)?;
    let records = fetched
        .records
        .iter()
        .map(|r| to_out(r, value_fmt, key_fmt))
        .collect::<ApiResult<Vec<_>>>()?;
    let bytes = fetched.records.iter().map(payload_bytes).sum();
    state.metrics.consumed(&topic, records.len(), bytes);
    let estimate = json::records_estimate(records.len(), bytes);
    let answer = FetchResponse {
        records,
        next_offset: fetched.next_offset,
        high_watermark: fetched.high_watermark,
        last_stable_offset: fetched.last_stable_offset,
        log_start_offset: fetched.log_start_offset,
        topic_id: reader.topic_id().to_string(),
    };
    drop(fetched);
    let json = json::to_bytes(&answer, estimate).map_err(|e| json::serialize_failed(&e))?;
    drop(answer);
    if !room.fit(&state.answers, json.len()).await {
        return Err(answers_full());
    }
    // The room is held until the connection took the whole answer, or dropped it.
    let len = json.len().to_string();
    let body = crate::on_sent::body(json, move || drop(room));
    let head = [
        (header::CONTENT_TYPE, "application/json".to_owned()),
        (header::CONTENT_LENGTH, len),
    ];
    Ok((head, body).into_response())
}

/// Reserves room in the answer budget for a read of at most `max_records` records and
/// `max_bytes` bytes: the records and their JSON.
///
/// # Errors
/// 503 `overloaded` when the budget stays full.
pub(crate) async fn reserve_answer(
    state: &AppState,
    max_records: usize,
    max_bytes: usize,
) -> ApiResult<kafko_service::answer_budget::Reservation> {
    let bytes = max_bytes.saturating_add(json::records_estimate(max_records, max_bytes));
    state.answers.reserve(bytes).await.ok_or_else(answers_full)
}

/// The refusal of a read while unsent answers hold the whole answer budget.
pub(crate) fn answers_full() -> ApiError {
    ApiError::overloaded(
        "answers not yet taken by their clients fill the server's answer budget; retry later",
    )
}

/// A resolved read: the partition (resolved once), where to start and how much to take.
#[derive(Debug, Clone)]
pub(crate) struct ReadSpec {
    pub(crate) reader: PartitionReader,
    pub(crate) start: u64,
    pub(crate) max_records: usize,
    pub(crate) max_bytes: usize,
    pub(crate) wait: Duration,
    pub(crate) follow: bool,
    /// Streams only: stop after this many records (unbounded when absent).
    pub(crate) total: Option<usize>,
    pub(crate) isolation: Isolation,
}

impl ReadSpec {
    fn new(state: &AppState, topic: &str, q: &FetchQuery, headers: &HeaderMap) -> ApiResult<Self> {
        let cfg = &state.config;
        let resume = headers
            .get("last-event-id")
            .map(|v| v.to_str().map_err(|_| bad_event_id("(not visible ASCII)")))
            .transpose()?
            // An empty id is "no id" (the SSE spec resets it so), not an error.
            .filter(|v| !v.trim().is_empty())
            .map(parse_event_id)
            .transpose()?;
        let partition = resume.map_or(q.partition.unwrap_or(0), |r| r.partition);
        let reader = state.kafko.topic(topic)?.partition(partition)?;
        let wanted = q.topic_id.as_deref().map(parse_topic_id).transpose()?;
        // A cursor of an earlier incarnation of this topic (deleted, then created again)
        // would read another log: refuse it.
        for id in [wanted, resume.map(|r| r.topic_id)].into_iter().flatten() {
            if id != reader.topic_id() {
                return Err(KafkoError::TopicDeleted {
                    topic: topic.to_owned(),
                }
                .into());
            }
        }
        let offsets = reader.offsets()?;
        let isolation = IsolationParam::resolve(q.isolation);
        let end = match isolation {
            Isolation::ReadCommitted => offsets.last_stable_offset,
            Isolation::ReadUncommitted => offsets.high_watermark,
        };
        let start = if let Some(EventId { offset: last, .. }) = resume {
            last.saturating_add(1)
        } else if let Some(ts) = q.timestamp {
            reader.offset_for_timestamp(ts)?.unwrap_or(end)
        } else {
            match q.offset.as_deref() {
                None | Some("earliest") => offsets.log_start,
                Some("latest") => end,
                Some(n) => n.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(
                        "invalid_query",
                        format!("offset must be a number, earliest or latest; got '{n}'"),
                    )
                })?,
            }
        };
        if !offsets.contains(start) {
            return Err(offsets.out_of_range(start).into());
        }
        let (max_records, max_bytes) = read_limits(cfg, q.max_records, q.max_bytes);
        Ok(ReadSpec {
            reader,
            total: q.max_records,
            start,
            max_records,
            max_bytes,
            wait: Duration::from_millis(q.wait_ms.unwrap_or(0)).min(cfg.max_wait),
            follow: q.follow.unwrap_or(false),
            isolation,
        })
    }
}

/// An SSE event id: the record's partition and offset, and the topic incarnation it
/// came from.
#[derive(Debug, Clone, Copy)]
struct EventId {
    partition: u32,
    offset: u64,
    topic_id: TopicId,
}

/// Parses an SSE `Last-Event-ID`: `partition:offset:topic_id`.
fn parse_event_id(id: &str) -> ApiResult<EventId> {
    let parts: Vec<&str> = id.trim().split(':').collect();
    let [p, o, t] = parts[..] else {
        return Err(bad_event_id(id));
    };
    Ok(EventId {
        partition: p.parse().map_err(|_| bad_event_id(id))?,
        offset: o.parse().map_err(|_| bad_event_id(id))?,
        topic_id: t.parse().map_err(|_| bad_event_id(id))?,
    })
}

fn bad_event_id(id: &str) -> ApiError {
    ApiError::bad_request(
        "invalid_event_id",
        format!("Last-Event-ID must be 'partition:offset:topic_id', got '{id}'"),
    )
}

fn parse_topic_id(id: &str) -> ApiResult<TopicId> {
    id.parse()
        .map_err(|e: String| ApiError::bad_request("invalid_query", e))
}
