//! `POST /v1/topics/{topic}/records`: three body shapes chosen by `Content-Type` (raw
//! value, JSON batch, NDJSON), auto-creation of unknown topics, backpressure as 503.

use axum::extract::State;
use std::convert::Infallible;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use kafko_core::{Header, KafkoError, Producer, ProducerRecord, RecordMetadata, SendOptions};

use crate::AutoCreate;
use crate::codec::{Format, decode_from};
use crate::dto::{FormatQuery, Problem, ProduceQuery, ProduceRequest, ProduceResponse, RecordIn};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Body, Path, Query, check_topic, is_json, media_type, parse_json};
use crate::state::AppState;

const NDJSON: &str = "application/x-ndjson";

/// Appends records. Keyed records go to `(murmur2(key) & 0x7fffffff) % partitions`
/// (Kafka's default partitioner); keyless ones to one partition per request, round robin
/// across requests; an explicit `partition` wins.
#[utoipa::path(post, path = "/v1/topics/{topic}/records", tag = "records",
    params(("topic" = String, Path, description = "Topic name"), ProduceQuery, FormatQuery),
    request_body(description = "`application/json`: a batch; `application/x-ndjson`: one record object per line; any other type: the body is one record's value, verbatim",
        content(
            (ProduceRequest = "application/json"),
            (RecordIn = "application/x-ndjson"),
            (crate::dto::Binary = "application/octet-stream"),
        )),
    responses(
        (status = 201, description = "Appended; one position per record in request order", body = ProduceResponse),
        (status = 400, description = "Invalid record, JSON, name or encoding", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found (auto-create disabled) or partition_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "code body_timeout: the body paused for longer than --body-read-timeout-ms", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "code record_too_large or payload_too_large", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "code unsupported_content_encoding: compressed request bodies are refused", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "code backpressure / shutting_down, with Retry-After", body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "code storage_full", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn produce(
    State(state): State<AppState>,
    Path(topic): Path<String>,
    Query(q): Query<ProduceQuery>,
    Query(formats): Query<FormatQuery>,
    shape: BodyShape,
    Body(body): Body,
) -> ApiResult<Response> {
    check_topic(&topic)?;
    let (value_fmt, key_fmt) = formats.resolve();
    let records = if shape != BodyShape::Value {
        if q.key.is_some()
            || q.key_base64.is_some()
            || q.partition.is_some()
            || q.timestamp.is_some()
        {
            return Err(ApiError::bad_request(
                "invalid_query",
                "key, key_base64, partition and timestamp query parameters apply to raw bodies only; put them in each record",
            ));
        }
        let parsed = if shape == BodyShape::Ndjson {
            parse_ndjson(&body)?
        } else {
            parse_json::<ProduceRequest>(&body)?.records
        };
        parsed
            .into_iter()
            .map(|r| to_producer_record(&body, r, value_fmt, key_fmt))
            .collect::<ApiResult<Vec<_>>>()?
    } else {
        vec![raw_record(&q, body)?]
    };
    if records.is_empty() {
        return Err(ApiError::bad_request(
            "invalid_request",
            "no records in the request",
        ));
    }
    let limit = state.config.max_record_bytes;
    if let Some(r) = records.iter().find(|r| r.size() > limit) {
        return Err(KafkoError::RecordTooLarge {
            size: r.size(),
            max: limit,
        }
        .into());
    }
    let producer = producer(&state, &topic).await?;
    let (count, bytes) = (
        records.len(),
        records.iter().map(ProducerRecord::size).sum(),
    );
    let options = SendOptions {
        sync: q.sync.unwrap_or(false),
        no_wait: true,
    };
    // Boxed apart: inline, the library's send future made this handler's future (boxed by
    // axum per request) a 1.7 KB allocation, above glibc's per-thread cache (~1 KB).
    let meta = Box::pin(producer.send_batch_with(records, options)).await?;
    state.metrics.produced(&topic, count, bytes);
    Ok(created(&meta))
}

/// The 201 answer: the JSON of [`ProduceResponse`], written directly. Through serde it
/// was ~3,500 of a one-record produce's ~39,500 instructions (callgrind); the test
/// `created_is_the_serde_form` keeps the two byte-identical.
fn created(meta: &[RecordMetadata]) -> Response {
    // Sized exactly: `Bytes::from` a `Vec` with spare capacity allocates a shared header
    // besides (callgrind: 37.8–38.3 k → 37.0–37.6 k instructions per one-record produce).
    let len = r#"{"offsets":[]}"#.len()
        + meta
            .iter()
            .map(|m| {
                r#"{"partition":,"offset":,"timestamp":}"#.len()
                    + decimal_len(u64::from(m.partition))
                    + decimal_len(m.offset)
                    + usize::from(m.timestamp < 0)
                    + decimal_len(m.timestamp.unsigned_abs())
            })
            .sum::<usize>()
        + meta.len().saturating_sub(1);
    let mut json = Vec::with_capacity(len);
    json.extend_from_slice(br#"{"offsets":["#);
    for (i, m) in meta.iter().enumerate() {
        if i > 0 {
            json.push(b',');
        }
        json.extend_from_slice(br#"{"partition":"#);
        push_decimal(&mut json, u64::from(m.partition));
        json.extend_from_slice(br#","offset":"#);
        push_decimal(&mut json, m.offset);
        json.extend_from_slice(br#","timestamp":"#);
        if m.timestamp < 0 {
            json.push(b'-');
        }
        push_decimal(&mut json, m.timestamp.unsigned_abs());
        json.push(b'}');
    }
    json.extend_from_slice(b"]}");
    debug_assert_eq!(json.len(), len, "the answer's computed size");
    (
        StatusCode::CREATED,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Bytes::from(json),
    )
        .into_response()
}

/// Digits of `n` in decimal.
fn decimal_len(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Appends `n` in decimal.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[start..]);
}

/// How a produce body is read, from its `Content-Type` (the headers are not cloned).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyShape {
    /// `application/json` (or `application/*+json`): a batch object.
    Batch,
    /// `application/x-ndjson`: one record object per line.
    Ndjson,
    /// Anything else: the body is one record's value.
    Value,
}

impl FromRequestParts<AppState> for BodyShape {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Infallible> {
        let media = media_type(&parts.headers);
        Ok(if media == NDJSON {
            BodyShape::Ndjson
        } else if is_json(&media) {
            BodyShape::Batch
        } else {
            BodyShape::Value
        })
    }
}

/// The topic's producer, creating an unknown topic first when auto-creation is on: one
/// lookup serves both the existence check and the send.
async fn producer(state: &AppState, topic: &str) -> ApiResult<Producer> {
    match state.kafko.producer_for(topic).await {
        Err(KafkoError::TopicNotFound { .. }) => match &state.config.auto_create {
            AutoCreate::Disabled => Err(KafkoError::TopicNotFound {
                topic: topic.to_owned(),
            }
            .into()),
            AutoCreate::Enabled(config) => {
                // Boxed: the rare creation path would otherwise size every produce future.
                match Box::pin(state.kafko.create_topic_with_config(topic, config.clone())).await {
                    // Another request may have created it (with another config) meanwhile.
                    Ok(_) | Err(KafkoError::TopicAlreadyExists { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
                Ok(state.kafko.producer_for(topic).await?)
            }
        },
        other => Ok(other?),
    }
}

fn raw_record(q: &ProduceQuery, body: Bytes) -> ApiResult<ProducerRecord> {
    let key = match (&q.key, &q.key_base64) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                "give key or key_base64, not both",
            ));
        }
        (Some(k), None) => Some(Bytes::from(k.clone())),
        (None, Some(k)) => Some(Bytes::from(STANDARD.decode(k).map_err(|e| {
            ApiError::bad_request(
                "invalid_base64",
                format!("key_base64 is not valid base64: {e}"),
            )
        })?)),
        (None, None) => None,
    };
    Ok(ProducerRecord {
        key,
        value: Some(body),
        headers: Vec::new(),
        timestamp: q.timestamp,
        partition: q.partition,
    })
}

fn parse_ndjson(body: &[u8]) -> ApiResult<Vec<RecordIn<'_>>> {
    body.split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .map(|(i, line)| {
            serde_json::from_slice(line).map_err(|e| {
                ApiError::bad_request("invalid_json", format!("NDJSON line {}: {e}", i + 1))
            })
        })
        .collect()
}

/// One parsed record as a `ProducerRecord`; plain string members share `body`'s buffer.
fn to_producer_record(
    body: &Bytes,
    r: RecordIn<'_>,
    value_fmt: Format,
    key_fmt: Format,
) -> ApiResult<ProducerRecord> {
    let key = r
        .key
        .map(|k| decode_from(body, k, key_fmt, "key"))
        .transpose()?;
    let value = r
        .value
        .map(|v| decode_from(body, v, value_fmt, "value"))
        .transpose()?;
    let headers = r
        .headers
        .into_iter()
        .map(|h| {
            Ok(Header {
                value: decode_from(body, h.value, key_fmt, "header value")?,
                name: h.name,
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(ProducerRecord {
        key,
        value,
        headers,
        timestamp: r.timestamp,
        partition: r.partition,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dto::RecordPosition;

    #[tokio::test]
    async fn created_is_the_serde_form() {
        let meta = |partition, offset, timestamp| RecordMetadata {
            partition,
            offset,
            timestamp,
        };
        let cases: [Vec<RecordMetadata>; 5] = [
            vec![],
            vec![meta(0, 0, 0)],
            // Digit-count edges (the answer is sized exactly before it is written).
            vec![
                meta(9, 10, -9),
                meta(10, 99, -10),
                meta(99, 100, 999),
                meta(100, 1000, -1000),
            ],
            vec![meta(7, u64::MAX, i64::MIN), meta(u32::MAX, 42, -1)],
            (0..1000)
                .map(|i| meta(i % 3, u64::from(i) * 7919, 1_764_400_000_000 + i64::from(i)))
                .collect(),
        ];
        for meta in cases {
            let resp = created(&meta);
            assert_eq!(resp.status(), StatusCode::CREATED);
            assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
            let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
                .await
                .expect("body");
            let serde_form = serde_json::to_vec(&ProduceResponse {
                offsets: meta
                    .iter()
                    .map(|m| RecordPosition {
                        partition: m.partition,
                        offset: m.offset,
                        timestamp: m.timestamp,
                    })
                    .collect(),
            })
            .expect("serialize");
            assert_eq!(body, serde_form);
        }
    }
}
