//! Kafka record batches (magic 2), our own codec: the produce side decodes a producer's
//! batch (CRC-32C, attributes, the gzip / snappy (xerial) / lz4 / zstd codecs, varint
//! records, headers in order with duplicate keys kept), bounded in what it inflates; the
//! fetch side encodes kafko's records as one uncompressed batch per partition answer.
//!
//! Header values: Kafka allows a null header value, kafko stores bytes. A null value is
//! stored (and read back) as an empty value.

use std::io::Read;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafko_core::{Header, Record};

/// The batch header up to and including the record count: 61 bytes.
const BATCH_HEADER_LEN: usize = 61;
/// Bytes of the header before the CRC-covered part (base offset, length, leader epoch,
/// magic, crc).
const CRC_START: usize = 21;

/// Why a batch was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BatchError {
    /// Damaged bytes: a bad CRC, a truncated batch or record (`CORRUPT_MESSAGE`).
    #[error("corrupt record batch: {0}")]
    Corrupt(String),
    /// Well-formed bytes with a value Kafka refuses (`INVALID_RECORD`).
    #[error("invalid record: {0}")]
    Invalid(String),
    /// A message format before magic 2 (`UNSUPPORTED_FOR_MESSAGE_FORMAT`).
    #[error("message format (magic {0}) not supported; magic 2 only")]
    Magic(i8),
    /// A codec this broker does not know (`UNSUPPORTED_COMPRESSION_TYPE`).
    #[error("unsupported compression codec {0}")]
    Codec(i16),
}

/// One record of a producer's batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodedRecord {
    pub(crate) timestamp: i64,
    pub(crate) key: Option<Bytes>,
    pub(crate) value: Option<Bytes>,
    pub(crate) headers: Vec<Header>,
}

/// A producer's batch, decoded.
#[derive(Debug, Clone)]
pub(crate) struct DecodedBatch {
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) base_sequence: i32,
    pub(crate) transactional: bool,
    pub(crate) control: bool,
    /// The batch carries log-append-time timestamps: the broker stamps them.
    pub(crate) log_append_time: bool,
    pub(crate) records: Vec<DecodedRecord>,
}

impl DecodedBatch {
    /// Whether the batch comes from an idempotent producer.
    pub(crate) fn is_idempotent(&self) -> bool {
        self.producer_id >= 0
    }

    /// The sequence number of the batch's last record.
    pub(crate) fn last_sequence(&self) -> i32 {
        let count = i32::try_from(self.records.len()).unwrap_or(i32::MAX);
        // Sequences wrap at i32::MAX, as in Kafka.
        let last = i64::from(self.base_sequence) + i64::from(count) - 1;
        i32::try_from(last % (i64::from(i32::MAX) + 1)).unwrap_or(0)
    }
}

/// Splits a produce's `records` bytes into batches and decodes each; the whole set is
/// refused on the first bad batch. `inflate_budget` bounds the bytes compressed batches
/// may inflate to, and is reduced by what they did.
///
/// # Errors
/// [`BatchError`] for the first batch that fails.
pub(crate) fn decode_batches(
    mut data: Bytes,
    inflate_budget: &mut usize,
) -> Result<Vec<DecodedBatch>, BatchError> {
    let mut batches = Vec::new();
    while !data.is_empty() {
        if data.len() < 17 {
            return Err(BatchError::Corrupt("truncated batch header".into()));
        }
        let length = i32::from_be_bytes([data[8], data[9], data[10], data[11]]);
        let Ok(length) = usize::try_from(length) else {
            return Err(BatchError::Corrupt("negative batch length".into()));
        };
        let magic = i8::from_be_bytes([data[16]]);
        if magic != 2 {
            return Err(BatchError::Magic(magic));
        }
        let total = length
            .checked_add(12)
            .filter(|t| *t >= BATCH_HEADER_LEN && *t <= data.len())
            .ok_or_else(|| BatchError::Corrupt("batch length past the data".into()))?;
        let batch = data.split_to(total);
        batches.push(decode_batch(batch, inflate_budget)?);
    }
    if batches.is_empty() {
        return Err(BatchError::Invalid("no record batch".into()));
    }
    Ok(batches)
}

fn decode_batch(batch: Bytes, inflate_budget: &mut usize) -> Result<DecodedBatch, BatchError> {
    let mut head = &batch[CRC_START - 4..BATCH_HEADER_LEN];
    let crc = head.get_u32();
    if crc32c::crc32c(&batch[CRC_START..]) != crc {
        return Err(BatchError::Corrupt("CRC-32C mismatch".into()));
    }
    let attributes = head.get_i16();
    let _last_offset_delta = head.get_i32();
    let base_timestamp = head.get_i64();
    let _max_timestamp = head.get_i64();
    let producer_id = head.get_i64();
    let producer_epoch = head.get_i16();
    let base_sequence = head.get_i32();
    let count = head.get_i32();
    let count =
        usize::try_from(count).map_err(|_| BatchError::Corrupt("negative record count".into()))?;
    let body = batch.slice(BATCH_HEADER_LEN..);
    let codec = attributes & 0x7;
    let body = match codec {
        0 => body,
        1..=4 => {
            let inflated = inflate(codec, &body, *inflate_budget)?;
            *inflate_budget -= inflated.len();
            inflated
        }
        other => return Err(BatchError::Codec(other)),
    };
    // Every record takes at least 7 bytes: a bound on the count before allocating.
    if count > body.len() / 7 + 1 {
        return Err(BatchError::Corrupt(
            "record count larger than the batch".into(),
        ));
    }
    let mut reader = Reader { buf: body };
    let mut records = Vec::with_capacity(count);
    for _ in 0..count {
        records.push(reader.record(base_timestamp)?);
    }
    if !reader.buf.is_empty() {
        return Err(BatchError::Corrupt("bytes after the last record".into()));
    }
    Ok(DecodedBatch {
        producer_id,
        producer_epoch,
        base_sequence,
        transactional: attributes & 0x10 != 0,
        control: attributes & 0x20 != 0,
        log_append_time: attributes & 0x08 != 0,
        records,
    })
}

/// Inflates a compressed record area, refusing one past `max` bytes.
fn inflate(codec: i16, data: &[u8], max: usize) -> Result<Bytes, BatchError> {
    let bad = |e: &dyn std::fmt::Display| BatchError::Corrupt(format!("codec {codec}: {e}"));
    let mut out = Vec::new();
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    match codec {
        1 => {
            flate2::read::GzDecoder::new(data)
                .take(limit)
                .read_to_end(&mut out)
                .map_err(|e| bad(&e))?;
        }
        2 => out = snappy_xerial(data, max)?,
        3 => {
            lz4_flex::frame::FrameDecoder::new(data)
                .take(limit)
                .read_to_end(&mut out)
                .map_err(|e| bad(&e))?;
        }
        4 => {
            zstd::stream::read::Decoder::new(data)
                .map_err(|e| bad(&e))?
                .take(limit)
                .read_to_end(&mut out)
                .map_err(|e| bad(&e))?;
        }
        other => return Err(BatchError::Codec(other)),
    }
    if out.len() > max {
        return Err(BatchError::Invalid(format!(
            "a compressed batch inflates past {max} bytes"
        )));
    }
    Ok(Bytes::from(out))
}

/// snappy-java's framing (a 16-byte magic header, then length-prefixed raw blocks), or
/// a raw snappy block without it, as Kafka's reader accepts both.
fn snappy_xerial(data: &[u8], max: usize) -> Result<Vec<u8>, BatchError> {
    const MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";
    let bad = |e: &dyn std::fmt::Display| BatchError::Corrupt(format!("snappy: {e}"));
    let mut out = Vec::new();
    let block = |raw: &[u8], out: &mut Vec<u8>| -> Result<(), BatchError> {
        let len = snap::raw::decompress_len(raw).map_err(|e| bad(&e))?;
        if out.len().saturating_add(len) > max {
            return Err(BatchError::Invalid(format!(
                "a compressed batch inflates past {max} bytes"
            )));
        }
        let start = out.len();
        out.resize(start + len, 0);
        snap::raw::Decoder::new()
            .decompress(raw, &mut out[start..])
            .map_err(|e| bad(&e))?;
        Ok(())
    };
    if data.len() >= 16 && &data[..8] == MAGIC {
        let mut rest = &data[16..];
        while !rest.is_empty() {
            if rest.len() < 4 {
                return Err(bad(&"truncated block length"));
            }
            let n = usize::try_from(rest.get_u32()).unwrap_or(usize::MAX);
            if n > rest.len() {
                return Err(bad(&"block past the data"));
            }
            block(&rest[..n], &mut out)?;
            rest = &rest[n..];
        }
    } else {
        block(data, &mut out)?;
    }
    Ok(out)
}

struct Reader {
    buf: Bytes,
}

fn truncated() -> BatchError {
    BatchError::Corrupt("truncated record".into())
}

impl Reader {
    fn varlong(&mut self) -> Result<i64, BatchError> {
        let mut raw: u64 = 0;
        for shift in (0..70).step_by(7) {
            if self.buf.is_empty() {
                return Err(truncated());
            }
            let byte = self.buf.get_u8();
            if shift == 63 && byte > 1 {
                return Err(BatchError::Corrupt("varint too long".into()));
            }
            raw |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                // Zigzag: the low bit is the sign.
                #[allow(clippy::cast_possible_wrap)]
                return Ok((raw >> 1) as i64 ^ -((raw & 1) as i64));
            }
        }
        Err(BatchError::Corrupt("varint too long".into()))
    }

    fn varint(&mut self) -> Result<i32, BatchError> {
        i32::try_from(self.varlong()?).map_err(|_| BatchError::Corrupt("varint past i32".into()))
    }

    /// A length-prefixed byte string; `-1` is null.
    fn bytes(&mut self) -> Result<Option<Bytes>, BatchError> {
        let len = self.varint()?;
        if len < 0 {
            return if len == -1 {
                Ok(None)
            } else {
                Err(BatchError::Corrupt("negative length".into()))
            };
        }
        let len = usize::try_from(len).map_err(|_| truncated())?;
        if len > self.buf.len() {
            return Err(truncated());
        }
        Ok(Some(self.buf.split_to(len)))
    }

    fn record(&mut self, base_timestamp: i64) -> Result<DecodedRecord, BatchError> {
        let length = usize::try_from(self.varint()?)
            .map_err(|_| BatchError::Corrupt("negative record length".into()))?;
        if length > self.buf.len() {
            return Err(truncated());
        }
        let rest = self.buf.split_off(length);
        let mut record = Reader {
            buf: std::mem::replace(&mut self.buf, rest),
        };
        let parsed = record.fields(base_timestamp)?;
        if !record.buf.is_empty() {
            return Err(BatchError::Corrupt("record longer than its fields".into()));
        }
        Ok(parsed)
    }

    fn fields(&mut self, base_timestamp: i64) -> Result<DecodedRecord, BatchError> {
        if self.buf.is_empty() {
            return Err(truncated());
        }
        let _attributes = self.buf.get_i8();
        let timestamp = base_timestamp.wrapping_add(self.varlong()?);
        let _offset_delta = self.varint()?;
        let key = self.bytes()?;
        let value = self.bytes()?;
        let count = self.varint()?;
        let count = usize::try_from(count)
            .map_err(|_| BatchError::Corrupt("negative header count".into()))?;
        if count > self.buf.len() / 2 {
            return Err(truncated());
        }
        let mut headers = Vec::with_capacity(count);
        for _ in 0..count {
            let name = self
                .bytes()?
                .ok_or_else(|| BatchError::Invalid("a header key is null".into()))?;
            let name = String::from_utf8(name.to_vec())
                .map_err(|_| BatchError::Invalid("a header key is not UTF-8".into()))?;
            let value = self.bytes()?.unwrap_or_default();
            headers.push(Header { name, value });
        }
        Ok(DecodedRecord {
            timestamp,
            key,
            value,
            headers,
        })
    }
}

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

/// Appends `records` (of one partition, ascending offsets) to `out` as one batch: no
/// compression, create-time timestamps, no producer id. With a `limit`, the batch stops
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
    let crc = crc32c::crc32c(&batch[CRC_START..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(
        offset: u64,
        key: Option<&str>,
        value: Option<&str>,
        headers: &[(&str, &str)],
    ) -> Record {
        Record {
            partition: 0,
            offset,
            timestamp: 1_700_000_000_000 + i64::try_from(offset).unwrap(),
            key: key.map(|k| Bytes::from(k.to_owned())),
            value: value.map(|v| Bytes::from(v.to_owned())),
            headers: headers
                .iter()
                .map(|(n, v)| Header::new(*n, Bytes::from(v.to_string())))
                .collect(),
        }
    }

    #[test]
    fn a_batch_round_trips_with_duplicate_headers_null_key_and_tombstone() {
        let records = vec![
            record(5, None, Some("v"), &[("h", "1"), ("h", "2")]),
            record(6, Some("k"), None, &[]),
            record(8, Some("k2"), Some(""), &[("a", "")]),
        ];
        let mut out = BytesMut::new();
        encode_batch(&records, &mut out, None);
        let batches = decode_batches(out.freeze(), &mut (1 << 20)).unwrap();
        assert_eq!(batches.len(), 1);
        let got = &batches[0].records;
        assert_eq!(got.len(), 3);
        for (g, r) in got.iter().zip(&records) {
            assert_eq!(g.key, r.key);
            assert_eq!(g.value, r.value);
            assert_eq!(g.headers, r.headers);
            assert_eq!(g.timestamp, r.timestamp);
        }
    }

    #[test]
    fn a_limit_cuts_the_batch_before_the_record_that_does_not_fit() {
        let records: Vec<Record> = (0..5)
            .map(|i| record(i, None, Some("0123456789"), &[]))
            .collect();
        let mut whole = BytesMut::new();
        assert_eq!(encode_batch(&records, &mut whole, None), 5);
        let mut cut = BytesMut::new();
        assert_eq!(encode_batch(&records, &mut cut, Some(whole.len() - 1)), 4);
        let batches = decode_batches(cut.freeze(), &mut (1 << 20)).unwrap();
        assert_eq!(batches[0].records.len(), 4);
        let mut none = BytesMut::new();
        assert_eq!(encode_batch(&records, &mut none, Some(70)), 0);
        assert!(none.is_empty());
    }

    #[test]
    fn a_flipped_bit_fails_the_crc() {
        let mut out = BytesMut::new();
        encode_batch(&[record(0, Some("k"), Some("value"), &[])], &mut out, None);
        let last = out.len() - 1;
        out[last] ^= 1;
        assert!(matches!(
            decode_batches(out.freeze(), &mut (1 << 20)),
            Err(BatchError::Corrupt(_))
        ));
    }

    #[test]
    fn varlongs_round_trip_at_the_edges() {
        for v in [
            0,
            1,
            -1,
            63,
            -64,
            64,
            i64::from(i32::MAX),
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = BytesMut::new();
            put_varlong(&mut out, v);
            let mut r = Reader { buf: out.freeze() };
            assert_eq!(r.varlong().unwrap(), v);
        }
    }

    #[test]
    fn a_gzip_bomb_is_refused_past_the_bound() {
        use flate2::write::GzEncoder;
        use std::io::Write;
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(&vec![0u8; 1 << 20]).unwrap();
        let compressed = enc.finish().unwrap();
        assert!(matches!(
            inflate(1, &compressed, 1024),
            Err(BatchError::Invalid(_))
        ));
        assert_eq!(inflate(1, &compressed, 1 << 20).unwrap().len(), 1 << 20);
    }

    #[test]
    fn every_producer_codec_inflates() {
        let raw: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        // snappy-java's framing: magic, two versions, then length-prefixed raw blocks.
        let mut xerial = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01".to_vec();
        for block in raw.chunks(32 * 1024) {
            let compressed = snap::raw::Encoder::new().compress_vec(block).unwrap();
            xerial.extend_from_slice(&u32::try_from(compressed.len()).unwrap().to_be_bytes());
            xerial.extend_from_slice(&compressed);
        }
        let plain_snappy = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        let mut lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
        std::io::Write::write_all(&mut lz4, &raw).unwrap();
        let lz4 = lz4.finish().unwrap();
        let zstd = zstd::encode_all(&raw[..], 3).unwrap();
        for (codec, data) in [(2, &xerial), (2, &plain_snappy), (3, &lz4), (4, &zstd)] {
            assert_eq!(
                inflate(codec, data, raw.len()).unwrap(),
                raw,
                "codec {codec}"
            );
            assert!(
                matches!(
                    inflate(codec, data, raw.len() - 1),
                    Err(BatchError::Invalid(_))
                ),
                "codec {codec} past the bound"
            );
        }
        assert!(matches!(
            inflate(3, b"not lz4", 1 << 20),
            Err(BatchError::Corrupt(_))
        ));
    }

    #[test]
    fn compressed_batches_share_one_inflate_budget() {
        use std::io::Write;
        let records: Vec<Record> = (0..100)
            .map(|i| record(i, None, Some(&"x".repeat(1000)), &[]))
            .collect();
        let mut plain = BytesMut::new();
        encode_batch(&records, &mut plain, None);
        // The same batch with its record area gzipped (attributes codec 1).
        let area = &plain[BATCH_HEADER_LEN..];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(area).unwrap();
        let gz = gz.finish().unwrap();
        let mut batch = BytesMut::from(&plain[..BATCH_HEADER_LEN]);
        batch[21..23].copy_from_slice(&1i16.to_be_bytes());
        batch.extend_from_slice(&gz);
        let length = i32::try_from(batch.len() - 12).unwrap();
        batch[8..12].copy_from_slice(&length.to_be_bytes());
        let crc = crc32c::crc32c(&batch[CRC_START..]);
        batch[17..21].copy_from_slice(&crc.to_be_bytes());
        let batch = batch.freeze();
        let mut budget = area.len() * 3 / 2;
        let decoded = decode_batches(batch.clone(), &mut budget).unwrap();
        assert_eq!(decoded[0].records.len(), 100);
        assert_eq!(budget, area.len() / 2);
        assert!(matches!(
            decode_batches(batch, &mut budget),
            Err(BatchError::Invalid(_))
        ));
    }
}
