//! Routes under `/subjects`: register, look up, list and read versions, delete.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::json;

use super::wire::{self, Params, SchemaRequest, VersionBody};
use crate::error::RegistryError;
use crate::registry::Registry;
use crate::version::VersionSpec;

/// `GET /subjects`.
pub(crate) async fn list(State(r): State<Registry>, q: Params) -> Result<Response, RegistryError> {
    let subjects = r.subjects(q.flag("deleted")?, q.text("subjectPrefix"))?;
    Ok(wire::json(&subjects))
}

/// `POST /subjects/{subject}/versions`.
pub(crate) async fn register(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
    body: Bytes,
) -> Result<Response, RegistryError> {
    let new = wire::body::<SchemaRequest>(&body)?.into_new(q.flag("normalize")?)?;
    let id = r.register(&subject, new).await?;
    Ok(wire::json(&json!({ "id": id })))
}

/// `POST /subjects/{subject}`: the version holding the given schema.
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

/// `DELETE /subjects/{subject}`.
pub(crate) async fn delete(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    let versions = r.delete_subject(&subject, q.flag("permanent")?).await?;
    Ok(wire::json(&versions))
}

/// `GET /subjects/{subject}/versions`.
pub(crate) async fn versions(
    State(r): State<Registry>,
    Path(subject): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    Ok(wire::json(&r.versions(&subject, q.flag("deleted")?)?))
}

/// `GET /subjects/{subject}/versions/{version}`.
pub(crate) async fn version(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
    q: Params,
) -> Result<Response, RegistryError> {
    let v = r.version(&subject, VersionSpec::parse(&version)?, q.flag("deleted")?)?;
    Ok(wire::json(&VersionBody::from(&v)))
}

/// `GET /subjects/{subject}/versions/{version}/schema`.
pub(crate) async fn version_schema(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
    q: Params,
) -> Result<Response, RegistryError> {
    let v = r.version(&subject, VersionSpec::parse(&version)?, q.flag("deleted")?)?;
    Ok(wire::raw(&v.schema.text))
}

/// `GET /subjects/{subject}/versions/{version}/referencedby`.
pub(crate) async fn referenced_by(
    State(r): State<Registry>,
    Path((subject, version)): Path<(String, String)>,
) -> Result<Response, RegistryError> {
    let ids = r.referenced_by(&subject, VersionSpec::parse(&version)?)?;
    Ok(wire::json(&ids))
}

/// `DELETE /subjects/{subject}/versions/{version}`.
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
