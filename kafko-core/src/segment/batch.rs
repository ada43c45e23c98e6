//! The batch codec (FORMAT.md, "Batch"). A segment of format 2 holds Kafka record
//! batches (magic 2) byte for byte as Kafka defines them; a segment of format 1 holds
//! kafko's earlier batches (`batch_v1`), read but never written. This module owns the
//! format 2 codec and the header both formats parse into.
//!
//! Producers encode and checksum a whole batch before the write group: Kafka's CRC-32C
//! does not cover the base offset, so the writer only stamps the offset into the first
//! eight bytes and copies the batch, with no per-record work in the group's leader.

use bytes::Bytes;

use super::batch_v1;
use super::varint::{Cursor, put_varint};
use crate::compression::{self, MAX_UNCOMPRESSED};
use crate::config::{Compression, MAX_BATCH_BYTES};
use crate::record::{Header, Record};

/// Size of a format 2 batch header (Kafka's record batch up to its record count).
pub(crate) const HEADER_LEN: usize = 61;
/// Kafka's magic for record batches.
pub(crate) const MAGIC: u8 = 2;
/// The partition leader epoch every stored batch carries: one node, leader forever.
pub(crate) const LEADER_EPOCH: i32 = 0;
/// Where the CRC-32C-covered bytes begin (the attributes).
pub(crate) const CRC_START: usize = 21;
/// Kafka's batch checksum: CRC-32C (Castagnoli) of `bytes`, the batch from its
/// attributes on.
pub fn crc32c(bytes: &[u8]) -> u32 {
    // The checksum comes widened to 64 bits; a CRC-32 always fits in 32.
    u32::try_from(crc_fast::checksum(
        crc_fast::CrcAlgorithm::Crc32Iscsi,
        bytes,
    ))
    .unwrap_or(0)
}

/// Bytes of a header after the `length` field: what `length` counts besides records.
const HEADER_AFTER_LENGTH: usize = HEADER_LEN - 12;

/// Attribute bits (Kafka's, plus kafko's append bit).
const ATTR_CODEC: u16 = 0x07;
pub(crate) const ATTR_LOG_APPEND_TIME: u16 = 0x08;
pub(crate) const ATTR_TRANSACTIONAL: u16 = 0x10;
pub(crate) const ATTR_CONTROL: u16 = 0x20;
const ATTR_DELETE_HORIZON: u16 = 0x40;
/// Set by kafko on every batch of an append of several batches but its last (FORMAT.md,
/// "Appends of several batches"). Kafka leaves bits 7–15 unused; clients ignore them.
pub(crate) const ATTR_CONTINUED: u16 = 0x4000;
/// Every attribute bit a stored batch may carry.
const ATTR_KNOWN: u16 = ATTR_CODEC
    | ATTR_LOG_APPEND_TIME
    | ATTR_TRANSACTIONAL
    | ATTR_CONTROL
    | ATTR_DELETE_HORIZON
    | ATTR_CONTINUED;

/// The batch layout of a segment: every batch of a segment has the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// kafko's first layout: read, never written.
    V1,
    /// Kafka's record batch, magic 2.
    V2,
}

impl Format {
    /// Bytes of a batch header in this format.
    pub(crate) fn header_len(self) -> usize {
        match self {
            Format::V1 => batch_v1::HEADER_LEN,
            Format::V2 => HEADER_LEN,
        }
    }
}

/// A whole format 2 batch, checksummed, that has no offset yet.
#[derive(Debug, Clone)]
pub(crate) struct EncodedBatch {
    /// The batch, header first. Its base offset (bytes 0–8) is written by the writer;
    /// the CRC does not cover it.
    pub(crate) bytes: Vec<u8>,
    pub(crate) last_offset_delta: u32,
    pub(crate) max_timestamp: i64,
}

impl EncodedBatch {
    /// On-disk size.
    pub(crate) fn framed_len(&self) -> usize {
        self.bytes.len()
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

/// Encodes records into one batch awaiting its offset. `records` must be non-empty and
/// in offset-delta order.
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
    encoder.finish(codec, false)
}

/// Upper bound of the bytes one record takes in a record area (before compression).
pub(crate) fn encoded_estimate(r: &RecordFields<'_>) -> usize {
    r.key.map_or(0, <[u8]>::len)
        + r.value.map_or(0, <[u8]>::len)
        + r.headers
            .iter()
            .map(|h| h.name.len() + h.value.len() + 10)
            .sum::<usize>()
        + 32
}

/// A batch under construction: records are added one at a time (a send encodes each
/// record as it is parsed, holding no per-record value), then compressed once. An
/// uncompressed batch is built in place behind room for its header.
pub(crate) struct BatchEncoder {
    /// The header's room, then the record area.
    buf: Vec<u8>,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    last_offset_delta: u32,
    count: u32,
}

impl BatchEncoder {
    /// An empty batch with room for `bytes` of record area.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(HEADER_LEN + bytes.min(MAX_UNCOMPRESSED));
        buf.resize(HEADER_LEN, 0);
        BatchEncoder {
            buf,
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
        self.buf.len() - HEADER_LEN
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
            .map(|h| bytes_len(Some(h.name.as_bytes())) + bytes_len(Some(&h.value)))
            .sum();
        let body_len = 1
            + varint_len(ts_delta)
            + varint_len(i64::from(r.offset_delta))
            + bytes_len(r.key)
            + bytes_len(r.value)
            + varint_len(r.headers.len() as i64)
            + headers_len;
        let area = &mut self.buf;
        area.reserve(body_len + 10);
        put_varint(area, body_len as i64);
        area.push(0); // record attributes: unused
        put_varint(area, ts_delta);
        put_varint(area, i64::from(r.offset_delta));
        put_bytes(area, r.key);
        put_bytes(area, r.value);
        put_varint(area, r.headers.len() as i64);
        for h in r.headers {
            put_bytes(area, Some(h.name.as_bytes()));
            put_bytes(area, Some(&h.value));
        }
    }

    /// Compresses the record area (under `codec`) and completes the header. `continued`
    /// marks a batch that more batches of its append follow.
    pub(crate) fn finish(
        self,
        codec: Compression,
        continued: bool,
    ) -> Result<EncodedBatch, String> {
        let base_timestamp = self
            .base_timestamp
            .ok_or("a batch needs at least one record")?;
        let area_len = self.area_len();
        if area_len > MAX_UNCOMPRESSED {
            return Err(format!("batch of {area_len} bytes exceeds the 64 MiB cap"));
        }
        let mut bytes = match codec {
            Compression::None => self.buf,
            other => {
                let packed = compression::compress(other, &self.buf[HEADER_LEN..])?;
                let mut bytes = Vec::with_capacity(HEADER_LEN + packed.len());
                bytes.resize(HEADER_LEN, 0);
                bytes.extend_from_slice(&packed);
                bytes
            }
        };
        let attributes = codec.kafka_id() | if continued { ATTR_CONTINUED } else { 0 };
        write_header(
            &mut bytes,
            &HeaderFields {
                attributes,
                last_offset_delta: self.last_offset_delta,
                base_timestamp,
                max_timestamp: self.max_timestamp,
                producer: ProducerFields::NONE,
                record_count: self.count,
            },
        );
        Ok(EncodedBatch {
            bytes,
            last_offset_delta: self.last_offset_delta,
            max_timestamp: self.max_timestamp,
        })
    }
}

/// The producer fields of a batch: id, epoch and first sequence (−1 each when the
/// producer is not idempotent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProducerFields {
    pub(crate) id: i64,
    pub(crate) epoch: i16,
    pub(crate) base_sequence: i32,
}

impl ProducerFields {
    /// A batch without an idempotent producer.
    pub(crate) const NONE: ProducerFields = ProducerFields {
        id: -1,
        epoch: -1,
        base_sequence: -1,
    };
}

/// What a header records besides its offset, length and CRC.
struct HeaderFields {
    attributes: u16,
    last_offset_delta: u32,
    base_timestamp: i64,
    max_timestamp: i64,
    producer: ProducerFields,
    record_count: u32,
}

/// Fills the header of `batch` (its first `HEADER_LEN` bytes, the record area after
/// them) with base offset 0, then its CRC-32C.
// The record area is capped at 64 MiB and a count at `u32`: every field fits.
#[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
fn write_header(batch: &mut [u8], f: &HeaderFields) {
    let length = (batch.len() - 12) as i32;
    batch[0..8].copy_from_slice(&0i64.to_be_bytes());
    batch[8..12].copy_from_slice(&length.to_be_bytes());
    batch[12..16].copy_from_slice(&LEADER_EPOCH.to_be_bytes());
    batch[16] = MAGIC;
    batch[21..23].copy_from_slice(&f.attributes.to_be_bytes());
    batch[23..27].copy_from_slice(&(f.last_offset_delta as i32).to_be_bytes());
    batch[27..35].copy_from_slice(&f.base_timestamp.to_be_bytes());
    batch[35..43].copy_from_slice(&f.max_timestamp.to_be_bytes());
    batch[43..51].copy_from_slice(&f.producer.id.to_be_bytes());
    batch[51..53].copy_from_slice(&f.producer.epoch.to_be_bytes());
    batch[53..57].copy_from_slice(&f.producer.base_sequence.to_be_bytes());
    batch[57..61].copy_from_slice(&(f.record_count as i32).to_be_bytes());
    let crc = crc32c(&batch[CRC_START..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// A batch with no records that still spans `last_offset_delta + 1` offsets, with the
/// producer fields of the batch it replaces. Compaction writes one where every record of
/// a run of batches was removed, so that a cleaned segment's offsets stay contiguous
/// (FORMAT.md).
pub(crate) fn empty(
    last_offset_delta: u32,
    base_timestamp: i64,
    max_timestamp: i64,
    producer: ProducerFields,
) -> EncodedBatch {
    let mut bytes = vec![0u8; HEADER_LEN];
    write_header(
        &mut bytes,
        &HeaderFields {
            attributes: 0,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer,
            record_count: 0,
        },
    );
    EncodedBatch {
        bytes,
        last_offset_delta,
        max_timestamp,
    }
}

/// Sets the producer fields of a batch built by [`BatchEncoder`] (compaction keeps a
/// rewritten batch's producer), recomputing its CRC.
pub(crate) fn set_producer(batch: &mut EncodedBatch, producer: ProducerFields) {
    let b = &mut batch.bytes;
    b[43..51].copy_from_slice(&producer.id.to_be_bytes());
    b[51..53].copy_from_slice(&producer.epoch.to_be_bytes());
    b[53..57].copy_from_slice(&producer.base_sequence.to_be_bytes());
    let crc = crc32c(&b[CRC_START..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// Adds attribute bits (transactional, control) to a built batch, recomputing its CRC.
pub(crate) fn add_attributes(batch: &mut EncodedBatch, bits: u16) {
    let b = &mut batch.bytes;
    let attributes = u16::from_be_bytes([b[21], b[22]]) | bits;
    b[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c(&b[CRC_START..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// Sets a built batch's last offset delta and newest timestamp (compaction keeps the
/// offset range and timestamp bound of the batch it rewrites), recomputing its CRC.
#[allow(clippy::cast_possible_wrap)] // a delta of a segment's 32-bit span, below i32::MAX
pub(crate) fn set_range(batch: &mut EncodedBatch, last_offset_delta: u32, max_timestamp: i64) {
    let b = &mut batch.bytes;
    b[23..27].copy_from_slice(&(last_offset_delta as i32).to_be_bytes());
    b[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
    let crc = crc32c(&b[CRC_START..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    batch.last_offset_delta = last_offset_delta;
    batch.max_timestamp = max_timestamp;
}

/// The batch `h` re-encoded as format 2 with only `kept` of its records (none: an empty
/// batch), keeping its offset range, timestamp bound and producer: what compaction
/// writes, and what a fetch serves for a format 1 batch.
pub(crate) fn rebuild(kept: &[Record], h: &BatchHeader) -> Result<EncodedBatch, String> {
    if kept.is_empty() {
        return Ok(empty(
            h.last_offset_delta,
            h.base_timestamp,
            h.max_timestamp,
            h.producer,
        ));
    }
    // Decoding checked every record's offset against the batch's range.
    let fields = kept.iter().map(|r| RecordFields {
        offset_delta: u32::try_from(r.offset.saturating_sub(h.base_offset)).unwrap_or(u32::MAX),
        timestamp: r.timestamp,
        key: r.key.as_deref(),
        value: r.value.as_deref(),
        headers: &r.headers,
    });
    let mut b = encode(h.codec, fields)?;
    set_range(&mut b, h.last_offset_delta, h.max_timestamp);
    set_producer(&mut b, h.producer);
    if h.format == Format::V2 && h.attributes & ATTR_TRANSACTIONAL != 0 {
        add_attributes(&mut b, ATTR_TRANSACTIONAL);
    }
    Ok(b)
}

fn varint_len(v: i64) -> usize {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    (64 - (z | 1).leading_zeros() as usize).div_ceil(7)
}

fn bytes_len(field: Option<&[u8]>) -> usize {
    match field {
        None => 1,
        Some(b) => varint_len(b.len() as i64) + b.len(),
    }
}

#[inline]
fn put_bytes(out: &mut Vec<u8>, field: Option<&[u8]>) {
    match field {
        None => put_varint(out, -1),
        Some(b) => {
            put_varint(out, b.len() as i64);
            out.extend_from_slice(b);
        }
    }
}

/// Appends the batch to `out` with `base_offset` stamped in.
pub(crate) fn frame(out: &mut Vec<u8>, base_offset: u64, batch: &EncodedBatch) {
    let start = out.len();
    out.extend_from_slice(&batch.bytes);
    out[start..start + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// A parsed batch header, of either format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    pub(crate) format: Format,
    /// Bytes of the whole batch.
    pub(crate) framed: u32,
    pub(crate) crc: u32,
    pub(crate) codec: Compression,
    /// Kafka's codec id.
    pub(crate) codec_id: u16,
    /// Kafka's attributes (format 1: its codec only).
    pub(crate) attributes: u16,
    pub(crate) base_offset: u64,
    pub(crate) last_offset_delta: u32,
    pub(crate) base_timestamp: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) record_count: u32,
    /// Format 1: the decoded record area's length; format 2: 0 (not recorded).
    pub(crate) uncompressed_len: u32,
    /// More batches of the same append follow.
    pub(crate) continued: bool,
    pub(crate) producer: ProducerFields,
}

/// Why a header could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderError {
    /// An all-zero length: the end of the written log.
    EndOfLog,
    /// Fewer bytes than a header.
    Short,
    /// Implausible fields.
    Invalid(String),
}

impl BatchHeader {
    /// Parses and sanity-checks the header of `format` at the start of `buf` (the CRC is
    /// checked separately).
    pub(crate) fn parse(buf: &[u8], format: Format) -> Result<BatchHeader, HeaderError> {
        match format {
            Format::V1 => batch_v1::parse(buf),
            Format::V2 => parse_v2(buf),
        }
    }

    /// Whole size of the batch.
    pub(crate) fn framed_len(&self) -> usize {
        self.framed as usize
    }

    /// Offset of the last record.
    pub(crate) fn last_offset(&self) -> u64 {
        self.base_offset + u64::from(self.last_offset_delta)
    }

    /// Offset after this batch.
    pub(crate) fn next_offset(&self) -> u64 {
        self.last_offset() + 1
    }

    /// Whether the batch is a control batch (a transaction marker).
    pub(crate) fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }
}

fn be_u16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

pub(crate) fn be_i32(b: &[u8], i: usize) -> i32 {
    i32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

pub(crate) fn be_i64(b: &[u8], i: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[i..i + 8]);
    i64::from_be_bytes(a)
}

fn parse_v2(buf: &[u8]) -> Result<BatchHeader, HeaderError> {
    let invalid = |why: String| Err(HeaderError::Invalid(why));
    if buf.len() >= 12 && buf[..12] == [0; 12] {
        return Err(HeaderError::EndOfLog);
    }
    if buf.len() < HEADER_LEN {
        return Err(HeaderError::Short);
    }
    let length = be_i32(buf, 8);
    let framed = u32::try_from(i64::from(length) + 12).ok().filter(|&f| {
        f as usize >= HEADER_LEN && u64::from(f) <= MAX_BATCH_BYTES + HEADER_LEN as u64
    });
    let Some(framed) = framed else {
        return invalid(format!("implausible batch length {length}"));
    };
    let epoch = be_i32(buf, 12);
    if epoch != LEADER_EPOCH {
        return invalid(format!(
            "partition leader epoch {epoch}, not {LEADER_EPOCH}"
        ));
    }
    if buf[16] != MAGIC {
        return invalid(format!("unknown magic {}", buf[16]));
    }
    let attributes = be_u16(buf, 21);
    if attributes & !ATTR_KNOWN != 0 {
        return invalid(format!("unknown attributes {attributes:#x}"));
    }
    let codec_id = attributes & ATTR_CODEC;
    let Some(codec) = Compression::from_kafka_id(codec_id) else {
        return invalid(format!("unknown codec {codec_id}"));
    };
    let base_offset = be_i64(buf, 0);
    let last_offset_delta = be_i32(buf, 23);
    let record_count = be_i32(buf, 57);
    let (Ok(base_offset), Ok(last_offset_delta), Ok(record_count)) = (
        u64::try_from(base_offset),
        u32::try_from(last_offset_delta),
        u32::try_from(record_count),
    ) else {
        return invalid("a negative offset, delta or count".into());
    };
    // An empty batch (compaction's) carries no record area at all.
    let area = framed as usize - HEADER_LEN;
    if (record_count == 0 && (area != 0 || codec_id != compression::KAFKA_NONE))
        || u64::from(record_count) > u64::from(last_offset_delta) + 1
    {
        return invalid("inconsistent record counts".into());
    }
    // Offsets are Kafka's, a non-negative i64: a batch reaching past that was not written
    // by this log, and its `next_offset` would not fit either.
    let last = base_offset.checked_add(u64::from(last_offset_delta));
    if last.is_none_or(|last| last >= i64::MAX as u64) {
        return invalid(format!(
            "offset range from {base_offset} by {last_offset_delta} is beyond the largest offset"
        ));
    }
    #[allow(clippy::cast_sign_loss)] // the CRC is an unsigned 32-bit value on the wire
    let crc = be_i32(buf, 17) as u32;
    Ok(BatchHeader {
        format: Format::V2,
        framed,
        crc,
        codec,
        codec_id,
        attributes,
        base_offset,
        last_offset_delta,
        base_timestamp: be_i64(buf, 27),
        max_timestamp: be_i64(buf, 35),
        record_count,
        uncompressed_len: 0,
        continued: attributes & ATTR_CONTINUED != 0,
        producer: ProducerFields {
            id: be_i64(buf, 43),
            epoch: i16::from_be_bytes([buf[51], buf[52]]),
            base_sequence: be_i32(buf, 53),
        },
    })
}

// Checked against the cap above: `framed` fits in u32.
const _: () = assert!(MAX_BATCH_BYTES + (HEADER_LEN as u64) < u32::MAX as u64);
const _: () = assert!(HEADER_AFTER_LENGTH == 49);

/// Verifies the CRC of a complete batch.
pub(crate) fn crc_matches(header: &BatchHeader, framed: &[u8]) -> bool {
    if framed.len() != header.framed_len() {
        return false;
    }
    match header.format {
        Format::V1 => batch_v1::crc_matches(header, framed),
        Format::V2 => crc32c(&framed[CRC_START..]) == header.crc,
    }
}

/// Decodes every record of a verified batch. `framed` must hold exactly the batch. A
/// control batch (a transaction marker) holds no records for readers.
pub(crate) fn decode_records(
    header: &BatchHeader,
    framed: Bytes,
    partition: u32,
    out: &mut Vec<Record>,
) -> Result<(), String> {
    match header.format {
        Format::V1 => batch_v1::decode_records(header, framed, partition, out),
        Format::V2 if header.is_control() => Ok(()),
        Format::V2 => decode_v2(header, &framed, partition, out),
    }
}

fn decode_v2(
    header: &BatchHeader,
    framed: &Bytes,
    partition: u32,
    out: &mut Vec<Record>,
) -> Result<(), String> {
    let payload = framed.slice(HEADER_LEN..);
    let area = match header.codec_id {
        compression::KAFKA_NONE => payload,
        codec => Bytes::from(
            compression::inflate(codec, &payload, MAX_UNCOMPRESSED).map_err(|e| e.to_string())?,
        ),
    };
    let log_append_time = header.attributes & ATTR_LOG_APPEND_TIME != 0;
    let mut cur = Cursor::new(&area);
    let mut decoded = 0u32;
    let mut previous_delta: Option<u64> = None;
    while !cur.is_empty() {
        let len = signed_length(&mut cur)?.ok_or("a record of negative length")?;
        let body = cur.take(len)?;
        let base = body.start;
        let mut rc = Cursor::new(&area[body.clone()]);
        let _attributes = rc.take(1)?;
        let ts_delta = rc.varint()?;
        let offset_delta = u64::try_from(rc.varint()?).map_err(|_| "negative offset delta")?;
        if offset_delta > u64::from(header.last_offset_delta)
            || previous_delta.is_some_and(|p| offset_delta <= p)
        {
            return Err(format!(
                "offset delta {offset_delta} out of order or beyond the batch"
            ));
        }
        previous_delta = Some(offset_delta);
        let key = signed_bytes(&mut rc)?.map(|r| area.slice(base + r.start..base + r.end));
        let value = signed_bytes(&mut rc)?.map(|r| area.slice(base + r.start..base + r.end));
        let header_count = signed_length(&mut rc)?.ok_or("negative header count")?;
        if header_count > len {
            return Err("implausible header count".into());
        }
        let mut headers = Vec::with_capacity(header_count);
        for _ in 0..header_count {
            let name = signed_bytes(&mut rc)?.ok_or("a header name is null")?;
            let name = header_name(&area[base + name.start..base + name.end])?;
            // Kafka allows a null header value; kafko's records hold bytes: it reads as empty.
            let value = signed_bytes(&mut rc)?
                .map_or_else(Bytes::new, |v| area.slice(base + v.start..base + v.end));
            headers.push(Header { name, value });
        }
        no_trailing_bytes(&rc, len)?;
        out.push(Record {
            partition,
            offset: header.base_offset + offset_delta,
            timestamp: if log_append_time {
                header.max_timestamp
            } else {
                header.base_timestamp.wrapping_add(ts_delta)
            },
            key,
            value,
            headers,
        });
        decoded += 1;
    }
    check_count(header, decoded)
}

/// A header name's bytes as text: UTF-8 or refused.
pub(crate) fn header_name(bytes: &[u8]) -> Result<String, String> {
    std::str::from_utf8(bytes)
        .map(str::to_owned)
        .map_err(|_| "header name is not UTF-8".to_string())
}

/// Refuses bytes left in a record (of `len` bytes) after its fields.
pub(crate) fn no_trailing_bytes(rc: &Cursor<'_>, len: usize) -> Result<(), String> {
    if rc.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} trailing bytes in a record",
        len - rc.position()
    ))
}

/// Checks that a batch held the records its header counts.
pub(crate) fn check_count(header: &BatchHeader, decoded: u32) -> Result<(), String> {
    if decoded != header.record_count {
        return Err(format!(
            "header says {} records, found {decoded}",
            header.record_count
        ));
    }
    Ok(())
}

/// A zig-zag varint length: `None` for −1 (null), an error for any other negative.
pub(crate) fn signed_length(cur: &mut Cursor<'_>) -> Result<Option<usize>, String> {
    match cur.varint()? {
        -1 => Ok(None),
        n if n < 0 => Err(format!("negative length {n}")),
        n => usize::try_from(n)
            .map(Some)
            .map_err(|_| format!("length {n} does not fit in memory")),
    }
}

/// A zig-zag length-prefixed byte string: its range, `None` for null.
fn signed_bytes(cur: &mut Cursor<'_>) -> Result<Option<std::ops::Range<usize>>, String> {
    match signed_length(cur)? {
        None => Ok(None),
        Some(n) => cur.take(n).map(Some),
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
