//! ListOffsets: earliest (-2) is the log start, latest (-1) the high watermark (at
//! isolation level 1, read committed, the last stable offset), a
//! timestamp the first offset whose record's timestamp is at or after it (the log's time
//! index), answered with that record's timestamp, or offset -1 when no record is that
//! late. Max-timestamp (-3) is the first record with the largest timestamp: the largest
//! comes from the segments' summaries and its offset from the time index, so the lookup
//! reads about one batch however long the partition is. There is no tiered storage:
//! earliest-local (-4) is the log start and latest-tiered (-5) is offset -1.
//!
//! As Kafka does, a partition listed more than once in a request is answered
//! INVALID_REQUEST at every listing, and looked up not at all: each partition costs one
//! lookup per request.

use std::collections::HashMap;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use kafko_core::{FetchError, Isolation, PartitionReader};

use crate::{ListenerState, errors};
use kafko_service::failure::Failure;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
/// The local log's start (v8): with no tiered storage, the log start.
const EARLIEST_LOCAL: i64 = -4;
/// The last offset in tiered storage (v9): none here.
const LATEST_TIERED: i64 = -5;

/// Answers ListOffsets.
pub(crate) fn handle(
    broker: &ListenerState,
    request: ListOffsetsRequest,
    version: i16,
) -> ListOffsetsResponse {
    let kafko = &broker.service.kafko;
    let committed = version >= 2 && request.isolation_level == 1;
    let mut listed: HashMap<(&str, i32), u32> = HashMap::new();
    for topic in &request.topics {
        for p in &topic.partitions {
            *listed
                .entry((topic.name.as_str(), p.partition_index))
                .or_default() += 1;
        }
    }
    let mut response = ListOffsetsResponse::default();
    response.topics = request
        .topics
        .iter()
        .map(|topic| {
            let handle = crate::metadata::readable_topic(kafko, topic.name.as_str())
                .ok()
                .flatten();
            let mut t = ListOffsetsTopicResponse::default();
            t.partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let mut answer = ListOffsetsPartitionResponse::default();
                    answer.partition_index = p.partition_index;
                    answer.offset = -1;
                    answer.timestamp = -1;
                    if listed.get(&(topic.name.as_str(), p.partition_index)) > Some(&1) {
                        answer.error_code = errors::INVALID_REQUEST;
                        return answer;
                    }
                    let reader = handle
                        .as_ref()
                        .ok_or(errors::UNKNOWN_TOPIC_OR_PARTITION)
                        .and_then(|h| {
                            let partition = u32::try_from(p.partition_index)
                                .map_err(|_| errors::UNKNOWN_TOPIC_OR_PARTITION)?;
                            h.partition(partition).map_err(code)
                        });
                    match reader.and_then(|r| lookup(broker, &r, p.timestamp, committed)) {
                        Ok((offset, timestamp)) => {
                            answer.offset = offset;
                            answer.timestamp = timestamp;
                            if version >= 4 {
                                answer.leader_epoch = 0;
                            }
                        }
                        Err(c) => answer.error_code = c,
                    }
                    answer
                })
                .collect();
            t.name = topic.name.clone();
            t
        })
        .collect();
    response
}

fn code(e: FetchError) -> i16 {
    errors::code(&Failure::from(e))
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The offset and timestamp for one asked timestamp.
fn lookup(
    broker: &ListenerState,
    reader: &PartitionReader,
    timestamp: i64,
    committed: bool,
) -> Result<(i64, i64), i16> {
    let offsets = reader.offsets().map_err(code)?;
    // Timestamps are looked up in the whole log, as Kafka does: only latest depends on
    // the isolation level.
    let all = Isolation::ReadUncommitted;
    match timestamp {
        LATEST if committed => Ok((to_i64(offsets.last_stable_offset), -1)),
        LATEST => Ok((to_i64(offsets.high_watermark), -1)),
        EARLIEST | EARLIEST_LOCAL => Ok((to_i64(offsets.log_start), -1)),
        LATEST_TIERED => Ok((-1, -1)),
        MAX_TIMESTAMP => {
            if offsets.high_watermark == offsets.log_start {
                return Ok((-1, -1));
            }
            let Some(max) = reader.max_timestamp().map_err(code)? else {
                return Ok((-1, -1));
            };
            // The first readable record at or after the largest timestamp has it.
            if let Some(offset) = reader.offset_for_timestamp(max).map_err(code)? {
                return Ok((to_i64(offset), max));
            }
            // The largest timestamp is on a record outside the readable range (before
            // the log start, or appended past the high watermark just now): the largest
            // among the last records, one fetch's worth.
            let config = &broker.service.config;
            let window = u64::try_from(config.max_records_per_fetch).unwrap_or(u64::MAX);
            let from = offsets
                .high_watermark
                .saturating_sub(window)
                .max(offsets.log_start);
            let fetched = reader
                .read_with(
                    from,
                    config.max_records_per_fetch,
                    config.max_fetch_bytes,
                    all,
                )
                .map_err(code)?;
            Ok(fetched
                .records
                .iter()
                .max_by_key(|r| (r.timestamp, std::cmp::Reverse(r.offset)))
                .map_or((-1, -1), |r| (to_i64(r.offset), r.timestamp)))
        }
        ts if ts < 0 => Err(errors::INVALID_REQUEST),
        ts => match reader.offset_for_timestamp(ts).map_err(code)? {
            None => Ok((-1, -1)),
            Some(offset) => {
                let fetched = reader.read_with(offset, 1, 1, all).map_err(code)?;
                Ok(fetched
                    .records
                    .first()
                    .map_or((to_i64(offset), -1), |r| (to_i64(r.offset), r.timestamp)))
            }
        },
    }
}
