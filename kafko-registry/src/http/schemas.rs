//! Routes under `/schemas`: schemas by id, every schema, and the schema types served.

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Serialize;
use serde_json::json;

use super::wire::{self, Params, VersionBody};
use crate::error::RegistryError;
use crate::record::Reference;
use crate::registry::Registry;
use crate::schema::{SERVED_TYPES, SchemaType};

fn parse_id(id: &str) -> Result<u32, RegistryError> {
    id.parse::<u32>().ok().filter(|id| *id > 0).ok_or_else(|| {
        RegistryError::SchemaNotFound(format!(
            "Schema {} not found",
            id.chars().take(32).collect::<String>()
        ))
    })
}

#[derive(Serialize)]
struct ById<'a> {
    #[serde(rename = "schemaType", skip_serializing_if = "Option::is_none")]
    schema_type: Option<&'static str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    references: &'a [Reference],
    schema: &'a str,
}

/// `GET /schemas/ids/{id}`.
pub(crate) async fn by_id(
    State(r): State<Registry>,
    Path(id): Path<String>,
) -> Result<Response, RegistryError> {
    let s = r.schema_by_id(parse_id(&id)?)?;
    Ok(wire::json(&ById {
        schema_type: (s.schema_type != SchemaType::Avro).then(|| s.schema_type.as_str()),
        references: &s.references,
        schema: &s.text,
    }))
}

/// `GET /schemas/ids/{id}/schema`.
pub(crate) async fn by_id_raw(
    State(r): State<Registry>,
    Path(id): Path<String>,
) -> Result<Response, RegistryError> {
    Ok(wire::raw(&r.schema_by_id(parse_id(&id)?)?.text))
}

/// `GET /schemas/ids/{id}/subjects`.
pub(crate) async fn id_subjects(
    State(r): State<Registry>,
    Path(id): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    let mut subjects: Vec<String> = r
        .id_versions(parse_id(&id)?, q.flag("deleted")?)?
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    subjects.dedup();
    Ok(wire::json(&subjects))
}

/// `GET /schemas/ids/{id}/versions`.
pub(crate) async fn id_versions(
    State(r): State<Registry>,
    Path(id): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    let pairs: Vec<_> = r
        .id_versions(parse_id(&id)?, q.flag("deleted")?)?
        .into_iter()
        .map(|(subject, version)| json!({ "subject": subject, "version": version }))
        .collect();
    Ok(wire::json(&pairs))
}

/// `GET /schemas`: every version's schema (`subjectPrefix`, `deleted`, `latestOnly`,
/// `offset`, `limit`).
pub(crate) async fn list(State(r): State<Registry>, q: Params) -> Result<Response, RegistryError> {
    let all = r.all_schemas(
        q.text("subjectPrefix"),
        q.flag("deleted")?,
        q.flag("latestOnly")?,
    )?;
    let number = |name: &str| -> Result<Option<usize>, RegistryError> {
        match q.text(name) {
            "" => Ok(None),
            n => n
                .parse::<i64>()
                .map(|n| usize::try_from(n).ok())
                .map_err(|_| {
                    RegistryError::BadRequest(format!("query parameter {name} must be a number"))
                }),
        }
    };
    let offset = number("offset")?.unwrap_or(0);
    let limit = number("limit")?.filter(|l| *l > 0).unwrap_or(usize::MAX);
    let page: Vec<VersionBody<'_>> = all
        .iter()
        .skip(offset)
        .take(limit)
        .map(VersionBody::from)
        .collect();
    Ok(wire::json(&page))
}

/// `GET /schemas/types`.
pub(crate) async fn types() -> Response {
    wire::json(&SERVED_TYPES)
}
