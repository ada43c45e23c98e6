//! The v2 API: metadata, produce and consumer instances, in `application/vnd.kafka.v2+json`.

pub(crate) mod assignment;
pub(crate) mod consumers;
pub(crate) mod instances;
pub(crate) mod metadata;
pub(crate) mod produce;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;

use super::content_type::V2_JSON;

/// A 200 answer in `application/vnd.kafka.v2+json`.
pub(crate) fn v2_json<T: Serialize>(value: &T) -> Response {
    json_as(StatusCode::OK, V2_JSON, value)
}

/// `value` as JSON with the given status and media type.
pub(crate) fn json_as<T: Serialize>(
    status: StatusCode,
    media: &'static str,
    value: &T,
) -> Response {
    match to_json(value) {
        Ok(body) => (
            status,
            [(header::CONTENT_TYPE, HeaderValue::from_static(media))],
            body,
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

/// `value` rendered as JSON; a value that cannot be is a 500.
pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<Bytes, super::error::ProxyError> {
    to_json_sized(value, 0)
}

/// `value` rendered as JSON into a body of about `estimate` bytes (a large one is written
/// into a pooled buffer, see `crate::json`); a value that cannot be is a 500.
pub(crate) fn to_json_sized<T: Serialize>(
    value: &T,
    estimate: usize,
) -> Result<Bytes, super::error::ProxyError> {
    crate::json::to_bytes(value, estimate).map_err(|e| {
        super::error::ProxyError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            super::error::KAFKA_ERROR,
            format!("could not render the answer: {e}"),
        )
    })
}
