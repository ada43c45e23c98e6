//! One record of a v3 produce: its wire form (`RecordIn`, with `BINARY`, `JSON` or
//! `STRING` keys and values and base64 headers), its decoding into a
//! [`ProducerRecord`], its append, and the receipt or error it gets. Type names are
//! upper case, as the proxy's enum spells them; a lower-case one is an unknown type.

use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use kafko_core::{Header, Producer, ProducerRecord, RecordRef};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::rest_proxy::error::{ErrorBody, PARTITION_NOT_FOUND, ProxyError};
use crate::rest_proxy::timestamp::{format_ms, parse_ms};
use crate::state::AppState;
use kafko_service::produce::{Policy, Produce};

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
    #[serde(default, deserialize_with = "crate::rest_proxy::optional_object")]
    key: Option<Data>,
    #[serde(default, deserialize_with = "crate::rest_proxy::optional_object")]
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

impl From<Result<Receipt, ProxyError>> for Outcome {
    fn from(result: Result<Receipt, ProxyError>) -> Self {
        match result {
            Ok(receipt) => Outcome::Receipt(receipt),
            Err(e) => Outcome::Error(e.body()),
        }
    }
}

fn bad_record(message: impl Into<String>) -> ProxyError {
    ProxyError::plain(StatusCode::BAD_REQUEST, message)
}

/// Bytes of a key or value and the type name its receipt reports.
fn encode(d: Data, what: &str) -> Result<(Bytes, &'static str), ProxyError> {
    let schema = d.schema_id.is_some()
        || d.schema_version.is_some()
        || d.subject.is_some()
        || d.subject_name_strategy.is_some()
        || d.schema.is_some();
    let kind = d.kind.as_deref().unwrap_or("JSON");
    if schema || matches!(kind, "AVRO" | "PROTOBUF" | "JSONSCHEMA") {
        return Err(bad_record(format!(
            "The {what} uses a schema-based format; kafko has no schema registry: use BINARY, JSON or STRING"
        )));
    }
    match (kind, d.data) {
        ("BINARY", Value::String(s)) => STANDARD
            .decode(s.as_bytes())
            .map(|b| (Bytes::from(b), "BINARY"))
            .map_err(|e| bad_record(format!("The {what} is not valid base64: {e}"))),
        ("BINARY", _) => Err(bad_record(format!(
            "A BINARY {what} must be a base64 string"
        ))),
        ("STRING", Value::String(s)) => Ok((Bytes::from(s), "STRING")),
        ("STRING", _) => Err(bad_record(format!("A STRING {what} must be a string"))),
        ("JSON", v) => serde_json::to_vec(&v)
            .map(|b| (Bytes::from(b), "JSON"))
            .map_err(|e| bad_record(e.to_string())),
        (other, _) => Err(bad_record(format!(
            "Unknown {what} type '{other}': BINARY, JSON or STRING"
        ))),
    }
}

/// Appends one record (a JSON value off the body), the `nth` of its request, under the
/// server's produce policy: its receipt, or its error.
pub(crate) async fn produce_one(
    state: &AppState,
    producer: &Producer,
    cluster_id: &str,
    (topic, nth): (&str, usize),
    record: Value,
) -> Result<Receipt, ProxyError> {
    let unprocessable = |detail: String| {
        ProxyError::plain(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unprocessable record: {detail}"),
        )
    };
    if !record.is_object() {
        return Err(unprocessable(format!("expected an object, got {record}")));
    }
    let r: RecordIn = serde_json::from_value(record).map_err(|e| unprocessable(e.to_string()))?;
    let (record, key, value) = to_producer_record(r, producer.partitions())?;
    let mut produce = Produce::new(producer, Policy::of(&state.config)).after(nth - 1);
    produce.push(RecordRef::from(&record))?;
    let receipt = produce.send().await?;
    state
        .metrics
        .produced(topic, receipt.records, receipt.bytes);
    // A send of one record that succeeds has stored it.
    let meta = receipt.sent.records().next().ok_or_else(|| {
        ProxyError::plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error; see the server log",
        )
    })?;
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
) -> Result<(ProducerRecord, Option<DataReceipt>, Option<DataReceipt>), ProxyError> {
    let partition = match r.partition_id {
        None => None,
        Some(p) if p >= 0 && p < i64::from(partitions) => u32::try_from(p).ok(),
        Some(_) => {
            return Err(ProxyError::new(
                StatusCode::NOT_FOUND,
                PARTITION_NOT_FOUND,
                "Partition not found.",
            ));
        }
    };
    let timestamp = match &r.timestamp {
        None => None,
        Some(t) => Some(
            parse_ms(t).ok_or_else(|| bad_record(format!("'{t}' is not an ISO-8601 timestamp")))?,
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
fn decode_headers(headers: Vec<HeaderIn>) -> Result<Vec<Header>, ProxyError> {
    headers
        .into_iter()
        .map(|h| {
            let value = match h.value {
                None => Bytes::new(),
                Some(v) => Bytes::from(STANDARD.decode(v.as_bytes()).map_err(|e| {
                    bad_record(format!("Header '{}' is not valid base64: {e}", h.name))
                })?),
            };
            Ok(Header {
                name: h.name,
                value,
            })
        })
        .collect()
}
