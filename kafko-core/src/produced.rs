//! A Kafka producer's record batch, checked so that the log can store it as sent
//! ([`ProducedBatch::check`]), and its append ([`Producer::append_batch`]).
//!
//! The check is Kafka's: one batch of magic 2 with a good CRC-32C; known attributes
//! (never kafko's append bit); at least one record, no more than the request may still
//! hold; offset deltas 0, 1, 2… as the header's count and last delta say; each record
//! whole, none past the largest record, header names UTF-8. A compressed area is
//! inflated to be checked, within what the request may still inflate: a small batch
//! that would inflate to gigabytes is refused at the bound.
//!
//! The append stores the producer's bytes with three changes at most: the base offset
//! and the leader epoch (which the CRC does not cover), and, when the batch asks for
//! log-append time, its newest timestamp (the CRC is computed again). A topic whose
//! `compression.type` names a codec other than the batch's re-encodes the records with
//! it, as Kafka does; `producer` keeps what was sent.
//!
//! A transactional producer's batches go through [`Producer::append_transactional`],
//! which asks the caller (the transaction coordinator) under the producer's turn whether
//! its transaction holds the partition; the transaction markers that end them are
//! written by [`Topic::append_marker`] under the same turn (TRANSACTIONS.md, "In the
//! partitions").

use bytes::Bytes;

use crate::compression;
use crate::config::Compression;
use crate::error::{KafkoError, ProduceError};
use crate::producer::Producer;
use crate::producer_state::table::Check;
use crate::producer_state::{ProducerInfo, ProducerRejection, UnknownProducer};
use crate::record::now_ms;
use crate::segment::batch::{self, ATTR_CONTINUED, ATTR_CONTROL, ATTR_LOG_APPEND_TIME};
use crate::segment::batch::{ATTR_TRANSACTIONAL, CRC_START, EncodedBatch, HEADER_LEN};
use crate::segment::varint::Cursor;
use crate::send::{PartitionAppend, SendOptions, check_batch_size};
use crate::topic::Topic;

/// The fewest bytes a record takes: its length, attributes, timestamp and offset deltas,
/// null key, null value, no headers.
const MIN_RECORD_BYTES: usize = 7;
/// Framing a record may take besides its key, value and headers.
const RECORD_FRAMING: usize = 64;

/// What the batches of one request may still take, reduced by each batch checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchBudget {
    /// Bytes the request's compressed areas may still inflate to.
    pub inflate: usize,
    /// Records the request's batches may still hold.
    pub records: usize,
    /// The largest record's key, value and headers.
    pub max_record_bytes: usize,
}

impl BatchBudget {
    /// The most bytes one record may take in a batch: the largest record, a quarter more
    /// for its headers' framing, and its own framing.
    fn max_record_wire(&self) -> usize {
        self.max_record_bytes
            .saturating_add(self.max_record_bytes / 4)
            .saturating_add(RECORD_FRAMING)
    }
}

/// Why a producer's batch was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Damaged bytes: a bad CRC, a truncated batch or record (Kafka's `CORRUPT_MESSAGE`).
    #[error("corrupt record batch: {0}")]
    Corrupt(String),
    /// Well-formed bytes with a value Kafka refuses (`INVALID_RECORD`).
    #[error("invalid record: {0}")]
    Invalid(String),
    /// A message format before magic 2 (`UNSUPPORTED_FOR_MESSAGE_FORMAT`).
    #[error("message format (magic {0}) not supported; magic 2 only")]
    Magic(i8),
    /// A codec Kafka does not define (`UNSUPPORTED_COMPRESSION_TYPE`).
    #[error("unsupported compression codec {0}")]
    Codec(u16),
    /// More records than the request may hold (`RECORD_LIST_TOO_LARGE`).
    #[error("the request holds more than {0} records; split it")]
    TooManyRecords(usize),
    /// A batch that inflates past what the request may, or a record past the largest
    /// record (`MESSAGE_TOO_LARGE`: a producer splits the batch).
    #[error("too large: {0}")]
    TooLarge(String),
}

/// A producer's record batch that passed [`ProducedBatch::check`]: only the check makes
/// one, so whatever is appended through [`Producer::append_batch`] was checked.
#[derive(Debug, Clone)]
pub struct ProducedBatch {
    /// The batch as sent.
    bytes: Bytes,
    attributes: u16,
    codec: Compression,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    record_count: u32,
    /// The newest record timestamp, as the records say.
    max_timestamp: i64,
    /// The newest record timestamp, as the header says.
    header_max_timestamp: i64,
    /// The inflated record area, when the batch is compressed.
    inflated: Option<Bytes>,
    /// Key, value and header bytes of the largest record.
    largest_record: usize,
    /// Whether a record has no key.
    keyless: bool,
}

fn corrupt(why: &str) -> BatchError {
    BatchError::Corrupt(why.to_owned())
}

impl ProducedBatch {
    /// Checks one producer's batch (the whole of `bytes`) within what the request may
    /// still take, reducing `budget` by it.
    ///
    /// # Errors
    /// [`BatchError`] for the first rule the batch breaks.
    pub fn check(bytes: Bytes, budget: &mut BatchBudget) -> Result<ProducedBatch, BatchError> {
        if bytes.len() < 17 {
            return Err(corrupt("truncated batch header"));
        }
        #[allow(clippy::cast_possible_wrap)] // Kafka's magic is an int8
        let magic = bytes[16] as i8;
        if magic != 2 {
            return Err(BatchError::Magic(magic));
        }
        if bytes.len() < HEADER_LEN {
            return Err(corrupt("truncated batch header"));
        }
        let be_i32 = |i: usize| batch::be_i32(&bytes, i);
        let be_i64 = |i: usize| batch::be_i64(&bytes, i);
        let length = usize::try_from(be_i32(8)).map_err(|_| corrupt("negative batch length"))?;
        match length.checked_add(12) {
            Some(total) if total == bytes.len() => {}
            Some(total) if total < bytes.len() => {
                return Err(BatchError::Invalid(
                    "a produce carries exactly one record batch per partition".into(),
                ));
            }
            _ => return Err(corrupt("batch length past the data")),
        }
        #[allow(clippy::cast_sign_loss)] // the CRC is unsigned on the wire
        let crc = be_i32(17) as u32;
        if crate::segment::batch::crc32c(&bytes[CRC_START..]) != crc {
            return Err(corrupt("CRC-32C mismatch"));
        }
        let attributes = u16::from_be_bytes([bytes[21], bytes[22]]);
        let codec_id = attributes & 0x07;
        let codec = Compression::from_kafka_id(codec_id).ok_or(BatchError::Codec(codec_id))?;
        if attributes & ATTR_CONTINUED != 0 || attributes >> 7 != 0 {
            return Err(BatchError::Invalid(format!(
                "unknown attribute bits {attributes:#x}"
            )));
        }
        let last_offset_delta = be_i32(23);
        let base_timestamp = be_i64(27);
        let count = usize::try_from(be_i32(57)).map_err(|_| corrupt("negative record count"))?;
        if count == 0 {
            return Err(BatchError::Invalid("a batch with no records".into()));
        }
        // The count first: a batch that declares more records than the request may hold
        // is refused before its area is inflated.
        if count > budget.records {
            return Err(BatchError::TooManyRecords(budget.records));
        }
        budget.records -= count;
        if i64::from(last_offset_delta) != count as i64 - 1 {
            return Err(BatchError::Invalid(format!(
                "last offset delta {last_offset_delta} for {count} records"
            )));
        }
        let inflated = if codec_id == compression::KAFKA_NONE {
            None
        } else {
            // No more than the request may still inflate, nor than `count` records of the
            // largest size can take.
            let max = budget
                .inflate
                .min(count.saturating_mul(budget.max_record_wire()));
            let area =
                compression::inflate(codec_id, &bytes[HEADER_LEN..], max).map_err(|e| match e {
                    compression::InflateError::TooLarge(_) => BatchError::TooLarge(e.to_string()),
                    compression::InflateError::Corrupt(why) => BatchError::Corrupt(why),
                    compression::InflateError::UnknownCodec(id) => BatchError::Codec(id),
                })?;
            budget.inflate -= area.len();
            Some(Bytes::from(area))
        };
        let area = inflated.as_deref().unwrap_or(&bytes[HEADER_LEN..]);
        if count > area.len() / MIN_RECORD_BYTES {
            return Err(corrupt("record count larger than the batch"));
        }
        let walk = walk_records(area, count, base_timestamp, budget.max_record_wire())?;
        #[allow(clippy::cast_possible_truncation)] // below budget.records, a usize
        Ok(ProducedBatch {
            attributes,
            codec,
            producer_id: be_i64(43),
            producer_epoch: i16::from_be_bytes([bytes[51], bytes[52]]),
            base_sequence: be_i32(53),
            record_count: u32::try_from(count).unwrap_or(u32::MAX),
            max_timestamp: walk.max_timestamp,
            header_max_timestamp: be_i64(35),
            inflated,
            largest_record: walk.largest,
            keyless: walk.keyless,
            bytes,
        })
    }

    /// The producer id (−1 when the producer is not idempotent).
    pub fn producer_id(&self) -> i64 {
        self.producer_id
    }

    /// The producer epoch.
    pub fn producer_epoch(&self) -> i16 {
        self.producer_epoch
    }

    /// The sequence number of the first record.
    pub fn base_sequence(&self) -> i32 {
        self.base_sequence
    }

    /// The sequence number of the last record (sequences wrap at `i32::MAX`, as Kafka's).
    pub fn last_sequence(&self) -> i32 {
        let last = i64::from(self.base_sequence) + i64::from(self.record_count) - 1;
        i32::try_from(last % (i64::from(i32::MAX) + 1)).unwrap_or(0)
    }

    /// Records in the batch.
    pub fn record_count(&self) -> u32 {
        self.record_count
    }

    /// The newest record timestamp.
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }

    /// Whether the producer is idempotent.
    pub fn is_idempotent(&self) -> bool {
        self.producer_id >= 0
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes & ATTR_TRANSACTIONAL != 0
    }

    /// Whether the batch is a control batch (a transaction marker).
    pub fn is_control(&self) -> bool {
        self.attributes & ATTR_CONTROL != 0
    }

    /// The codec the producer compressed it with.
    pub fn codec(&self) -> Compression {
        self.codec
    }

    /// Bytes of the batch as sent.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always `false`: a batch has at least its header.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The batch as the log stores it in a topic of codec `topic_codec`: as sent (its
    /// leader epoch set), or with its records re-encoded under the topic's codec; with
    /// log-append time, stamped `now`; its header's newest timestamp the records' own
    /// (the time index and retention rely on it), as Kafka sets it.
    fn into_stored(self, topic_codec: Compression, now: i64) -> Result<EncodedBatch, String> {
        let target = match topic_codec {
            Compression::Producer => self.codec,
            codec => codec,
        };
        let log_append = self.attributes & ATTR_LOG_APPEND_TIME != 0;
        let last_offset_delta = self.record_count - 1;
        let max_timestamp = if log_append { now } else { self.max_timestamp };
        let mut out = if target == self.codec {
            self.bytes.to_vec()
        } else {
            let area = self
                .inflated
                .as_deref()
                .unwrap_or(&self.bytes[HEADER_LEN..]);
            let packed = compression::compress(target, area)?;
            let mut out = Vec::with_capacity(HEADER_LEN + packed.len());
            out.extend_from_slice(&self.bytes[..HEADER_LEN]);
            out.extend_from_slice(&packed);
            let attributes = (self.attributes & !0x07) | target.kafka_id();
            out[21..23].copy_from_slice(&attributes.to_be_bytes());
            #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
            let length = (out.len() - 12) as i32;
            out[8..12].copy_from_slice(&length.to_be_bytes());
            out
        };
        out[12..16].copy_from_slice(&batch::LEADER_EPOCH.to_be_bytes());
        out[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
        if log_append || target != self.codec || max_timestamp != self.header_max_timestamp {
            let crc = crate::segment::batch::crc32c(&out[CRC_START..]);
            out[17..21].copy_from_slice(&crc.to_be_bytes());
        }
        Ok(EncodedBatch {
            bytes: out,
            last_offset_delta,
            max_timestamp,
        })
    }
}

/// What walking a batch's records found.
struct Walk {
    largest: usize,
    keyless: bool,
    max_timestamp: i64,
}

/// Walks `count` records of `area`, checking each is whole and in order (offset delta
/// `i` for the `i`th), at most `max_wire` bytes, with UTF-8 header names, and that
/// nothing follows the last.
fn walk_records(
    area: &[u8],
    count: usize,
    base_timestamp: i64,
    max_wire: usize,
) -> Result<Walk, BatchError> {
    let bad = |why: String| BatchError::Corrupt(why);
    let mut cur = Cursor::new(area);
    let mut walk = Walk {
        largest: 0,
        keyless: false,
        max_timestamp: i64::MIN,
    };
    for i in 0..count {
        let len = length(&mut cur)?.ok_or_else(|| corrupt("negative record length"))?;
        if len > max_wire {
            return Err(BatchError::TooLarge(format!(
                "a record of {len} bytes, past the largest record"
            )));
        }
        let body = cur.take(len).map_err(bad)?;
        let record = &area[body];
        let mut rc = Cursor::new(record);
        rc.take(1).map_err(bad)?; // attributes
        let timestamp = base_timestamp.wrapping_add(rc.varint().map_err(bad)?);
        walk.max_timestamp = walk.max_timestamp.max(timestamp);
        let delta = rc.varint().map_err(bad)?;
        if delta != i as i64 {
            return Err(BatchError::Invalid(format!(
                "record {i} has offset delta {delta}"
            )));
        }
        let key = length(&mut rc)?;
        walk.keyless |= key.is_none();
        let mut size = key.unwrap_or(0);
        rc.take(key.unwrap_or(0)).map_err(bad)?;
        let value = length(&mut rc)?.unwrap_or(0);
        rc.take(value).map_err(bad)?;
        size += value;
        let headers = length(&mut rc)?.ok_or_else(|| corrupt("negative header count"))?;
        if headers > len / 2 {
            return Err(corrupt("implausible header count"));
        }
        for _ in 0..headers {
            let name_len = length(&mut rc)?
                .ok_or_else(|| BatchError::Invalid("a header key is null".into()))?;
            let name = rc.take(name_len).map_err(bad)?;
            if std::str::from_utf8(&record[name]).is_err() {
                return Err(BatchError::Invalid("a header key is not UTF-8".into()));
            }
            let value_len = length(&mut rc)?.unwrap_or(0);
            rc.take(value_len).map_err(bad)?;
            size += name_len + value_len;
        }
        if !rc.is_empty() {
            return Err(corrupt("record longer than its fields"));
        }
        walk.largest = walk.largest.max(size);
    }
    if !cur.is_empty() {
        return Err(corrupt("bytes after the last record"));
    }
    Ok(walk)
}

/// A zig-zag varint length (`None` for −1), as the log's decoder reads it.
fn length(cur: &mut Cursor<'_>) -> Result<Option<usize>, BatchError> {
    batch::signed_length(cur).map_err(BatchError::Corrupt)
}

/// Where a producer's batch is in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendedBatch {
    /// Where it landed (a duplicate: where the first copy landed, and the log start now).
    pub append: PartitionAppend,
    /// A retry of a batch its idempotent producer wrote before: nothing was written.
    pub duplicate: bool,
}

impl Producer {
    /// Appends a producer's checked batch to `partition`, stored as sent (see the module
    /// doc), and answers where it landed. The topic's rules apply as to any send: its
    /// largest record, a key on every record of a compacted topic. A batch of an
    /// idempotent producer meets the partition's producer state (FORMAT.md, "Producer
    /// state"): a retry of one of its last five batches is answered with the first
    /// copy's offset and not written again; a producer the partition does not know may
    /// start with any sequence, as in Kafka.
    ///
    /// # Errors
    /// As [`append_batch_with`](Self::append_batch_with).
    pub async fn append_batch(
        &self,
        partition: u32,
        batch: ProducedBatch,
        options: SendOptions,
    ) -> Result<AppendedBatch, ProduceError> {
        self.append_batch_with(partition, batch, options, UnknownProducer::Accept)
            .await
    }

    /// [`append_batch`](Self::append_batch), saying whether an idempotent producer the
    /// partition does not know may start there (a Kafka broker refuses an id it never
    /// handed out).
    ///
    /// # Errors
    /// `PartitionNotFound`, `RecordTooLarge`, `KeyRequired`, `InvalidBatch` (a control
    /// batch, which only the log writes), `ProducerRejected` (an older epoch, a sequence
    /// that does not follow, a refused unknown producer), `TopicDeleted`, `Backpressure`
    /// (with `no_wait`), or the partition's write failure.
    pub async fn append_batch_with(
        &self,
        partition: u32,
        batch: ProducedBatch,
        options: SendOptions,
        unknown: UnknownProducer,
    ) -> Result<AppendedBatch, ProduceError> {
        if batch.is_transactional() {
            return Err(ProduceError::InvalidBatch {
                reason: "a transactional batch needs its producer's transaction".into(),
            });
        }
        self.append_checked(partition, batch, options, unknown, || Ok(()))
            .await
    }

    /// Appends a transactional producer's batch (the transactional bit set, a producer
    /// id) to `partition`, as [`append_batch`](Self::append_batch) does an idempotent
    /// one, after `verify` says, under the producer's turn, that its transaction at
    /// this epoch holds the partition (so no transaction marker can land between that
    /// answer and the append). The batch opens the producer's transaction in the
    /// partition when none is open there; until its marker, the last stable offset
    /// stays at or below its offset.
    ///
    /// # Errors
    /// As [`append_batch_with`](Self::append_batch_with); `InvalidBatch` for a batch
    /// that is not transactional; `ProducerRejected` with `verify`'s rejection.
    pub async fn append_transactional(
        &self,
        partition: u32,
        batch: ProducedBatch,
        options: SendOptions,
        verify: impl FnOnce() -> Result<(), ProducerRejection> + Send,
    ) -> Result<AppendedBatch, ProduceError> {
        if !batch.is_transactional() || !batch.is_idempotent() {
            return Err(ProduceError::InvalidBatch {
                reason: "not a transactional producer's batch".into(),
            });
        }
        self.append_checked(partition, batch, options, UnknownProducer::Accept, verify)
            .await
    }

    /// The append: the topic's rules, then, for an idempotent producer, its turn,
    /// `verify` and the sequence check, then the write.
    async fn append_checked(
        &self,
        partition: u32,
        batch: ProducedBatch,
        options: SendOptions,
        unknown: UnknownProducer,
        verify: impl FnOnce() -> Result<(), ProducerRejection> + Send,
    ) -> Result<AppendedBatch, ProduceError> {
        let topic = &self.topic;
        topic.check_live()?;
        let handle = topic.partition(partition)?;
        let rules = topic.send_rules();
        if batch.largest_record as u64 > rules.max_record_bytes {
            return Err(KafkoError::RecordTooLarge {
                size: batch.largest_record,
                max: usize::try_from(rules.max_record_bytes).unwrap_or(usize::MAX),
            }
            .into());
        }
        if rules.compacts && batch.keyless {
            return Err(KafkoError::KeyRequired {
                topic: topic.name.to_string(),
            }
            .into());
        }
        if batch.is_control() {
            return Err(ProduceError::InvalidBatch {
                reason: "control batches are written by the log, not by producers".into(),
            });
        }
        let record_count = u64::from(batch.record_count);
        let producers = &handle.log.producers;
        let rejected = |rejection| -> ProduceError {
            KafkoError::ProducerRejected {
                topic: topic.name.to_string(),
                partition,
                producer_id: batch.producer_id,
                rejection,
            }
            .into()
        };
        // Held until the append is published, so the next batch of this producer (or
        // its transaction's marker) is checked against it.
        let _turn = match batch.is_idempotent() {
            false => None,
            true => {
                let turn = producers.turn(batch.producer_id).await;
                verify().map_err(rejected)?;
                let sequences = (batch.base_sequence, batch.last_sequence());
                match producers.check(batch.producer_id, batch.producer_epoch, sequences, unknown) {
                    Ok(Check::Write) => Some(turn),
                    Ok(Check::Duplicate(base_offset)) => {
                        return Ok(AppendedBatch {
                            append: PartitionAppend {
                                partition,
                                base_offset,
                                record_count,
                                log_start: handle.log.log_start(),
                            },
                            duplicate: true,
                        });
                    }
                    Err(rejection) => return Err(rejected(rejection)),
                }
            }
        };
        let stored = batch
            .into_stored(rules.compression, now_ms())
            .map_err(|reason| KafkoError::InvalidRequest { reason })
            .and_then(check_batch_size)?;
        let base_offset = handle
            .append(stored, options.sync, !options.no_wait)
            .await?;
        Ok(AppendedBatch {
            append: PartitionAppend {
                partition,
                base_offset,
                record_count,
                log_start: handle.log.log_start(),
            },
            duplicate: false,
        })
    }

    /// The idempotent producers `partition` knows, by id (`None` past the partition
    /// count): Kafka's DescribeProducers.
    pub fn producer_states(&self, partition: u32) -> Option<Vec<ProducerInfo>> {
        let index = usize::try_from(partition).ok()?;
        Some(self.topic.partitions.get(index)?.log.producers.describe())
    }
}

/// A transaction marker for one producer's transaction in one partition (Kafka's
/// `WriteTxnMarkers` entry): COMMIT or ABORT, at the producer's epoch, from the
/// coordinator at `coordinator_epoch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Marker {
    pub(crate) producer_id: i64,
    pub(crate) epoch: i16,
    pub(crate) commit: bool,
    pub(crate) coordinator_epoch: i32,
}

impl Marker {
    /// The control batch of this marker (Kafka's `EndTransactionMarker`): attributes
    /// transactional and control, base sequence −1, one record with key (version 0,
    /// type 0 ABORT or 1 COMMIT) and value (version 0, coordinator epoch), at `now`.
    pub(crate) fn encode(&self, now: i64) -> Result<EncodedBatch, String> {
        let key = [0, 0, 0, u8::from(self.commit)];
        let mut value = [0u8; 6];
        value[2..].copy_from_slice(&self.coordinator_epoch.to_be_bytes());
        let record = batch::RecordFields {
            offset_delta: 0,
            timestamp: now,
            key: Some(&key),
            value: Some(&value),
            headers: &[],
        };
        let mut encoded = batch::encode(Compression::None, std::iter::once(record))?;
        batch::set_producer(
            &mut encoded,
            batch::ProducerFields {
                id: self.producer_id,
                epoch: self.epoch,
                base_sequence: -1,
            },
        );
        batch::add_attributes(&mut encoded, ATTR_TRANSACTIONAL | ATTR_CONTROL);
        Ok(encoded)
    }
}

impl Topic {
    /// Writes `marker` to `partition` under its producer's turn, fsynced before it
    /// returns whatever the topic's fsync policy, and answers its offset. Publishing it
    /// closes the producer's transaction there (an ABORT joins the aborted list) and
    /// moves the last stable offset.
    ///
    /// # Errors
    /// `ProducerRejected` (`EpochFenced`) for an epoch older than the producer's here;
    /// `TopicDeleted`, `PartitionNotFound`, `ShuttingDown`, or the write's failure.
    pub(crate) async fn append_marker(
        &self,
        partition: u32,
        marker: Marker,
    ) -> crate::error::Result<u64> {
        self.check_live()?;
        let handle = self.partition(partition)?;
        let producers = &handle.log.producers;
        let _turn = producers.turn(marker.producer_id).await;
        if let Some(current) = producers
            .epoch_of(marker.producer_id)
            .filter(|&current| marker.epoch < current)
        {
            return Err(KafkoError::ProducerRejected {
                topic: self.name.to_string(),
                partition,
                producer_id: marker.producer_id,
                rejection: ProducerRejection::EpochFenced {
                    epoch: marker.epoch,
                    current,
                },
            });
        }
        let encoded = marker
            .encode(now_ms())
            .map_err(|reason| KafkoError::InvalidRequest { reason })?;
        handle.append(encoded, true, true).await
    }
}

#[cfg(test)]
#[path = "produced_tests.rs"]
mod tests;
