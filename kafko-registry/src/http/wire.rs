//! The registry's HTTP wire: its media type, answers as JSON, errors as
//! `{"error_code":…,"message":…}`, request bodies (any JSON media type) and query
//! flags.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::RegistryError;
use crate::record::Reference;
use crate::registry::{NewSchema, SubjectVersion};
use crate::schema::SchemaType;

/// The media type of every answer.
pub const MEDIA_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// An answer: status and JSON body.
pub(crate) fn json<T: Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => (StatusCode::OK, [(header::CONTENT_TYPE, MEDIA_TYPE)], body).into_response(),
        Err(e) => RegistryError::Store(e.to_string()).into_response(),
    }
}

/// A schema text as its own answer (`…/schema` routes).
pub(crate) fn raw(text: &str) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, MEDIA_TYPE)],
        text.to_owned(),
    )
        .into_response()
}

/// An error answer: Confluent's `error_code` and a message.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = RegistryErrorBody)]
pub(crate) struct ErrorBody {
    /// Confluent's error code (40401 subject not found, 409 incompatible, 42201 invalid
    /// schema, …), or the HTTP status.
    error_code: u32,
    /// What went wrong.
    message: String,
}

impl IntoResponse for RegistryError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error_code: self.error_code(),
            message: self.to_string(),
        };
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        (self.status(), [(header::CONTENT_TYPE, MEDIA_TYPE)], bytes).into_response()
    }
}

/// The answer for a route the registry does not serve.
pub(crate) async fn not_found() -> Response {
    let body = ErrorBody {
        error_code: 404,
        message: "HTTP 404 Not Found".to_owned(),
    };
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, MEDIA_TYPE)],
        serde_json::to_vec(&body).unwrap_or_default(),
    )
        .into_response()
}

/// Reads a JSON body, whatever JSON media type it is sent as.
pub(crate) fn body<T: DeserializeOwned>(bytes: &Bytes) -> Result<T, RegistryError> {
    serde_json::from_slice(bytes)
        .map_err(|e| RegistryError::BadRequest(format!("the request body is not valid: {e}")))
}

/// The query parameters of a request.
pub(crate) struct Params(HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = RegistryError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, RegistryError> {
        let Query(map) = Query::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(|e| RegistryError::BadRequest(e.body_text()))?;
        Ok(Params(map))
    }
}

impl Params {
    /// A boolean flag (`true`/`false` in any case, absent: false).
    pub(crate) fn flag(&self, name: &str) -> Result<bool, RegistryError> {
        match self.0.get(name).map(String::as_str) {
            None => Ok(false),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(other) => Err(RegistryError::BadRequest(format!(
                "query parameter {name} must be true or false, got '{}'",
                other.chars().take(32).collect::<String>()
            ))),
        }
    }

    /// A string parameter, empty when absent.
    pub(crate) fn text(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }
}

/// The body of a register, lookup or compatibility request.
#[derive(serde::Deserialize, utoipa::ToSchema)]
pub(crate) struct SchemaRequest {
    /// The schema's text: Avro or JSON Schema as JSON text, Protobuf as `.proto` text or
    /// a base64 `FileDescriptorProto`.
    schema: String,
    /// `AVRO` (when left out), `JSON` or `PROTOBUF`.
    #[serde(rename = "schemaType")]
    schema_type: Option<String>,
    /// The subjects' versions the schema imports.
    references: Option<Vec<Reference>>,
    /// Data contracts are not served: null, empty, or left out.
    #[schema(value_type = Option<Object>)]
    metadata: Option<Value>,
    /// Data contracts are not served: null, empty, or left out.
    #[serde(rename = "ruleSet")]
    #[schema(value_type = Option<Object>)]
    rule_set: Option<Value>,
    /// In IMPORT mode: the id to register the schema under (0 or -1: none).
    #[schema(value_type = Option<i64>, minimum = -1, maximum = 2147483647)]
    id: Option<serde_json::Number>,
    /// In IMPORT mode: the version to register the schema as (0 or -1: none).
    #[schema(value_type = Option<i64>, minimum = -1, maximum = 2147483647)]
    version: Option<serde_json::Number>,
}

impl SchemaRequest {
    /// The schema the request gives.
    pub(crate) fn into_new(self, normalize: bool) -> Result<NewSchema, RegistryError> {
        for (name, v) in [("metadata", &self.metadata), ("ruleSet", &self.rule_set)] {
            let empty = match v {
                None | Some(Value::Null) => true,
                Some(Value::Object(m)) => m.values().all(Value::is_null),
                Some(_) => false,
            };
            if !empty {
                return Err(RegistryError::InvalidSchema(format!(
                    "{name} is not supported by this registry (send null or leave it out)"
                )));
            }
        }
        Ok(NewSchema {
            schema_type: SchemaType::parse(self.schema_type.as_deref())?,
            text: self.schema,
            references: self.references.unwrap_or_default(),
            normalize,
            id: positive(self.id.as_ref(), "id")?,
            version: positive(self.version.as_ref(), "version")?,
        })
    }
}

/// An id or version a body may give: none for 0, -1 or absent, else 1..=2^31-1. A
/// JSON number with a zero fraction (`58.0`) is that integer, as JSON Schema reads it.
fn positive(n: Option<&serde_json::Number>, what: &str) -> Result<Option<u32>, RegistryError> {
    let Some(n) = n else { return Ok(None) };
    let whole = n.as_i64().or_else(|| {
        n.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() <= 2_147_483_648.0)
            .map(|f| f as i64)
    });
    match whole {
        Some(-1 | 0) => Ok(None),
        Some(w) if (1..=i64::from(i32::MAX)).contains(&w) => Ok(u32::try_from(w).ok()),
        _ => Err(RegistryError::BadRequest(format!("invalid {what} {n}"))),
    }
}

/// A subject's version as answered.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = SubjectVersionSchema)]
pub(crate) struct VersionBody<'a> {
    /// The subject.
    subject: &'a str,
    /// The version under the subject.
    version: u32,
    /// The schema's id.
    id: u32,
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

impl<'a> From<&'a SubjectVersion> for VersionBody<'a> {
    fn from(v: &'a SubjectVersion) -> Self {
        VersionBody {
            subject: &v.subject,
            version: v.version,
            id: v.id,
            schema_type: (v.schema.schema_type != SchemaType::Avro)
                .then(|| v.schema.schema_type.as_str()),
            references: &v.schema.references,
            schema: &v.schema.text,
        }
    }
}

/// A registration's answer: the schema's id.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct Registered {
    /// The schema's id (the same for the same schema under any subject).
    pub(crate) id: u32,
}

/// A subject and version that hold a schema.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct SubjectVersionRef {
    /// The subject.
    pub(crate) subject: String,
    /// The version.
    pub(crate) version: u32,
}

/// A compatibility level as read (or the one a delete removed).
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct LevelBody {
    /// `BACKWARD`, `BACKWARD_TRANSITIVE`, `FORWARD`, `FORWARD_TRANSITIVE`, `FULL`,
    /// `FULL_TRANSITIVE` or `NONE`.
    #[serde(rename = "compatibilityLevel")]
    pub(crate) compatibility_level: &'static str,
}

/// A compatibility level as set.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct LevelSet {
    /// The level now in force.
    pub(crate) compatibility: &'static str,
}

/// A mode: `READWRITE`, `READONLY`, `READONLY_OVERRIDE` or `IMPORT`.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct ModeBody {
    /// The mode.
    pub(crate) mode: &'static str,
}

/// A compatibility check's answer.
#[derive(Serialize, utoipa::ToSchema)]
pub(crate) struct CompatibilityAnswer {
    /// Whether the schema passes the check.
    pub(crate) is_compatible: bool,
    /// With `verbose=true`: why not, one line each (empty when compatible).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    pub(crate) messages: Option<Vec<String>>,
}

#[cfg(test)]
mod tests {
    use super::positive;

    #[test]
    fn ids_and_versions_in_a_body() {
        let read = |text: &str| positive(Some(&serde_json::from_str(text).unwrap()), "id");
        assert_eq!(positive(None, "id").unwrap(), None);
        for none in ["0", "-1", "0.0", "-1.0"] {
            assert_eq!(read(none).unwrap(), None, "{none}");
        }
        assert_eq!(read("58").unwrap(), Some(58));
        assert_eq!(read("58.0").unwrap(), Some(58));
        assert_eq!(read("2147483647").unwrap(), Some(2_147_483_647));
        for bad in [
            "-2",
            "58.5",
            "2147483648",
            "2147483648.0",
            "1e300",
            "-6324082969214848",
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }
}
