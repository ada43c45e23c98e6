//! Reading records (`GET …/records`): a read waits up to its timeout for records of the
//! subscribed topics (or the assigned partitions), and counts as delivered only once its
//! answer went out in full.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kafko_core::{ActivityWatch, Delivery, GroupPoll, Record};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::InstanceAt;
use super::subscription::join_subscribed;
use crate::rest_proxy::ProxyQuery;
use crate::rest_proxy::api_doc::{InstanceNotFound, InstancePath};
use crate::rest_proxy::content_type::{EmbeddedFormat, check_accept};
use crate::rest_proxy::error::{ErrorBody, JSON_CONVERSION, ProxyError, ProxyResult};
use crate::rest_proxy::v2::assignment;
use crate::rest_proxy::v2::instances::{Handle, Instance};
use crate::rest_proxy::v2::to_json_sized;
use crate::state::AppState;
use kafko_service::answer_budget::Reservation;
use kafko_service::config::ServerConfig;
use kafko_service::metrics::FrontEnd;
use kafko_service::wait::Waiter;

/// Query of a records read.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct RecordsQuery {
    /// Longest wait for records, ms (default: the instance's consumer.request.timeout.ms).
    timeout: Option<i64>,
    /// Most bytes of keys and values returned (at least one record is).
    max_bytes: Option<i64>,
}

/// A consumed record.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2ConsumerRecord)]
pub(crate) struct ConsumerRecord {
    topic: String,
    /// Binary: base64; json: the JSON value.
    key: Value,
    value: Value,
    partition: u32,
    offset: u64,
}

fn render(bytes: Option<&kafko_core::Bytes>, format: EmbeddedFormat) -> Result<Value, String> {
    match (bytes, format) {
        (None, _) => Ok(Value::Null),
        (Some(b), EmbeddedFormat::Json) => serde_json::from_slice(b).map_err(|e| e.to_string()),
        (Some(b), _) => Ok(Value::String(STANDARD.encode(b))),
    }
}

/// Reads the next records of the instance's subscription.
#[utoipa::path(get, path = "/consumers/{group}/instances/{instance}/records", tag = "rest-proxy-v2",
    params(InstancePath, RecordsQuery),
    responses(
        (status = 400, description = "A query parameter is not a number", body = ErrorBody),
        (status = 200, description = "Records (possibly none), in the instance's embedded format", 
            content((Vec<ConsumerRecord> = "application/vnd.kafka.binary.v2+json"), (Vec<ConsumerRecord> = "application/vnd.kafka.json.v2+json"))),
        InstanceNotFound,
        (status = 406, description = "error_code 40601: Accept does not match the instance's format", body = ErrorBody),
        (status = 422, description = "error_code 42203: a json instance read bytes that are not JSON", body = ErrorBody),
        (status = 429, description = "error_code 429: the server's limit of waiting requests is reached (a read with timeout=0 is not counted); Retry-After says when to retry", body = ErrorBody,
            headers(("Retry-After" = u32, description = "Seconds to wait before retrying"))),
    ))]
pub(crate) async fn records(
    at: InstanceAt,
    ProxyQuery(q): ProxyQuery<RecordsQuery>,
    headers: HeaderMap,
) -> ProxyResult<Response> {
    let mut inst = at.lock().await?;
    let state = &at.state;
    check_accept(&headers, inst.format)?;
    let (wait, max_bytes) = limits(&q, &inst, &state.config);
    // An assigned instance commits what its earlier reads delivered, as a group
    // member's next poll does.
    inst.auto_commit_assigned(&state.kafko, at.timeout()).await;
    let batch = wait_for_records(state, &mut inst, max_bytes, Instant::now() + wait).await?;
    let format = inst.format;
    let (by_topic, confirm) = batch.into_parts(inst.handle().clone());
    let records = by_topic.iter().flat_map(|(_, records)| records);
    let estimate =
        crate::json::records_estimate(records.clone().count(), records.map(key_value_bytes).sum());
    // The records and their JSON count against the answer budget until the answer is
    // sent; with no room, the read is refused and the records stay unread.
    let bytes = records_bytes(&by_topic);
    let Some(mut room) = state.answers.reserve(bytes + estimate).await else {
        return Ok(answers_full());
    };
    let out = rendered(state, format, by_topic)?;
    let json = to_json_sized(&out, estimate)?;
    drop(out);
    if !room.fit(&state.answers, json.len()).await {
        return Ok(answers_full());
    }
    Ok(delivered_on_send(format.media_type(), json, confirm, room))
}

/// Bytes of the records' keys and values.
fn records_bytes(by_topic: &[(String, Vec<Record>)]) -> usize {
    by_topic
        .iter()
        .flat_map(|(_, records)| records)
        .map(key_value_bytes)
        .sum()
}

/// The refusal of a read while unsent answers fill the server's answer budget: 429 with
/// `Retry-After`, as the proxy refuses reads over its other limits.
fn answers_full() -> Response {
    let mut resp = ProxyError::plain(
        StatusCode::TOO_MANY_REQUESTS,
        "Answers not yet taken by their clients fill the server's answer budget; retry later.",
    )
    .into_response();
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// How long a read may wait and how many bytes it may return: the query's values (a
/// negative or absent one means the default), within the server's limits.
fn limits(q: &RecordsQuery, inst: &Instance, cfg: &ServerConfig) -> (Duration, usize) {
    let wait = match q.timeout {
        Some(ms) if ms >= 0 => Duration::from_millis(ms as u64),
        _ => inst.request_wait,
    }
    .min(cfg.max_wait);
    let max_bytes = match q.max_bytes {
        Some(b) if b > 0 => usize::try_from(b)
            .unwrap_or(usize::MAX)
            .min(cfg.max_fetch_bytes),
        _ => cfg.max_fetch_bytes,
    };
    (wait, max_bytes)
}

/// Reads until records come, the deadline passes or the server shuts down. A produce
/// to any watched topic (or a settled poll of its group) wakes the read at once, and so
/// does the creation of a subscribed topic that did not exist: nothing is polled on a
/// timer.
async fn wait_for_records(
    state: &AppState,
    inst: &mut Instance,
    max_bytes: usize,
    deadline: Instant,
) -> ProxyResult<Batch> {
    let mut waiter = Waiter::new(state, FrontEnd::RestProxy, deadline);
    loop {
        // Taken before looking, so a creation or a produce in between still ends the
        // wait; the subscription may name topics created since the last look.
        let mut watch = ActivityWatch::new([state.kafko.topics_changed()]);
        join_subscribed(state, inst).await?;
        for topic in watched_topics(inst) {
            if let Ok(t) = state.kafko.topic(&topic) {
                watch.add(t.activity());
            }
        }
        let batch = read_once(state, inst, max_bytes).await?;
        if batch.found() || waiter.over() {
            return Ok(batch);
        }
        waiter.wait(&mut watch).await;
    }
}

/// The records in the instance's embedded format, counted in the metrics. A json
/// instance that meets bytes that are not JSON fails the read (42203).
fn rendered(
    state: &AppState,
    format: EmbeddedFormat,
    by_topic: Vec<(String, Vec<Record>)>,
) -> ProxyResult<Vec<ConsumerRecord>> {
    let mut out = Vec::new();
    for (topic, records) in by_topic {
        let mut bytes = 0;
        for r in &records {
            let rendered = render(r.key.as_ref(), format)
                .and_then(|k| Ok((k, render(r.value.as_ref(), format)?)));
            let (key, value) = rendered.map_err(|e| {
                // The read is dropped unconfirmed: the instance stays before the record.
                ProxyError::unprocessable(
                    JSON_CONVERSION,
                    format!(
                        "Conversion of JSON to Object failed: record {topic}-{}@{} is not JSON ({e}); the instance stays before it",
                        r.partition, r.offset
                    ),
                )
            })?;
            bytes += key_value_bytes(r);
            out.push(ConsumerRecord {
                topic: topic.clone(),
                key,
                value,
                partition: r.partition,
                offset: r.offset,
            });
        }
        if !records.is_empty() {
            state.metrics.consumed(&topic, records.len(), bytes);
        }
    }
    Ok(out)
}

/// Bytes of a record's key and value (what `max_bytes` and the metrics count).
fn key_value_bytes(r: &Record) -> usize {
    r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len())
}

/// The topics a waiting read watches: the joined ones, or the assigned ones.
fn watched_topics(inst: &Instance) -> Vec<String> {
    if inst.assignment.is_empty() {
        inst.joined_topics()
    } else {
        inst.assignment.topics()
    }
}

/// What one zero-wait read of an instance found.
enum Batch {
    /// A subscribed instance's group polls, by topic.
    Group(Vec<(String, GroupPoll)>),
    /// An assigned instance's partition reads.
    Assigned(Vec<assignment::Read>),
}

impl Batch {
    fn found(&self) -> bool {
        match self {
            Batch::Group(polls) => polls.iter().any(|(_, p)| !p.records().is_empty()),
            Batch::Assigned(reads) => reads.iter().any(|r| !r.records.is_empty()),
        }
    }

    /// The records by topic, and what confirms them once delivered.
    fn into_parts(self, handle: Arc<Handle>) -> (Vec<(String, Vec<Record>)>, Confirm) {
        match self {
            Batch::Group(polls) => {
                let mut deliveries = Vec::with_capacity(polls.len());
                let mut out = Vec::with_capacity(polls.len());
                for (topic, poll) in polls {
                    let (records, delivery) = poll.into_parts();
                    deliveries.push(delivery);
                    out.push((topic, records));
                }
                (out, Confirm::Deliveries(deliveries))
            }
            Batch::Assigned(reads) => {
                let moves = reads.iter().map(assignment::Read::movement).collect();
                let out = reads.into_iter().map(|r| (r.topic, r.records)).collect();
                (out, Confirm::Positions(handle, moves))
            }
        }
    }
}

/// How a delivered read is confirmed.
enum Confirm {
    /// The group polls' leases become reads.
    Deliveries(Vec<Delivery>),
    /// The assigned instance's positions move past what it was sent.
    Positions(Arc<Handle>, Vec<(assignment::Partition, assignment::Move)>),
}

impl Confirm {
    fn run(self) {
        match self {
            Confirm::Deliveries(deliveries) => deliveries.into_iter().for_each(Delivery::sent),
            Confirm::Positions(handle, moves) => {
                fn advance(
                    inst: &mut Instance,
                    moves: &[(assignment::Partition, assignment::Move)],
                ) {
                    if !inst.closed {
                        inst.assignment.advance(moves);
                    }
                }
                // Applied before the answer ends, so the client's next read starts after
                // it. Another request of the instance holding the lock (a concurrent
                // read waiting for records) must not hold this answer open: then it is
                // applied once that request lets go.
                if let Ok(mut inst) = handle.state.try_lock() {
                    advance(&mut inst, &moves);
                    return;
                }
                tokio::spawn(async move {
                    advance(&mut *handle.state.lock().await, &moves);
                });
            }
        }
    }
}

/// One zero-wait read: the group polls of a subscribed instance, the partition reads
/// of an assigned one.
async fn read_once(state: &AppState, inst: &mut Instance, max_bytes: usize) -> ProxyResult<Batch> {
    if inst.assignment.is_empty() {
        return Ok(Batch::Group(poll_all(state, inst, max_bytes).await?));
    }
    let (assignment, source) = inst.assigned(&state.kafko, state.config.consumer_instance_timeout);
    let read = assignment.read(&source, state.config.max_records_per_fetch, max_bytes)?;
    Ok(Batch::Assigned(read))
}

/// A JSON answer whose read is confirmed once its whole body was handed to the
/// connection; an answer dropped before that (the client went away) leaves the records
/// to be read again (back in the group, or ahead of the assigned instance's position).
fn delivered_on_send(
    media: &'static str,
    json: bytes::Bytes,
    confirm: Confirm,
    room: Reservation,
) -> Response {
    let sent = move || {
        confirm.run();
        drop(room);
    };
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, HeaderValue::from_static(media))],
        crate::on_sent::body(json, sent),
    )
        .into_response()
}

/// One zero-wait poll of every joined topic, sharing the byte budget.
async fn poll_all(
    state: &AppState,
    inst: &mut Instance,
    max_bytes: usize,
) -> ProxyResult<Vec<(String, GroupPoll)>> {
    let timeout = state.config.consumer_instance_timeout;
    let max_records = state.config.max_records_per_fetch;
    let mut out: Vec<(String, GroupPoll)> = Vec::new();
    let mut budget = max_bytes;
    let mut count = 0;
    for topic in inst.joined_topics() {
        if budget == 0 || count >= max_records {
            break;
        }
        // Deleted meanwhile: the next join forgets it until it comes back.
        if state.kafko.find_topic(&topic)?.is_none() {
            continue;
        }
        let Some(mut member) = inst.member.take() else {
            break;
        };
        let polled = inst
            .groups(&state.kafko, timeout)
            .poll(
                &mut member,
                &inst.subscription,
                &topic,
                (max_records - count, budget),
                inst.auto_commit,
            )
            .await;
        inst.member = Some(member);
        let got = polled?;
        for r in got.records() {
            budget = budget.saturating_sub(key_value_bytes(r));
        }
        count += got.records().len();
        out.push((topic, got));
    }
    Ok(out)
}
