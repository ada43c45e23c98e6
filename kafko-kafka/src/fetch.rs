//! Fetch: reads every asked partition from its offset, its stored batches whole
//! (`fetch_read`; framed without a copy by `fetch_frame`), within the request's `max_bytes` and each partition's
//! `partition_max_bytes` (and the server's `--max-fetch-bytes` and
//! `--max-records-per-fetch`); the first partition with data returns at least one record
//! whatever the limits, as Kafka does. While fewer than `min_bytes` are found it waits, up
//! to `max_wait_ms` (capped by `--max-wait-ms`), woken by the topics' activity (any
//! append to them), not by polling; a wake-up reads only the records appended since
//! (`fetch_read`). Each partition reports its log start, high watermark and last stable
//! offset; an offset outside `log_start..=high_watermark` is OFFSET_OUT_OF_RANGE. From
//! v4, isolation level 1 (read committed) serves batches below the last stable offset
//! only, with the aborted transactions among them. Fetch sessions are not
//! created: the answer's session id is 0, so clients send full fetches. From v13 topics
//! are named by id (UNKNOWN_TOPIC_ID for an id no live topic has).
//!
//! Every answer, records or not, is built inside the server's answer budget
//! (`--max-answer-buffer-bytes`): room for an upper bound of its size (records, and
//! each partition's entry as built and as encoded) is held from before the log is
//! read, and once the answer is encoded the room shrinks to the bytes it holds, until
//! they are written to the connection. When the budget stays
//! full, the fetch answers with no records and a throttle time, which clients wait out
//! before fetching again; when even that answer finds no room, it names no partition.

use std::time::Duration;

use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafko_core::{ActivityWatch, Isolation, TopicHandle};

use crate::fetch_read::{Asked, Named, empty, read_all};
use crate::frame::Frame;
use crate::metadata::topic_by_uuid;
use crate::{ListenerState, errors};
use kafko_service::answer_budget::Reservation;
use kafko_service::metrics::FrontEnd;
use kafko_service::wait::Waiter;

/// How long a client is asked to wait when the answer budget is full.
const THROTTLE_MS: i32 = 1000;
/// The most bytes one partition's entry takes in an answer, besides its records (index,
/// error, three offsets, the aborted transactions, the preferred replica, the records'
/// length, tagged fields).
const PARTITION_BYTES: usize = 48;
/// The most bytes one topic's entry takes besides its name and partitions.
const TOPIC_BYTES: usize = 16;
/// The most bytes of the answer's frame besides its topics.
const FRAME_BYTES: usize = 64;
/// A throttled answer this small lists its partitions even when the budget has no room
/// at all: at most one per connection, so the connection cap bounds them.
const SMALL_ANSWER: usize = 4096;

/// Answers Fetch: the encoded answer (by `encode`), with the room it holds in the
/// answer budget until written.
///
/// # Errors
/// `encode`'s.
pub(crate) async fn answer(
    broker: &ListenerState,
    request: FetchRequest,
    version: i16,
    encode: impl Fn(FetchResponse) -> Result<Frame, String>,
) -> Result<(Frame, Option<Reservation>), String> {
    let mut response = FetchResponse::default();
    if version >= 7 && request.session_id != 0 {
        // This broker never hands out a session id.
        response.error_code = errors::FETCH_SESSION_ID_NOT_FOUND;
        return Ok((encode(response)?, None));
    }
    let config = &broker.service.config;
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
    let isolation = match request.isolation_level {
        1 if version >= 4 => Isolation::ReadCommitted,
        _ => Isolation::ReadUncommitted,
    };
    let kafko = &broker.service.kafko;
    let topics: Vec<(Named, Option<TopicHandle>, _)> = request
        .topics
        .into_iter()
        .map(|t| {
            if version >= 13 {
                let handle = topic_by_uuid(broker, t.topic_id);
                let name = handle
                    .as_ref()
                    .map(|h| TopicName(StrBytes::from_string(h.name().to_owned())))
                    .unwrap_or_default();
                let named = Named {
                    name,
                    id: t.topic_id,
                };
                return (named, handle, t.partitions);
            }
            let handle = crate::metadata::readable_topic(kafko, t.topic.as_str())
                .ok()
                .flatten();
            let named = Named {
                name: t.topic,
                id: uuid::Uuid::nil(),
            };
            (named, handle, t.partitions)
        })
        .collect();
    let entries = entries_bytes(&topics);
    let asked: usize = topics
        .iter()
        .flat_map(|(_, _, partitions)| partitions)
        .map(|p| usize::try_from(p.partition_max_bytes).unwrap_or(0))
        .fold(0, usize::saturating_add);
    let budget = &broker.service.answers;
    let Some(mut room) = budget
        .reserve(asked.min(max_bytes).saturating_add(entries))
        .await
    else {
        return throttled(broker, &topics, version, entries, &encode).await;
    };
    // Taken before the first look: an append in between still ends the wait.
    let mut watch = ActivityWatch::new(
        topics
            .iter()
            .filter_map(|(_, h, _)| h.as_ref().map(TopicHandle::activity)),
    );
    let (mut answer, bytes, mut failed, mut progress) =
        read_all(broker, &topics, max_bytes, version, isolation);
    // Below min_bytes: wait, looking only at what each wake-up added, then read again.
    if bytes < min_bytes && !failed {
        drop(answer);
        // Counted as waiting from the first wait on until the answer is read, whichever
        // way the wait ends.
        let mut waiter = Waiter::new(&broker.service, FrontEnd::Kafka, deadline);
        loop {
            if !waiter.wait(&mut watch).await {
                break;
            }
            failed = !progress.look(&topics, max_bytes);
            if progress.found() >= min_bytes || failed || waiter.over() {
                break;
            }
        }
        answer = read_all(broker, &topics, max_bytes, version, isolation).0;
        drop(waiter);
    }
    response.responses = answer;
    let frame = encode(response)?;
    if !room.fit(budget, frame.len()).await {
        // A single record past the estimate, and no room for it.
        return throttled(broker, &topics, version, entries, &encode).await;
    }
    Ok((frame, Some(room)))
}

/// An upper bound of the memory the answer takes besides its records: while it is
/// built, its decoded form (one `PartitionData` a partition); once encoded, its bytes.
fn entries_bytes(topics: &Asked) -> usize {
    let per_partition = PARTITION_BYTES + std::mem::size_of::<PartitionData>();
    let per_topic = TOPIC_BYTES + std::mem::size_of::<FetchableTopicResponse>();
    topics
        .iter()
        .map(|(name, _, partitions)| {
            per_topic + name.name.len() + partitions.len().saturating_mul(per_partition)
        })
        .fold(FRAME_BYTES, usize::saturating_add)
}

/// The answer while the budget is full: no records and a throttle time, every partition
/// listed when that answer is small or finds room in the budget at once, else none (the
/// client waits out the throttle and fetches again).
async fn throttled(
    broker: &ListenerState,
    topics: &Asked,
    version: i16,
    entries: usize,
    encode: &impl Fn(FetchResponse) -> Result<Frame, String>,
) -> Result<(Frame, Option<Reservation>), String> {
    let mut response = FetchResponse::default();
    response.throttle_time_ms = THROTTLE_MS;
    let budget = &broker.service.answers;
    let mut room = None;
    if entries <= SMALL_ANSWER {
        response.responses = empty(topics, version);
    } else {
        room = budget.try_reserve(entries);
        if room.is_some() {
            response.responses = empty(topics, version);
        }
    }
    let frame = encode(response)?;
    if let Some(room) = room.as_mut() {
        // Only shrinks: `entries` bounds this answer.
        room.fit(budget, frame.len()).await;
    }
    Ok((frame, room))
}
