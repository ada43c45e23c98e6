//! Routes under `/subjects`: register, look up, list and read versions, delete.

use super::api_doc::{
    DeletedQuery, LookupQuery, NormalizeQuery, PermanentQuery, SubjectsQuery, TAG,
};
use super::wire::{self, ErrorBody, MEDIA_TYPE, Params, Registered, SchemaRequest, VersionBody};
use crate::error::RegistryError;
use crate::registry::Registry;
use crate::version::VersionSpec;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;

/// Lists the subjects (`GET /subjects`).
#[utoipa::path(get, path = "/subjects", operation_id = "registry_list_subjects", tag = TAG,
    params(SubjectsQuery),
    responses(
        (status = 200, description = "The subjects", body = Vec<String>, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn list(State(r): State<Registry>, q: Params) -> Result<Response, RegistryError> {
    let subjects = r.subjects(q.flag("deleted")?, q.text("subjectPrefix"))?;
    Ok(wire::json(&subjects))
}

/// Registers a schema under a subject, or answers the id it has there
/// (`POST /subjects/{subject}/versions`).
#[utoipa::path(post, path = "/subjects/{subject}/versions", operation_id = "registry_register_schema", tag = TAG,
    params(("subject" = String, Path, pattern = r"^[^\u0000-\u001F\u007F-\u009F]{1,255}$", description = "The subject (by convention <topic>-key or <topic>-value): 1 to 255 characters, none a control character"), NormalizeQuery),
    request_body(content = SchemaRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The schema's id", body = Registered, content_type = MEDIA_TYPE),
        (status = 409, description = "error_code 409: incompatible with the versions the level checks", body = ErrorBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42201 (invalid schema) or 42205 (a read-only mode, a limit)", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn register(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    let new = wire::body::<SchemaRequest>(&body)?.into_new(q.flag("normalize")?)?;
    let id = r.register(&subject, new).await?;
    Ok(wire::json(&Registered { id }))
}

/// Finds the version of a subject that holds a schema (`POST /subjects/{subject}`).
#[utoipa::path(post, path = "/subjects/{subject}", operation_id = "registry_lookup_schema", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), LookupQuery),
    request_body(content = SchemaRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The version that holds the schema", body = VersionBody, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401 (subject) or 40403 (schema not under it)", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn lookup(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    let new = wire::body::<SchemaRequest>(&body)?.into_new(q.flag("normalize")?)?;
    let v = r.lookup(&subject, &new, q.flag("deleted")?)?;
    Ok(wire::json(&VersionBody::from(&v)))
}

/// Deletes a subject, softly or for good (`DELETE /subjects/{subject}`).
#[utoipa::path(delete, path = "/subjects/{subject}", operation_id = "registry_delete_subject", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), PermanentQuery),
    responses(
        (status = 200, description = "The versions deleted", body = Vec<u32>, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401, 40404 (already soft-deleted) or 40405 (not soft-deleted first)", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn delete(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    let versions = r.delete_subject(&subject, q.flag("permanent")?).await?;
    Ok(wire::json(&versions))
}

/// Lists a subject's versions (`GET /subjects/{subject}/versions`).
#[utoipa::path(get, path = "/subjects/{subject}/versions", operation_id = "registry_list_versions", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), DeletedQuery),
    responses(
        (status = 200, description = "The subject's versions", body = Vec<u32>, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn versions(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    Ok(wire::json(&r.versions(&subject, q.flag("deleted")?)?))
}

/// Reads a subject's version with its schema and id
/// (`GET /subjects/{subject}/versions/{version}`).
#[utoipa::path(get, path = "/subjects/{subject}/versions/{version}", operation_id = "registry_get_version", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), ("version" = String, Path, pattern = r"^([1-9][0-9]{0,9}|latest|-1)$", description = "A version number (1 to 2147483647), latest, or -1 (the latest)"), DeletedQuery),
    responses(
        (status = 200, description = "The version", body = VersionBody, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401 or 40402", body = ErrorBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42202: not a version", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn version(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
    q: Params,
) -> Result<Response, RegistryError> {
    let v = r.version(&subject, VersionSpec::parse(&version)?, q.flag("deleted")?)?;
    Ok(wire::json(&VersionBody::from(&v)))
}

/// Reads a version's schema text alone
/// (`GET /subjects/{subject}/versions/{version}/schema`).
#[utoipa::path(get, path = "/subjects/{subject}/versions/{version}/schema", operation_id = "registry_get_version_schema", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), ("version" = String, Path, pattern = r"^([1-9][0-9]{0,9}|latest|-1)$", description = "A version number (1 to 2147483647), latest, or -1 (the latest)"), DeletedQuery),
    responses(
        (status = 200, description = "The schema's text alone (JSON for Avro and JSON Schema)", body = Value, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401 or 40402", body = ErrorBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42202: not a version", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn version_schema(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
    q: Params,
) -> Result<Response, RegistryError> {
    let v = r.version(&subject, VersionSpec::parse(&version)?, q.flag("deleted")?)?;
    Ok(wire::raw(&v.schema.text))
}

/// Lists the ids of the schemas that reference a version
/// (`GET /subjects/{subject}/versions/{version}/referencedby`).
#[utoipa::path(get, path = "/subjects/{subject}/versions/{version}/referencedby", operation_id = "registry_referenced_by", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), ("version" = String, Path, pattern = r"^([1-9][0-9]{0,9}|latest|-1)$", description = "A version number (1 to 2147483647), latest, or -1 (the latest)")),
    responses(
        (status = 200, description = "The ids of the schemas that reference it", body = Vec<u32>, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401 or 40402", body = ErrorBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42202: not a version", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn referenced_by(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
) -> Result<Response, RegistryError> {
    let ids = r.referenced_by(&subject, VersionSpec::parse(&version)?)?;
    Ok(wire::json(&ids))
}

/// Deletes a version, softly or for good
/// (`DELETE /subjects/{subject}/versions/{version}`).
#[utoipa::path(delete, path = "/subjects/{subject}/versions/{version}", operation_id = "registry_delete_version", tag = TAG,
    params(("subject" = String, Path, description = "The subject (by convention <topic>-key or <topic>-value)"), ("version" = String, Path, pattern = r"^([1-9][0-9]{0,9}|latest|-1)$", description = "A version number (1 to 2147483647), latest, or -1 (the latest)"), PermanentQuery),
    responses(
        (status = 200, description = "The version deleted", body = u32, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40401, 40402, 40406 (already soft-deleted) or 40407 (not soft-deleted first)", body = ErrorBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 42202 (not a version) or 42206 (referenced)", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn delete_version(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
    q: Params,
) -> Result<Response, RegistryError> {
    let spec = VersionSpec::parse(&version)?;
    let v = r
        .delete_version(&subject, spec, q.flag("permanent")?)
        .await?;
    Ok(wire::json(&v))
}
