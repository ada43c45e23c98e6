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

#[derive(Serialize)]
struct ErrorBody<'a> {
    error_code: u32,
    message: &'a str,
}

impl IntoResponse for RegistryError {
    fn into_response(self) -> Response {
        let message = self.to_string();
        let body = ErrorBody {
            error_code: self.error_code(),
            message: &message,
        };
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        (self.status(), [(header::CONTENT_TYPE, MEDIA_TYPE)], bytes).into_response()
    }
}

/// The answer for a route the registry does not serve.
pub(crate) async fn not_found() -> Response {
    let body = ErrorBody {
        error_code: 404,
        message: "HTTP 404 Not Found",
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
#[derive(serde::Deserialize)]
pub(crate) struct SchemaRequest {
    schema: String,
    #[serde(rename = "schemaType")]
    schema_type: Option<String>,
    references: Option<Vec<Reference>>,
    metadata: Option<Value>,
    #[serde(rename = "ruleSet")]
    rule_set: Option<Value>,
    id: Option<i64>,
    version: Option<i64>,
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
        let positive = |n: Option<i64>, what: &str| -> Result<Option<u32>, RegistryError> {
            match n {
                None | Some(-1) | Some(0) => Ok(None),
                Some(n) => u32::try_from(n)
                    .ok()
                    .filter(|n| *n <= i32::MAX as u32)
                    .map(Some)
                    .ok_or_else(|| RegistryError::BadRequest(format!("invalid {what} {n}"))),
            }
        };
        Ok(NewSchema {
            schema_type: SchemaType::parse(self.schema_type.as_deref())?,
            text: self.schema,
            references: self.references.unwrap_or_default(),
            normalize,
            id: positive(self.id, "id")?,
            version: positive(self.version, "version")?,
        })
    }
}

/// A subject's version as answered.
#[derive(Serialize)]
pub(crate) struct VersionBody<'a> {
    subject: &'a str,
    version: u32,
    id: u32,
    #[serde(rename = "schemaType", skip_serializing_if = "Option::is_none")]
    schema_type: Option<&'static str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    references: &'a [Reference],
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
