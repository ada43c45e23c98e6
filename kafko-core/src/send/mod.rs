//! A send of many records to one topic: [`SendBatch`] and what it answers.
//!
//! Records are routed, checked and encoded as they are added, into batches of bounded
//! size per partition ([`BATCH_TARGET_BYTES`], [`BATCH_MAX_RECORDS`]): no per-record value
//! is kept, and a later read in the range decodes one bounded batch, not the whole send.
//!
//! [`SendBatch::send`] first reserves room in the write queue of every partition it
//! needs, in ascending partition order (two sends that wait for room take them in the
//! same order, so neither can hold what the other waits for). A full queue refuses the
//! whole send before anything is handed over. Then every partition is handed all its
//! batches as one append, written in one write (all of them or none) — on this task
//! when the partition is idle — and the answers are awaited together. When some
//! partitions appended and others failed, the error is a [`PartialSend`] that names
//! both, so nothing stored is sent again by a blind retry.

mod positions;
mod routed;
mod topic_send;

use crate::convert::usize_saturating;
use crate::error::{KafkoError, ProduceError, Result};
use crate::partition::command::Batches;
use crate::record::{Header, ProducerRecord, RecordMetadata, now_ms};
use crate::segment::batch::{self, BatchEncoder, EncodedBatch, RecordFields};
use crate::topic::Topic;

pub use topic_send::SendOptions;
pub(crate) use topic_send::SendRules;

use self::positions::Positions;
use self::routed::Routed;

/// A batch is closed once its record area reaches this size (Kafka's default
/// `max.message.bytes` is 1 MiB); one larger record makes a batch of its own.
pub const BATCH_TARGET_BYTES: usize = 1024 * 1024;
/// Most records in one batch: tiny records would otherwise pack a 1 MiB batch with
/// ~150,000 records, all decoded by a read of one of them.
pub const BATCH_MAX_RECORDS: u32 = 4096;

/// A record to send, borrowed: the caller's buffers are encoded directly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Routing and compaction key.
    pub key: Option<&'a [u8]>,
    /// Payload; `None` is a tombstone.
    pub value: Option<&'a [u8]>,
    /// Ordered headers.
    pub headers: &'a [Header],
    /// Producer timestamp in ms since the epoch; `None` = append time.
    pub timestamp: Option<i64>,
    /// Explicit partition; wins over key routing.
    pub partition: Option<u32>,
}

impl RecordRef<'_> {
    /// Bytes this record counts against `max_record_bytes`.
    pub fn size(&self) -> usize {
        self.key.map_or(0, <[u8]>::len)
            + self.value.map_or(0, <[u8]>::len)
            + self
                .headers
                .iter()
                .map(|h| h.name.len() + h.value.len())
                .sum::<usize>()
    }
}

impl<'a> From<&'a ProducerRecord> for RecordRef<'a> {
    fn from(r: &'a ProducerRecord) -> Self {
        RecordRef {
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            headers: &r.headers,
            timestamp: r.timestamp,
            partition: r.partition,
        }
    }
}

/// Where one partition's records of a send were appended: at consecutive offsets from
/// `base_offset` (a partition's records of one send are appended together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionAppend {
    /// Partition.
    pub partition: u32,
    /// Offset of the partition's first record of the send.
    pub base_offset: u64,
    /// Records appended to the partition.
    pub record_count: u64,
    /// The partition's log start offset once the records were appended (Kafka's
    /// produce answer carries it).
    pub log_start: u64,
}

/// A partition whose records of a send were not appended, and why.
#[derive(Debug)]
pub struct PartitionFailure {
    /// Partition.
    pub partition: u32,
    /// Records of the send that were routed to it; none of them was appended.
    pub record_count: u64,
    /// Why the partition refused them.
    pub error: ProduceError,
}

/// Where every record of a send landed.
#[derive(Debug)]
pub struct SendReceipt {
    partitions: Vec<PartitionAppend>,
    positions: Positions,
}

impl SendReceipt {
    /// Per partition (ascending): base offset and record count.
    pub fn partitions(&self) -> &[PartitionAppend] {
        &self.partitions
    }

    /// Records sent.
    pub fn record_count(&self) -> u64 {
        self.partitions.iter().map(|p| p.record_count).sum()
    }

    /// Each record's position, in the order the records were added.
    pub fn records(&self) -> impl Iterator<Item = RecordMetadata> + '_ {
        self.positions
            .walk(&self.partitions)
            .filter_map(std::result::Result::ok)
    }
}

/// A send that appended some partitions and not others. Records routed to the failed
/// partitions ([`failed_records`](Self::failed_records)) can be sent again; the others
/// are stored.
#[derive(Debug)]
pub struct PartialSend {
    /// Partitions that appended their records.
    pub appended: Vec<PartitionAppend>,
    /// Partitions that appended none of theirs.
    pub failed: Vec<PartitionFailure>,
    positions: Positions,
}

impl PartialSend {
    /// Indices (in the order records were added) of the records that were not appended.
    pub fn failed_records(&self) -> impl Iterator<Item = usize> + '_ {
        self.records()
            .enumerate()
            .filter(|(_, r)| r.is_none())
            .map(|(i, _)| i)
    }

    /// Each record's position in the order added; `None` for a record not appended.
    pub fn records(&self) -> impl Iterator<Item = Option<RecordMetadata>> + '_ {
        self.positions
            .walk(&self.appended)
            .map(std::result::Result::ok)
    }
}

impl std::fmt::Display for PartialSend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let failed: Vec<String> = self
            .failed
            .iter()
            .map(|p| format!("{} ({})", p.partition, p.error))
            .collect();
        write!(
            f,
            "{} of {} partitions appended their records; not appended: partition {}",
            self.appended.len(),
            self.appended.len() + self.failed.len(),
            failed.join(", partition ")
        )
    }
}

/// A send being built: records are routed and encoded as they are added. Made by
/// [`Producer::batch`](crate::Producer::batch).
pub struct SendBatch<'t> {
    topic: &'t Topic,
    rules: SendRules,
    /// The partition of this send's keyless records.
    sticky: u32,
    /// The append time of records without a timestamp.
    now: i64,
    partitions: Routed,
    positions: Positions,
    /// Room for the first record's partition, made when that record is added.
    room: usize,
}

impl<'t> SendBatch<'t> {
    pub(crate) fn new(topic: &'t Topic, rules: SendRules, sticky: u32) -> Self {
        SendBatch {
            topic,
            rules,
            sticky,
            now: now_ms(),
            partitions: Routed::default(),
            positions: Positions::default(),
            room: 0,
        }
    }

    /// Makes room for about `bytes` of encoded records (at most a batch's target size) in
    /// the batch of the partition the first record goes to, before it is added: a send
    /// whose size is known up front (a request body) fills one buffer instead of one
    /// regrown from a record's size (ten reallocations and copies for a 1,000-record
    /// JSON batch of 256-byte values).
    pub fn reserve(&mut self, bytes: usize) {
        if self.is_empty() {
            self.room = bytes.min(BATCH_TARGET_BYTES);
        }
    }

    /// Records added.
    pub fn len(&self) -> usize {
        usize_saturating(self.positions.len())
    }

    /// Whether no record was added.
    pub fn is_empty(&self) -> bool {
        self.positions.len() == 0
    }

    /// Checks a record against the topic's rules, routes it (explicit partition, else by
    /// key, else the send's one partition for keyless records) and encodes it. A record
    /// refused here leaves the batch as it was.
    ///
    /// # Errors
    /// The record is refused: `RecordTooLarge`, `KeyRequired` (a compacted topic),
    /// `PartitionNotFound` (an explicit partition), `TopicDeleted`, or `InvalidBatch`
    /// (a batch past the format's cap).
    pub fn push(&mut self, record: RecordRef<'_>) -> Result<(), ProduceError> {
        let partition = self.topic.route(self.rules, &record, || self.sticky)?;
        let timestamp = record.timestamp.unwrap_or(self.now);
        let mut fields = RecordFields {
            offset_delta: 0,
            timestamp,
            key: record.key,
            value: record.value,
            headers: record.headers,
        };
        let estimate = batch::encoded_estimate(&fields);
        // Only the first partition's batch gets the room (taken by the first record).
        let room = std::mem::take(&mut self.room);
        let part = self.partitions.entry(partition, estimate.max(room));
        let open = &part.open;
        if open.count() >= BATCH_MAX_RECORDS
            || (open.count() > 0 && open.area_len() + estimate > BATCH_TARGET_BYTES)
        {
            // A send this large likely goes on: the next batch gets its full room at once.
            let next = BatchEncoder::with_capacity(BATCH_TARGET_BYTES.max(estimate));
            let full = std::mem::replace(&mut part.open, next);
            part.closed.push(finish(full, self.rules, true)?);
        }
        fields.offset_delta = part.open.count();
        part.open.push(&fields);
        part.records += 1;
        self.positions.push(partition, timestamp);
        Ok(())
    }

    /// Appends every record added, all partitions at once (see the module doc). A full
    /// write queue (with `no_wait`) fails the send with nothing appended; a send some of whose
    /// partitions fail after others appended is [`ProduceError::PartiallyAppended`]; one
    /// whose partitions all fail is the first partition's error.
    ///
    /// # Errors
    /// `InvalidBatch` for an empty send, `TopicDeleted`, `Backpressure` (nothing
    /// appended), `PartiallyAppended`, or, when no partition appended, the first
    /// partition's failure (storage, `PartitionReadOnly`, `PartitionPanicked`,
    /// `ShuttingDown`).
    ///
    /// The records are closed into their final batches before the returned future is
    /// first polled; the future holds only those batches and its waits.
    pub fn send(
        self,
        options: SendOptions,
    ) -> impl Future<Output = Result<SendReceipt, ProduceError>> + 't {
        hand_over(self.prepare(), options)
    }

    /// Checks the send and closes every partition's batches.
    fn prepare(self) -> Result<Prepared<'t>, ProduceError> {
        self.topic.check_live()?;
        if self.is_empty() {
            return Err(ProduceError::InvalidBatch {
                reason: "a send needs at least one record".into(),
            });
        }
        let rules = self.rules;
        let parts = match self.partitions.into_single() {
            Ok((partition, part)) => Parts::One {
                partition,
                record_count: part.records,
                batches: part.into_batches(|open| finish(open, rules, false))?,
            },
            Err(partitions) => {
                let mut parts = Vec::with_capacity(partitions.len());
                for (partition, p) in partitions.into_sorted() {
                    let record_count = p.records;
                    parts.push((
                        partition,
                        record_count,
                        p.into_batches(|open| finish(open, rules, false))?,
                    ));
                }
                Parts::Many(parts)
            }
        };
        Ok(Prepared {
            topic: self.topic,
            positions: self.positions,
            parts,
        })
    }
}

/// A send whose batches are closed, ready to be handed to its partitions.
struct Prepared<'t> {
    topic: &'t Topic,
    positions: Positions,
    parts: Parts,
}

/// Each partition's records of a send, as closed batches (partition, record count,
/// batches).
enum Parts {
    /// The usual send: one partition, which appends or fails alone.
    One {
        partition: u32,
        record_count: u64,
        batches: Batches,
    },
    /// Several partitions, in ascending order.
    Many(Vec<(u32, u64, Batches)>),
}

/// Hands a prepared send to its partitions and awaits their answers.
async fn hand_over(
    prepared: Result<Prepared<'_>, ProduceError>,
    options: SendOptions,
) -> Result<SendReceipt, ProduceError> {
    let Prepared {
        topic,
        positions,
        parts,
    } = prepared?;
    let (partition, record_count, batches) = match parts {
        Parts::One {
            partition,
            record_count,
            batches,
        } => (partition, record_count, batches),
        // Boxed: its vectors of slots and answers would otherwise make every send's
        // future as large as a send to many partitions.
        Parts::Many(parts) => {
            return Box::pin(hand_over_all(topic, parts, positions, options)).await;
        }
    };
    // One partition: its failure is the answer.
    let handle = &topic.partitions[partition as usize];
    let slot = match handle.try_reserve()? {
        Some(slot) => slot,
        // Boxed: a full queue is rare, and the wait for room would otherwise be part of
        // every send's future.
        None => Box::pin(handle.reserve(!options.no_wait)).await?,
    };
    let base_offset = slot.append(batches, options.sync, true).reply().await?;
    Ok(SendReceipt {
        partitions: vec![PartitionAppend {
            partition,
            base_offset,
            record_count,
            log_start: handle.log.log_start(),
        }],
        positions,
    })
}

/// Hands a send to several partitions: room in every one first, in ascending order (see
/// the module doc), then all appends at once, then their answers.
async fn hand_over_all(
    topic: &Topic,
    parts: Vec<(u32, u64, Batches)>,
    positions: Positions,
    options: SendOptions,
) -> Result<SendReceipt, ProduceError> {
    // A refusal drops the slots taken so far, and nothing was handed over.
    let mut slots = Vec::with_capacity(parts.len());
    for &(partition, ..) in &parts {
        let handle = &topic.partitions[partition as usize];
        slots.push(handle.reserve(!options.no_wait).await?);
    }
    let pending: Vec<_> = slots
        .into_iter()
        .zip(parts)
        .map(|(slot, (partition, count, batches))| {
            (partition, count, slot.append(batches, options.sync, false))
        })
        .collect();
    let mut appended = Vec::with_capacity(pending.len());
    let mut failed = Vec::new();
    for (partition, record_count, reply) in pending {
        match reply.reply().await {
            Ok(base_offset) => appended.push(PartitionAppend {
                partition,
                base_offset,
                record_count,
                log_start: topic.partitions[partition as usize].log.log_start(),
            }),
            Err(error) => failed.push(PartitionFailure {
                partition,
                record_count,
                error: error.into(),
            }),
        }
    }
    match failed.len() {
        0 => Ok(SendReceipt {
            partitions: appended,
            positions,
        }),
        _ if appended.is_empty() => Err(failed.swap_remove(0).error),
        _ => Err(ProduceError::PartiallyAppended(Box::new(PartialSend {
            appended,
            failed,
            positions,
        }))),
    }
}

/// Closes a batch and checks it against the on-disk batch limit; `continued` when more
/// batches of the partition's append follow it.
fn finish(encoder: BatchEncoder, rules: SendRules, continued: bool) -> Result<EncodedBatch> {
    let b = encoder
        .finish(rules.compression, continued)
        .map_err(|reason| KafkoError::InvalidRequest { reason })?;
    check_batch_size(b)
}

/// Refuses a batch above the on-disk batch limit.
pub(crate) fn check_batch_size(b: EncodedBatch) -> Result<EncodedBatch> {
    if b.framed_len() as u64 > crate::config::MAX_BATCH_BYTES {
        return Err(KafkoError::RecordTooLarge {
            size: b.framed_len(),
            max: usize_saturating(crate::config::MAX_BATCH_BYTES),
        });
    }
    Ok(b)
}
