//! v2 consumer instances: create and delete, subscribe, read records, commit and read
//! committed offsets, seek, assignments. Each instance is a kafko group member on each
//! subscribed topic (see `group_adapter`); reads long-poll up to `timeout` ms (default
//! the instance's `consumer.request.timeout.ms`) and count as delivered once their
//! answer went out in full (at-least-once; with auto-commit the next read commits them).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::convert::Infallible;

use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use bytes::Bytes;
use futures_util::{StreamExt, stream};
use kafko_core::{Delivery, GroupPoll, KafkoError, OffsetReset, PartitionOffset, Record, SeekTo};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::time::Instant;

use super::assignment::{self, by_topic};
use super::instances::{self, Handle, Instance};
use super::v2_json;
use crate::rest_proxy::api_doc::{InstanceNotFound, InstancePath, NotOwned, V2BadBody, V2NotJson};
use crate::rest_proxy::content_type::{EmbeddedFormat, check_accept};
use crate::rest_proxy::error::{
    CONSUMER_ALREADY_EXISTS, ErrorBody, INVALID_CONSUMER_CONFIG, JSON_CONVERSION, ProxyError,
    ProxyResult,
};
use crate::rest_proxy::{
    ProxyBody, ProxyPath, ProxyQuery, base_url, objects, parse_body, parse_optional_body,
    partition_id,
};
use crate::state::AppState;

/// `consumer.request.timeout.ms` when the instance does not set one (the proxy's default).
const DEFAULT_REQUEST_WAIT: Duration = Duration::from_millis(1000);
/// How often a waiting read looks again at topics other than the first subscribed one.
const RECHECK: Duration = Duration::from_millis(50);

/// The settings of a new instance. Values may be strings, numbers or booleans.
#[derive(Deserialize, Default, utoipa::ToSchema)]
#[schema(as = ProxyV2CreateRequest)]
#[serde(default)]
pub(crate) struct CreateRequest {
    /// Instance name (also `id`, which wins); generated when absent. 1-249 of
    /// `[a-zA-Z0-9._-]`, not `.` or `..`.
    #[schema(
        pattern = r"^(?:[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*|\.{3,})$",
        min_length = 1,
        max_length = 249
    )]
    name: Option<String>,
    #[schema(
        pattern = r"^(?:[A-Za-z0-9._-]*[A-Za-z0-9_-][A-Za-z0-9._-]*|\.{3,})$",
        min_length = 1,
        max_length = 249
    )]
    id: Option<String>,
    /// `binary` (default) or `json`.
    #[schema(pattern = r"^(binary|json)$")]
    format: Option<String>,
    /// `earliest`, `latest` (default) or `none`.
    #[serde(rename = "auto.offset.reset")]
    #[schema(pattern = r"^(earliest|latest|none)$")]
    auto_offset_reset: Option<String>,
    /// Commit on every read (default true): `"true"` or `"false"`, or a JSON boolean.
    #[serde(rename = "auto.commit.enable")]
    #[schema(schema_with = flag_schema)]
    auto_commit_enable: Option<Value>,
    /// Default wait of a records read, ms: a number or a string of digits.
    #[serde(rename = "consumer.request.timeout.ms")]
    #[schema(schema_with = count_schema)]
    request_timeout_ms: Option<Value>,
    /// Accepted and ignored (reads return as soon as there is one record).
    #[serde(rename = "fetch.min.bytes")]
    #[schema(schema_with = count_schema)]
    fetch_min_bytes: Option<Value>,
}

/// The proxy takes its settings as strings or as JSON values: `"true"` or `true`.
fn flag_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    OneOfBuilder::new()
        .item(ObjectBuilder::new().schema_type(Type::Boolean))
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^(true|false)$")),
        )
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .into()
}

/// A count as a number or a string of digits (`1000` or `"1000"`).
fn count_schema() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
    OneOfBuilder::new()
        .item(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(0))
                .maximum(Some(MAX_COUNT)),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some("^[0-9]{1,9}$")),
        )
        .item(ObjectBuilder::new().schema_type(Type::Null))
        .into()
}

/// A created instance.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2CreateResponse)]
pub(crate) struct CreateResponse {
    instance_id: String,
    base_uri: String,
}

fn bad_config(message: impl Into<String>) -> ProxyError {
    ProxyError::unprocessable(
        INVALID_CONSUMER_CONFIG,
        format!("Invalid consumer configuration: {}", message.into()),
    )
}

fn as_bool(v: &Value, what: &str) -> ProxyResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(bad_config(format!("{what} must be true or false, got {v}"))),
    }
}

/// The most a count setting may be (the document's bound).
const MAX_COUNT: u64 = 999_999_999;

fn as_u64(v: &Value, what: &str) -> ProxyResult<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                // Integral and non-negative; a float-to-int `as` saturates above u64::MAX.
                .map(|f| {
                    #[allow(clippy::cast_possible_truncation)]
                    let n = f as u64;
                    n
                })
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
    .filter(|&n| n <= MAX_COUNT)
    .ok_or_else(|| {
        bad_config(format!(
            "{what} must be an integer from 0 to {MAX_COUNT}, got {v}"
        ))
    })
}

/// A generated instance name: unique within this process.
fn generated_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    format!(
        "rest-consumer-{nanos:x}-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The live instance: 40403 if unknown, deleted or expired (an expired one is closed).
async fn instance(state: &AppState, group: &str, name: &str) -> ProxyResult<Arc<Handle>> {
    match state.rest_proxy.get(group, name) {
        Ok(h) => Ok(h),
        Err(expired) => {
            if let Some(h) = expired {
                instances::close(&state.kafko, state.rest_proxy.timeout(), vec![h]).await;
            }
            Err(ProxyError::instance_not_found())
        }
    }
}

/// Locks a live instance.
macro_rules! locked {
    ($state:expr, $group:expr, $name:expr, $handle:ident, $guard:ident) => {
        let $handle = instance(&$state, &$group, &$name).await?;
        #[allow(unused_mut)]
        let mut $guard = $handle.state.lock().await;
        if $guard.closed {
            return Err(ProxyError::instance_not_found());
        }
    };
}

/// Creates a consumer instance in a group.
#[utoipa::path(post, path = "/consumers/{group}", tag = "rest-proxy-v2",
    params(("group" = String, Path, description = "Consumer group")),
    request_body(content = Option<CreateRequest>, content_type = "application/vnd.kafka.v2+json"),
    responses(
        V2NotJson,
        (status = 200, description = "The instance id and its base URI", body = CreateResponse, content_type = "application/vnd.kafka.v2+json"),
        (status = 409, description = "error_code 40902: an instance of that name exists", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
        (status = 422, description = "error_code 42204: invalid configuration (including the schema formats)", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
    ))]
pub(crate) async fn create(
    State(state): State<AppState>,
    ProxyPath(group): ProxyPath<String>,
    headers: HeaderMap,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<Response> {
    let req: CreateRequest = parse_optional_body(&body)?.unwrap_or_default();
    if kafko_core::naming::validate_name(&group).is_err() {
        return Err(bad_config(format!("'{group}' is not a valid group name")));
    }
    let format = match req.format.as_deref() {
        None => EmbeddedFormat::Binary,
        Some(f) => match EmbeddedFormat::from_name(f) {
            Some(EmbeddedFormat::Schema(name)) => {
                return Err(bad_config(format!(
                    "the {name} format needs a schema registry, which kafko does not have; use binary or json"
                )));
            }
            Some(format) => format,
            None => return Err(bad_config(format!("'{f}' is not a valid format"))),
        },
    };
    let reset = match req
        .auto_offset_reset
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None | Some("latest") => OffsetReset::Latest,
        Some("earliest" | "smallest") => OffsetReset::Earliest,
        Some("none") => OffsetReset::Error,
        Some(other) => {
            return Err(bad_config(format!(
                "auto.offset.reset must be earliest, latest or none, got '{other}'"
            )));
        }
    };
    let auto_commit = match &req.auto_commit_enable {
        None | Some(Value::Null) => true,
        Some(v) => as_bool(v, "auto.commit.enable")?,
    };
    let request_wait = match &req.request_timeout_ms {
        None | Some(Value::Null) => DEFAULT_REQUEST_WAIT,
        Some(v) => Duration::from_millis(as_u64(v, "consumer.request.timeout.ms")?),
    };
    if let Some(v) = &req.fetch_min_bytes {
        as_u64(v, "fetch.min.bytes")?;
    }
    let name = req.id.or(req.name).unwrap_or_else(generated_name);
    if kafko_core::naming::validate_name(&name).is_err() {
        return Err(bad_config(format!(
            "'{name}' is not a valid instance name: 1-249 of [a-zA-Z0-9._-]"
        )));
    }
    let timeout = state.rest_proxy.timeout();
    let instance = Instance {
        group: group.clone(),
        name: name.clone(),
        format,
        auto_commit,
        request_wait,
        reset,
        subscription: Vec::new(),
        assignment: Default::default(),
        members: Default::default(),
        closed: false,
    };
    let (created, swept) = state.rest_proxy.insert(instance);
    instances::close(&state.kafko, timeout, swept).await;
    let Some(handle) = created else {
        return Err(ProxyError::new(
            StatusCode::CONFLICT,
            CONSUMER_ALREADY_EXISTS,
            "Consumer with specified consumer ID already exists in the specified consumer group.",
        ));
    };
    let guard = handle.state.lock().await;
    if let Err(e) = guard
        .groups(&state.kafko, timeout)
        .set_offset_reset(reset)
        .await
    {
        drop(guard);
        state.rest_proxy.remove(&group, &name);
        return Err(e.into());
    }
    Ok(v2_json(&CreateResponse {
        base_uri: format!("{}/consumers/{group}/instances/{name}", base_url(&headers)),
        instance_id: name,
    }))
}

/// Deletes an instance (it leaves its groups).
#[utoipa::path(delete, path = "/consumers/{group}/instances/{instance}", tag = "rest-proxy-v2",
    params(InstancePath),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "error_code 40403: unknown or expired instance", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
    ))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
) -> ProxyResult<StatusCode> {
    let handle = state
        .rest_proxy
        .remove(&group, &name)
        .ok_or_else(ProxyError::instance_not_found)?;
    instances::close(&state.kafko, state.rest_proxy.timeout(), vec![handle]).await;
    Ok(StatusCode::NO_CONTENT)
}

/// A subscription.
#[derive(Deserialize, Serialize, Default, utoipa::ToSchema)]
#[schema(as = ProxyV2Subscription)]
pub(crate) struct Subscription {
    #[schema(min_items = 1)]
    topics: Vec<String>,
    /// Not supported (a 42204), so not in the document.
    #[serde(default, skip_serializing)]
    #[schema(ignore)]
    topic_pattern: Option<String>,
}

/// Subscribes to topics (replacing the current subscription, as Kafka does).
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/subscription", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Subscription, content_type = "application/vnd.kafka.v2+json"),
    responses(
        V2NotJson,
        (status = 204, description = "Subscribed"),
        InstanceNotFound,
        (status = 422, description = "error_code 42204 (topic_pattern, no topics) or 422", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
    ))]
pub(crate) async fn subscribe(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<StatusCode> {
    let sub: Subscription = parse_body(&body)?;
    locked!(state, group, name, handle, inst);
    if !inst.assignment.is_empty() {
        return Err(ProxyError::subscribed_or_assigned());
    }
    if sub.topic_pattern.is_some() {
        return Err(bad_config(
            "topic_pattern subscriptions are not supported by kafko; list the topics",
        ));
    }
    if sub.topics.is_empty() {
        return Err(bad_config("subscribe to at least one topic"));
    }
    let timeout = state.rest_proxy.timeout();
    let dropped: Vec<String> = inst
        .members
        .keys()
        .filter(|t| !sub.topics.contains(t))
        .cloned()
        .collect();
    for topic in dropped {
        inst.groups(&state.kafko, timeout).leave(&topic).await?;
        inst.members.remove(&topic);
    }
    let mut topics = sub.topics;
    topics.dedup();
    inst.subscription = topics;
    join_subscribed(&state, &mut inst)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Joins the group on every subscribed topic that exists and is not joined yet.
fn join_subscribed(state: &AppState, inst: &mut Instance) -> ProxyResult<()> {
    let timeout = state.rest_proxy.timeout();
    for topic in inst.subscription.clone() {
        if inst.members.contains_key(&topic) {
            continue;
        }
        match inst.groups(&state.kafko, timeout).join(&topic) {
            Ok(m) => {
                inst.members.insert(topic, m);
            }
            // Kafka waits for a subscribed topic to appear; so do we (joined on a later read).
            Err(KafkoError::TopicNotFound { .. } | KafkoError::InvalidName { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// The subscribed topics.
#[utoipa::path(get, path = "/consumers/{group}/instances/{instance}/subscription", tag = "rest-proxy-v2",
    params(InstancePath),
    responses(
        (status = 200, description = "Topics", body = Subscription, content_type = "application/vnd.kafka.v2+json"),
        InstanceNotFound,
    ))]
pub(crate) async fn subscription(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
) -> ProxyResult<Response> {
    locked!(state, group, name, handle, inst);
    Ok(v2_json(&Subscription {
        topics: inst.subscription.clone(),
        topic_pattern: None,
    }))
}

/// Unsubscribes from every topic (leaving the groups).
#[utoipa::path(delete, path = "/consumers/{group}/instances/{instance}/subscription", tag = "rest-proxy-v2",
    params(InstancePath),
    responses(
        (status = 204, description = "Unsubscribed"),
        InstanceNotFound,
    ))]
pub(crate) async fn unsubscribe(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
) -> ProxyResult<StatusCode> {
    locked!(state, group, name, handle, inst);
    inst.leave_all(&state.kafko, state.rest_proxy.timeout())
        .await;
    inst.subscription.clear();
    Ok(StatusCode::NO_CONTENT)
}

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
        (status = 400, description = "A query parameter is not a number", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
        (status = 200, description = "Records (possibly none), in the instance's embedded format", 
            content((Vec<ConsumerRecord> = "application/vnd.kafka.binary.v2+json"), (Vec<ConsumerRecord> = "application/vnd.kafka.json.v2+json"))),
        InstanceNotFound,
        (status = 406, description = "error_code 40601: Accept does not match the instance's format", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
        (status = 422, description = "error_code 42203: a json instance read bytes that are not JSON", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
        (status = 429, description = "error_code 429: the server's limit of waiting requests is reached (a read with timeout=0 is not counted); Retry-After says when to retry", body = ErrorBody, content_type = "application/vnd.kafka.v2+json",
            headers(("Retry-After" = u32, description = "Seconds to wait before retrying"))),
    ))]
pub(crate) async fn records(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
    ProxyQuery(q): ProxyQuery<RecordsQuery>,
    headers: HeaderMap,
) -> ProxyResult<Response> {
    locked!(state, group, name, handle, inst);
    check_accept(&headers, inst.format)?;
    let cfg = &state.config;
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
    // An assigned instance commits what its earlier reads delivered, as a group
    // member's next poll does.
    inst.auto_commit_assigned(&state.kafko, state.rest_proxy.timeout())
        .await;
    let deadline = Instant::now() + wait;
    let batch = loop {
        join_subscribed(&state, &mut inst)?;
        let watched = watched_topics(&inst);
        let activity = watched
            .first()
            .and_then(|t| state.kafko.topic(t).ok())
            .map(|t| t.activity());
        let notified = activity.as_ref().map(|a| a.notified());
        tokio::pin!(notified);
        if let Some(n) = notified.as_mut().as_pin_mut() {
            // Registered before looking, so a produce in between still wakes us.
            n.enable();
        }
        let batch = read_once(&state, &mut inst, max_bytes).await?;
        if batch.found() || Instant::now() >= deadline || state.is_shutting_down() {
            break batch;
        }
        let nap = Instant::now() + RECHECK.min(deadline - Instant::now());
        match notified.as_mut().as_pin_mut() {
            Some(n) if watched.len() == 1 => {
                tokio::select! {
                    () = n => {}
                    () = tokio::time::sleep_until(deadline) => {}
                    () = state.shutdown_requested() => {}
                }
            }
            _ => tokio::time::sleep_until(nap).await,
        }
    };
    state.rest_proxy.touch(&handle);
    let format = inst.format;
    let (by_topic, confirm) = batch.into_parts(handle.clone());
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
            bytes +=
                r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len());
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
    Ok(delivered_on_send(format.media_type(), &out, confirm))
}

/// The topics a waiting read watches: the joined ones, or the assigned ones.
fn watched_topics(inst: &Instance) -> Vec<String> {
    if inst.assignment.is_empty() {
        inst.members.keys().cloned().collect()
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
            Confirm::Deliveries(deliveries) => deliveries.into_iter().for_each(Delivery::confirm),
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
    let (assignment, source) = inst.assigned(&state.kafko, state.rest_proxy.timeout());
    let read = assignment.read(&source, state.config.max_records_per_fetch, max_bytes)?;
    Ok(Batch::Assigned(read))
}

/// A JSON answer whose read is confirmed once its whole body was handed to the
/// connection; an answer dropped before that (the client went away) leaves the records
/// to be read again (back in the group, or ahead of the assigned instance's position).
fn delivered_on_send(media: &'static str, body: &[ConsumerRecord], confirm: Confirm) -> Response {
    let json = match serde_json::to_vec(body) {
        Ok(json) => Bytes::from(json),
        Err(e) => {
            return ProxyError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                crate::rest_proxy::error::KAFKA_ERROR,
                format!("rendering the records failed: {e}"),
            )
            .into_response();
        }
    };
    // The connection asks for the next frame only after it took the previous one.
    let confirm = stream::once(async move {
        confirm.run();
        None
    });
    let frames = stream::once(async move { Some(json) })
        .chain(confirm)
        .filter_map(|frame| async move { frame.map(Ok::<_, Infallible>) });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, HeaderValue::from_static(media))],
        axum::body::Body::from_stream(frames),
    )
        .into_response()
}

/// One zero-wait poll of every joined topic, sharing the byte budget.
async fn poll_all(
    state: &AppState,
    inst: &mut Instance,
    max_bytes: usize,
) -> ProxyResult<Vec<(String, GroupPoll)>> {
    let timeout = state.rest_proxy.timeout();
    let max_records = state.config.max_records_per_fetch;
    let mut out: Vec<(String, GroupPoll)> = Vec::new();
    let mut budget = max_bytes;
    let mut count = 0;
    let topics: Vec<String> = inst.members.keys().cloned().collect();
    for topic in topics {
        if budget == 0 || count >= max_records {
            break;
        }
        let Some(mut member) = inst.members.remove(&topic) else {
            continue;
        };
        let polled = inst
            .groups(&state.kafko, timeout)
            .poll(&mut member, max_records - count, budget, inst.auto_commit)
            .await;
        inst.members.insert(topic.clone(), member);
        let got = match polled {
            Ok(got) => got,
            // Deleted meanwhile: forget it until it comes back.
            Err(KafkoError::TopicNotFound { .. }) => {
                inst.members.remove(&topic);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        for r in got.records() {
            let size =
                r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len());
            budget = budget.saturating_sub(size);
        }
        count += got.records().len();
        out.push((topic, got));
    }
    Ok(out)
}

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
    request_body(content = Option<CommitRequest>, content_type = "application/vnd.kafka.v2+json",
        description = "Last consumed offsets (the group resumes at offset + 1); an empty body commits everything consumed"),
    responses(
        V2BadBody,
        (status = 200, description = "Committed", body = Vec<Object>, content_type = "application/vnd.kafka.v2+json"),
        InstanceNotFound,
        NotOwned,
    ))]
pub(crate) async fn commit(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<Response> {
    let req: CommitRequest = parse_optional_body(&body)?.unwrap_or_default();
    locked!(state, group, name, handle, inst);
    let timeout = state.rest_proxy.timeout();
    let asked = by_topic(req.offsets.iter().map(|o| {
        let next = PartitionOffset {
            partition: o.partition,
            offset: o.offset.saturating_add(1),
        };
        (o.topic.clone(), next)
    }));
    if !inst.assignment.is_empty() {
        for (topic, list) in &asked {
            if let Some(o) = list
                .iter()
                .find(|o| !inst.assignment.contains(&(topic.clone(), o.partition)))
            {
                return Err(ProxyError::not_assigned(topic, o.partition));
            }
        }
        let (assignment, source) = inst.assigned(&state.kafko, timeout);
        let offsets = if asked.is_empty() {
            assignment.consumed()
        } else {
            asked
        };
        assignment.commit(&source.groups, offsets).await?;
        return Ok(v2_json(&Vec::<Value>::new()));
    }
    let by_topic = if asked.is_empty() {
        inst.members
            .keys()
            .map(|t| (t.clone(), Vec::new()))
            .collect()
    } else {
        asked
    };
    for (topic, offsets) in by_topic {
        let Some(mut member) = inst.members.remove(&topic) else {
            let p = offsets.first().map_or(0, |o| o.partition);
            return Err(ProxyError::not_assigned(&topic, p));
        };
        let offsets = (!offsets.is_empty()).then_some(offsets);
        let done = inst
            .groups(&state.kafko, timeout)
            .commit(&mut member, offsets.as_deref())
            .await;
        inst.members.insert(topic.clone(), member);
        done?;
    }
    Ok(v2_json(&Vec::<Value>::new()))
}

/// A topic partition.
#[derive(Deserialize, Serialize, Clone, utoipa::ToSchema)]
#[schema(as = ProxyV2TopicPartition)]
pub(crate) struct TopicPartition {
    topic: String,
    #[serde(deserialize_with = "partition_id")]
    partition: u32,
}

/// Partitions (committed-offsets query, seeks to the beginning or end, assignments).
#[derive(Deserialize, Serialize, Default, utoipa::ToSchema)]
#[schema(as = ProxyV2Partitions)]
pub(crate) struct Partitions {
    #[serde(default, deserialize_with = "objects")]
    partitions: Vec<TopicPartition>,
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
    request_body(content = Partitions, content_type = "application/vnd.kafka.v2+json"),
    responses(
        V2BadBody,
        (status = 200, description = "Committed offsets of those partitions that have one", body = CommittedOffsets, content_type = "application/vnd.kafka.v2+json"),
        (status = 404, description = "error_code 40403 (instance), 40402 (no body)", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
    ))]
pub(crate) async fn committed(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<Response> {
    let req: Option<Partitions> = parse_optional_body(&body)?;
    locked!(state, group, name, handle, inst);
    let Some(req) = req else {
        return Err(ProxyError::new(
            StatusCode::NOT_FOUND,
            crate::rest_proxy::error::PARTITION_NOT_FOUND,
            "Partition not found: name the partitions in the body",
        ));
    };
    let groups = inst.groups(&state.kafko, state.rest_proxy.timeout());
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

/// The partitions the instance owns now.
#[utoipa::path(get, path = "/consumers/{group}/instances/{instance}/assignments", tag = "rest-proxy-v2",
    params(InstancePath),
    responses(
        (status = 200, description = "Assigned partitions", body = Partitions, content_type = "application/vnd.kafka.v2+json"),
        InstanceNotFound,
    ))]
pub(crate) async fn assignments(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
) -> ProxyResult<Response> {
    locked!(state, group, name, handle, inst);
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
    join_subscribed(&state, &mut inst)?;
    let timeout = state.rest_proxy.timeout();
    let mut partitions = Vec::new();
    for topic in inst.members.keys().cloned().collect::<Vec<_>>() {
        // A join with the member's own id is a heartbeat that reports the current assignment.
        let m = inst.groups(&state.kafko, timeout).join(&topic)?;
        partitions.extend(m.assignment.iter().map(|&p| TopicPartition {
            topic: topic.clone(),
            partition: p,
        }));
        inst.members.insert(topic, m);
    }
    Ok(v2_json(&Partitions { partitions }))
}

/// Assigns partitions to the instance by hand (replacing its assignment; an empty
/// list drops it). It then reads them from positions of its own, starting at the
/// group's committed offsets.
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/assignments", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Partitions, content_type = "application/vnd.kafka.v2+json"),
    responses(
        V2BadBody,
        (status = 204, description = "Assigned"),
        (status = 404, description = "error_code 40403 (instance), 40401 (topic) or 40402 (partition)", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
        (status = 409, description = "error_code 40901: the instance is subscribed to topics", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
    ))]
pub(crate) async fn assign(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<StatusCode> {
    let req: Partitions = parse_body(&body)?;
    locked!(state, group, name, handle, inst);
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
    inst.auto_commit_assigned(&state.kafko, state.rest_proxy.timeout())
        .await;
    inst.assignment.replace(partitions);
    Ok(StatusCode::NO_CONTENT)
}

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

async fn seek_each(
    state: &AppState,
    inst: &mut Instance,
    targets: Vec<(String, u32, SeekTo)>,
) -> ProxyResult<StatusCode> {
    if !inst.assignment.is_empty() {
        for (topic, partition, to) in targets {
            inst.assignment
                .seek(&state.kafko, &(topic, partition), to)?;
        }
        return Ok(StatusCode::NO_CONTENT);
    }
    let timeout = state.rest_proxy.timeout();
    join_subscribed(state, inst)?;
    for (topic, partition, to) in targets {
        let Some(mut member) = inst.members.remove(&topic) else {
            return Err(ProxyError::not_assigned(&topic, partition));
        };
        let done = inst
            .groups(&state.kafko, timeout)
            .seek(&mut member, partition, to)
            .await;
        inst.members.insert(topic.clone(), member);
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
    request_body(content = SeekRequest, content_type = "application/vnd.kafka.v2+json"),
    responses(
        V2NotJson,
        (status = 204, description = "Moved"),
        InstanceNotFound,
        (status = 409, description = "error_code 40903: a partition the instance does not own, or an offset outside the log", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
        (status = 422, description = "Invalid body or timestamp", body = ErrorBody, content_type = "application/vnd.kafka.v2+json"),
    ))]
pub(crate) async fn seek(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<StatusCode> {
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
    locked!(state, group, name, handle, inst);
    seek_each(&state, &mut inst, targets).await
}

async fn seek_to(
    state: AppState,
    group: String,
    name: String,
    body: &[u8],
    to: SeekTo,
) -> ProxyResult<StatusCode> {
    let req: Partitions = parse_body(body)?;
    let targets = req
        .partitions
        .into_iter()
        .map(|tp| (tp.topic, tp.partition, to))
        .collect();
    locked!(state, group, name, handle, inst);
    seek_each(&state, &mut inst, targets).await
}

/// Moves owned partitions to their first offset.
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/positions/beginning", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Partitions, content_type = "application/vnd.kafka.v2+json"),
    responses(
        V2BadBody,
        (status = 204, description = "Moved"),
        InstanceNotFound,
        NotOwned,
    ))]
pub(crate) async fn seek_to_beginning(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<StatusCode> {
    seek_to(state, group, name, &body, SeekTo::Earliest).await
}

/// Moves owned partitions to their high watermark.
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/positions/end", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Partitions, content_type = "application/vnd.kafka.v2+json"),
    responses(
        V2BadBody,
        (status = 204, description = "Moved"),
        InstanceNotFound,
        NotOwned,
    ))]
pub(crate) async fn seek_to_end(
    State(state): State<AppState>,
    ProxyPath((group, name)): ProxyPath<(String, String)>,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<StatusCode> {
    seek_to(state, group, name, &body, SeekTo::Latest).await
}
