//! Producers' record batches (magic 2, CRC-32C, no compression), built as a producer
//! builds them: the tests of the produce side send them.

use bytes::{BufMut, BytesMut};
use kafko_core::Record;

/// Bytes of the header before the CRC-covered part.
const CRC_START: usize = 21;

fn put_varlong(out: &mut BytesMut, v: i64) {
    #[allow(clippy::cast_sign_loss)]
    let mut raw = ((v << 1) ^ (v >> 63)) as u64;
    while raw >= 0x80 {
        out.put_u8(u8::try_from(raw & 0x7f).unwrap_or(0) | 0x80);
        raw >>= 7;
    }
    out.put_u8(u8::try_from(raw).unwrap_or(0));
}

fn put_bytes(out: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        None => put_varlong(out, -1),
        Some(b) => {
            put_varlong(out, i64::try_from(b.len()).unwrap_or(i64::MAX));
            out.put_slice(b);
        }
    }
}

fn offset_i64(offset: u64) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

/// Appends `records` (of one partition, ascending offsets) to `out` as one batch, as a
/// producer would send it (tests build producers' batches with it): no compression,
/// create-time timestamps, no producer id. With a `limit`, the batch stops
/// before the record that would take it past `limit` bytes (and is left out when not
/// even the first fits). Returns the records written.
pub(crate) fn encode_batch(records: &[Record], out: &mut BytesMut, limit: Option<usize>) -> usize {
    let Some(first) = records.first() else {
        return 0;
    };
    let base_offset = offset_i64(first.offset);
    let base_timestamp = first.timestamp;
    let start = out.len();
    out.put_i64(base_offset);
    out.put_i32(0); // length, set below
    out.put_i32(0); // partition leader epoch
    out.put_i8(2); // magic
    out.put_u32(0); // crc, set below
    out.put_i16(0); // attributes
    out.put_i32(0); // last offset delta, set below
    out.put_i64(base_timestamp);
    out.put_i64(0); // max timestamp, set below
    out.put_i64(-1); // producer id
    out.put_i16(-1); // producer epoch
    out.put_i32(-1); // base sequence
    out.put_i32(0); // record count, set below
    let mut body = BytesMut::new();
    let mut varint = BytesMut::new();
    let mut written = 0usize;
    let mut last_delta = 0i64;
    let mut max_timestamp = base_timestamp;
    for r in records {
        body.clear();
        body.put_i8(0);
        put_varlong(&mut body, r.timestamp.wrapping_sub(base_timestamp));
        let delta = offset_i64(r.offset) - base_offset;
        put_varlong(&mut body, delta);
        put_bytes(&mut body, r.key.as_deref());
        put_bytes(&mut body, r.value.as_deref());
        put_varlong(&mut body, i64::try_from(r.headers.len()).unwrap_or(0));
        for h in &r.headers {
            put_bytes(&mut body, Some(h.name.as_bytes()));
            put_bytes(&mut body, Some(&h.value));
        }
        varint.clear();
        put_varlong(&mut varint, i64::try_from(body.len()).unwrap_or(i64::MAX));
        let after = out.len() - start + varint.len() + body.len();
        if limit.is_some_and(|limit| after > limit) {
            break;
        }
        out.put_slice(&varint);
        out.put_slice(&body);
        written += 1;
        last_delta = delta;
        max_timestamp = max_timestamp.max(r.timestamp);
    }
    if written == 0 {
        out.truncate(start);
        return 0;
    }
    let batch = &mut out[start..];
    let length = i32::try_from(batch.len() - 12).unwrap_or(i32::MAX);
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    batch[23..27].copy_from_slice(&i32::try_from(last_delta).unwrap_or(i32::MAX).to_be_bytes());
    batch[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
    batch[57..61].copy_from_slice(&i32::try_from(written).unwrap_or(i32::MAX).to_be_bytes());
    let crc = kafko_core::crc32c(&batch[CRC_START..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    written
}
