//! Routes under `/schemas`: schemas by id, every schema, and the schema types served.

use axum::extract::{Path, State};
use axum::response::Response;
use serde::Serialize;

use super::api_doc::{DeletedQuery, SchemasQuery, TAG};
use super::wire::{self, ErrorBody, MEDIA_TYPE, Params, SubjectVersionRef, VersionBody};
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

/// A schema by its id.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = SchemaById)]
struct ById<'a> {
    /// `JSON` or `PROTOBUF`; left out for Avro.
    #[serde(rename = "schemaType", skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    schema_type: Option<&'static str>,
    /// The schemas it imports; left out when none.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    #[schema(required = false)]
    references: &'a [Reference],
    /// The schema's text.
    schema: &'a str,
}

/// Reads a schema by its id (`GET /schemas/ids/{id}`).
#[utoipa::path(get, path = "/schemas/ids/{id}", operation_id = "registry_get_schema_by_id", tag = TAG,
    params(("id" = u32, Path, description = "The schema's id")),
    responses(
        (status = 200, description = "The schema", body = ById, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40403", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
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

/// Reads a schema's text alone by its id (`GET /schemas/ids/{id}/schema`).
#[utoipa::path(get, path = "/schemas/ids/{id}/schema", operation_id = "registry_get_schema_text_by_id", tag = TAG,
    params(("id" = u32, Path, description = "The schema's id")),
    responses(
        (status = 200, description = "The schema's text alone (JSON for Avro and JSON Schema)", body = Value, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40403", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn by_id_raw(
    State(r): State<Registry>,
    Path(id): Path<String>,
) -> Result<Response, RegistryError> {
    Ok(wire::raw(&r.schema_by_id(parse_id(&id)?)?.text))
}

/// Lists the subjects that hold a schema (`GET /schemas/ids/{id}/subjects`).
#[utoipa::path(get, path = "/schemas/ids/{id}/subjects", operation_id = "registry_get_schema_subjects", tag = TAG,
    params(("id" = u32, Path, description = "The schema's id"), DeletedQuery),
    responses(
        (status = 200, description = "The subjects that hold it", body = Vec<String>, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40403", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
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

/// Lists the subjects' versions that hold a schema (`GET /schemas/ids/{id}/versions`).
#[utoipa::path(get, path = "/schemas/ids/{id}/versions", operation_id = "registry_get_schema_versions", tag = TAG,
    params(("id" = u32, Path, description = "The schema's id"), DeletedQuery),
    responses(
        (status = 200, description = "The subjects and versions that hold it", body = Vec<SubjectVersionRef>, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40403", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn id_versions(
    State(r): State<Registry>,
    Path(id): Path<String>,
    q: Params,
) -> Result<Response, RegistryError> {
    let pairs: Vec<_> = r
        .id_versions(parse_id(&id)?, q.flag("deleted")?)?
        .into_iter()
        .map(|(subject, version)| SubjectVersionRef { subject, version })
        .collect();
    Ok(wire::json(&pairs))
}

/// Lists every version's schema (`GET /schemas`).
#[utoipa::path(get, path = "/schemas", operation_id = "registry_list_schemas", tag = TAG,
    params(SchemasQuery),
    responses(
        (status = 200, description = "Every version's schema", body = Vec<VersionBody>, content_type = MEDIA_TYPE),
    ))]
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

/// A record decoded by its schema id.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = DecodedRecord)]
struct DecodedBody {
    /// The schema id the record carries.
    id: u32,
    /// `AVRO`, `JSON` or `PROTOBUF`.
    #[serde(rename = "schemaType")]
    schema_type: &'static str,
    /// For Protobuf: the full name of the message the record's indexes name.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    message: Option<String>,
    /// The record as JSON: Avro as `apache-avro` converts it (bytes as arrays of
    /// numbers), Protobuf as proto3's JSON mapping (64-bit integers as strings, bytes as
    /// base64), JSON Schema as sent.
    #[schema(value_type = Value)]
    value: serde_json::Value,
}

/// Decodes a record (a key or value in Confluent's wire format: magic byte 0, the
/// schema id as 4 big-endian bytes, the payload) with the schema its id names
/// (`POST /schemas/decode`; kafko's own, not Confluent's).
#[utoipa::path(post, path = "/schemas/decode", operation_id = "registry_decode_record", tag = TAG,
    request_body(content = Vec<u8>, content_type = "application/octet-stream",
        description = "The record's key or value, as stored (at most 1 MiB)"),
    responses(
        (status = 200, description = "The record decoded", body = DecodedBody, content_type = MEDIA_TYPE),
        (status = 404, description = "error_code 40403: no schema with the record's id", body = ErrorBody, content_type = MEDIA_TYPE),
        (status = 422, description = "error_code 422: not in the wire format, or the schema does not read it", body = ErrorBody, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn decode(
    State(r): State<Registry>,
    body: axum::body::Bytes,
) -> Result<Response, RegistryError> {
    let d = r.decode(&body)?;
    Ok(wire::json(&DecodedBody {
        id: d.id,
        schema_type: d.schema_type.as_str(),
        message: d.message,
        value: d.value,
    }))
}

/// Lists the schema types served (`GET /schemas/types`).
#[utoipa::path(get, path = "/schemas/types", operation_id = "registry_list_schema_types", tag = TAG,
    responses(
        (status = 200, description = "The schema types served", body = Vec<String>, content_type = MEDIA_TYPE),
    ))]
pub(crate) async fn types() -> Response {
    wire::json(&SERVED_TYPES)
}
