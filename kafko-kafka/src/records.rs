//! Kafka record batches (magic 2), our own codec: the produce side decodes a producer's
//! batch (CRC-32C, attributes, a compressed area inflated by the log's bounded inflater,
//! varint records,
//! headers in order with duplicate keys kept). Fetches answer with the batches the log
//! stores, which are Kafka's own.
//!
//! A produce's batches are bounded before any work on their records: the record count
//! in each batch's header is checked against what the request may still hold
//! (`--max-records-per-request`) before the area is inflated, a compressed area may
//! inflate to no more than what the request may still inflate (and than its count of
//! records can take), and the records are then decoded one at a time as they are
//! appended: nothing is allocated from a count the batch claims.
//!
//! Header values: Kafka allows a null header value, kafko stores bytes. A null value is
//! stored (and read back) as an empty value.

use bytes::{Buf, Bytes};
use kafko_core::{Header, InflateError};

/// The batch header up to and including the record count: 61 bytes.
const BATCH_HEADER_LEN: usize = 61;
/// Bytes of the header before the CRC-covered part (base offset, length, leader epoch,
/// magic, crc).
const CRC_START: usize = 21;
/// The fewest bytes a record takes in a batch: its length, attributes, timestamp and
/// offset deltas, null key, null value, no headers.
const MIN_RECORD_BYTES: usize = 7;
/// Framing a record may take on top of its key, value and headers: the varints of its
/// length, timestamp and offset deltas, key and value lengths and header count.
const RECORD_FRAMING: usize = 64;

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
    /// More records than the request may hold (`RECORD_LIST_TOO_LARGE`).
    #[error("the request holds more than {0} records; split it")]
    TooManyRecords(usize),
    /// A batch that inflates past what the request may, or a record past
    /// `--max-record-bytes` (`MESSAGE_TOO_LARGE`: a producer splits the batch).
    #[error("too large: {0}")]
    TooLarge(String),
}

/// What the batches of one produce request may still take, shared by its partitions
/// and reduced by each batch decoded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    /// Bytes the request's compressed areas may still inflate to.
    pub(crate) inflate: usize,
    /// Records the request's batches may still declare (`--max-records-per-request`).
    pub(crate) records: usize,
    /// The largest record's key, value and headers (`--max-record-bytes`).
    pub(crate) max_record_bytes: usize,
}

impl Budget {
    /// The most bytes one record may take in a batch: `--max-record-bytes`, plus a
    /// quarter for the framing of its headers, plus its own framing. One record's
    /// headers are decoded at once, so this bounds what they hold.
    fn max_record_wire(&self) -> usize {
        self.max_record_bytes
            .saturating_add(self.max_record_bytes / 4)
            .saturating_add(RECORD_FRAMING)
    }
}

/// One record of a producer's batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DecodedRecord {
    pub(crate) timestamp: i64,
    pub(crate) key: Option<Bytes>,
    pub(crate) value: Option<Bytes>,
    pub(crate) headers: Vec<Header>,
}

/// A producer's batch: its header checked, its area inflated, its records still to be
/// decoded ([`records`](Self::records)).
#[derive(Debug, Clone)]
pub(crate) struct DecodedBatch {
    pub(crate) producer_id: i64,
    pub(crate) producer_epoch: i16,
    pub(crate) base_sequence: i32,
    pub(crate) transactional: bool,
    pub(crate) control: bool,
    /// The batch carries log-append-time timestamps: the broker stamps them.
    pub(crate) log_append_time: bool,
    /// The record count of the batch's header.
    pub(crate) count: usize,
    /// The largest record timestamp, as the batch's header says.
    pub(crate) max_timestamp: i64,
    base_timestamp: i64,
    max_record_wire: usize,
    /// The records, uncompressed.
    area: Bytes,
}

impl DecodedBatch {
    /// Whether the batch comes from an idempotent producer.
    pub(crate) fn is_idempotent(&self) -> bool {
        self.producer_id >= 0
    }

    /// The sequence number of the batch's last record.
    pub(crate) fn last_sequence(&self) -> i32 {
        let count = i32::try_from(self.count).unwrap_or(i32::MAX);
        // Sequences wrap at i32::MAX, as in Kafka.
        let last = i64::from(self.base_sequence) + i64::from(count) - 1;
        i32::try_from(last % (i64::from(i32::MAX) + 1)).unwrap_or(0)
    }

    /// The batch's records, decoded one at a time; a damaged record, or bytes left after
    /// the header's count of them, ends the walk with its error.
    pub(crate) fn records(&self) -> Records {
        Records {
            reader: Reader {
                buf: self.area.clone(),
            },
            left: self.count,
            base_timestamp: self.base_timestamp,
            max_record_wire: self.max_record_wire,
            done: false,
        }
    }
}

/// The records of a [`DecodedBatch`], in order.
pub(crate) struct Records {
    reader: Reader,
    left: usize,
    base_timestamp: i64,
    max_record_wire: usize,
    done: bool,
}

impl Iterator for Records {
    type Item = Result<DecodedRecord, BatchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.left == 0 {
            self.done = true;
            return (!self.reader.buf.is_empty())
                .then(|| Err(BatchError::Corrupt("bytes after the last record".into())));
        }
        self.left -= 1;
        let record = self
            .reader
            .record(self.base_timestamp, self.max_record_wire);
        self.done = record.is_err();
        Some(record)
    }
}

/// Splits a produce's `records` bytes into batches and checks each (its header, its
/// CRC, its count against `budget`, its area inflated within `budget`); the whole set
/// is refused on the first bad batch. `budget` is reduced by what the batches took.
///
/// # Errors
/// [`BatchError`] for the first batch that fails.
pub(crate) fn decode_batches(
    mut data: Bytes,
    budget: &mut Budget,
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
        batches.push(decode_batch(batch, budget)?);
    }
    if batches.is_empty() {
        return Err(BatchError::Invalid("no record batch".into()));
    }
    Ok(batches)
}

fn decode_batch(batch: Bytes, budget: &mut Budget) -> Result<DecodedBatch, BatchError> {
    let mut head = &batch[CRC_START - 4..BATCH_HEADER_LEN];
    let crc = head.get_u32();
    if crc32c::crc32c(&batch[CRC_START..]) != crc {
        return Err(BatchError::Corrupt("CRC-32C mismatch".into()));
    }
    let attributes = head.get_i16();
    let _last_offset_delta = head.get_i32();
    let base_timestamp = head.get_i64();
    let max_timestamp = head.get_i64();
    let producer_id = head.get_i64();
    let producer_epoch = head.get_i16();
    let base_sequence = head.get_i32();
    let count = head.get_i32();
    let count =
        usize::try_from(count).map_err(|_| BatchError::Corrupt("negative record count".into()))?;
    if count == 0 {
        return Err(BatchError::Invalid("a batch with no records".into()));
    }
    // The count first: a batch that declares more records than the request may hold is
    // refused before its area is inflated.
    if count > budget.records {
        return Err(BatchError::TooManyRecords(budget.records));
    }
    budget.records -= count;
    let body = batch.slice(BATCH_HEADER_LEN..);
    let codec = attributes & 0x7;
    let area = match codec {
        0 => body,
        1..=4 => {
            // No more than the request may still inflate, nor than `count` records of
            // the largest size can take.
            let max = budget
                .inflate
                .min(count.saturating_mul(budget.max_record_wire()));
            #[allow(clippy::cast_sign_loss)] // 1..=4
            let inflated = kafko_core::inflate(codec as u16, &body, max).map_err(|e| match e {
                InflateError::TooLarge(max) => {
                    BatchError::TooLarge(format!("a compressed batch inflates past {max} bytes"))
                }
                InflateError::Corrupt(why) => BatchError::Corrupt(why),
                InflateError::UnknownCodec(id) => BatchError::Codec(id as i16),
            })?;
            budget.inflate -= inflated.len();
            Bytes::from(inflated)
        }
        other => return Err(BatchError::Codec(other)),
    };
    if count > area.len() / MIN_RECORD_BYTES {
        return Err(BatchError::Corrupt(
            "record count larger than the batch".into(),
        ));
    }
    Ok(DecodedBatch {
        producer_id,
        producer_epoch,
        base_sequence,
        transactional: attributes & 0x10 != 0,
        control: attributes & 0x20 != 0,
        log_append_time: attributes & 0x08 != 0,
        count,
        max_timestamp,
        base_timestamp,
        max_record_wire: budget.max_record_wire(),
        area,
    })
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

    /// The next record, refused past `max_wire` bytes before its fields are read.
    fn record(
        &mut self,
        base_timestamp: i64,
        max_wire: usize,
    ) -> Result<DecodedRecord, BatchError> {
        let length = usize::try_from(self.varint()?)
            .map_err(|_| BatchError::Corrupt("negative record length".into()))?;
        if length > self.buf.len() {
            return Err(truncated());
        }
        if length > max_wire {
            return Err(BatchError::TooLarge(format!(
                "a record of {length} bytes, past the largest record"
            )));
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
        // Every header takes at least 2 bytes; the vector grows with the headers read.
        if count > self.buf.len() / 2 {
            return Err(truncated());
        }
        let mut headers = Vec::new();
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

/// Producers' batches, built as a producer builds them: tests of the produce side use it.
#[cfg(test)]
pub(crate) mod produced {
    use bytes::{BufMut, BytesMut};
    use kafko_core::Record;

    use super::CRC_START;

    pub(crate) fn put_varlong(out: &mut BytesMut, v: i64) {
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
    pub(crate) fn encode_batch(
        records: &[Record],
        out: &mut BytesMut,
        limit: Option<usize>,
    ) -> usize {
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
}

#[cfg(test)]
pub(crate) use produced::{encode_batch, put_varlong};

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
