//! Format 1 batches (FORMAT.md, "Format 1"): kafko's first layout, read from segments
//! written before format 2 and never written again (tests and the fuzzer write them,
//! to keep the reader honest). Parsed into the header both formats share.

use bytes::Bytes;

use super::batch::{
    BatchHeader, Format, HeaderError, ProducerFields, check_count, header_name, no_trailing_bytes,
};
use super::varint::Cursor;
use crate::compression;
use crate::compression::MAX_UNCOMPRESSED;
use crate::config::{Compression, MAX_BATCH_BYTES};
use crate::record::{Header, Record};

/// Size of the fixed batch header.
pub(crate) const HEADER_LEN: usize = 48;
/// Format 1's magic.
pub(crate) const MAGIC: u8 = 1;
/// Bytes of the header after the `crc` field.
#[allow(clippy::cast_possible_truncation)] // 40
const HEADER_TAIL: u32 = (HEADER_LEN - 8) as u32;

/// Parses and sanity-checks a format 1 header at the start of `buf` (the CRC is checked
/// separately).
pub(crate) fn parse(buf: &[u8]) -> Result<BatchHeader, HeaderError> {
    if buf.len() >= 4 && buf[..4] == [0; 4] {
        return Err(HeaderError::EndOfLog);
    }
    if buf.len() < HEADER_LEN {
        return Err(HeaderError::Short);
    }
    let u32_at = |i: usize| u32::from_le_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&buf[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let length = u32_at(0);
    if length < HEADER_TAIL || u64::from(length) > MAX_BATCH_BYTES + u64::from(HEADER_TAIL) {
        return Err(HeaderError::Invalid(format!(
            "implausible batch length {length}"
        )));
    }
    if buf[8] != MAGIC {
        return Err(HeaderError::Invalid(format!("unknown magic {}", buf[8])));
    }
    let codec = Compression::from_v1_id(buf[9])
        .ok_or_else(|| HeaderError::Invalid(format!("unknown attributes {:#x}", buf[9])))?;
    let header = BatchHeader {
        format: Format::V1,
        framed: length + 8,
        crc: u32_at(4),
        codec,
        codec_id: codec.kafka_id(),
        attributes: codec.kafka_id(),
        base_offset: u64_at(12),
        last_offset_delta: u32_at(20),
        base_timestamp: u64_at(24) as i64,
        max_timestamp: u64_at(32) as i64,
        record_count: u32_at(40),
        uncompressed_len: u32_at(44),
        continued: buf[10] & 1 == 1,
        producer: ProducerFields::NONE,
    };
    // An empty batch is written only by compaction, to keep a cleaned segment's
    // offset range; it carries no payload at all.
    let empty_ok = header.record_count == 0
        && header.uncompressed_len == 0
        && length == HEADER_TAIL
        && header.codec == Compression::None;
    if (header.record_count == 0 && !empty_ok)
        || u64::from(header.record_count) > u64::from(header.last_offset_delta) + 1
        || header.uncompressed_len as usize > MAX_UNCOMPRESSED
    {
        return Err(HeaderError::Invalid("inconsistent record counts".into()));
    }
    // Offsets are Kafka's, a non-negative i64: a batch reaching past that was not
    // written by this log, and its `next_offset` would not fit in a u64 either.
    let last = header
        .base_offset
        .checked_add(u64::from(header.last_offset_delta));
    if last.is_none_or(|last| last >= i64::MAX as u64) {
        return Err(HeaderError::Invalid(format!(
            "offset range from {} by {} is beyond the largest offset",
            header.base_offset, header.last_offset_delta
        )));
    }
    Ok(header)
}

/// Verifies the CRC of a complete framed batch.
pub(crate) fn crc_matches(header: &BatchHeader, framed: &[u8]) -> bool {
    if framed.len() != header.framed_len() {
        return false;
    }
    let mut crc = crc32fast::Hasher::new();
    crc.update(&framed[..4]);
    crc.update(&framed[8..]);
    crc.finalize() == header.crc
}

/// Decodes every record of a verified batch. `framed` must hold exactly the batch.
pub(crate) fn decode_records(
    header: &BatchHeader,
    framed: Bytes,
    partition: u32,
    out: &mut Vec<Record>,
) -> Result<(), String> {
    let payload = framed.slice(HEADER_LEN..);
    let area = match header.codec {
        Compression::None => payload,
        codec => Bytes::from(compression::decompress_v1(
            codec,
            &payload,
            header.uncompressed_len as usize,
        )?),
    };
    if area.len() != header.uncompressed_len as usize {
        return Err("record area length mismatch".into());
    }
    let mut cur = Cursor::new(&area);
    let mut decoded = 0u32;
    while !cur.is_empty() {
        let len = cur.length()?;
        let body = cur.take(len)?;
        let mut rc = Cursor::new(&area[body.clone()]);
        let base = body.start;
        let offset_delta = rc.uvarint()?;
        if offset_delta > u64::from(header.last_offset_delta) {
            return Err(format!("offset delta {offset_delta} beyond the batch"));
        }
        let ts_delta = rc.varint()?;
        let key = rc
            .optional_bytes()?
            .map(|r| area.slice(base + r.start..base + r.end));
        let value = rc
            .optional_bytes()?
            .map(|r| area.slice(base + r.start..base + r.end));
        let header_count = rc.length()?;
        if header_count > len {
            return Err("implausible header count".into());
        }
        let mut headers = Vec::with_capacity(header_count);
        for _ in 0..header_count {
            let name_len = rc.length()?;
            let name = rc.take(name_len)?;
            let name = header_name(&area[base + name.start..base + name.end])?;
            let value_len = rc.length()?;
            let v = rc.take(value_len)?;
            headers.push(Header {
                name,
                value: area.slice(base + v.start..base + v.end),
            });
        }
        no_trailing_bytes(&rc, len)?;
        out.push(Record {
            partition,
            offset: header.base_offset + offset_delta,
            timestamp: header.base_timestamp.wrapping_add(ts_delta),
            key,
            value,
            headers,
        });
        decoded += 1;
    }
    check_count(header, decoded)
}

/// Writes format 1 batches: only tests and the fuzzer do, to build format 1 segments.
#[cfg(any(test, feature = "fuzzing"))]
// Test and fuzzer setup: a failure to build an input may panic.
#[allow(clippy::expect_used)]
pub(crate) mod write {
    use super::{HEADER_LEN, HEADER_TAIL, MAGIC};
    use crate::compression;
    use crate::config::Compression;
    use crate::record::Header;
    use crate::segment::varint::{put_uvarint, put_varint};

    /// One record of a format 1 batch.
    pub(crate) struct V1Record<'a> {
        pub(crate) timestamp: i64,
        pub(crate) key: Option<&'a [u8]>,
        pub(crate) value: Option<&'a [u8]>,
        pub(crate) headers: &'a [Header],
    }

    fn put_optional(out: &mut Vec<u8>, field: Option<&[u8]>) {
        match field {
            None => put_varint(out, -1),
            Some(b) => {
                put_varint(out, b.len() as i64);
                out.extend_from_slice(b);
            }
        }
    }

    /// The record area of `records` at consecutive offset deltas.
    pub(crate) fn area(records: &[V1Record<'_>]) -> Vec<u8> {
        let base = records.first().map_or(0, |r| r.timestamp);
        let mut area = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let mut body = Vec::new();
            put_uvarint(&mut body, i as u64);
            put_varint(&mut body, r.timestamp.wrapping_sub(base));
            put_optional(&mut body, r.key);
            put_optional(&mut body, r.value);
            put_uvarint(&mut body, r.headers.len() as u64);
            for h in r.headers {
                put_uvarint(&mut body, h.name.len() as u64);
                body.extend_from_slice(h.name.as_bytes());
                put_uvarint(&mut body, h.value.len() as u64);
                body.extend_from_slice(&h.value);
            }
            put_uvarint(&mut area, body.len() as u64);
            area.extend_from_slice(&body);
        }
        area
    }

    /// Appends a format 1 batch of `records` at `base_offset` to `out`.
    #[allow(clippy::cast_possible_truncation)]
    pub(crate) fn frame(
        out: &mut Vec<u8>,
        base_offset: u64,
        codec: Compression,
        records: &[V1Record<'_>],
        continued: bool,
    ) {
        let raw = area(records);
        let payload = compression::compress_v1(codec, &raw).expect("compress");
        let length = HEADER_TAIL + payload.len() as u32;
        let mut tail = [0u8; HEADER_LEN - 8];
        tail[0] = MAGIC;
        tail[1] = codec.v1_id();
        tail[2] = u8::from(continued);
        tail[4..12].copy_from_slice(&base_offset.to_le_bytes());
        tail[12..16].copy_from_slice(&(records.len() as u32 - 1).to_le_bytes());
        let base_ts = records.first().map_or(0, |r| r.timestamp);
        let max_ts = records.iter().map(|r| r.timestamp).max().unwrap_or(0);
        tail[16..24].copy_from_slice(&base_ts.to_le_bytes());
        tail[24..32].copy_from_slice(&max_ts.to_le_bytes());
        tail[32..36].copy_from_slice(&(records.len() as u32).to_le_bytes());
        tail[36..40].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&length.to_le_bytes());
        crc.update(&tail);
        crc.update(&payload);
        out.extend_from_slice(&length.to_le_bytes());
        out.extend_from_slice(&crc.finalize().to_le_bytes());
        out.extend_from_slice(&tail);
        out.extend_from_slice(&payload);
    }
}

#[cfg(test)]
mod tests {
    use super::write::{V1Record, frame};
    use super::*;

    #[test]
    fn format_1_batches_still_decode_for_every_codec() {
        let headers = [Header::new("h", b"x".to_vec())];
        let records = [
            V1Record {
                timestamp: 7,
                key: Some(b"k"),
                value: Some(b"v1"),
                headers: &headers,
            },
            V1Record {
                timestamp: 9,
                key: None,
                value: None,
                headers: &[],
            },
        ];
        for codec in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let mut out = Vec::new();
            frame(&mut out, 40, codec, &records, false);
            let header = parse(&out).unwrap();
            assert_eq!(header.format, Format::V1);
            assert!(crc_matches(&header, &out));
            let mut decoded = Vec::new();
            decode_records(&header, Bytes::from(out.clone()), 0, &mut decoded).unwrap();
            assert_eq!(decoded.len(), 2);
            assert_eq!((decoded[0].offset, decoded[1].offset), (40, 41));
            assert_eq!(decoded[0].headers, headers);
            assert_eq!(decoded[1].value, None);
            out[30] ^= 1;
            assert!(!crc_matches(&parse(&out).unwrap(), &out));
        }
    }

    #[test]
    fn zero_length_means_end_of_log() {
        assert_eq!(parse(&[0u8; 48]), Err(HeaderError::EndOfLog));
        assert_eq!(parse(&[1u8; 10]), Err(HeaderError::Short));
    }
}
