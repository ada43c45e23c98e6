//! v3 produce: `POST /v3/clusters/{c}/topics/{t}/records` takes one JSON record object,
//! or many concatenated (`{…}{…}` or one per line) in one body, and answers 200 at once
//! with a chunked stream of one receipt per record, in order, each written as soon as
//! its record is appended: a client may keep the request body open and send records
//! while reading receipts. A record that fails gets `{"error_code","message"}` in its
//! place and the others go on; a body that stops being JSON ends the stream with one
//! last error receipt.

use std::time::Duration;

use axum::body::{Body, BodyDataStream};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::{Buf, Bytes, BytesMut};
use futures_util::StreamExt;
use kafko_core::{Header, Producer, ProducerRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::InCluster;
use super::metadata::topic_not_found;
use crate::rest_proxy::api_doc::V3TopicPath;
use crate::rest_proxy::content_type::V3_JSON;
use crate::rest_proxy::error::{ErrorBody, INVALID_PAYLOAD, PARTITION_NOT_FOUND, ProxyError};
use crate::rest_proxy::producer_for;
use crate::rest_proxy::timestamp::{format_ms, parse_ms};
use crate::state::AppState;

/// Receipts buffered ahead of a slow reader before appends wait for it.
const RECEIPTS_AHEAD: usize = 64;

/// A key or a value: its type and data.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV3Data)]
pub(crate) struct Data {
    /// `BINARY` (base64 data), `JSON` (any JSON value, the default) or `STRING`.
    #[serde(default, rename = "type")]
    #[schema(pattern = r"^(BINARY|JSON|STRING)$")]
    kind: Option<String>,
    #[serde(default)]
    data: Value,
    /// Schema fields: refused (no schema registry), so not in the document.
    #[serde(default)]
    #[schema(ignore)]
    schema_id: Option<Value>,
    #[serde(default)]
    #[schema(ignore)]
    schema_version: Option<Value>,
    #[serde(default)]
    #[schema(ignore)]
    subject: Option<Value>,
    #[serde(default)]
    #[schema(ignore)]
    subject_name_strategy: Option<Value>,
    #[serde(default)]
    #[schema(ignore)]
    schema: Option<Value>,
}

/// A header; the value is base64.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV3HeaderIn)]
pub(crate) struct HeaderIn {
    name: String,
    #[serde(default)]
    value: Option<String>,
}

/// One record of a v3 produce.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV3RecordIn)]
pub(crate) struct RecordIn {
    #[serde(default)]
    partition_id: Option<i64>,
    #[serde(default, deserialize_with = "crate::rest_proxy::objects")]
    headers: Vec<HeaderIn>,
    #[serde(default)]
    key: Option<Data>,
    #[serde(default)]
    value: Option<Data>,
    /// ISO-8601; default now.
    #[serde(default)]
    timestamp: Option<String>,
}

/// The type and size of a produced key or value.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3DataReceipt)]
pub(crate) struct DataReceipt {
    #[serde(rename = "type")]
    kind: &'static str,
    size: usize,
}

/// A produced record's receipt.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3Receipt)]
pub(crate) struct Receipt {
    /// 200.
    error_code: u32,
    cluster_id: String,
    topic_name: String,
    partition_id: u32,
    offset: u64,
    timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<DataReceipt>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<DataReceipt>,
}

/// What one record of a v3 produce gets: its receipt, or its error.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3ReceiptOrError)]
#[serde(untagged)]
pub(crate) enum Outcome {
    Receipt(Receipt),
    Error(ErrorBody),
}

fn record_error(error_code: u32, message: impl Into<String>) -> ErrorBody {
    ErrorBody {
        error_code,
        message: message.into(),
    }
}

/// Bytes of a key or value and the type name its receipt reports.
fn encode(d: Data, what: &str) -> Result<(Bytes, &'static str), ErrorBody> {
    let schema = d.schema_id.is_some()
        || d.schema_version.is_some()
        || d.subject.is_some()
        || d.subject_name_strategy.is_some()
        || d.schema.is_some();
    let kind = d.kind.as_deref().unwrap_or("JSON").to_ascii_uppercase();
    if schema || matches!(kind.as_str(), "AVRO" | "PROTOBUF" | "JSONSCHEMA") {
        return Err(record_error(
            400,
            format!(
                "The {what} uses a schema-based format; kafko has no schema registry: use BINARY, JSON or STRING"
            ),
        ));
    }
    match (kind.as_str(), d.data) {
        ("BINARY", Value::String(s)) => STANDARD
            .decode(s.as_bytes())
            .map(|b| (Bytes::from(b), "BINARY"))
            .map_err(|e| record_error(400, format!("The {what} is not valid base64: {e}"))),
        ("BINARY", _) => Err(record_error(
            400,
            format!("A BINARY {what} must be a base64 string"),
        )),
        ("STRING", Value::String(s)) => Ok((Bytes::from(s), "STRING")),
        ("STRING", _) => Err(record_error(
            400,
            format!("A STRING {what} must be a string"),
        )),
        ("JSON", v) => serde_json::to_vec(&v)
            .map(|b| (Bytes::from(b), "JSON"))
            .map_err(|e| record_error(400, e.to_string())),
        (other, _) => Err(record_error(400, format!("Unknown {what} type {other}"))),
    }
}

/// Produces one record: its receipt, or its error.
async fn produce_one(
    state: &AppState,
    producer: &Producer,
    cluster_id: &str,
    topic: &str,
    record: Value,
) -> Result<Receipt, ErrorBody> {
    if !record.is_object() {
        return Err(record_error(
            422,
            format!("Unprocessable record: expected an object, got {record}"),
        ));
    }
    let r: RecordIn = serde_json::from_value(record)
        .map_err(|e| record_error(422, format!("Unprocessable record: {e}")))?;
    let (record, key, value) = to_producer_record(r, producer.partitions())?;
    let size = record.size();
    if size > state.config.max_record_bytes {
        return Err(record_error(
            413,
            format!(
                "The record is {size} bytes, larger than the limit of {} bytes",
                state.config.max_record_bytes
            ),
        ));
    }
    let meta = producer.send_record(record).await.map_err(|e| {
        let p = ProxyError::from(e);
        record_error(p.error_code, p.message)
    })?;
    state.metrics.produced(topic, 1, size);
    Ok(Receipt {
        error_code: 200,
        cluster_id: cluster_id.to_owned(),
        topic_name: topic.to_owned(),
        partition_id: meta.partition,
        offset: meta.offset,
        timestamp: format_ms(meta.timestamp),
        key,
        value,
    })
}

/// The record to append (its partition below `partitions`, its timestamp ISO-8601, its
/// key, value and headers decoded), with what the receipt says of its key and value.
fn to_producer_record(
    r: RecordIn,
    partitions: u32,
) -> Result<(ProducerRecord, Option<DataReceipt>, Option<DataReceipt>), ErrorBody> {
    let partition = match r.partition_id {
        None => None,
        Some(p) if p >= 0 && p < i64::from(partitions) => u32::try_from(p).ok(),
        Some(_) => return Err(record_error(PARTITION_NOT_FOUND, "Partition not found.")),
    };
    let timestamp = match &r.timestamp {
        None => None,
        Some(t) => Some(
            parse_ms(t)
                .ok_or_else(|| record_error(400, format!("'{t}' is not an ISO-8601 timestamp")))?,
        ),
    };
    let (key, key_receipt) = split_receipt(r.key.map(|k| encode(k, "key")).transpose()?);
    let (value, value_receipt) = split_receipt(r.value.map(|v| encode(v, "value")).transpose()?);
    let record = ProducerRecord {
        key,
        value,
        headers: decode_headers(r.headers)?,
        timestamp,
        partition,
    };
    Ok((record, key_receipt, value_receipt))
}

/// An encoded key or value, and its receipt.
fn split_receipt(data: Option<(Bytes, &'static str)>) -> (Option<Bytes>, Option<DataReceipt>) {
    match data {
        None => (None, None),
        Some((bytes, kind)) => {
            let receipt = DataReceipt {
                kind,
                size: bytes.len(),
            };
            (Some(bytes), Some(receipt))
        }
    }
}

/// Headers with their base64 values decoded (an absent value is empty).
fn decode_headers(headers: Vec<HeaderIn>) -> Result<Vec<Header>, ErrorBody> {
    headers
        .into_iter()
        .map(|h| {
            let value = match h.value {
                None => Bytes::new(),
                Some(v) => Bytes::from(STANDARD.decode(v.as_bytes()).map_err(|e| {
                    record_error(400, format!("Header '{}' is not valid base64: {e}", h.name))
                })?),
            };
            Ok(Header {
                name: h.name,
                value,
            })
        })
        .collect()
}

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

/// Produces records to a topic, streaming one receipt per record.
#[utoipa::path(post, path = "/v3/clusters/{cluster}/topics/{topic}/records", tag = "rest-proxy-v3",
    params(V3TopicPath),
    request_body(content = RecordIn,
        description = "One record object, or several concatenated (streamed with Transfer-Encoding: chunked)"),
    responses(
        (status = 200, description = "One line per record, in order: its receipt, or the error of a record that failed", body = Outcome),
        (status = 404, description = "Unknown cluster (404) or topic (40403, auto-creation off)", body = ErrorBody),
        (status = 400, description = "The body does not start with a JSON record", body = ErrorBody),
        (status = 413, description = "The first record exceeds the body limit", body = ErrorBody),
        (status = 415, description = "Not application/json", body = ErrorBody),
        (status = 422, description = "error_code 42206: empty body", body = ErrorBody),
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
    let buf = first_record(&mut chunks, idle, state.config.max_body_bytes).await?;
    let (tx, rx) = mpsc::channel::<Bytes>(RECEIPTS_AHEAD);
    let cluster_id = at.urls.id().to_owned();
    tokio::spawn(pump(
        state, producer, cluster_id, topic, buf, chunks, tx, idle,
    ));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(b), rx))
    });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, HeaderValue::from_static(V3_JSON))],
        Body::from_stream(stream),
    )
        .into_response())
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
/// not start with JSON is refused with a status, as on the proxy; once a record came,
/// the answer is the stream of receipts.
async fn first_record(
    chunks: &mut BodyDataStream,
    idle: Duration,
    limit: usize,
) -> Result<BytesMut, ProxyError> {
    let refused = |status, message: String| Err(ProxyError::plain(status, message).v3());
    let mut buf = BytesMut::new();
    loop {
        match next_value(&buf) {
            Next::Value(..) => return Ok(buf),
            Next::Invalid(e) => {
                return refused(StatusCode::BAD_REQUEST, format!("Invalid JSON: {e}"));
            }
            Next::More if buf.len() > limit => {
                return refused(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("A record exceeds the limit of {limit} bytes"),
                );
            }
            Next::More => {}
        }
        match tokio::time::timeout(idle, chunks.next()).await {
            Ok(Some(Ok(chunk))) => buf.extend_from_slice(&chunk),
            Ok(Some(Err(e))) => {
                return refused(StatusCode::BAD_REQUEST, format!("reading the body: {e}"));
            }
            Ok(None) if buf.iter().all(u8::is_ascii_whitespace) => {
                return Err(ProxyError::unprocessable(
                    INVALID_PAYLOAD,
                    "Payload error. Request body is empty. Data is required.",
                )
                .v3());
            }
            Ok(None) => {
                return refused(
                    StatusCode::BAD_REQUEST,
                    "Invalid JSON: the body ended inside a record".to_owned(),
                );
            }
            Err(_) => {
                return refused(
                    StatusCode::REQUEST_TIMEOUT,
                    "no record arrived in time".to_owned(),
                );
            }
        }
    }
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
                    let outcome = match produce_one(&state, &producer, &cluster_id, &topic, v).await
                    {
                        Ok(r) => Outcome::Receipt(r),
                        Err(e) => Outcome::Error(e),
                    };
                    let receipt = line(&outcome);
                    if tx.send(receipt).await.is_err() {
                        return; // The client went away.
                    }
                }
                Next::More => break,
                Next::Invalid(e) => {
                    let _ = tx
                        .send(line(&record_error(400, format!("Invalid JSON: {e}"))))
                        .await;
                    return;
                }
            }
        }
        if ended {
            if buf.iter().any(|b| !b.is_ascii_whitespace()) {
                let _ = tx
                    .send(line(&record_error(
                        400,
                        "Invalid JSON: the body ended inside a record",
                    )))
                    .await;
            }
            return;
        }
        if buf.len() > limit {
            let _ = tx
                .send(line(&record_error(
                    413,
                    format!("A record exceeds the limit of {limit} bytes"),
                )))
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
