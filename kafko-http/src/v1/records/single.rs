//! One record's raw value (`…/partitions/{p}/records/{offset}`), its metadata in
//! response headers, and the offsets of a partition (`…/partitions/{p}/offsets`).
//!
//! Response headers of a raw read — binary-safe, so every byte string is base64
//! (standard alphabet, padded): `Kafko-Partition`, `Kafko-Offset`, `Kafko-Timestamp`
//! (ms), `Kafko-Key` (base64; absent when the record has no key) and one
//! `Kafko-Header: <base64 name>:<base64 value>` per record header, in record order. A
//! tombstone answers 204 with `Kafko-Tombstone: true`.

use axum::extract::State;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::dto::{IsolationParam, OffsetsQuery, OffsetsResponse, Problem, RecordQuery};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Path, Query, check_topic};
use crate::state::AppState;

use super::payload_bytes;

/// The value of one record, verbatim.
#[utoipa::path(get, path = "/v1/topics/{topic}/partitions/{partition}/records/{offset}", operation_id = "get_record", tag = "records",
    params(("topic" = String, Path, description = "Topic name"),
        ("partition" = u32, Path, description = "Partition"),
        ("offset" = u64, Path, description = "Offset"), RecordQuery),
    responses(
        (status = 200, description = "The value bytes; key, timestamp and headers in Kafko-* response headers (base64)", body = crate::dto::Binary, content_type = "application/octet-stream",
            headers(("Kafko-Offset" = u64, description = "Offset"), ("Kafko-Partition" = u32, description = "Partition"),
                ("Kafko-Timestamp" = i64, description = "Timestamp, ms"), ("Kafko-Key" = String, description = "Key, base64"),
                ("Kafko-Header" = String, description = "Repeated: base64(name):base64(value)"))),
        (status = 204, description = "A tombstone (no value); metadata in headers"),
        (status = 400, description = "Invalid name or parameter", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found / partition_not_found / record_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 416, description = "code offset_out_of_range", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn get_record(
    State(state): State<AppState>,
    Path((topic, partition, offset)): Path<(String, u32, u64)>,
    Query(q): Query<RecordQuery>,
) -> ApiResult<Response> {
    check_topic(&topic)?;
    let reader = state.kafko.topic(&topic)?.partition(partition)?;
    let offsets = reader.offsets()?;
    // The high watermark itself is a valid read position but holds no record yet.
    if !offsets.contains(offset) || offset == offsets.high_watermark {
        return Err(offsets.out_of_range(offset).into());
    }
    let fetched = reader.read_with(offset, 1, 1, IsolationParam::resolve(q.isolation))?;
    let Some(r) = fetched.records.into_iter().find(|r| r.offset == offset) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "record_not_found",
            format!(
                "offset {offset} holds no record to read (removed by compaction, a transaction marker, an aborted transaction's, or past the last stable offset)"
            ),
        ));
    };
    state.metrics.consumed(&topic, 1, payload_bytes(&r));
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("kafko-partition", HeaderValue::from(r.partition));
    headers.insert("kafko-offset", HeaderValue::from(r.offset));
    headers.insert("kafko-timestamp", HeaderValue::from(r.timestamp));
    let b64 = |b: &[u8]| HeaderValue::try_from(STANDARD.encode(b));
    let internal = |_| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "header encoding failed",
        )
    };
    if let Some(key) = &r.key {
        headers.insert("kafko-key", b64(key).map_err(internal)?);
    }
    let name = HeaderName::from_static("kafko-header");
    for h in &r.headers {
        let v = format!(
            "{}:{}",
            STANDARD.encode(h.name.as_bytes()),
            STANDARD.encode(&h.value)
        );
        headers.append(name.clone(), HeaderValue::try_from(v).map_err(internal)?);
    }
    match r.value {
        Some(v) => {
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            Ok((StatusCode::OK, headers, v).into_response())
        }
        None => {
            headers.insert("kafko-tombstone", HeaderValue::from_static("true"));
            Ok((StatusCode::NO_CONTENT, headers).into_response())
        }
    }
}

/// Log start and high watermark; with `timestamp`, the first offset at or after it.
#[utoipa::path(get, path = "/v1/topics/{topic}/partitions/{partition}/offsets", operation_id = "get_partition_offsets", tag = "records",
    params(("topic" = String, Path, description = "Topic name"),
        ("partition" = u32, Path, description = "Partition"), OffsetsQuery),
    responses(
        (status = 200, description = "Offsets", body = OffsetsResponse),
        (status = 400, description = "Invalid name or parameter", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found / partition_not_found", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn offsets(
    State(state): State<AppState>,
    Path((topic, partition)): Path<(String, u32)>,
    Query(q): Query<OffsetsQuery>,
) -> ApiResult<axum::Json<OffsetsResponse>> {
    check_topic(&topic)?;
    let reader = state.kafko.topic(&topic)?.partition(partition)?;
    let offsets = reader.offsets()?;
    let offset = match q.timestamp {
        Some(ts) => reader.offset_for_timestamp(ts)?,
        None => None,
    };
    Ok(axum::Json(OffsetsResponse {
        partition,
        log_start_offset: offsets.log_start,
        high_watermark: offsets.high_watermark,
        last_stable_offset: offsets.last_stable_offset,
        offset,
    }))
}
