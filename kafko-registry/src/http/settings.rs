//! Routes under `/config`, `/mode` and `/compatibility`: compatibility levels, modes,
//! and checks of a schema against a subject's versions.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use serde::Deserialize;

use super::api_doc::{CheckQuery, DefaultToGlobalQuery, ForceQuery, TAG};
use super::wire::{
    self, CompatibilityAnswer, ErrorBody, LevelBody, LevelSet, MEDIA_TYPE, ModeBody, Params,
    SchemaRequest,
};
use crate::error::RegistryError;
use crate::level::{CompatibilityLevel, Mode};
use crate::registry::Registry;
use crate::version::VersionSpec;

/// A compatibility level to set.
#[derive(Deserialize, utoipa::ToSchema)]
struct ConfigRequest {
    /// `BACKWARD`, `BACKWARD_TRANSITIVE`, `FORWARD`, `FORWARD_TRANSITIVE`, `FULL`,
    /// `FULL_TRANSITIVE` or `NONE` (in any case).
    compatibility: Option<String>,
    /// The same, as some clients name it.
    #[serde(rename = "compatibilityLevel")]
    compatibility_level: Option<String>,
}

/// A mode to set.
#[derive(Deserialize, utoipa::ToSchema)]
struct ModeRequest {
    /// `READWRITE`, `READONLY`, `READONLY_OVERRIDE` or `IMPORT` (in any case).
    mode: String,
}

fn level_body(level: CompatibilityLevel) -> Response {
    wire::json(&LevelBody {
        compatibility_level: level.as_str(),
    })
}

/// Reads the global compatibility level (`GET /config`).
#[utoipa::path(get, path = "/config", operation_id = "registry_get_global_config", tag = TAG,
    responses(
        (status = 200, description = "The global level", body = LevelBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn get_global(State(r): State<Registry>) -> Result<Response, RegistryError> {
    Ok(level_body(r.level(None, false)?))
}

/// Reads a subject's compatibility level (`GET /config/{subject}`).
#[utoipa::path(get, path = "/config/{subject}", operation_id = "registry_get_subject_config", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), DefaultToGlobalQuery),
    responses(
        (status = 200, description = "The subject's level", body = LevelBody, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40408: no level of its own", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
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
    Ok(wire::json(&LevelSet {
        compatibility: level.as_str(),
    }))
}

/// Sets the global compatibility level (`PUT /config`).
#[utoipa::path(put, path = "/config", operation_id = "registry_set_global_config", tag = TAG,
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The level set", body = LevelSet, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42203: not a level", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn put_global(
    State(r): State<Registry>,
    body: Bytes,
) -> Result<Response, RegistryError> {
    put(&r, None, &body).await
}

/// Sets a subject's compatibility level (`PUT /config/{subject}`).
#[utoipa::path(put, path = "/config/{subject}", operation_id = "registry_set_subject_config", tag = TAG,
    params(("subject" = String, Path, pattern = r"^[^\u0000-\u001F\u007F-\u009F]{1,255}$", description = "The subject (by convention <topic>-key or <topic>-value): 1 to 255 characters, none a control character")),
    request_body(content = ConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The level set", body = LevelSet, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42203: not a level", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn put_subject(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    body: Bytes,
) -> Result<Response, RegistryError> {
    put(&r, Some(&subject), &body).await
}

/// Puts the global level back to the default, answering the one it had
/// (`DELETE /config`).
#[utoipa::path(delete, path = "/config", operation_id = "registry_delete_global_config", tag = TAG,
    responses(
        (status = 200, description = "The level it had", body = LevelBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn delete_global(State(r): State<Registry>) -> Result<Response, RegistryError> {
    Ok(level_body(r.delete_level(None).await?))
}

/// Removes a subject's own level, answering the one it had (`DELETE /config/{subject}`).
#[utoipa::path(delete, path = "/config/{subject}", operation_id = "registry_delete_subject_config", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)")),
    responses(
        (status = 200, description = "The level it had", body = LevelBody, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401 or 40408", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn delete_subject(
    State(r): State<Registry>,
    Path(subject): Path<String>,
) -> Result<Response, RegistryError> {
    Ok(level_body(r.delete_level(Some(&subject)).await?))
}

fn mode_body(mode: Mode) -> Response {
    wire::json(&ModeBody {
        mode: mode.as_str(),
    })
}

/// Reads the global mode (`GET /mode`).
#[utoipa::path(get, path = "/mode", operation_id = "registry_get_global_mode", tag = TAG,
    responses(
        (status = 200, description = "The global mode", body = ModeBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn get_mode(State(r): State<Registry>) -> Result<Response, RegistryError> {
    Ok(mode_body(r.mode(None, false)?))
}

/// Reads a subject's mode (`GET /mode/{subject}`).
#[utoipa::path(get, path = "/mode/{subject}", operation_id = "registry_get_subject_mode", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), DefaultToGlobalQuery),
    responses(
        (status = 200, description = "The subject's mode", body = ModeBody, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40409: no mode of its own", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
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

/// Sets the global mode (`PUT /mode`).
#[utoipa::path(put, path = "/mode", operation_id = "registry_set_global_mode", tag = TAG,
    params(ForceQuery),
    request_body(content = ModeRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The mode set", body = ModeBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42204 (not a mode) or 42205 (IMPORT over existing subjects)", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn put_mode(
    State(r): State<Registry>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    put_mode_of(&r, None, &q, &body).await
}

/// Sets a subject's mode (`PUT /mode/{subject}`).
#[utoipa::path(put, path = "/mode/{subject}", operation_id = "registry_set_subject_mode", tag = TAG,
    params(("subject" = String, Path, pattern = r"^[^\u0000-\u001F\u007F-\u009F]{1,255}$", description = "The subject (by convention <topic>-key or <topic>-value): 1 to 255 characters, none a control character"), ForceQuery),
    request_body(content = ModeRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The mode set", body = ModeBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42204 (not a mode) or 42205 (IMPORT over existing subjects)", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn put_subject_mode(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    put_mode_of(&r, Some(&subject), &q, &body).await
}

/// Removes a subject's own mode, answering the one it had (`DELETE /mode/{subject}`).
#[utoipa::path(delete, path = "/mode/{subject}", operation_id = "registry_delete_subject_mode", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)")),
    responses(
        (status = 200, description = "The mode it had", body = ModeBody, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401 or 40409", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
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
    let verbose = q.flag("verbose")?;
    Ok(wire::json(&CompatibilityAnswer {
        is_compatible: compatible,
        messages: verbose.then_some(messages),
    }))
}

/// Checks a schema against one version
/// (`POST /compatibility/subjects/{subject}/versions/{version}`).
#[utoipa::path(post, path = "/compatibility/subjects/{subject}/versions/{version}", operation_id = "registry_check_against_version", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), ("version" = String, Path, pattern = r"^([1-9][0-9]{0,9}|latest|-1)$", description = "A version number (1 to 2147483647), latest, or -1 (the latest)"), CheckQuery),
    request_body(content = SchemaRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "Whether the schema is compatible", body = CompatibilityAnswer, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401 or 40402", body = ErrorBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42201 (invalid schema) or 42202 (not a version)", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn check_version(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    let spec = VersionSpec::parse(&version)?;
    check(&r, &subject, Some(spec), &q, &body).await
}

/// Checks a schema against the versions a registration under the subject would be
/// checked against (`POST /compatibility/subjects/{subject}/versions`).
#[utoipa::path(post, path = "/compatibility/subjects/{subject}/versions", operation_id = "registry_check_compatibility", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), CheckQuery),
    request_body(content = SchemaRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "Whether the schema is compatible", body = CompatibilityAnswer, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42201: invalid schema", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn check_all(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    check(&r, &subject, None, &q, &body).await
}
