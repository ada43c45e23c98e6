//! v3 produce: `POST /v3/clusters/{c}/topics/{t}/records`. A body of one record sent
//! with a `Content-Length` is answered like any request: 200 and its receipt, or the
//! record's error with its status. Any other body (chunked, or several records
//! concatenated, `{…}{…}` or one per line) is a stream: it is answered 200 at once with a
//! chunked stream of one receipt per record, in order, each written as soon as its record
//! is appended, so a client may keep the body open and send records while reading
//! receipts. A record that fails gets `{"error_code","message"}` in its place and the
//! others go on; a body that stops being JSON ends the stream with one last error.

use std::time::Duration;

use axum::body::{Body, BodyDataStream};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Buf, Bytes, BytesMut};
use futures_util::StreamExt;
use kafko_core::Producer;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::InCluster;
use super::metadata::topic_not_found;
use super::record::{Outcome, RecordIn, produce_one};
use crate::rest_proxy::api_doc::V3TopicPath;
use crate::rest_proxy::content_type::V3_JSON;
use crate::rest_proxy::error::{ErrorBody, INVALID_PAYLOAD, ProxyError};
use crate::rest_proxy::producer_for;
use crate::state::AppState;

/// Receipts buffered ahead of a slow reader before appends wait for it.
const RECEIPTS_AHEAD: usize = 64;

/// What the next bytes of the buffer hold.
enum Next {
    /// A whole JSON value and the bytes it took.
    Value(Value, usize),
    /// Only whitespace, or the start of a value: read more.
    More,
    /// Not JSON.
    Invalid(String),
}

fn next_value(buf: &[u8]) -> Next {
    let start = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
    if start == buf.len() {
        return Next::More;
    }
    let mut values = serde_json::Deserializer::from_slice(&buf[start..]).into_iter::<Value>();
    match values.next() {
        Some(Ok(v)) => Next::Value(v, start + values.byte_offset()),
        Some(Err(e)) if e.is_eof() => Next::More,
        Some(Err(e)) => Next::Invalid(e.to_string()),
        None => Next::More,
    }
}

fn line<T: Serialize>(value: &T) -> Bytes {
    let mut out = serde_json::to_vec(value).unwrap_or_default();
    out.push(b'\n');
    Bytes::from(out)
}

/// Produces records to a topic: one record's answer, or a stream of receipts.
#[utoipa::path(post, path = "/v3/clusters/{cluster}/topics/{topic}/records", tag = "rest-proxy-v3",
    params(V3TopicPath),
    request_body(content = RecordIn,
        description = "One record object, or several concatenated (streamed with Transfer-Encoding: chunked)"),
    responses(
        (status = 200, description = "The record's receipt; for a stream, one line per record, in order: its receipt, or the error of a record that failed", body = Outcome),
        (status = 400, description = "The body does not start with a JSON record, or the one record's key, value, headers or timestamp cannot be decoded", body = ErrorBody),
        (status = 404, description = "Unknown cluster (404), topic (40403, auto-creation off) or the one record's partition (40402)", body = ErrorBody),
        (status = 413, description = "The first record exceeds the body or record limit", body = ErrorBody),
        (status = 415, description = "Not application/json", body = ErrorBody),
        (status = 422, description = "error_code 42206: empty body; 422: the one record is not a record", body = ErrorBody),
        (status = 503, description = "error_code 50003: the partition is busy or the server is stopping; nothing was appended", body = ErrorBody),
        (status = 507, description = "error_code 50002: out of disk space; nothing was appended", body = ErrorBody),
    ))]
pub(crate) async fn produce(
    at: InCluster<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ProxyError> {
    let (_, topic) = at.path;
    let state = at.state;
    check_media(&headers)?;
    let producer = producer_for(&state, &topic).await.map_err(|e| {
        if e.error_code == crate::rest_proxy::error::TOPIC_NOT_FOUND {
            topic_not_found(&topic)
        } else {
            e.v3()
        }
    })?;
    let mut chunks = body.into_data_stream();
    let idle = state.config.request_timeout;
    let limit = state.config.max_body_bytes;
    let mut buf = first_record(&mut chunks, idle, limit).await?;
    let cluster_id = at.urls.id().to_owned();
    // A body whose length is declared and within the limit is read whole, to tell one
    // record from several; any other is streamed from its first record on.
    let declared = crate::extract::declared_length(&headers);
    if let Some(length) = declared
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= limit)
    {
        read_to(&mut chunks, &mut buf, length, idle).await?;
        if let Some(record) = sole_record(&buf) {
            let receipt = produce_one(&state, &producer, &cluster_id, &topic, record)
                .await
                .map_err(ProxyError::v3)?;
            let receipt = line(&Outcome::Receipt(receipt));
            return Ok(v3_answer(Body::from(receipt)));
        }
    }
    let (tx, rx) = mpsc::channel::<Bytes>(RECEIPTS_AHEAD);
    tokio::spawn(pump(
        state, producer, cluster_id, topic, buf, chunks, tx, idle,
    ));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    });
    Ok(v3_answer(Body::from_stream(stream)))
}

/// A 200 with a v3 body.
fn v3_answer(body: Body) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, HeaderValue::from_static(V3_JSON))],
        body,
    )
        .into_response()
}

/// The body's record, if it holds exactly one (and whitespace).
fn sole_record(buf: &[u8]) -> Option<Value> {
    match next_value(buf) {
        Next::Value(v, used) if buf[used..].iter().all(u8::is_ascii_whitespace) => Some(v),
        _ => None,
    }
}

/// Records are JSON, not compressed: 415 otherwise.
fn check_media(headers: &HeaderMap) -> Result<(), ProxyError> {
    let media = crate::extract::media_type(headers);
    if !(media.is_empty() || crate::extract::is_json(&media)) {
        return Err(ProxyError::plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("HTTP 415 Unsupported Media Type: records are application/json, not '{media}'"),
        )
        .v3());
    }
    if headers
        .get(header::CONTENT_ENCODING)
        .is_some_and(|v| !v.as_bytes().eq_ignore_ascii_case(b"identity"))
    {
        return Err(ProxyError::plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "compressed request bodies are not accepted",
        )
        .v3());
    }
    Ok(())
}

/// Reads the body until it holds a whole first record. An empty body or one that does
/// not start with JSON is refused with a status, as on the proxy.
async fn first_record(
    chunks: &mut BodyDataStream,
    idle: Duration,
    limit: usize,
) -> Result<BytesMut, ProxyError> {
    let mut buf = BytesMut::new();
    loop {
        match next_value(&buf) {
            Next::Value(..) => return Ok(buf),
            Next::Invalid(e) => {
                return Err(refused(
                    StatusCode::BAD_REQUEST,
                    format!("Invalid JSON: {e}"),
                ));
            }
            Next::More if buf.len() > limit => {
                return Err(refused(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("A record exceeds the limit of {limit} bytes"),
                ));
            }
            Next::More => {}
        }
        match next_chunk(chunks, idle).await? {
            Some(chunk) => buf.extend_from_slice(&chunk),
            None if buf.iter().all(u8::is_ascii_whitespace) => {
                return Err(ProxyError::unprocessable(
                    INVALID_PAYLOAD,
                    "Payload error. Request body is empty. Data is required.",
                )
                .v3());
            }
            None => {
                return Err(refused(
                    StatusCode::BAD_REQUEST,
                    "Invalid JSON: the body ended inside a record",
                ));
            }
        }
    }
}

/// Reads on until the buffer holds `length` bytes or the body ends.
async fn read_to(
    chunks: &mut BodyDataStream,
    buf: &mut BytesMut,
    length: usize,
    idle: Duration,
) -> Result<(), ProxyError> {
    while buf.len() < length {
        match next_chunk(chunks, idle).await? {
            Some(chunk) => buf.extend_from_slice(&chunk),
            None => break,
        }
    }
    Ok(())
}

/// The body's next chunk, `None` at its end; a read error is 400, a silence of `idle` 408.
async fn next_chunk(
    chunks: &mut BodyDataStream,
    idle: Duration,
) -> Result<Option<Bytes>, ProxyError> {
    match tokio::time::timeout(idle, chunks.next()).await {
        Ok(Some(Ok(chunk))) => Ok(Some(chunk)),
        Ok(None) => Ok(None),
        Ok(Some(Err(e))) => Err(refused(
            StatusCode::BAD_REQUEST,
            format!("reading the body: {e}"),
        )),
        Err(_) => Err(refused(
            StatusCode::REQUEST_TIMEOUT,
            "no record arrived in time",
        )),
    }
}

/// A refusal before the stream began, with its status.
fn refused(status: StatusCode, message: impl Into<String>) -> ProxyError {
    ProxyError::plain(status, message).v3()
}

/// Reads records off the body as they arrive and sends one receipt per record.
#[allow(clippy::too_many_arguments)]
async fn pump(
    state: AppState,
    producer: Producer,
    cluster_id: String,
    topic: String,
    mut buf: BytesMut,
    mut chunks: BodyDataStream,
    tx: mpsc::Sender<Bytes>,
    idle: Duration,
) {
    let limit = state.config.max_body_bytes;
    let mut ended = false;
    loop {
        // Every whole record in the buffer, in order.
        loop {
            match next_value(&buf) {
                Next::Value(v, used) => {
                    buf.advance(used);
                    let outcome: Outcome = produce_one(&state, &producer, &cluster_id, &topic, v)
                        .await
                        .into();
                    let receipt = line(&outcome);
                    if tx.send(receipt).await.is_err() {
                        return; // The client went away.
                    }
                }
                Next::More => break,
                Next::Invalid(e) => {
                    let _ = tx
                        .send(stream_error(
                            StatusCode::BAD_REQUEST,
                            format!("Invalid JSON: {e}"),
                        ))
                        .await;
                    return;
                }
            }
        }
        if ended {
            if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                let _ = tx
                    .send(stream_error(
                        StatusCode::BAD_REQUEST,
                        "Invalid JSON: the body ended inside a record",
                    ))
                    .await;
            }
            return;
        }
        if buf.len() > limit {
            let _ = tx
                .send(stream_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("A record exceeds the limit of {limit} bytes"),
                ))
                .await;
            return;
        }
        let next = tokio::select! {
            n = tokio::time::timeout(idle, chunks.next()) => n,
            () = state.shutdown_requested() => return,
        };
        match next {
            Ok(Some(Ok(chunk))) => buf.extend_from_slice(&chunk),
            Ok(None) => ended = true,
            Ok(Some(Err(_))) | Err(_) => return,
        }
    }
}

/// The last line of a stream that cannot go on.
fn stream_error(status: StatusCode, message: impl Into<String>) -> Bytes {
    line(&ProxyError::plain(status, message).body())
}
