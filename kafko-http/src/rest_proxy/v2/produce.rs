//! v2 produce: `POST /topics/{t}` and `POST /topics/{t}/partitions/{p}` with
//! `{"records":[{"key","value","partition"?}]}` in the binary (base64) or json embedded
//! format. The answer is 200 with one offset per record; a record that cannot be
//! written (an unknown partition) gets its `error_code` and `error` inside the 200, as
//! on the proxy, and does not stop the others. The records are appended under the
//! server's produce policy (`service::produce`: its limits, a full write queue
//! refused), as on `/v1`.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use kafko_core::RecordRef;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::metadata::check_partition;
use super::v2_json;
use crate::rest_proxy::api_doc::{
    V2NotJson, V2PartitionNotFound, V2PartitionPath, V2ProduceRefusals, V2TopicPath,
};
use crate::rest_proxy::content_type::{EmbeddedFormat, no_schema_registry, produce_format};
use crate::rest_proxy::error::{
    ErrorBody, INVALID_PAYLOAD, PARTITION_NOT_FOUND, ProxyError, ProxyResult,
};
use crate::rest_proxy::{ProxyBody, ProxyPath, parse_body, producer_for};
use crate::state::AppState;
use kafko_service::produce::{Policy, Produce};

/// One record of a v2 produce.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV2ProduceRecord)]
pub(crate) struct ProduceRecord {
    /// Binary: base64 string; json: any JSON value. Absent or null: no key.
    #[serde(default)]
    key: Option<Value>,
    /// Binary: base64 string; json: any JSON value.
    #[serde(default)]
    value: Option<Value>,
    /// Explicit partition (topic produce only); otherwise murmur2 of the key.
    #[serde(default)]
    partition: Option<u32>,
}

/// A v2 produce body.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV2ProduceRequest)]
pub(crate) struct ProduceRequest {
    #[schema(min_items = 1)]
    #[serde(deserialize_with = "crate::rest_proxy::objects")]
    records: Vec<ProduceRecord>,
    /// Schema fields: refused (no schema registry), so not in the document.
    #[serde(default)]
    #[schema(ignore)]
    key_schema: Option<Value>,
    #[serde(default)]
    #[schema(ignore)]
    value_schema: Option<Value>,
    #[serde(default)]
    #[schema(ignore)]
    key_schema_id: Option<Value>,
    #[serde(default)]
    #[schema(ignore)]
    value_schema_id: Option<Value>,
}

/// Where one record went, or why it did not.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2PartitionOffset)]
pub(crate) struct PartitionOffset {
    partition: Option<u32>,
    offset: Option<u64>,
    error_code: Option<u32>,
    error: Option<String>,
}

/// The answer to a v2 produce.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2ProduceResponse)]
pub(crate) struct ProduceResponse {
    offsets: Vec<PartitionOffset>,
    key_schema_id: Option<i64>,
    value_schema_id: Option<i64>,
}

/// Produces to a topic (murmur2 of the key picks the partition, as on `/v1`).
#[utoipa::path(post, path = "/topics/{topic}", tag = "rest-proxy-v2",
    params(V2TopicPath),
    request_body(content(
        (ProduceRequest = "application/vnd.kafka.binary.v2+json"),
        (ProduceRequest = "application/vnd.kafka.json.v2+json"),
    )),
    responses(
        (status = 200, description = "One offset (or error) per record, in order", body = ProduceResponse),
        V2NotJson,
        (status = 404, description = "error_code 40401: unknown topic (auto-creation off)", body = ErrorBody),
        V2ProduceRefusals,
        (status = 422, description = "error_code 42205 (schema formats), 42206 (bad payload), or 422 (wrong body shape)", body = ErrorBody),
    ))]
pub(crate) async fn produce_to_topic(
    State(state): State<AppState>,
    ProxyPath(topic): ProxyPath<String>,
    headers: HeaderMap,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<Response> {
    produce(&state, &topic, None, &headers, &body).await
}

/// Produces to one partition.
#[utoipa::path(post, path = "/topics/{topic}/partitions/{partition}", tag = "rest-proxy-v2",
    params(V2PartitionPath),
    request_body(content(
        (ProduceRequest = "application/vnd.kafka.binary.v2+json"),
        (ProduceRequest = "application/vnd.kafka.json.v2+json"),
    )),
    responses(
        (status = 200, description = "One offset per record, in order", body = ProduceResponse),
        V2NotJson,
        V2PartitionNotFound,
        V2ProduceRefusals,
        (status = 422, description = "error_code 42205, 42206 or 422", body = ErrorBody),
    ))]
pub(crate) async fn produce_to_partition(
    State(state): State<AppState>,
    ProxyPath((topic, partition)): ProxyPath<(String, u32)>,
    headers: HeaderMap,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<Response> {
    check_partition(&state, &topic, partition)?;
    produce(&state, &topic, Some(partition), &headers, &body).await
}

/// Decodes one key or value in the request's embedded format.
fn decode(v: Option<Value>, format: EmbeddedFormat, what: &str) -> ProxyResult<Option<Bytes>> {
    match (v, format) {
        (None | Some(Value::Null), _) => Ok(None),
        (Some(Value::String(s)), EmbeddedFormat::Binary) => STANDARD
            .decode(s.as_bytes())
            .map(|b| Some(Bytes::from(b)))
            .map_err(|e| {
                ProxyError::unprocessable(
                    INVALID_PAYLOAD,
                    format!("Payload error. The {what} is not valid base64: {e}"),
                )
            }),
        (Some(_), EmbeddedFormat::Binary) => Err(ProxyError::unprocessable(
            INVALID_PAYLOAD,
            format!("Payload error. A binary {what} must be a base64 string"),
        )),
        (Some(v), _) => serde_json::to_vec(&v)
            .map(|b| Some(Bytes::from(b)))
            .map_err(|e| ProxyError::unprocessable(INVALID_PAYLOAD, format!("Payload error. {e}"))),
    }
}

async fn produce(
    state: &AppState,
    topic: &str,
    partition: Option<u32>,
    headers: &HeaderMap,
    body: &[u8],
) -> ProxyResult<Response> {
    let format = produce_format(headers)?;
    let request = checked_request(body)?;
    let offsets = send(state, topic, partition, format, request.records).await?;
    Ok(v2_json(&ProduceResponse {
        offsets,
        key_schema_id: None,
        value_schema_id: None,
    }))
}

/// The body as a produce request: no schema fields (42205: no schema registry), at
/// least one record, partition ids that are int32s (as Kafka's are).
fn checked_request(body: &[u8]) -> ProxyResult<ProduceRequest> {
    let request: ProduceRequest = parse_body(body)?;
    if request.key_schema.is_some()
        || request.value_schema.is_some()
        || request.key_schema_id.is_some()
        || request.value_schema_id.is_some()
    {
        return Err(no_schema_registry("schema-based"));
    }
    if request.records.is_empty() {
        return Err(ProxyError::plain(
            StatusCode::UNPROCESSABLE_ENTITY,
            "records may not be empty",
        ));
    }
    if let Some(p) = request
        .records
        .iter()
        .filter_map(|r| r.partition)
        .find(|&p| p > i32::MAX as u32)
    {
        return Err(ProxyError::plain(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("partition {p} is out of range (an int32)"),
        ));
    }
    Ok(request)
}

/// Appends the records under the server's produce policy (its limits, a full write
/// queue refused) and says where each went, in order. A record for a partition that
/// does not exist fails alone, inside the 200; the others are appended together.
async fn send(
    state: &AppState,
    topic: &str,
    partition: Option<u32>,
    format: EmbeddedFormat,
    records: Vec<ProduceRecord>,
) -> ProxyResult<Vec<PartitionOffset>> {
    // Decoded and checked against the limits whole first: a request refused for its
    // payload creates no topic.
    let decoded = records
        .into_iter()
        .map(|r| {
            let key = decode(r.key, format, "key")?;
            let value = decode(r.value, format, "value")?;
            Ok((key, value, partition.or(r.partition)))
        })
        .collect::<ProxyResult<Vec<_>>>()?;
    let policy = Policy::of(&state.config);
    for (nth, (key, value, partition)) in decoded.iter().enumerate() {
        policy
            .limits
            .check(nth + 1, &record_ref(key, value, *partition))?;
    }
    let producer = producer_for(state, topic).await?;
    let partitions = producer.partitions();
    let mut produce = Produce::new(&producer, policy);
    // Each record's answer: `None` for a record sent, filled in from the receipt.
    let mut offsets: Vec<Option<PartitionOffset>> = Vec::with_capacity(decoded.len());
    for (key, value, partition) in &decoded {
        let record = record_ref(key, value, *partition);
        match record.partition {
            Some(p) if p >= partitions => {
                produce.skip(&record)?;
                offsets.push(Some(PartitionOffset {
                    partition: None,
                    offset: None,
                    error_code: Some(PARTITION_NOT_FOUND),
                    error: Some(format!("Partition {p} of topic '{topic}' not found.")),
                }));
            }
            _ => {
                produce.push(record)?;
                offsets.push(None);
            }
        }
    }
    if !produce.is_empty() {
        let receipt = produce.send().await?;
        state
            .metrics
            .produced(topic, receipt.records, receipt.bytes);
        let mut sent = receipt.sent.records();
        for slot in offsets.iter_mut().filter(|o| o.is_none()) {
            *slot = sent.next().map(|m| PartitionOffset {
                partition: Some(m.partition),
                offset: Some(m.offset),
                error_code: None,
                error: None,
            });
        }
    }
    Ok(offsets.into_iter().flatten().collect())
}

/// A decoded v2 record, to send.
fn record_ref<'a>(
    key: &'a Option<Bytes>,
    value: &'a Option<Bytes>,
    partition: Option<u32>,
) -> RecordRef<'a> {
    RecordRef {
        key: key.as_deref(),
        value: value.as_deref(),
        headers: &[],
        timestamp: None,
        partition,
    }
}
