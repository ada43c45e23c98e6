//! Reading a Fetch's partitions: the whole answer ([`read_all`]), and, while a fetch
//! waits for `min_bytes`, what appends since the last look added ([`Progress::look`]).
//! A partition answers with its record batches as the log stores them (Kafka's own
//! batches, compressed as stored), whole: the first may begin before the offset asked,
//! and the client skips the records before it, as with Kafka. While it waits,
//! each partition remembers the offset it read up to and the bytes found, and a wake-up
//! reads only past that offset, and not at all once the partition (or the answer) is
//! full. A waiting fetch so costs what the new records cost, not a re-read of
//! everything it found before.
//!
//! At isolation level 1 (read committed) a partition serves only batches below its last
//! stable offset, and names the aborted transactions whose records may lie in them (the
//! client drops those records); a waiting fetch then looks for a last stable offset
//! past its mark, not a high watermark.

use kafka_protocol::messages::fetch_request::FetchPartition;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::{BrokerId, ProducerId, TopicName};
use kafko_core::{Isolation, TopicHandle};

use crate::{ListenerState, errors};
use kafko_service::failure::Failure;

/// A fetched topic as the answer names it: by name up to v12, by id from v13 (the
/// id asked, known or not).
#[derive(Debug, Clone)]
pub(crate) struct Named {
    pub(crate) name: TopicName,
    pub(crate) id: uuid::Uuid,
}

/// The topics a fetch asks for: each name, its handle (`None`: unknown), its partitions.
pub(crate) type Asked = [(Named, Option<TopicHandle>, Vec<FetchPartition>)];

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The answer's topics, every partition asked, each filled by `fill` from a fresh
/// partition answer (its index, and no preferred replica from v11).
pub(crate) fn answer_each(
    topics: &Asked,
    version: i16,
    mut fill: impl FnMut(Option<&TopicHandle>, &FetchPartition, &mut PartitionData),
) -> Vec<FetchableTopicResponse> {
    topics
        .iter()
        .map(|(name, handle, partitions)| {
            let mut t = FetchableTopicResponse::default();
            t.topic = name.name.clone();
            t.topic_id = name.id;
            t.partitions = partitions
                .iter()
                .map(|p| {
                    let mut data = PartitionData::default();
                    data.partition_index = p.partition;
                    if version >= 11 {
                        data.preferred_read_replica = BrokerId(-1);
                    }
                    fill(handle.as_ref(), p, &mut data);
                    data
                })
                .collect();
            t
        })
        .collect()
}

/// An answer with no records: every partition asked, no error (the client fetches the
/// same offsets again).
pub(crate) fn empty(topics: &Asked, version: i16) -> Vec<FetchableTopicResponse> {
    answer_each(topics, version, |_, _, data| {
        data.records = Some(bytes::Bytes::new());
    })
}

/// Reads every partition once: the answer, the record bytes in it, whether any
/// partition failed (which answers at once), and where each partition's read stopped.
pub(crate) fn read_all(
    broker: &ListenerState,
    topics: &Asked,
    max_bytes: usize,
    version: i16,
    isolation: Isolation,
) -> (Vec<FetchableTopicResponse>, usize, bool, Progress) {
    let mut used = 0usize;
    let mut failed = false;
    let mut marks = Vec::new();
    let answer = answer_each(topics, version, |handle, p, data| {
        let result = match handle {
            Some(handle) => {
                let limits = (max_bytes, isolation);
                read_partition(broker, handle, p, limits, &mut used, data)
            }
            None if version >= 13 => Err(errors::UNKNOWN_TOPIC_ID),
            None => Err(errors::UNKNOWN_TOPIC_OR_PARTITION),
        };
        match result {
            Ok(mark) => marks.push(mark),
            Err(code) => {
                data.error_code = code;
                failed = true;
                marks.push(Mark::FULL);
            }
        }
        if version < 5 {
            data.log_start_offset = -1;
        }
    });
    let progress = Progress {
        marks,
        found: used,
        isolation,
    };
    (answer, used, failed, progress)
}

/// Where one partition's read stopped: the next offset to look at, and the room it had
/// left (none: a later look skips it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark {
    next: u64,
    room: usize,
}

impl Mark {
    /// Nothing more to look for (a failed partition, or one whose room is used up).
    const FULL: Mark = Mark { next: 0, room: 0 };
}

fn read_partition(
    broker: &ListenerState,
    handle: &TopicHandle,
    p: &FetchPartition,
    (max_bytes, isolation): (usize, Isolation),
    used: &mut usize,
    data: &mut PartitionData,
) -> Result<Mark, i16> {
    let fail = |e: kafko_core::FetchError| errors::code(&Failure::from(e));
    let partition = u32::try_from(p.partition).map_err(|_| errors::UNKNOWN_TOPIC_OR_PARTITION)?;
    let reader = handle.partition(partition).map_err(fail)?;
    let offsets = reader.offsets().map_err(fail)?;
    data.high_watermark = to_i64(offsets.high_watermark);
    data.last_stable_offset = to_i64(offsets.last_stable_offset);
    data.log_start_offset = to_i64(offsets.log_start);
    if isolation == Isolation::ReadCommitted {
        data.aborted_transactions = Some(Vec::new());
    }
    let offset = u64::try_from(p.fetch_offset).map_err(|_| errors::OFFSET_OUT_OF_RANGE)?;
    if !offsets.contains(offset) {
        return Err(errors::OFFSET_OUT_OF_RANGE);
    }
    let room = max_bytes.saturating_sub(*used);
    let limit = usize::try_from(p.partition_max_bytes)
        .unwrap_or(0)
        .min(room);
    let mut next = offset;
    let mut records = bytes::Bytes::new();
    // Past the first data, a partition with no room left is skipped; the first one
    // returns at least a batch, so a large batch is never stuck.
    if offset < end_of(&offsets, isolation) && (limit > 0 || *used == 0) {
        let fetched = reader
            .read_batches(offset, limit, *used == 0, isolation)
            .map_err(fail)?;
        broker.service.metrics.consumed(
            handle.name(),
            usize::try_from(fetched.records).unwrap_or(usize::MAX),
            fetched.bytes.len(),
        );
        next = fetched.next_offset;
        data.high_watermark = to_i64(fetched.high_watermark);
        data.last_stable_offset = to_i64(fetched.last_stable_offset);
        data.log_start_offset = to_i64(fetched.log_start_offset);
        if isolation == Isolation::ReadCommitted {
            data.aborted_transactions = Some(
                fetched
                    .aborted
                    .iter()
                    .map(|a| {
                        let mut t = AbortedTransaction::default();
                        t.producer_id = ProducerId(a.producer_id);
                        t.first_offset = to_i64(a.first_offset);
                        t
                    })
                    .collect(),
            );
        }
        records = fetched.bytes;
    }
    *used += records.len();
    let mark = Mark {
        next,
        room: limit.saturating_sub(records.len()),
    };
    data.records = Some(records);
    Ok(mark)
}

/// The end a fetch at `isolation` reads to: the last stable offset, or the high
/// watermark.
fn end_of(offsets: &kafko_core::Offsets, isolation: Isolation) -> u64 {
    match isolation {
        Isolation::ReadCommitted => offsets.last_stable_offset,
        Isolation::ReadUncommitted => offsets.high_watermark,
    }
}

/// What a waiting fetch has found so far: per asked partition (in request order) where
/// its read stopped, and the bytes found in all.
pub(crate) struct Progress {
    marks: Vec<Mark>,
    found: usize,
    isolation: Isolation,
}

impl Progress {
    /// The record bytes found so far.
    pub(crate) fn found(&self) -> usize {
        self.found
    }

    /// Looks at what was appended since the last look: each partition with room left is
    /// read past its mark, for at most that room (and the answer's `max_bytes`). Returns
    /// `false` when a partition fails (the fetch answers at once, with its error).
    pub(crate) fn look(&mut self, topics: &Asked, max_bytes: usize) -> bool {
        let mut marks = self.marks.iter_mut();
        for (_, handle, partitions) in topics {
            for p in partitions {
                let Some(mark) = marks.next() else {
                    return true;
                };
                let room = mark.room.min(max_bytes.saturating_sub(self.found));
                let Some(handle) = handle.as_ref().filter(|_| room > 0) else {
                    continue;
                };
                let Ok(partition) = u32::try_from(p.partition) else {
                    return false;
                };
                let Ok(reader) = handle.partition(partition) else {
                    return false;
                };
                let Ok(offsets) = reader.offsets() else {
                    return false;
                };
                let end = end_of(&offsets, self.isolation);
                if end <= mark.next {
                    continue;
                }
                let Ok(fetched) = reader.read_batches(mark.next, room, false, self.isolation)
                else {
                    return false;
                };
                self.found += fetched.bytes.len();
                // A batch that did not fit stops this partition: the answer goes without it.
                let end = match self.isolation {
                    Isolation::ReadCommitted => fetched.last_stable_offset,
                    Isolation::ReadUncommitted => fetched.high_watermark,
                };
                mark.room = if fetched.next_offset < end {
                    0
                } else {
                    room.saturating_sub(fetched.bytes.len())
                };
                mark.next = fetched.next_offset.max(mark.next);
            }
        }
        true
    }
}
