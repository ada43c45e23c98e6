//! The batch codec (FORMAT.md, "Batch"): producers encode the record area and its
//! checksum before the write group; the writer stamps the header with the base offset and
//! combines the checksums, so the write group's leader does no per-record work.

use bytes::Bytes;

use super::varint::{Cursor, put_uvarint, put_varint};
use crate::compression::{self, MAX_UNCOMPRESSED};
use crate::config::{Compression, MAX_BATCH_BYTES};
use crate::record::{Header, Record};

/// Size of the fixed batch header.
pub(crate) const HEADER_LEN: usize = 48;
/// Current format version.
pub(crate) const MAGIC: u8 = 1;
/// Payloads up to this size are hashed by the writer while framing (cheaper than a CRC
/// `combine`); larger ones are hashed by the producer and combined.
const REHASH_LIMIT: usize = 16 * 1024;
/// Bytes of the header after the `crc` field.
#[allow(clippy::cast_possible_truncation)] // 40
const HEADER_TAIL: u32 = (HEADER_LEN - 8) as u32;

/// A batch whose record area is encoded but which has no offset yet.
#[derive(Debug, Clone)]
pub(crate) struct EncodedBatch {
    /// Record area, compressed with `codec`. A `Vec`, not `Bytes`: the writer only copies
    /// it into its buffer, and `Bytes::from` a `Vec` with spare capacity (the encoder's
    /// size estimate, a compressor's worst-case bound) costs an extra allocation.
    pub(crate) payload: Vec<u8>,
    /// CRC state over `payload` when it is larger than `REHASH_LIMIT` (combined into the
    /// header CRC by the writer); empty otherwise.
    pub(crate) payload_crc: crc32fast::Hasher,
    pub(crate) codec: Compression,
    pub(crate) last_offset_delta: u32,
    pub(crate) base_timestamp: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) record_count: u32,
    pub(crate) uncompressed_len: u32,
    /// More batches of the same append follow this one (FORMAT.md, "Appends of several
    /// batches"); set by the writer.
    pub(crate) continued: bool,
}

impl EncodedBatch {
    /// On-disk size once framed.
    pub(crate) fn framed_len(&self) -> usize {
        HEADER_LEN + self.payload.len()
    }
}

/// One record's fields for the encoder.
#[derive(Clone, Copy)]
pub(crate) struct RecordFields<'a> {
    pub(crate) offset_delta: u32,
    pub(crate) timestamp: i64,
    pub(crate) key: Option<&'a [u8]>,
    pub(crate) value: Option<&'a [u8]>,
    pub(crate) headers: &'a [Header],
}

/// Encodes records into a batch awaiting its offset. `records` must be non-empty and in
/// offset-delta order.
pub(crate) fn encode<'a>(
    codec: Compression,
    records: impl ExactSizeIterator<Item = RecordFields<'a>> + Clone,
) -> Result<EncodedBatch, String> {
    // One allocation of the right size instead of repeated regrowth for large batches.
    let estimate: usize = records.clone().map(|r| encoded_estimate(&r)).sum();
    let mut encoder = BatchEncoder::with_capacity(estimate);
    for r in records {
        encoder.push(&r);
    }
    encoder.finish(codec)
}

/// Upper bound of the bytes one record takes in a record area (before compression).
pub(crate) fn encoded_estimate(r: &RecordFields<'_>) -> usize {
    r.key.map_or(0, <[u8]>::len)
        + r.value.map_or(0, <[u8]>::len)
        + r.headers
            .iter()
            .map(|h| h.name.len() + h.value.len() + 4)
            .sum::<usize>()
        + 24
}

/// A record area under construction: records are added one at a time (a send encodes
/// each record as it is parsed, holding no per-record value), then compressed once.
pub(crate) struct BatchEncoder {
    area: Vec<u8>,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    last_offset_delta: u32,
    count: u32,
}

impl BatchEncoder {
    /// An empty batch with room for `bytes` of record area.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        BatchEncoder {
            area: Vec::with_capacity(bytes.min(MAX_UNCOMPRESSED)),
            base_timestamp: None,
            max_timestamp: i64::MIN,
            last_offset_delta: 0,
            count: 0,
        }
    }

    /// Records added so far.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// Bytes of record area so far.
    pub(crate) fn area_len(&self) -> usize {
        self.area.len()
    }

    /// Adds a record; its `offset_delta` must follow the previous record's.
    pub(crate) fn push(&mut self, r: &RecordFields<'_>) {
        let base = *self.base_timestamp.get_or_insert(r.timestamp);
        self.max_timestamp = self.max_timestamp.max(r.timestamp);
        self.last_offset_delta = r.offset_delta;
        self.count += 1;
        let ts_delta = r.timestamp.wrapping_sub(base);
        // The length prefix needs the body size up front; computing it avoids a scratch copy.
        let headers_len: usize = r
            .headers
            .iter()
            .map(|h| {
                uvarint_len(h.name.len() as u64)
                    + h.name.len()
                    + uvarint_len(h.value.len() as u64)
                    + h.value.len()
            })
            .sum();
        let body_len = uvarint_len(u64::from(r.offset_delta))
            + uvarint_len(zigzag(ts_delta))
            + optional_len(r.key)
            + optional_len(r.value)
            + uvarint_len(r.headers.len() as u64)
            + headers_len;
        let area = &mut self.area;
        area.reserve(body_len + 10);
        put_uvarint(area, body_len as u64);
        put_uvarint(area, u64::from(r.offset_delta));
        put_varint(area, ts_delta);
        put_optional(area, r.key);
        put_optional(area, r.value);
        put_uvarint(area, r.headers.len() as u64);
        for h in r.headers {
            put_uvarint(area, h.name.len() as u64);
            area.extend_from_slice(h.name.as_bytes());
            put_uvarint(area, h.value.len() as u64);
            area.extend_from_slice(&h.value);
        }
    }

    /// Compresses the record area (under `codec`) into a batch awaiting its offset.
    pub(crate) fn finish(self, codec: Compression) -> Result<EncodedBatch, String> {
        let base_timestamp = self
            .base_timestamp
            .ok_or("a batch needs at least one record")?;
        let area = self.area;
        let uncompressed_len = u32::try_from(area.len())
            .ok()
            .filter(|_| area.len() <= MAX_UNCOMPRESSED)
            .ok_or_else(|| format!("batch of {} bytes exceeds the 64 MiB cap", area.len()))?;
        let payload = match codec {
            Compression::None => area,
            other => compression::compress(other, &area)?,
        };
        let mut payload_crc = crc32fast::Hasher::new();
        if payload.len() > REHASH_LIMIT {
            payload_crc.update(&payload);
        }
        Ok(EncodedBatch {
            payload,
            payload_crc,
            codec,
            last_offset_delta: self.last_offset_delta,
            base_timestamp,
            max_timestamp: self.max_timestamp,
            record_count: self.count,
            uncompressed_len,
            continued: false,
        })
    }
}

/// A batch with no records that still spans `last_offset_delta + 1` offsets. Compaction
/// writes one where every record of a segment's last batch was removed, so that the
/// cleaned segment ends exactly where the segments it replaces ended (FORMAT.md).
pub(crate) fn empty(
    last_offset_delta: u32,
    base_timestamp: i64,
    max_timestamp: i64,
) -> EncodedBatch {
    EncodedBatch {
        payload: Vec::new(),
        payload_crc: crc32fast::Hasher::new(),
        codec: Compression::None,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        record_count: 0,
        uncompressed_len: 0,
        continued: false,
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn uvarint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

fn optional_len(field: Option<&[u8]>) -> usize {
    match field {
        None => 1,
        Some(b) => uvarint_len(zigzag(b.len() as i64)) + b.len(),
    }
}

#[inline]
fn put_optional(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Appends the framed batch (header + payload) with `base_offset` to `out`.
// `encode` caps the record area at 64 MiB, so its compressed payload fits a u32 too.
#[allow(clippy::cast_possible_truncation)]
pub(crate) fn frame(out: &mut Vec<u8>, base_offset: u64, batch: &EncodedBatch) {
    let length = HEADER_TAIL + batch.payload.len() as u32;
    let mut tail = [0u8; HEADER_LEN - 8];
    tail[0] = MAGIC;
    tail[1] = batch.codec.id();
    tail[2] = u8::from(batch.continued);
    tail[4..12].copy_from_slice(&base_offset.to_le_bytes());
    tail[12..16].copy_from_slice(&batch.last_offset_delta.to_le_bytes());
    tail[16..24].copy_from_slice(&batch.base_timestamp.to_le_bytes());
    tail[24..32].copy_from_slice(&batch.max_timestamp.to_le_bytes());
    tail[32..36].copy_from_slice(&batch.record_count.to_le_bytes());
    tail[36..40].copy_from_slice(&batch.uncompressed_len.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&length.to_le_bytes());
    crc.update(&tail);
    // Hashing a small payload again is cheaper than `combine` (a GF(2) matrix power),
    // and this runs in the write group's leader, where every nanosecond is serialized.
    if batch.payload.len() <= REHASH_LIMIT {
        crc.update(&batch.payload);
    } else {
        crc.combine(&batch.payload_crc);
    }
    out.extend_from_slice(&length.to_le_bytes());
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(&tail);
    out.extend_from_slice(&batch.payload);
}

/// A parsed batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    /// Bytes after the CRC field.
    pub(crate) length: u32,
    pub(crate) crc: u32,
    pub(crate) codec: Compression,
    pub(crate) base_offset: u64,
    pub(crate) last_offset_delta: u32,
    pub(crate) base_timestamp: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) record_count: u32,
    pub(crate) uncompressed_len: u32,
    /// More batches of the same append follow.
    pub(crate) continued: bool,
}

/// Why a header could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// An all-zero length: the end of the written log.
    EndOfLog,
    /// Fewer than `HEADER_LEN` bytes.
    Short,
    /// Implausible fields.
    Invalid(String),
}

impl BatchHeader {
    /// Parses and sanity-checks the header at the start of `buf` (CRC is checked separately).
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
        let codec = Compression::from_id(buf[9])
            .ok_or_else(|| HeaderError::Invalid(format!("unknown attributes {:#x}", buf[9])))?;
        let header = BatchHeader {
            length,
            crc: u32_at(4),
            codec,
            base_offset: u64_at(12),
            last_offset_delta: u32_at(20),
            base_timestamp: u64_at(24) as i64,
            max_timestamp: u64_at(32) as i64,
            record_count: u32_at(40),
            uncompressed_len: u32_at(44),
            continued: buf[10] & 1 == 1,
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

    /// Whole framed size of the batch.
    pub(crate) fn framed_len(&self) -> usize {
        8 + self.length as usize
    }

    /// Offset of the last record.
    pub(crate) fn last_offset(&self) -> u64 {
        self.base_offset + u64::from(self.last_offset_delta)
    }

    /// Offset after this batch.
    pub(crate) fn next_offset(&self) -> u64 {
        self.last_offset() + 1
    }
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
        codec => Bytes::from(compression::decompress(
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
            let name = std::str::from_utf8(&area[base + name.start..base + name.end])
                .map_err(|_| "header name is not UTF-8".to_string())?
                .to_owned();
            let value_len = rc.length()?;
            let v = rc.take(value_len)?;
            headers.push(Header {
                name,
                value: area.slice(base + v.start..base + v.end),
            });
        }
        if !rc.is_empty() {
            return Err(format!(
                "{} trailing bytes in a record",
                len - rc.position()
            ));
        }
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
    if decoded != header.record_count {
        return Err(format!(
            "header says {} records, found {decoded}",
            header.record_count
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// (key, value, headers, timestamp) of a generated record.
    type ArbRecord = (
        Option<Vec<u8>>,
        Option<Vec<u8>>,
        Vec<(String, Vec<u8>)>,
        i64,
    );

    fn arb_record() -> impl Strategy<Value = ArbRecord> {
        (
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..300)),
            proptest::collection::vec(
                ("[a-z]{0,8}", proptest::collection::vec(any::<u8>(), 0..20)),
                0..3,
            ),
            any::<i64>(),
        )
    }

    proptest! {
        #[test]
        fn framed_batches_round_trip_for_every_codec(
            recs in proptest::collection::vec(arb_record(), 1..20),
            base in 0u64..i64::MAX as u64 - 64,
            codec_id in 0u8..3,
        ) {
            let codec = Compression::from_id(codec_id).unwrap();
            let headers: Vec<Vec<Header>> = recs.iter()
                .map(|r| r.2.iter().map(|(n, v)| Header::new(n.clone(), v.clone())).collect())
                .collect();
            let batch = encode(codec, recs.iter().zip(&headers).enumerate().map(|(i, (r, h))| RecordFields {
                offset_delta: i as u32,
                timestamp: r.3,
                key: r.0.as_deref(),
                value: r.1.as_deref(),
                headers: h,
            })).unwrap();
            let mut out = Vec::new();
            frame(&mut out, base, &batch);
            let header = BatchHeader::parse(&out).unwrap();
            prop_assert!(crc_matches(&header, &out));
            prop_assert_eq!(header.framed_len(), out.len());
            let mut decoded = Vec::new();
            decode_records(&header, Bytes::from(out), 3, &mut decoded).unwrap();
            prop_assert_eq!(decoded.len(), recs.len());
            for (i, (d, r)) in decoded.iter().zip(&recs).enumerate() {
                prop_assert_eq!(d.offset, base + i as u64);
                prop_assert_eq!(d.timestamp, r.3);
                prop_assert_eq!(d.key.as_deref(), r.0.as_deref());
                prop_assert_eq!(d.value.as_deref(), r.1.as_deref());
                prop_assert_eq!(&d.headers, &headers[i]);
            }
        }

        #[test]
        fn any_single_bit_flip_fails_the_crc(flip in 0usize..2000) {
            let batch = encode(Compression::None, std::iter::once(RecordFields {
                offset_delta: 0, timestamp: 7, key: Some(b"k"), value: Some(&[9u8; 300]), headers: &[],
            })).unwrap();
            let mut out = Vec::new();
            frame(&mut out, 10, &batch);
            let bit = flip % (out.len() * 8);
            if (4..8).contains(&(bit / 8)) { return Ok(()); } // flipping the CRC itself
            out[bit / 8] ^= 1 << (bit % 8);
            if let Ok(h) = BatchHeader::parse(&out) {
                prop_assert!(!crc_matches(&h, &out));
            }
        }
    }

    #[test]
    fn empty_compaction_batches_round_trip_but_need_an_empty_payload() {
        let mut out = Vec::new();
        frame(&mut out, 100, &empty(9, 5, 7));
        let header = BatchHeader::parse(&out).unwrap();
        assert!(crc_matches(&header, &out));
        assert_eq!((header.record_count, header.next_offset()), (0, 110));
        let mut decoded = Vec::new();
        decode_records(&header, Bytes::from(out.clone()), 0, &mut decoded).unwrap();
        assert!(decoded.is_empty());
        let mut bad = out;
        bad[44] = 1; // uncompressed_length claims bytes that are not there
        assert!(BatchHeader::parse(&bad).is_err());
    }

    proptest! {
        #[test]
        fn computed_varint_lengths_match_the_encoder(v in any::<u64>(), i in any::<i64>()) {
            let mut out = Vec::new();
            put_uvarint(&mut out, v);
            prop_assert_eq!(out.len(), uvarint_len(v));
            out.clear();
            put_varint(&mut out, i);
            prop_assert_eq!(out.len(), uvarint_len(zigzag(i)));
        }
    }

    /// Found by `cargo fuzz run batch`: a header whose `base_offset + last_offset_delta`
    /// ran past u64 made `next_offset` overflow (a panic in debug builds, a wrapped
    /// offset in release ones). Such a range is now a corrupt header.
    #[test]
    fn offset_ranges_past_the_largest_offset_are_corrupt() {
        let one = encode(
            Compression::None,
            std::iter::once(RecordFields {
                offset_delta: 0,
                timestamp: 7,
                key: None,
                value: Some(b"v"),
                headers: &[],
            }),
        )
        .unwrap();
        let next_offset_at = |base: u64| {
            let mut out = Vec::new();
            frame(&mut out, base, &one);
            BatchHeader::parse(&out).map(|h| h.next_offset())
        };
        let largest = i64::MAX as u64;
        assert_eq!(next_offset_at(largest - 1), Ok(largest));
        assert!(matches!(
            next_offset_at(largest),
            Err(HeaderError::Invalid(_))
        ));
        assert!(matches!(
            next_offset_at(u64::MAX),
            Err(HeaderError::Invalid(_))
        ));
        // The fuzzer's input: base offset 2^64 - 215, last_offset_delta 255.
        let found = [
            70u8, 0, 0, 0, 81, 12, 166, 93, 1, 2, 0, 0, 41, 255, 255, 255, 255, 255, 255, 255, 255,
            0, 0, 0, 232, 3, 0, 0, 0, 0, 0, 0, 232, 3, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 21, 0, 0, 0,
            40, 181, 47, 253, 32, 21, 169, 0, 0, 20, 0, 0, 6, 107, 101, 121, 16, 118, 97, 108, 117,
            101, 45, 48, 45, 1, 1, 104, 1, 118,
        ];
        assert!(matches!(
            BatchHeader::parse(&found),
            Err(HeaderError::Invalid(_))
        ));
        crate::fuzzing::batch(&found);
    }

    #[test]
    fn zero_length_means_end_of_log() {
        assert_eq!(BatchHeader::parse(&[0u8; 48]), Err(HeaderError::EndOfLog));
        assert_eq!(BatchHeader::parse(&[1u8; 10]), Err(HeaderError::Short));
    }
}
