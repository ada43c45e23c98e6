//! Extractors whose rejections are problem+json like every other error: [`Json`],
//! [`Query`], [`Path`] and [`Body`] (the raw body, with the size limit enforced before
//! reading when `Content-Length` says too much, and while reading for chunked bodies;
//! a `Content-Encoding` other than `identity` is a 415: bodies are never inflated, and
//! compressed bytes are never stored as if they were the value).
//!
//! Every request body goes through [`Body`], so `max_body_bytes` is enforced here and
//! only here (no axum body extractor, hence no `DefaultBodyLimit` layer). A body refused
//! for its size is read on and discarded, up to [`DRAIN_MAX_BYTES`] and
//! [`DRAIN_MAX_TIME`], before the 413 goes out. Closing a socket that still holds unread
//! request bytes makes the kernel answer with a reset, which can destroy the 413 before
//! the client reads it (the client sees "connection reset" instead of the typed error).
//! Bodies larger than that bound still get the 413 at once, and the connection closes.

use std::borrow::Cow;
use std::time::Duration;

use axum::body::BodyDataStream;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use bytes::{Bytes, BytesMut};
use futures_util::{FutureExt, StreamExt};
use hyper::body::Body as _;
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

    /// The headers are checked before the future is made, so it keeps only the body stream
    /// and the limits, not the request.
    fn from_request(
        req: Request,
        state: &AppState,
    ) -> impl Future<Output = Result<Self, ApiError>> + Send {
        let checked = check_encoding(req.headers()).map(|()| {
            // hyper's exact size is the `Content-Length` it parsed: no second look at the
            // header. A body without one (chunked) still has the header read.
            let declared = req
                .body()
                .size_hint()
                .exact()
                .or_else(|| declared_length(req.headers()));
            (req.into_body().into_data_stream(), declared)
        });
        let limit = state.config.max_body_bytes;
        let idle = state.config.body_read_timeout;
        async move {
            let (mut stream, declared) = checked?;
            if let Some(n) = declared.filter(|&n| n > limit as u64) {
                if n <= DRAIN_MAX_BYTES as u64 {
                    drain(&mut stream).await;
                }
                return Err(too_large(limit));
            }
            read_limited(stream, limit, idle, declared).await.map(Body)
        }
    }
}

/// The body's declared `Content-Length`, if it has one (a chunked body has none).
pub(crate) fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// 415 for a `Content-Encoding` other than `identity`.
fn check_encoding(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(encoding) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(());
    };
    let encoding = encoding.to_str().unwrap_or("?").trim();
    if encoding.eq_ignore_ascii_case("identity") {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_content_encoding",
        format!(
            "Content-Encoding '{encoding}' is not supported; send the body uncompressed (topics compress batches themselves)"
        ),
    ))
}

/// Most bytes of a refused body read and discarded before its 413 (see the module doc).
pub(crate) const DRAIN_MAX_BYTES: usize = 1024 * 1024;
/// Longest time spent discarding a refused body.
pub(crate) const DRAIN_MAX_TIME: Duration = Duration::from_millis(500);

/// Reads the whole body if it is at most `limit` bytes, with at most `idle` between two
/// pieces of it (408 `body_timeout` otherwise). A one-chunk body (the usual case with
/// `Content-Length`) is returned without a copy; one of several pieces is gathered into
/// one buffer of its `declared` length, when it has one (no regrowth, which copied a
/// 290 KB JSON batch ~4 times over).
async fn read_limited(
    mut stream: BodyDataStream,
    limit: usize,
    idle: Duration,
    declared: Option<u64>,
) -> Result<Bytes, ApiError> {
    let read_error = |e: axum::Error| {
        ApiError::bad_request(
            "invalid_body",
            format!("could not read the request body: {e}"),
        )
    };
    let mut first: Option<Bytes> = None;
    let mut rest: Option<BytesMut> = None;
    let mut total = 0usize;
    loop {
        // A piece that is already there is taken without a timer (the common one-chunk
        // body); only a read that would wait is bounded.
        let next = match stream.next().now_or_never() {
            Some(next) => Ok(next),
            None => tokio::time::timeout(idle, stream.next()).await,
        };
        let chunk = match next {
            Ok(Some(chunk)) => chunk.map_err(read_error)?,
            Ok(None) => break,
            Err(_) => {
                return Err(ApiError::new(
                    StatusCode::REQUEST_TIMEOUT,
                    "body_timeout",
                    format!(
                        "the request body paused for more than {} ms after {total} bytes",
                        idle.as_millis()
                    ),
                ));
            }
        };
        total += chunk.len();
        if total > limit {
            drain(&mut stream).await;
            return Err(too_large(limit));
        }
        match (&mut first, &mut rest) {
            (None, _) => first = Some(chunk),
            (Some(head), None) => {
                // The declared length is within `limit` (checked before reading).
                let whole = declared
                    .and_then(|n| usize::try_from(n).ok())
                    .unwrap_or(0)
                    .max(head.len() + chunk.len());
                let mut buf = BytesMut::with_capacity(whole);
                buf.extend_from_slice(head);
                buf.extend_from_slice(&chunk);
                rest = Some(buf);
            }
            (Some(_), Some(buf)) => buf.extend_from_slice(&chunk),
        }
    }
    Ok(match (first, rest) {
        (_, Some(buf)) => buf.freeze(),
        (Some(head), None) => head,
        (None, None) => Bytes::new(),
    })
}

/// Reads and discards what is left of a refused body, within the drain bounds.
async fn drain(stream: &mut BodyDataStream) {
    let discard = async {
        let mut discarded = 0usize;
        while let Some(Ok(chunk)) = stream.next().await {
            discarded += chunk.len();
            if discarded >= DRAIN_MAX_BYTES {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(DRAIN_MAX_TIME, discard).await;
}

/// The media type of a request without parameters, lowercased (`""` when absent).
/// Borrowed from the header unless it has capitals: every produce reads it, and clients
/// send it lowercase.
pub(crate) fn media_type(headers: &HeaderMap) -> Cow<'_, str> {
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map_or("", str::trim);
    if essence.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(essence.to_ascii_lowercase())
    } else {
        Cow::Borrowed(essence)
    }
}

/// Whether a media type is JSON (`application/json` or `application/*+json`).
pub(crate) fn is_json(media: &str) -> bool {
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

/// Parses a JSON body, mapping serde's message into a 400 `invalid_json`.
pub(crate) fn parse_json<'a, T: serde::Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
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
        parse_request_json(&bytes).map(Json)
    }
}

/// Parses a small JSON request object (configs, commits, seeks; not produce batches)
/// as JSON Schema reads it, which is how the OpenAPI document describes it: a known
/// top-level member set to `null` is absent when the type has no meaning for `null`
/// there, and an integral number such as `4096.0` is an integer. Tried only after the
/// plain parse failed, so every body that parsed before keeps its meaning (`null` still
/// clears `retention_ms`). Found by schemathesis: both forms are schema-valid and were
/// 400s.
pub(crate) fn parse_request_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    // serde's derived structs also read JSON arrays (`[null, null]` filled fields by
    // position and was a 200); every request body here is an object.
    let start = body.iter().find(|b| !b.is_ascii_whitespace());
    if !matches!(start, Some(b'{') | Some(b'n')) {
        return Err(ApiError::bad_request(
            "invalid_json",
            "invalid JSON body: expected a JSON object",
        ));
    }
    let first = match parse_json(body) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Err(first);
    };
    // Numbers first: a `null` that means something (clearing `retention_ms` in a PATCH)
    // is only dropped when the body still fails with it.
    if integral_floats_as_integers(&mut value)
        && let Ok(v) = serde_json::from_value(value.clone())
    {
        return Ok(v);
    }
    let serde_json::Value::Object(map) = &mut value else {
        return Err(first);
    };
    let nulls: Vec<String> = map
        .iter()
        .filter(|(_, v)| v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    if nulls.is_empty() {
        return Err(first);
    }
    // Only members the type knows may go: an unknown one stays an error, null or not.
    for key in &nulls {
        let probe = serde_json::json!({ key.as_str(): null });
        if let Err(e) = serde_json::from_value::<T>(probe)
            && e.to_string().starts_with("unknown field")
        {
            return Err(first);
        }
        map.remove(key);
    }
    serde_json::from_value(value).map_err(|_| first)
}

/// Turns integral floats (`4096.0`) into integers, throughout; whether any changed.
pub(crate) fn integral_floats_as_integers(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Object(map) => map
            .values_mut()
            .fold(false, |changed, v| integral_floats_as_integers(v) | changed),
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, v| integral_floats_as_integers(v) | changed),
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            let integral = f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15;
            if integral {
                // Integral and below 2^53 in magnitude: exact in either integer type.
                #[allow(clippy::cast_possible_truncation)]
                let int = if f < 0.0 {
                    Value::from(f as i64)
                } else {
                    Value::from(f as u64)
                };
                *value = int;
            }
            integral
        }
        _ => false,
    }
}

/// An optional JSON body: an empty body is `None`. A body that is there must be a `T`
/// (`null` is not one: the spec describes an optional body as absent, not null; nor is
/// whitespace, which is no JSON document).
pub(crate) struct OptionalJson<T>(pub(crate) Option<T>);

impl<T: DeserializeOwned> FromRequest<AppState> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let media = media_type(req.headers()).into_owned();
        let Body(bytes) = Body::from_request(req, state).await?;
        if bytes.is_empty() {
            return Ok(OptionalJson(None));
        }
        if !is_json(&media) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                format!("expected Content-Type: application/json, got '{media}'"),
            ));
        }
        parse_request_json::<T>(&bytes).map(|v| OptionalJson(Some(v)))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn content_type(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::CONTENT_TYPE, value.parse().expect("header value"));
        headers
    }

    #[test]
    fn media_type_drops_parameters_and_case() {
        let plain = content_type("application/json");
        assert_eq!(media_type(&plain), "application/json");
        assert!(matches!(media_type(&plain), Cow::Borrowed(_)));
        let shouted = content_type(" Application/X-NDJSON ; charset=UTF-8");
        assert_eq!(media_type(&shouted), "application/x-ndjson");
        assert_eq!(
            media_type(&content_type("text/plain;charset=utf-8")),
            "text/plain"
        );
        assert_eq!(media_type(&HeaderMap::new()), "");
    }
}
