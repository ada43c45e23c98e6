//! Routes under `/config`, `/mode` and `/compatibility`: compatibility levels, modes,
//! and checks of a schema against a subject's versions.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::json;

use super::wire::{self, Params, SchemaRequest};
use crate::error::RegistryError;
use crate::level::{CompatibilityLevel, Mode};
use crate::registry::Registry;
use crate::version::VersionSpec;

#[derive(Deserialize)]
struct ConfigRequest {
    compatibility: Option<String>,
    #[serde(rename = "compatibilityLevel")]
    compatibility_level: Option<String>,
}

#[derive(Deserialize)]
struct ModeRequest {
    mode: String,
}

fn level_body(level: CompatibilityLevel) -> Response {
    wire::json(&json!({ "compatibilityLevel": level.as_str() }))
}

/// `GET /config`.
pub(crate) async fn get_global(State(r): State<Registry>) -> Result<Response, RegistryError> {
    Ok(level_body(r.level(None, false)?))
}

/// `GET /config/{subject}` (`defaultToGlobal`).
pub(crate) async fn get_subject(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    Ok(level_body(
        r.level(Some(&subject), q.flag("defaultToGlobal")?)?,
    ))
}

async fn put(r: &Registry, subject: Option<&str>, body: &Bytes) -> Result<Response, RegistryError> {
    let req: ConfigRequest = wire::body(body)?;
    let name = req
        .compatibility
        .or(req.compatibility_level)
        .ok_or(RegistryError::InvalidCompatibilityLevel)?;
    let level = CompatibilityLevel::parse(&name)?;
    r.set_level(subject, level).await?;
    Ok(wire::json(&json!({ "compatibility": level.as_str() })))
}

/// `PUT /config`.
pub(crate) async fn put_global(
    State(r): State<Registry>,
    body: Bytes,
) -> Result<Response, RegistryError> {
    put(&r, None, &body).await
}

/// `PUT /config/{subject}`.
pub(crate) async fn put_subject(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    body: Bytes,
) -> Result<Response, RegistryError> {
    put(&r, Some(&subject), &body).await
}

/// `DELETE /config`: back to the default level; answers the previous one.
pub(crate) async fn delete_global(State(r): State<Registry>) -> Result<Response, RegistryError> {
    Ok(level_body(r.delete_level(None).await?))
}

/// `DELETE /config/{subject}`: answers the level it had.
pub(crate) async fn delete_subject(
    State(r): State<Registry>,
    Path(subject): Path<String>,
) -> Result<Response, RegistryError> {
    Ok(level_body(r.delete_level(Some(&subject)).await?))
}

fn mode_body(mode: Mode) -> Response {
    wire::json(&json!({ "mode": mode.as_str() }))
}

/// `GET /mode`.
pub(crate) async fn get_mode(State(r): State<Registry>) -> Result<Response, RegistryError> {
    Ok(mode_body(r.mode(None, false)?))
}

/// `GET /mode/{subject}` (`defaultToGlobal`).
pub(crate) async fn get_subject_mode(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    Ok(mode_body(
        r.mode(Some(&subject), q.flag("defaultToGlobal")?)?,
    ))
}

async fn put_mode_of(
    r: &Registry,
    subject: Option<&str>,
    q: &Params,
    body: &Bytes,
) -> Result<Response, RegistryError> {
    let req: ModeRequest = wire::body(body)?;
    let mode = Mode::parse(&req.mode)?;
    r.set_mode(subject, mode, q.flag("force")?).await?;
    Ok(mode_body(mode))
}

/// `PUT /mode` (`force`).
pub(crate) async fn put_mode(
    State(r): State<Registry>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    put_mode_of(&r, None, &q, &body).await
}

/// `PUT /mode/{subject}` (`force`).
pub(crate) async fn put_subject_mode(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    put_mode_of(&r, Some(&subject), &q, &body).await
}

/// `DELETE /mode/{subject}`: answers the mode it had.
pub(crate) async fn delete_subject_mode(
    State(r): State<Registry>,
    Path(subject): Path<String>,
) -> Result<Response, RegistryError> {
    Ok(mode_body(r.delete_mode(&subject).await?))
}

async fn check(
    r: &Registry,
    subject: &str,
    spec: Option<VersionSpec>,
    q: &Params,
    body: &Bytes,
) -> Result<Response, RegistryError> {
    let new = wire::body::<SchemaRequest>(body)?.into_new(q.flag("normalize")?)?;
    let messages = r.check_compatibility(subject, spec, new).await?;
    let compatible = messages.is_empty();
    Ok(if q.flag("verbose")? {
        wire::json(&json!({ "is_compatible": compatible, "messages": messages }))
    } else {
        wire::json(&json!({ "is_compatible": compatible }))
    })
}

/// `POST /compatibility/subjects/{subject}/versions/{version}` (`verbose`).
pub(crate) async fn check_version(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    let spec = VersionSpec::parse(&version)?;
    check(&r, &subject, Some(spec), &q, &body).await
}

/// `POST /compatibility/subjects/{subject}/versions`: against the versions the
/// subject's level checks a registration against (`verbose`).
pub(crate) async fn check_all(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    check(&r, &subject, None, &q, &body).await
}
