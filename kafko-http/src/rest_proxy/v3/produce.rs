//! v3 produce: `POST /v3/clusters/{c}/topics/{t}/records`. A body of one record sent
//! with a `Content-Length` is answered like any request: 200 and its receipt, or the
//! record's error with its status. Any other body (chunked, or several records
//! concatenated, `{…}{…}` or one per line) is a stream: it is answered 200 at once with a
//! chunked stream of one receipt per record, in order, each written as soon as its record
//! is appended, so a client may keep the body open and send records while reading
//! receipts. A record that fails gets `{"error_code","message"}` in its place and the
//! others go on; a body that stops being JSON, pauses longer than
//! `--body-read-timeout-ms`, holds a record past [`record_limit`] or more records than
//! `--max-records-per-request` ends the stream with one last error line. Each record is
//! appended under the server's produce policy (`service::produce`), as on `/v1`.
//!
//! The body is read incrementally (`scan`): each byte is looked at once, and only the
//! record being read is held, so a large record in small chunks costs time linear in its
//! size and memory bounded by the record limit, not by `--max-body-bytes`.

use std::time::Duration;

use axum::body::{Body, BodyDataStream};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use kafko_core::Producer;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::InCluster;
use super::metadata::topic_not_found;
use super::record::{Outcome, RecordIn, produce_one};
use super::scan::{Next, Values};
use crate::rest_proxy::api_doc::V3TopicPath;
use crate::rest_proxy::content_type::V3_JSON;
use crate::rest_proxy::error::{ErrorBody, INVALID_PAYLOAD, ProxyError};
use crate::state::AppState;
use kafko_service::failure::{Failure, Kind};
use kafko_service::produce::{self, Policy};

/// Receipts buffered ahead of a slow reader before appends wait for it.
const RECEIPTS_AHEAD: usize = 64;

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
        (status = 413, description = "The first record exceeds the body or JSON record limit (413) or --max-record-bytes (42207); a stream past --max-records-per-request ends with an error line 41301", body = ErrorBody),
        (status = 415, description = "Not application/json", body = ErrorBody),
        (status = 422, description = "error_code 42206: empty body; 422: the one record is not a record", body = ErrorBody),
        (status = 503, description = "error_code 50003: the partition's write queue is full (refused at once, as on /v1) or the server is stopping; nothing was appended", body = ErrorBody),
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
    let producer = producer(&state, &topic).await?;
    let mut chunks = body.into_data_stream();
    let idle = state.config.body_read_timeout;
    let limit = record_limit(&state.config);
    let (mut values, first) = first_record(&mut chunks, idle, limit).await?;
    let cluster_id = at.urls.id().to_owned();
    // A body whose length is declared and within the record limit is read whole, to
    // tell one record from several; any other holds several (one record never exceeds
    // the limit) and is streamed from its first record on.
    let declared = crate::extract::declared_length(&headers);
    if declared
        .and_then(|n| usize::try_from(n).ok())
        .is_some_and(|n| n <= limit)
    {
        read_rest(&mut chunks, &mut values, idle).await?;
        if values.only_whitespace_left() {
            let receipt = produce_one(&state, &producer, &cluster_id, (&topic, 1), first)
                .await
                .map_err(ProxyError::v3)?;
            let receipt = line(&Outcome::Receipt(receipt));
            return Ok(v3_answer(Body::from(receipt)));
        }
    }
    let (tx, rx) = mpsc::channel::<Bytes>(RECEIPTS_AHEAD);
    let stream = Stream {
        state,
        producer,
        cluster_id,
        topic,
        tx,
        idle,
        limit,
        sent: 0,
    };
    tokio::spawn(stream.pump(chunks, first, values));
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

/// The most bytes one record may take on the wire, as JSON: twice `--max-record-bytes`
/// (room for base64's 4/3 and escaped strings) plus 64 KiB for the envelope (partition,
/// timestamp, header names), within `--max-body-bytes`. A record still open past it is
/// refused (413) without reading the rest.
pub(crate) fn record_limit(config: &kafko_service::config::ServerConfig) -> usize {
    config
        .max_record_bytes
        .saturating_mul(2)
        .saturating_add(64 * 1024)
        .min(config.max_body_bytes)
}

/// The refusal of a record still open past `limit` bytes.
fn too_large(limit: usize) -> ProxyError {
    ProxyError::plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "A record exceeds the limit of {limit} bytes of JSON (twice --max-record-bytes plus 64 KiB)"
        ),
    )
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

/// Reads the body until it holds a whole first record; returns the reader (with what
/// followed the record) and the record. An empty body or one that does not start with
/// JSON is refused with a status, as on the proxy.
async fn first_record(
    chunks: &mut BodyDataStream,
    idle: Duration,
    limit: usize,
) -> Result<(Values, Value), ProxyError> {
    let mut values = Values::default();
    let mut ended = false;
    loop {
        match values.next(ended) {
            Next::Value(v) => return Ok((values, v)),
            Next::Invalid(e) => {
                return Err(refused(
                    StatusCode::BAD_REQUEST,
                    format!("Invalid JSON: {e}"),
                ));
            }
            Next::More if values.buffered() > limit => return Err(too_large(limit).v3()),
            Next::More if ended => {
                return Err(if values.buffered() == 0 {
                    ProxyError::unprocessable(
                        INVALID_PAYLOAD,
                        "Payload error. Request body is empty. Data is required.",
                    )
                    .v3()
                } else {
                    refused(
                        StatusCode::BAD_REQUEST,
                        "Invalid JSON: the body ended inside a record",
                    )
                });
            }
            Next::More => {}
        }
        match next_chunk(chunks, idle).await? {
            Some(chunk) => values.push(&chunk),
            None => ended = true,
        }
    }
}

/// Reads on to the body's end (a declared length within the record limit).
async fn read_rest(
    chunks: &mut BodyDataStream,
    values: &mut Values,
    idle: Duration,
) -> Result<(), ProxyError> {
    while let Some(chunk) = next_chunk(chunks, idle).await? {
        values.push(&chunk);
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

/// A streamed produce: where its records and receipts go, and its limits.
struct Stream {
    state: AppState,
    producer: Producer,
    cluster_id: String,
    topic: String,
    tx: mpsc::Sender<Bytes>,
    /// `--body-read-timeout-ms`: the longest pause between two chunks.
    idle: Duration,
    /// [`record_limit`].
    limit: usize,
    /// Records of the stream so far, counted against `--max-records-per-request`.
    sent: usize,
}

impl Stream {
    /// Appends `first`, then reads records off the body as they arrive, sending one
    /// receipt per record; a stream that cannot go on ends with an error line.
    async fn pump(mut self, mut chunks: BodyDataStream, first: Value, mut values: Values) {
        if !self.append(first).await {
            return;
        }
        let mut ended = false;
        loop {
            // Every whole record received, in order.
            loop {
                match values.next(ended) {
                    Next::Value(v) => {
                        if !self.append(v).await {
                            return; // The client went away.
                        }
                    }
                    Next::More => break,
                    Next::Invalid(e) => {
                        return self
                            .end(StatusCode::BAD_REQUEST, format!("Invalid JSON: {e}"))
                            .await;
                    }
                }
            }
            if ended {
                if !values.only_whitespace_left() {
                    self.end(
                        StatusCode::BAD_REQUEST,
                        "Invalid JSON: the body ended inside a record".to_owned(),
                    )
                    .await;
                }
                return;
            }
            if values.buffered() > self.limit {
                let e = too_large(self.limit);
                return self.end(e.status, e.message).await;
            }
            let next = tokio::select! {
                n = tokio::time::timeout(self.idle, chunks.next()) => n,
                () = self.state.shutdown_requested() => {
                    return self
                        .end(StatusCode::SERVICE_UNAVAILABLE, "The server is stopping".to_owned())
                        .await;
                }
            };
            match next {
                Ok(Some(Ok(chunk))) => values.push(&chunk),
                Ok(None) => ended = true,
                Ok(Some(Err(e))) => {
                    return self
                        .end(StatusCode::BAD_REQUEST, format!("reading the body: {e}"))
                        .await;
                }
                Err(_) => {
                    let ms = self.idle.as_millis();
                    return self
                        .end(
                            StatusCode::REQUEST_TIMEOUT,
                            format!("No data arrived for {ms} ms (--body-read-timeout-ms): the stream ends"),
                        )
                        .await;
                }
            }
        }
    }

    /// Appends one record and sends its receipt; false once the client went away, or
    /// once the stream holds more records than `--max-records-per-request` (it ends
    /// with that error).
    async fn append(&mut self, record: Value) -> bool {
        self.sent += 1;
        let policy = Policy::of(&self.state.config);
        if let Err(e) = policy.limits.check_count(self.sent) {
            let _ = self.tx.send(line(&ProxyError::from(e).body())).await;
            return false;
        }
        let Stream {
            state,
            producer,
            cluster_id,
            topic,
            sent,
            ..
        } = self;
        let outcome: Outcome =
            produce_one(state, producer, cluster_id, (topic.as_str(), *sent), record)
                .await
                .into();
        self.tx.send(line(&outcome)).await.is_ok()
    }

    /// Sends the stream's last line, an error.
    async fn end(&self, status: StatusCode, message: String) {
        let _ = self.tx.send(stream_error(status, message)).await;
    }
}

/// The topic's producer; an unknown topic is created first when the server auto-creates
/// topics, else it is v3's unknown topic (404, 40403), as is a name no topic can have.
async fn producer(state: &AppState, topic: &str) -> Result<Producer, ProxyError> {
    if kafko_core::naming::validate_name(topic).is_err() {
        return Err(topic_not_found(topic));
    }
    produce::producer(&state.kafko, &state.config.auto_create, topic)
        .await
        .map_err(|e| match Failure::from(e) {
            Failure {
                kind: Kind::TopicNotFound { .. },
                ..
            } => topic_not_found(topic),
            other => ProxyError::from(other).v3(),
        })
}

/// The last line of a stream that cannot go on.
fn stream_error(status: StatusCode, message: impl Into<String>) -> Bytes {
    line(&ProxyError::plain(status, message).body())
}
