//! Records: produce (`produce`, its 201 answer `created`), JSON fetch and long-poll (`fetch`), NDJSON and SSE
//! streams (`stream`), the raw single-record read and offset lookup (`single`), and the
//! record conversions they share.

mod created;
pub(crate) mod fetch;
mod plain_json;
pub(crate) mod produce;
pub(crate) mod single;
pub(crate) mod stream;

use kafko_core::Record;

use crate::body_format::{Format, encode};
use crate::dto::{HeaderOut, RecordOut};
use crate::error::ApiResult;

/// Renders a record for JSON under the chosen formats.
pub(crate) fn to_out(r: &Record, value_fmt: Format, key_fmt: Format) -> ApiResult<RecordOut> {
    let key = r
        .key
        .as_ref()
        .map(|k| encode(k, key_fmt, "key", r.offset))
        .transpose()?;
    let value = r
        .value
        .as_ref()
        .map(|v| encode(v, value_fmt, "value", r.offset))
        .transpose()?;
    let headers = r
        .headers
        .iter()
        .map(|h| {
            Ok(HeaderOut {
                name: h.name.clone(),
                value: encode(&h.value, key_fmt, "header value", r.offset)?,
            })
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(RecordOut {
        partition: r.partition,
        offset: r.offset,
        timestamp: r.timestamp,
        key,
        value,
        headers,
    })
}

/// Key, value and header bytes of a record (the metrics' byte count).
pub(crate) fn payload_bytes(r: &Record) -> usize {
    r.key.as_ref().map_or(0, |k| k.len())
        + r.value.as_ref().map_or(0, |v| v.len())
        + r.headers
            .iter()
            .map(|h| h.name.len() + h.value.len())
            .sum::<usize>()
}
