//! `POST /v1/topics/{topic}/records`: three body shapes chosen by `Content-Type` (raw
//! value, JSON batch, NDJSON), parsed record by record straight into the send (no
//! per-record value is held); auto-creation of unknown topics; the answer per partition
//! (201), per partition with the records not stored (207), or backpressure (503, nothing
//! stored).

use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use kafko_core::{Header, PartialSend, Producer, RecordMetadata, RecordRef};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::body_format::{Format, decode_from};
use crate::dto::{
    FormatQuery, PartialProduceResponse, PartitionError, PartitionOutcome, Problem, ProduceAnswer,
    ProduceQuery, ProduceRequest, ProduceResponse, RecordIn, RecordPosition,
};
use crate::error::{ApiError, ApiResult};
use crate::extract::{Body, Path, check_topic, is_json, media_type};
use crate::json;
use kafko_service::produce::{self, Limits, Policy, Produce, ProduceFailure};

use super::created::created;
use super::plain_json::{self, Stop};
use crate::state::AppState;

const NDJSON: &str = "application/x-ndjson";

/// Appends records. Keyed records go to `(murmur2(key) & 0x7fffffff) % partitions`
/// (Kafka's default partitioner); keyless ones to one partition per request, round robin
/// across requests; an explicit `partition` wins. Each partition's records of a request
/// are appended together at consecutive offsets, or not at all. A 503 or any other error
/// status means no record of the request was stored; a 207 lists which were not.
#[utoipa::path(post, path = "/v1/topics/{topic}/records", operation_id = "produce_records", tag = "records",
    params(("topic" = String, Path, description = "Topic name"), ProduceQuery, FormatQuery),
    request_body(description = "`application/json`: a batch; `application/x-ndjson`: text, one `RecordIn` JSON object per line; any other type: the body is one record's value, verbatim",
        content(
            (ProduceRequest = "application/json"),
            (String = "application/x-ndjson"),
            (crate::dto::Binary = "application/octet-stream"),
        )),
    responses(
        (status = 201, description = "Appended: per partition the base offset and record count; `offsets` per record with `answer=records` (default for one record)", body = ProduceResponse),
        (status = 207, description = "Some partitions appended their records and others none: never retry the whole request, resend only `failed_records`", body = PartialProduceResponse),
        (status = 400, description = "Invalid record, JSON, name or encoding", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found (auto-create disabled) or partition_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "code limit_reached: auto-creating the topic would pass the server's --max-topics or --max-partitions", body = Problem, content_type = "application/problem+json"),
        (status = 408, description = "code body_timeout: the body paused for longer than --body-read-timeout-ms", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "code record_too_large, payload_too_large or too_many_records (past --max-records-per-request)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "code unsupported_content_encoding: compressed request bodies are refused", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "code backpressure / shutting_down, with Retry-After: nothing was stored", body = Problem, content_type = "application/problem+json"),
        (status = 507, description = "code storage_full", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn produce(
    State(state): State<AppState>,
    Path(topic): Path<String>,
    ProduceHead {
        q,
        raw_query,
        shape,
    }: ProduceHead,
    Body(body): Body,
) -> ApiResult<Response> {
    check_topic(&topic)?;
    let (value_fmt, key_fmt) = q.formats().resolve();
    let input = Input {
        shape,
        body: &body,
        value_fmt,
        key_fmt,
        raw: raw_fields(shape, &q, raw_query.as_deref())?,
    };
    let policy = Policy::of(&state.config).with_sync(q.sync.unwrap_or(false));
    let producer = producer(&state, &topic, &input, policy.limits).await?;
    let mut produce = Produce::new(&producer, policy);
    produce.reserve(body.len());
    input.for_each(|r| produce.push(r).map_err(ApiError::from))?;
    let per_record = match q.answer {
        Some(answer) => answer == ProduceAnswer::Records,
        None => produce.len() == 1,
    };
    match produce.send().await {
        Ok(receipt) => {
            state
                .metrics
                .produced(&topic, receipt.records, receipt.bytes);
            Ok(created(&receipt.sent, per_record))
        }
        Err(ProduceFailure::Partial(partial)) => {
            let stored = partial.appended.iter().map(|a| a.record_count).sum::<u64>();
            // Bytes are counted for whole requests only; the records count is exact.
            state
                .metrics
                .produced(&topic, usize::try_from(stored).unwrap_or(usize::MAX), 0);
            Ok(multi_status(*partial, per_record))
        }
        Err(e) => Err(e.into()),
    }
}

/// Room for one partition's outcome in a 207's JSON.
const PARTITION_JSON_BYTES: usize = 72;
/// Room for one `RecordPosition` in JSON (a millisecond timestamp has 13 digits).
const POSITION_JSON_BYTES: usize = 64;

/// The 207 answer to a request that some partitions appended and others did not.
fn multi_status(partial: PartialSend, per_record: bool) -> Response {
    let failed_records = partial.failed_records().collect();
    let offsets = per_record.then(|| partial.records().map(|r| r.map(position)).collect());
    let mut partitions: Vec<PartitionOutcome> = partial
        .appended
        .iter()
        .map(|p| PartitionOutcome {
            partition: p.partition,
            record_count: p.record_count,
            base_offset: Some(p.base_offset),
            error: None,
        })
        .collect();
    for failure in partial.failed {
        let problem = ApiError::from(failure.error);
        partitions.push(PartitionOutcome {
            partition: failure.partition,
            record_count: failure.record_count,
            base_offset: None,
            error: Some(PartitionError {
                status: problem.status.as_u16(),
                code: problem.code.to_owned(),
                detail: problem.detail,
            }),
        });
    }
    partitions.sort_by_key(|p| p.partition);
    let answer = PartialProduceResponse {
        partitions,
        failed_records,
        offsets,
    };
    let estimate = 64
        + answer.partitions.len() * (PARTITION_JSON_BYTES + 96)
        + answer.failed_records.len() * 8
        + answer
            .offsets
            .as_ref()
            .map_or(0, |o| o.len() * POSITION_JSON_BYTES);
    json::answer(StatusCode::MULTI_STATUS, &answer, estimate)
}

fn position(m: RecordMetadata) -> RecordPosition {
    RecordPosition {
        partition: m.partition,
        offset: m.offset,
        timestamp: m.timestamp,
    }
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

impl BodyShape {
    fn of(headers: &axum::http::HeaderMap) -> Self {
        // The types clients send, compared whole before the general parse (parameters,
        // case, `+json` suffixes), which every produce would otherwise pay for.
        match headers
            .get(axum::http::header::CONTENT_TYPE)
            .map(|v| v.as_bytes())
        {
            Some(b"application/octet-stream") => return BodyShape::Value,
            Some(b"application/json") => return BodyShape::Batch,
            Some(b"application/x-ndjson") => return BodyShape::Ndjson,
            _ => {}
        }
        let media = media_type(headers);
        if media == NDJSON {
            BodyShape::Ndjson
        } else if is_json(&media) {
            BodyShape::Batch
        } else {
            BodyShape::Value
        }
    }
}

/// What a produce reads from the request head besides its path: the query, parsed
/// once (a request without one parses nothing), the raw query only when a `key` needs
/// it decoded again, and the body's shape.
pub(crate) struct ProduceHead {
    q: ProduceQuery,
    raw_query: Option<String>,
    shape: BodyShape,
}

impl FromRequestParts<AppState> for ProduceHead {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, ApiError> {
        let q = match parts.uri.query() {
            None | Some("") => ProduceQuery::default(),
            Some(_) => {
                axum::extract::Query::<ProduceQuery>::try_from_uri(&parts.uri)
                    .map_err(|e| ApiError::bad_request("invalid_query", e.body_text()))?
                    .0
            }
        };
        let raw_query = q
            .key
            .is_some()
            .then(|| parts.uri.query().unwrap_or_default().to_owned());
        Ok(ProduceHead {
            q,
            raw_query,
            shape: BodyShape::of(&parts.headers),
        })
    }
}

/// The topic's producer, creating an unknown topic first when auto-creation is on. For
/// an unknown topic the request is checked whole first (its records and the limits), so
/// a request refused for its body creates nothing (and is refused for its body, not for
/// the topic).
async fn producer(
    state: &AppState,
    topic: &str,
    input: &Input<'_>,
    limits: Limits,
) -> ApiResult<Producer> {
    if let Some(producer) = produce::existing(&state.kafko, topic)? {
        return Ok(producer);
    }
    let mut nth = 0;
    input.for_each(|r| {
        nth += 1;
        limits.check(nth, &r)?;
        Ok(())
    })?;
    Ok(produce::create(&state.kafko, &state.config.auto_create, topic).await?)
}

/// The fields of a raw-body record given in the query.
struct RawFields {
    key: Option<Bytes>,
    timestamp: Option<i64>,
    partition: Option<u32>,
}

/// The query's record fields for a raw body; for a JSON or NDJSON body, a check that it
/// gives none.
fn raw_fields(shape: BodyShape, q: &ProduceQuery, raw_query: Option<&str>) -> ApiResult<RawFields> {
    if shape != BodyShape::Value {
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
        return Ok(RawFields {
            key: None,
            timestamp: None,
            partition: None,
        });
    }
    let key = match (&q.key, &q.key_base64) {
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                "give key or key_base64, not both",
            ));
        }
        (Some(lossy), None) => Some(utf8_key(raw_query, lossy)?),
        (None, Some(k)) => Some(Bytes::from(STANDARD.decode(k).map_err(|e| {
            ApiError::bad_request(
                "invalid_base64",
                format!("key_base64 is not valid base64: {e}"),
            )
        })?)),
        (None, None) => None,
    };
    Ok(RawFields {
        key,
        timestamp: q.timestamp,
        partition: q.partition,
    })
}

/// The `key` query parameter's bytes, which must be UTF-8. The query decoder replaces
/// bytes that are not UTF-8 by U+FFFD (`lossy`), so that `%FF`, `%FE` and `%EF%BF%BD`
/// would all be one key: the raw query is decoded again here, and a key that is not
/// UTF-8 is refused, pointing to `key_base64`.
fn utf8_key(raw_query: Option<&str>, lossy: &str) -> ApiResult<Bytes> {
    let raw = raw_query
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .find(|(name, _)| form_decode(name.as_bytes()) == b"key")
        .map(|(_, value)| form_decode(value.as_bytes()));
    let bytes = raw.unwrap_or_else(|| lossy.as_bytes().to_vec());
    match String::from_utf8(bytes) {
        Ok(key) => Ok(Bytes::from(key)),
        Err(_) => Err(ApiError::bad_request(
            "invalid_key",
            "the key query parameter is not UTF-8 text once percent-decoded; send binary keys as key_base64 (standard base64)",
        )
        .with("parameter", serde_json::json!("key_base64"))),
    }
}

/// Decodes `application/x-www-form-urlencoded` text to bytes: `+` is a space, `%XX` a
/// byte; a `%` not followed by two hex digits stands for itself (as the query decoder
/// reads it).
fn form_decode(text: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let escaped = match (text[i], text.get(i + 1), text.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) => hex(h)
                .zip(hex(l))
                .and_then(|(h, l)| u8::try_from(h * 16 + l).ok()),
            _ => None,
        };
        match (escaped, text[i]) {
            (Some(byte), _) => {
                out.push(byte);
                i += 3;
                continue;
            }
            (None, b'+') => out.push(b' '),
            (None, b) => out.push(b),
        }
        i += 1;
    }
    out
}

/// A produce request's records, read straight from its body (JSON, NDJSON or a raw
/// value): each record is handed on as it is parsed, borrowing the body, so memory does
/// not grow with a per-record value.
struct Input<'a> {
    shape: BodyShape,
    body: &'a Bytes,
    value_fmt: Format,
    key_fmt: Format,
    raw: RawFields,
}

impl Input<'_> {
    /// Hands each record to `each`, in order (which checks it against the limits).
    fn for_each(&self, mut each: impl FnMut(RecordRef<'_>) -> ApiResult<()>) -> ApiResult<()> {
        let mut records = 0_usize;
        let mut checked = |r: RecordRef<'_>| -> ApiResult<()> {
            records += 1;
            each(r)
        };
        match self.shape {
            BodyShape::Value => checked(RecordRef {
                key: self.raw.key.as_deref(),
                value: Some(self.body),
                headers: &[],
                timestamp: self.raw.timestamp,
                partition: self.raw.partition,
            })?,
            BodyShape::Ndjson => {
                let plain = self.is_plain();
                for (i, line) in self.body.split(|&b| b == b'\n').enumerate() {
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    if let Some(r) = plain.then(|| plain_json::line(line)).flatten() {
                        checked(r)?;
                        continue;
                    }
                    let r: RecordIn<'_> = serde_json::from_slice(line).map_err(|e| {
                        ApiError::bad_request("invalid_json", format!("NDJSON line {}: {e}", i + 1))
                    })?;
                    self.convert(r, &mut checked)?;
                }
            }
            BodyShape::Batch => {
                let handed = if self.is_plain() {
                    match plain_json::batch(self.body, &mut checked) {
                        Ok(()) => None,
                        Err(Stop::Refused(e)) => return Err(e),
                        Err(Stop::Fallback(handed)) => Some(handed),
                    }
                } else {
                    Some(0)
                };
                if let Some(mut skip) = handed {
                    // serde reads the body from the start; the records handed on already
                    // are skipped.
                    parse_batch(self.body, |r| {
                        if skip > 0 {
                            skip -= 1;
                            return Ok(());
                        }
                        self.convert(r, &mut checked)
                    })?;
                }
            }
        }
        if records == 0 {
            return Err(ApiError::bad_request(
                "invalid_request",
                "no records in the request",
            ));
        }
        Ok(())
    }

    /// Whether keys and values are read as text, the form [`plain_json`] reads.
    fn is_plain(&self) -> bool {
        self.value_fmt == Format::String && self.key_fmt == Format::String
    }

    /// Decodes one parsed record's members (plain strings share the body's buffer).
    fn convert(
        &self,
        r: RecordIn<'_>,
        each: &mut impl FnMut(RecordRef<'_>) -> ApiResult<()>,
    ) -> ApiResult<()> {
        let key = r
            .key
            .map(|k| decode_from(self.body, k, self.key_fmt, "key"))
            .transpose()?;
        let value = r
            .value
            .map(|v| decode_from(self.body, v, self.value_fmt, "value"))
            .transpose()?;
        let headers = r
            .headers
            .into_iter()
            .map(|h| {
                Ok(Header {
                    value: decode_from(self.body, h.value, self.key_fmt, "header value")?,
                    name: h.name,
                })
            })
            .collect::<ApiResult<Vec<_>>>()?;
        each(RecordRef {
            key: key.as_deref(),
            value: value.as_deref(),
            headers: &headers,
            timestamp: r.timestamp,
            partition: r.partition,
        })
    }
}

/// Parses a JSON batch (`{"records":[...]}`), handing each record to `each` as soon as
/// it is parsed: the records array is never materialized.
fn parse_batch<'de>(
    body: &'de [u8],
    mut each: impl FnMut(RecordIn<'de>) -> ApiResult<()>,
) -> ApiResult<()> {
    let mut refused: Option<ApiError> = None;
    let mut sink = |r: RecordIn<'de>| match each(r) {
        Ok(()) => true,
        Err(e) => {
            refused = Some(e);
            false
        }
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = BatchSeed { each: &mut sink }
        .deserialize(&mut de)
        .and_then(|()| de.end());
    if let Some(e) = refused {
        return Err(e);
    }
    parsed.map_err(|e| ApiError::bad_request("invalid_json", format!("invalid JSON body: {e}")))
}

/// The batch object: `records` and nothing else.
struct BatchSeed<'s, 'de> {
    each: &'s mut dyn FnMut(RecordIn<'de>) -> bool,
}

impl<'de> DeserializeSeed<'de> for BatchSeed<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for BatchSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an object with a records array")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(name) = map.next_key::<String>()? {
            if name != "records" {
                return Err(de::Error::unknown_field(&name, &["records"]));
            }
            if seen {
                return Err(de::Error::duplicate_field("records"));
            }
            seen = true;
            map.next_value_seed(RecordsSeed {
                each: &mut *self.each,
            })?;
        }
        if !seen {
            return Err(de::Error::missing_field("records"));
        }
        Ok(())
    }
}

/// The records array, each element handed on as it is parsed.
struct RecordsSeed<'s, 'de> {
    each: &'s mut dyn FnMut(RecordIn<'de>) -> bool,
}

impl<'de> DeserializeSeed<'de> for RecordsSeed<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RecordsSeed<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(record) = seq.next_element::<RecordIn<'de>>()? {
            if !(self.each)(record) {
                // The refusal itself is reported by `parse_batch`.
                return Err(de::Error::custom("record refused"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_decoding_reads_escapes_and_plus() {
        assert_eq!(form_decode(b"a+b%20c"), b"a b c");
        assert_eq!(form_decode(b"%FF%fe"), [0xff, 0xfe]);
        assert_eq!(form_decode(b"%EF%BF%BD"), "\u{fffd}".as_bytes());
        // A `%` without two hex digits stands for itself.
        assert_eq!(form_decode(b"100%"), b"100%");
        assert_eq!(form_decode(b"%zz%4"), b"%zz%4");
    }

    fn input(shape: BodyShape, body: &Bytes) -> Input<'_> {
        Input {
            shape,
            body,
            value_fmt: Format::String,
            key_fmt: Format::String,
            raw: RawFields {
                key: None,
                timestamp: None,
                partition: None,
            },
        }
    }

    /// Records seen (and the error) with the plain read first, then serde alone; the
    /// callback refuses the record numbered `refuse`.
    fn both_ways(shape: BodyShape, body: &str, refuse: usize) -> [(Vec<String>, String); 2] {
        let body = Bytes::copy_from_slice(body.as_bytes());
        let input = input(shape, &body);
        let mut outcomes = Vec::new();
        for plain_first in [true, false] {
            let mut seen = Vec::new();
            let mut each = |r: RecordRef<'_>| {
                seen.push(format!("{r:?}"));
                if seen.len() == refuse {
                    return Err(ApiError::bad_request("refused", "refused"));
                }
                Ok(())
            };
            let result = if plain_first {
                input.for_each(&mut each)
            } else if shape == BodyShape::Batch {
                parse_batch(&body, |r| input.convert(r, &mut each))
            } else {
                let mut result = Ok(());
                for (i, line) in body.split(|&b| b == b'\n').enumerate() {
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    result = serde_json::from_slice::<RecordIn<'_>>(line)
                        .map_err(|e| {
                            ApiError::bad_request(
                                "invalid_json",
                                format!("NDJSON line {}: {e}", i + 1),
                            )
                        })
                        .and_then(|r| input.convert(r, &mut each));
                    if result.is_err() {
                        break;
                    }
                }
                result
            };
            let error = match result {
                Ok(()) if seen.is_empty() && !plain_first => "invalid_request".to_owned(),
                Ok(()) => String::new(),
                Err(e) if e.code == "invalid_request" => "invalid_request".to_owned(),
                Err(e) => format!("{} {}", e.code, e.detail),
            };
            outcomes.push((seen, error));
        }
        [outcomes.remove(0), outcomes.remove(0)]
    }

    /// The plain read, with serde taking over where the body leaves the plain form, hands
    /// on the same records and fails with the same error as serde alone.
    #[test]
    fn the_plain_read_agrees_with_serde() {
        let long = "x".repeat(300);
        let batches = [
            r#"{"records":[]}"#.to_owned(),
            format!(r#"{{"records":[{{"value":"{long}"}},{{"key":"k","value":null}}]}}"#),
            r#" { "records" : [ {"key":"k","value":"v","partition":2,"timestamp":5}, {"value":null,"headers":[]} ] } "#.to_owned(),
            r#"{"records":[{"value":"a"},{"value":"tab	here","key":"café"},{"value":"b"}]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"value":"b","value":"c"}]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"value":1}]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"partition":1.5}]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"partition":-1}]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"timestamp":12345678901234567890}]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"timestamp":9999999999999999999}]}"#.to_owned(),
            r#"{"records":[{"timestamp":9223372036854775807,"partition":4294967295}]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"value":"b"}],"records":[]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"value":"b"}]} trailing"#.to_owned(),
            r#"{"records":[{"value":"a"},{"value":"b"},]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"headers":[{"name":"h","value":"x"}]}]}"#.to_owned(),
            r#"{"records":[{"value":"a"},{"extra":1}]}"#.to_owned(),
            "{\"records\":[{\"value\":\"a\"},{\"value\":\"b\u{7}\"}]}".to_owned(),
            r#"{"records":[{"value":"a"}"#.to_owned(),
            r#"{"records":[{"value":"é ☕ 😀"}]}"#.to_owned(),
        ];
        for body in &batches {
            for refuse in [0, 1, 2] {
                let [plain, serde] = both_ways(BodyShape::Batch, body, refuse);
                assert_eq!(plain, serde, "{body} (refusing record {refuse})");
            }
        }
        let lines = [
            "{\"value\":\"a\"}\n\n{\"key\":\"k\",\"value\":\"tab\\there\"}\r\n{}\n",
            "{\"value\":\"a\"}\n{\"value\":1}\n{\"value\":\"c\"}",
            "{\"value\":\"a\"}\n{\"value\":\"b\"} {}\n",
            "{\"value\":\"a\"}\nnot json\n",
        ];
        for body in lines {
            for refuse in [0, 1, 2] {
                let [plain, serde] = both_ways(BodyShape::Ndjson, body, refuse);
                assert_eq!(plain, serde, "{body:?} (refusing record {refuse})");
            }
        }
    }

    /// The record-by-record parse accepts and refuses what the derived parse of the
    /// batch type does, and sees the same records; except that a batch is an object
    /// (the derived parse also reads a struct from an array, by position).
    #[test]
    fn the_streaming_parse_agrees_with_the_derived_one() {
        for body in [
            r#"{"records":[]}"#,
            r#"{"records":[{}]}"#,
            r#" { "records" : [ {"key":"k","value":"v","partition":2,"timestamp":5}, {"value":null,"headers":[{"name":"h","value":"x"}]} ] } "#,
            r#"{"rec\u006frds":[{}]}"#,
            r#"{}"#,
            r#"[]"#,
            r#"[[{}]]"#,
            r#"null"#,
            r#"{"records":[{}],"records":[{}]}"#,
            r#"{"records":[{}],"other":1}"#,
            r#"{"records":[{"value":"v","extra":1}]}"#,
            r#"{"records":{}}"#,
            r#"{"records":[{}]} trailing"#,
            r#"{"records":[{},]}"#,
            r#"{"records":[{"partition":-1}]}"#,
        ] {
            let derived = serde_json::from_str::<ProduceRequest>(body).map(|b| {
                b.records
                    .iter()
                    .map(|r| format!("{r:?}"))
                    .collect::<Vec<_>>()
            });
            let mut seen = Vec::new();
            let streamed = parse_batch(body.as_bytes(), |r| {
                seen.push(format!("{r:?}"));
                Ok(())
            });
            match derived {
                Ok(_) if body.starts_with('[') => {
                    assert_eq!(streamed.expect_err(body).code, "invalid_json");
                }
                Ok(records) => {
                    assert!(streamed.is_ok(), "{body}: {:?}", streamed.err());
                    assert_eq!(seen, records, "{body}");
                }
                Err(_) => {
                    let err = streamed.expect_err(body);
                    assert_eq!(err.code, "invalid_json", "{body}");
                }
            }
        }
    }
}
