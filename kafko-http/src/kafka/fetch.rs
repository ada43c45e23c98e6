//! Fetch: reads every asked partition from its offset, one uncompressed batch per
//! partition, within the request's `max_bytes` and each partition's
//! `partition_max_bytes` (and the server's `--max-fetch-bytes` and
//! `--max-records-per-fetch`); the first partition with data returns at least one record
//! whatever the limits, as Kafka does. While fewer than `min_bytes` are found it waits, up
//! to `max_wait_ms` (capped by `--max-wait-ms`), woken by the topics' activity (any
//! append to them), not by polling. Each partition reports its log start and high
//! watermark; an offset outside `log_start..=high_watermark` is OFFSET_OUT_OF_RANGE.
//! Fetch sessions are not created: the answer's session id is 0, so clients send full
//! fetches.
//!
//! The answer holds room in the server's answer budget (`--max-answer-buffer-bytes`)
//! from before the log is read until it is written to the connection. When the budget
//! stays full, the fetch answers with no records and a throttle time, which clients
//! wait out before fetching again.

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use futures_util::future::select_all;
use kafka_protocol::messages::fetch_request::FetchPartition;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, TopicName};
use kafko_core::TopicHandle;
use tokio::sync::Notify;

use super::{Broker, errors, records};
use crate::answer_budget::Reservation;
use crate::service::failure::Failure;

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Per-partition bytes of an answer besides its records (an estimate for the budget).
const PARTITION_OVERHEAD: usize = 128;
/// How long a client is asked to wait when the answer budget is full.
const THROTTLE_MS: i32 = 1000;

/// Answers Fetch, with the room its answer holds in the answer budget.
pub(crate) async fn handle(
    broker: &Broker,
    request: FetchRequest,
    version: i16,
) -> (FetchResponse, Option<Reservation>) {
    let mut response = FetchResponse::default();
    if version >= 7 && request.session_id != 0 {
        // This broker never hands out a session id.
        response.error_code = errors::FETCH_SESSION_ID_NOT_FOUND;
        return (response, None);
    }
    let config = &broker.state.config;
    let wait =
        Duration::from_millis(u64::try_from(request.max_wait_ms).unwrap_or(0)).min(config.max_wait);
    let deadline = tokio::time::Instant::now() + wait;
    let max_bytes = usize::try_from(request.max_bytes)
        .ok()
        .filter(|b| *b > 0)
        .unwrap_or(usize::MAX)
        .min(config.max_fetch_bytes);
    // A fetch asking for 0 bytes answers at once, as in Kafka.
    let min_bytes = usize::try_from(request.min_bytes).unwrap_or(0);
    let kafko = &broker.state.kafko;
    let topics: Vec<(TopicName, Option<TopicHandle>, Vec<FetchPartition>)> = request
        .topics
        .into_iter()
        .map(|t| {
            let handle = kafko.find_topic(t.topic.as_str()).ok().flatten();
            (t.topic, handle, t.partitions)
        })
        .collect();
    let asked: usize = topics
        .iter()
        .flat_map(|(_, _, partitions)| partitions)
        .map(|p| usize::try_from(p.partition_max_bytes).unwrap_or(0) + PARTITION_OVERHEAD)
        .fold(0, usize::saturating_add);
    let budget = &broker.state.answers;
    let Some(mut room) = budget
        .reserve(asked.min(max_bytes.saturating_add(PARTITION_OVERHEAD)))
        .await
    else {
        response.throttle_time_ms = THROTTLE_MS;
        response.responses = empty(&topics, version);
        return (response, None);
    };
    let notifies: Vec<Arc<Notify>> = topics
        .iter()
        .filter_map(|(_, h, _)| h.as_ref().map(TopicHandle::activity))
        .collect();
    loop {
        // Interest registered before reading: an append in between still wakes us.
        let mut woken: Vec<_> = notifies.iter().map(|n| Box::pin(n.notified())).collect();
        for w in &mut woken {
            w.as_mut().enable();
        }
        let (answer, bytes, failed) = read_all(broker, &topics, max_bytes, version);
        if bytes >= min_bytes
            || failed
            || tokio::time::Instant::now() >= deadline
            || broker.state.is_shutting_down()
        {
            let overhead =
                answer.iter().map(|t| t.partitions.len()).sum::<usize>() * PARTITION_OVERHEAD;
            if !room.fit(budget, bytes + overhead).await {
                response.throttle_time_ms = THROTTLE_MS;
                response.responses = empty(&topics, version);
                return (response, None);
            }
            response.responses = answer;
            return (response, Some(room));
        }
        if woken.is_empty() {
            tokio::time::sleep_until(deadline).await;
            continue;
        }
        tokio::select! {
            _ = select_all(woken) => {}
            () = tokio::time::sleep_until(deadline) => {}
            () = broker.state.shutdown_requested() => {}
        }
    }
}

/// The answer's topics, every partition asked, each filled by `fill` from a fresh
/// partition answer (its index, and no preferred replica from v11).
fn answer_each(
    topics: &[(TopicName, Option<TopicHandle>, Vec<FetchPartition>)],
    version: i16,
    mut fill: impl FnMut(Option<&TopicHandle>, &FetchPartition, &mut PartitionData),
) -> Vec<FetchableTopicResponse> {
    topics
        .iter()
        .map(|(name, handle, partitions)| {
            let mut t = FetchableTopicResponse::default();
            t.topic = name.clone();
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
fn empty(
    topics: &[(TopicName, Option<TopicHandle>, Vec<FetchPartition>)],
    version: i16,
) -> Vec<FetchableTopicResponse> {
    answer_each(topics, version, |_, _, data| {
        data.records = Some(bytes::Bytes::new());
    })
}

/// Reads every partition once: the answer, the record bytes in it, and whether any
/// partition failed (which answers at once).
fn read_all(
    broker: &Broker,
    topics: &[(TopicName, Option<TopicHandle>, Vec<FetchPartition>)],
    max_bytes: usize,
    version: i16,
) -> (Vec<FetchableTopicResponse>, usize, bool) {
    let mut used = 0usize;
    let mut failed = false;
    let answer = answer_each(topics, version, |handle, p, data| {
        let result = match handle {
            Some(handle) => read_partition(broker, handle, p, max_bytes, &mut used, data),
            None => Err(errors::UNKNOWN_TOPIC_OR_PARTITION),
        };
        if let Err(code) = result {
            data.error_code = code;
            failed = true;
        }
        if version < 5 {
            data.log_start_offset = -1;
        }
    });
    (answer, used, failed)
}

/// Key, value and header bytes, as the server's metrics count them.
fn payload_bytes(r: &kafko_core::Record) -> usize {
    r.key.as_ref().map_or(0, bytes::Bytes::len)
        + r.value.as_ref().map_or(0, bytes::Bytes::len)
        + r.headers
            .iter()
            .map(|h| h.name.len() + h.value.len())
            .sum::<usize>()
}

fn read_partition(
    broker: &Broker,
    handle: &TopicHandle,
    p: &FetchPartition,
    max_bytes: usize,
    used: &mut usize,
    data: &mut PartitionData,
) -> Result<(), i16> {
    let fail = |e: kafko_core::FetchError| errors::code(&Failure::from(e));
    let partition = u32::try_from(p.partition).map_err(|_| errors::UNKNOWN_TOPIC_OR_PARTITION)?;
    let reader = handle.partition(partition).map_err(fail)?;
    let offsets = reader.offsets().map_err(fail)?;
    data.high_watermark = to_i64(offsets.high_watermark);
    data.last_stable_offset = to_i64(offsets.high_watermark);
    data.log_start_offset = to_i64(offsets.log_start);
    let offset = u64::try_from(p.fetch_offset).map_err(|_| errors::OFFSET_OUT_OF_RANGE)?;
    if !offsets.contains(offset) {
        return Err(errors::OFFSET_OUT_OF_RANGE);
    }
    let mut out = BytesMut::new();
    let room = max_bytes.saturating_sub(*used);
    let limit = usize::try_from(p.partition_max_bytes)
        .unwrap_or(0)
        .min(room);
    // Past the first data, a partition with no room left is skipped; the first one
    // returns at least a record, so a large record is never stuck.
    if offset < offsets.high_watermark && (limit > 0 || *used == 0) {
        let config = &broker.state.config;
        let fetched = reader
            .read(offset, config.max_records_per_fetch, limit.max(1))
            .map_err(fail)?;
        // Cut at the limit; the first data of the answer is one record at least.
        let mut written = records::encode_batch(&fetched.records, &mut out, Some(limit));
        if written == 0 && *used == 0 {
            let first = &fetched.records[..1.min(fetched.records.len())];
            written = records::encode_batch(first, &mut out, None);
        }
        let sent = &fetched.records[..written];
        let bytes = sent.iter().map(payload_bytes).sum();
        broker.state.metrics.consumed(handle.name(), written, bytes);
        data.high_watermark = to_i64(fetched.high_watermark);
        data.last_stable_offset = to_i64(fetched.high_watermark);
        data.log_start_offset = to_i64(fetched.log_start_offset);
    }
    *used += out.len();
    data.records = Some(out.freeze());
    Ok(())
}
