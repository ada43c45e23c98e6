//! Creating a consumer instance (`POST /consumers/{group}`) from its settings, which the
//! proxy takes as strings or JSON values, and deleting it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use kafko_core::OffsetReset;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};

use super::InstanceAt;
use crate::rest_proxy::api_doc::{InstancePath, V2NotJson};
use crate::rest_proxy::content_type::EmbeddedFormat;
use crate::rest_proxy::error::{
    CONSUMER_ALREADY_EXISTS, ErrorBody, INVALID_CONSUMER_CONFIG, ProxyError, ProxyResult,
};
use crate::rest_proxy::v2::instances::{self, Instance, Instances};
use crate::rest_proxy::v2::v2_json;
use crate::rest_proxy::{ProxyBody, ProxyPath, base_url, parse_optional_body};
use crate::state::AppState;

/// `consumer.request.timeout.ms` when the instance does not set one (the proxy's default).
const DEFAULT_REQUEST_WAIT: Duration = Duration::from_millis(1000);

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
fn flag_schema() -> Schema {
    setting_schema(
        ObjectBuilder::new().schema_type(Type::Boolean),
        "^(true|false)$",
    )
}

/// A count as a number or a string of digits (`1000` or `"1000"`).
fn count_schema() -> Schema {
    setting_schema(
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(0))
            .maximum(Some(MAX_COUNT)),
        "^[0-9]{1,9}$",
    )
}

/// A setting: a JSON value as `json` describes, the same as a string matching
/// `pattern`, or null.
fn setting_schema(json: ObjectBuilder, pattern: &str) -> Schema {
    OneOfBuilder::new()
        .item(json)
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(pattern)),
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

pub(super) fn bad_config(message: impl Into<String>) -> ProxyError {
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

/// Creates a consumer instance in a group.
#[utoipa::path(post, path = "/consumers/{group}", tag = "rest-proxy-v2",
    params(("group" = String, Path, description = "Consumer group")),
    request_body(content = Option<CreateRequest>),
    responses(
        V2NotJson,
        (status = 200, description = "The instance id and its base URI", body = CreateResponse),
        (status = 409, description = "error_code 40902: an instance of that name exists", body = ErrorBody),
        (status = 422, description = "error_code 42204: invalid configuration (including the schema formats)", body = ErrorBody),
    ))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Extension(registry): Extension<Arc<Instances>>,
    ProxyPath(group): ProxyPath<String>,
    headers: HeaderMap,
    uri: Uri,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<Response> {
    let req: CreateRequest = parse_optional_body(&body)?.unwrap_or_default();
    let base = base_url(&state, &headers, &uri)?;
    if kafko_core::naming::validate_name(&group).is_err() {
        return Err(bad_config(format!("'{group}' is not a valid group name")));
    }
    let instance = configured(group, req)?;
    let (group, name) = (instance.group.clone(), instance.name.clone());
    register(&state, &registry, instance).await?;
    Ok(v2_json(&CreateResponse {
        base_uri: format!("{base}/consumers/{group}/instances/{name}"),
        instance_id: name,
    }))
}

/// A new instance of `group` with the settings of `req`, each checked (42204 if not
/// valid), in the order the proxy checks them.
fn configured(group: String, req: CreateRequest) -> ProxyResult<Instance> {
    let format = embedded_format(req.format.as_deref())?;
    let reset = offset_reset(req.auto_offset_reset.as_deref())?;
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
    Ok(Instance {
        group,
        name,
        format,
        auto_commit,
        request_wait,
        reset,
        subscription: Vec::new(),
        assignment: Default::default(),
        member: None,
        closed: false,
    })
}

/// `format`: binary (the default) or json; the schema formats need a registry.
fn embedded_format(name: Option<&str>) -> ProxyResult<EmbeddedFormat> {
    let Some(name) = name else {
        return Ok(EmbeddedFormat::Binary);
    };
    match EmbeddedFormat::from_name(name) {
        Some(EmbeddedFormat::Schema(schema)) => Err(bad_config(format!(
            "the {schema} format needs a schema registry, which kafko does not have; use binary or json"
        ))),
        Some(format) => Ok(format),
        None => Err(bad_config(format!("'{name}' is not a valid format"))),
    }
}

/// `auto.offset.reset`: latest (the default), earliest (or Kafka's old `smallest`), none.
fn offset_reset(value: Option<&str>) -> ProxyResult<OffsetReset> {
    match value.map(str::to_ascii_lowercase).as_deref() {
        None | Some("latest") => Ok(OffsetReset::Latest),
        Some("earliest" | "smallest") => Ok(OffsetReset::Earliest),
        Some("none") => Ok(OffsetReset::Error),
        Some(other) => Err(bad_config(format!(
            "auto.offset.reset must be earliest, latest or none, got '{other}'"
        ))),
    }
}

/// Adds the instance to the registry (40902 if one of that name exists) and sets the
/// group's `auto.offset.reset`; an instance whose group refuses that is removed again.
async fn register(state: &AppState, registry: &Instances, instance: Instance) -> ProxyResult<()> {
    let timeout = registry.timeout();
    let reset = instance.reset;
    let (created, swept) = registry.insert(instance);
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
        let (group, name) = (guard.group.clone(), guard.name.clone());
        drop(guard);
        registry.remove(&group, &name);
        return Err(e.into());
    }
    Ok(())
}

/// Deletes an instance (it leaves its groups).
#[utoipa::path(delete, path = "/consumers/{group}/instances/{instance}", tag = "rest-proxy-v2",
    params(InstancePath),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "error_code 40403: unknown or expired instance", body = ErrorBody),
    ))]
pub(crate) async fn delete(at: InstanceAt) -> ProxyResult<StatusCode> {
    at.remove().await?;
    Ok(StatusCode::NO_CONTENT)
}
