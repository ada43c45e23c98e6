//! Extractors whose rejections are problem+json like every other error: [`Json`],
//! [`Query`], [`Path`] and [`Body`] (the raw body, with the size limit enforced before
//! reading when `Content-Length` says too much, and while reading for chunked bodies;
//! a `Content-Encoding` other than `identity` is a 415: bodies are never inflated, and
//! compressed bytes are never stored as if they were the value).

use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::state::AppState;

/// The request body, at most `max_body_bytes`.
pub(crate) struct Body(pub(crate) Bytes);

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload_too_large",
        format!("request body exceeds the limit of {limit} bytes"),
    )
    .with("max_body_bytes", serde_json::json!(limit))
}

impl FromRequest<AppState> for Body {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        if let Some(encoding) = req.headers().get(header::CONTENT_ENCODING) {
            let encoding = encoding.to_str().unwrap_or("?").trim();
            if !encoding.eq_ignore_ascii_case("identity") {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "unsupported_content_encoding",
                    format!(
                        "Content-Encoding '{encoding}' is not supported; send the body uncompressed (topics compress batches themselves)"
                    ),
                ));
            }
        }
        let limit = state.config.max_body_bytes;
        let declared = req
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large(limit));
        }
        match Bytes::from_request(req, state).await {
            Ok(b) => Ok(Body(b)),
            Err(BytesRejection::FailedToBufferBody(e))
                if e.status() == StatusCode::PAYLOAD_TOO_LARGE =>
            {
                Err(too_large(limit))
            }
            Err(e) => Err(ApiError::bad_request(
                "invalid_body",
                format!("could not read the request body: {e}"),
            )),
        }
    }
}

/// The media type of a request without parameters, lowercased (`""` when absent).
pub(crate) fn media_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Whether a media type is JSON (`application/json` or `application/*+json`).
pub(crate) fn is_json(media: &str) -> bool {
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

/// Parses a JSON body, mapping serde's message into a 400 `invalid_json`.
pub(crate) fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request("invalid_json", format!("invalid JSON body: {e}")))
}

/// A JSON body; requires a JSON content type (415 otherwise).
pub(crate) struct Json<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<AppState> for Json<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let media = media_type(req.headers());
        if !is_json(&media) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!("expected Content-Type: application/json, got '{media}'"),
            ));
        }
        let Body(bytes) = Body::from_request(req, state).await?;
        parse_json(&bytes).map(Json)
    }
}

/// An optional JSON body: an empty body or `null` is `None`.
pub(crate) struct OptionalJson<T>(pub(crate) Option<T>);

impl<T: DeserializeOwned> FromRequest<AppState> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let media = media_type(req.headers());
        let Body(bytes) = Body::from_request(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(None));
        }
        if !is_json(&media) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!("expected Content-Type: application/json, got '{media}'"),
            ));
        }
        parse_json::<Option<T>>(&bytes).map(OptionalJson)
    }
}

/// Query parameters; a bad one is 400 `invalid_query`.
pub(crate) struct Query<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))
    }
}

/// Path parameters; a bad one (say a non-numeric partition) is 400 `invalid_path`.
pub(crate) struct Path<T>(pub(crate) T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Path<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|e| ApiError::bad_request("invalid_path", e.body_text()))
    }
}

/// Rejects names that break Kafka's rule before they reach any lookup (400).
pub(crate) fn check_topic(name: &str) -> Result<(), ApiError> {
    kafko_core::naming::validate_name(name).map_err(ApiError::from)
}

/// Rejects bad group names (same rule as topics) as 400 `invalid_group_name`.
pub(crate) fn check_group(name: &str) -> Result<(), ApiError> {
    kafko_core::naming::validate_name(name)
        .map_err(|e| ApiError::invalid_name(e, "invalid_group_name"))
}

/// Rejects bad member ids (same rule as topics) as 400 `invalid_member_id`.
pub(crate) fn check_member(id: &str) -> Result<(), ApiError> {
    kafko_core::naming::validate_name(id)
        .map_err(|e| ApiError::invalid_name(e, "invalid_member_id"))
}
