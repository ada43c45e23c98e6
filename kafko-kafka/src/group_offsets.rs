//! OffsetCommit and OffsetFetch of the classic group protocol, over the coordinator's
//! committed offsets (the ones `/v1` and the REST Proxy read).
//!
//! A commit is checked per partition, as Kafka does: a metadata string longer than
//! `offset.metadata.max.bytes` is `OFFSET_METADATA_TOO_LARGE` for its partition alone.
//! The logical offsets a client may commit to reset a group (kafkajs'
//! `admin.resetOffsets`: −2 earliest, −1 latest) are stored as the partition's log
//! start offset or high watermark at the time of the commit, since committed offsets
//! are positions here; OffsetFetch then returns that position. An OffsetFetch reads
//! the topics and partitions it names as sets (as Kafka does), so its answer is bounded
//! by the distinct partitions asked, or by the group's committed offsets.

use std::collections::{BTreeMap, HashMap, HashSet};

use kafka_protocol::messages::offset_commit_request::OffsetCommitRequestTopic;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafko_core::{
    ClassicMemberId, CommitOffset, CommittedOffset, GroupError, GroupHandle, TopicHandle,
};

use crate::consumer_groups::refusal_code;
use crate::groups::{code, group};
use crate::metadata::str;
use crate::{ListenerState, errors};
use kafko_service::failure::Failure;

/// The logical offset of a reset to the earliest offset (Kafka's `EARLIEST_TIMESTAMP`).
const EARLIEST: i64 = -2;
/// The logical offset of a reset to the latest offset (Kafka's `LATEST_TIMESTAMP`).
const LATEST: i64 = -1;

/// Answers OffsetCommit: each topic's offsets are committed durably in one write, from
/// a member in its generation, or from a client that is no member (generation −1) when
/// the group has no Kafka members.
pub(crate) async fn offset_commit(
    broker: &ListenerState,
    request: OffsetCommitRequest,
    version: i16,
) -> OffsetCommitResponse {
    let mut response = OffsetCommitResponse::default();
    let g = group(broker, request.group_id.as_str());
    // A consumer group (KIP-848) checks the member epoch instead of a generation.
    let consumer = g
        .as_ref()
        .is_ok_and(GroupHandle::is_consumer_group)
        .then(|| ConsumerCommit {
            member_id: request.member_id.to_string(),
            member_epoch: request.generation_id_or_member_epoch,
            version,
        });
    let member = u64::try_from(request.generation_id_or_member_epoch)
        .ok()
        .map(|generation| {
            let instance = request.group_instance_id.as_ref().map(ToString::to_string);
            (request.member_id.to_string(), instance, generation)
        });
    for topic in request.topics {
        let codes = commit_topic(broker, &g, member.as_ref(), consumer.as_ref(), &topic).await;
        let mut answer = OffsetCommitResponseTopic::default();
        answer.partitions = topic
            .partitions
            .iter()
            .zip(codes)
            .map(|(p, code)| {
                let mut partition = OffsetCommitResponsePartition::default();
                partition.partition_index = p.partition_index;
                partition.error_code = code;
                partition
            })
            .collect();
        answer.name = topic.name;
        response.topics.push(answer);
    }
    response
}

/// The member of a consumer group (KIP-848) committing, as its OffsetCommit names it.
struct ConsumerCommit {
    member_id: String,
    member_epoch: i32,
    version: i16,
}

/// Commits one topic's offsets; the error code of each partition, in request order.
async fn commit_topic(
    broker: &ListenerState,
    group: &Result<GroupHandle, i16>,
    member: Option<&(String, Option<String>, u64)>,
    consumer: Option<&ConsumerCommit>,
    topic: &OffsetCommitRequestTopic,
) -> Vec<i16> {
    let every = |code| vec![code; topic.partitions.len()];
    let g = match group {
        Ok(g) => g,
        Err(code) => return every(*code),
    };
    let handle = match broker.service.kafko.find_topic(topic.name.as_str()) {
        Ok(Some(t)) => t,
        Ok(None) => return every(errors::UNKNOWN_TOPIC_OR_PARTITION),
        Err(e) => return every(errors::code(&Failure::from(e))),
    };
    let max_metadata = broker
        .service
        .kafko
        .group_limits()
        .offset_metadata_max_bytes;
    let mut codes = every(errors::NONE);
    let rows = topic.partitions.iter().map(|p| CommitRow {
        partition_index: p.partition_index,
        committed_offset: p.committed_offset,
        metadata: p.committed_metadata.as_deref(),
        leader_epoch: p.committed_leader_epoch,
    });
    let (offsets, committing) = commit_rows(&handle, rows, max_metadata, &mut codes);
    if offsets.is_empty() {
        return codes;
    }
    let member = member.map(|(id, instance, generation)| {
        let who = ClassicMemberId {
            member_id: id.as_str(),
            group_instance_id: instance.as_deref(),
        };
        (who, *generation)
    });
    let done = match consumer {
        Some(c) => g
            .consumer_commit(&c.member_id, c.member_epoch, c.version, &handle, &offsets)
            .await
            .map_err(|e| match e {
                Ok(refused) => refusal_code(refused.refusal),
                Err(e) => code(e),
            }),
        None => g
            .classic_commit(member, &handle, &offsets)
            .await
            .map_err(code),
    };
    if let Err(failed) = done {
        for i in committing {
            codes[i] = failed;
        }
    }
    codes
}

/// One row of an offset commit, from OffsetCommit or TxnOffsetCommit.
pub(crate) struct CommitRow<'a> {
    pub(crate) partition_index: i32,
    pub(crate) committed_offset: i64,
    pub(crate) metadata: Option<&'a str>,
    pub(crate) leader_epoch: i32,
}

/// The offsets a commit's rows store, and the indexes of the rows they came from; a row
/// that cannot be stored (metadata past `max_metadata`, an unknown partition, a bad
/// offset) gets its error code in `codes`.
pub(crate) fn commit_rows<'a>(
    handle: &TopicHandle,
    rows: impl Iterator<Item = CommitRow<'a>>,
    max_metadata: usize,
    codes: &mut [i16],
) -> (Vec<CommitOffset>, Vec<usize>) {
    let mut offsets = Vec::new();
    let mut committing = Vec::new();
    for (i, row) in rows.enumerate() {
        if row.metadata.is_some_and(|m| m.len() > max_metadata) {
            codes[i] = errors::OFFSET_METADATA_TOO_LARGE;
            continue;
        }
        match commit_offset(handle, row.partition_index, row.committed_offset) {
            Ok((partition, offset)) => {
                offsets.push(CommitOffset {
                    partition,
                    offset,
                    metadata: row.metadata.map(ToString::to_string),
                    leader_epoch: leader_epoch(row.leader_epoch),
                });
                committing.push(i);
            }
            Err(code) => codes[i] = code,
        }
    }
    (offsets, committing)
}

/// The partition and offset one row of a commit stores, or its error code: a logical
/// offset (−2 earliest, −1 latest) is the partition's log start offset or high
/// watermark now.
pub(crate) fn commit_offset(
    handle: &TopicHandle,
    partition: i32,
    offset: i64,
) -> Result<(u32, u64), i16> {
    let reader = u32::try_from(partition)
        .ok()
        .and_then(|p| handle.partition(p).ok())
        .ok_or(errors::UNKNOWN_TOPIC_OR_PARTITION)?;
    let stored = match offset {
        EARLIEST | LATEST => {
            let range = reader
                .offsets()
                .map_err(|e| errors::code(&Failure::from(e)))?;
            if offset == EARLIEST {
                range.log_start
            } else {
                range.high_watermark
            }
        }
        _ => u64::try_from(offset).map_err(|_| errors::INVALID_REQUEST)?,
    };
    Ok((reader.partition(), stored))
}

/// A topic's rows in an OffsetFetch answer: each partition asked, with its committed
/// offset if it has one.
type TopicOffsets = (String, Vec<(i32, Option<CommittedOffset>)>);

/// One group's committed offsets for OffsetFetch: of the topics asked, or (`None`) of
/// every topic it committed on. A group that does not exist has none.
fn committed(
    broker: &ListenerState,
    id: &str,
    asked: Option<Vec<(String, Vec<i32>)>>,
) -> Result<Vec<TopicOffsets>, i16> {
    let stored: BTreeMap<String, Vec<CommittedOffset>> =
        match group(broker, id)?.classic_committed() {
            Ok(map) => map,
            Err(GroupError::GroupNotFound { .. }) => BTreeMap::new(),
            Err(e) => return Err(code(e)),
        };
    let index: HashMap<(&str, u32), &CommittedOffset> = stored
        .iter()
        .flat_map(|(topic, offsets)| offsets.iter().map(|o| ((topic.as_str(), o.partition), o)))
        .collect();
    let find = |topic: &str, p: i32| {
        let p = u32::try_from(p).ok()?;
        index.get(&(topic, p)).map(|o| (*o).clone())
    };
    Ok(match asked {
        Some(topics) => topics
            .into_iter()
            .map(|(topic, partitions)| {
                let rows = partitions.iter().map(|&p| (p, find(&topic, p))).collect();
                (topic, rows)
            })
            .collect(),
        None => stored
            .iter()
            .map(|(topic, offsets)| {
                let rows = offsets
                    .iter()
                    .map(|o| {
                        (
                            i32::try_from(o.partition).unwrap_or(i32::MAX),
                            Some(o.clone()),
                        )
                    })
                    .collect();
                (topic.clone(), rows)
            })
            .collect(),
    })
}

/// The committed leader epoch a commit gave: `None` for −1 (or any negative), as
/// Kafka keeps only the epochs ≥ 0.
pub(crate) fn leader_epoch(committed_leader_epoch: i32) -> Option<i32> {
    (committed_leader_epoch >= 0).then_some(committed_leader_epoch)
}

/// An OffsetFetch row's committed offset, metadata and leader epoch (−1 when none).
fn offset_out(o: Option<&CommittedOffset>) -> (i64, Option<StrBytes>, i32) {
    match o {
        Some(o) => (
            i64::try_from(o.offset).unwrap_or(i64::MAX),
            Some(str(o.metadata.as_deref().unwrap_or(""))),
            o.leader_epoch.unwrap_or(-1),
        ),
        None => (-1, Some(str("")), -1),
    }
}

/// The rows of an OffsetFetch answer in the layout of its version: `$topic` and
/// `$partition` are the single-group types (v1–7) or the group-list ones (v8+), which
/// hold the same fields.
macro_rules! offset_rows {
    ($rows:expr, $topic:ty, $partition:ty) => {
        $rows
            .into_iter()
            .map(|(topic, partitions)| {
                let mut t = <$topic>::default();
                t.name = TopicName(str(&topic));
                t.partitions = partitions
                    .iter()
                    .map(|(p, o)| {
                        let mut row = <$partition>::default();
                        row.partition_index = *p;
                        (
                            row.committed_offset,
                            row.metadata,
                            row.committed_leader_epoch,
                        ) = offset_out(o.as_ref());
                        row
                    })
                    .collect();
                t
            })
            .collect()
    };
}

/// The topics asked of OffsetFetch (`None`: all of them).
fn asked_topics<T>(
    topics: Option<Vec<T>>,
    name_and_partitions: impl Fn(T) -> (String, Vec<i32>),
) -> Option<Vec<(String, Vec<i32>)>> {
    topics.map(|ts| distinct(ts.into_iter().map(name_and_partitions)))
}

/// The topics asked, each once (its partitions merged), and each topic's partitions
/// once, in the order first named.
fn distinct(asked: impl Iterator<Item = (String, Vec<i32>)>) -> Vec<(String, Vec<i32>)> {
    let mut out: Vec<(String, Vec<i32>)> = Vec::new();
    let mut slot: HashMap<String, usize> = HashMap::new();
    let mut seen: HashSet<(usize, i32)> = HashSet::new();
    for (topic, partitions) in asked {
        let i = *slot.entry(topic.clone()).or_insert_with(|| {
            out.push((topic, Vec::new()));
            out.len() - 1
        });
        for p in partitions {
            if seen.insert((i, p)) {
                out[i].1.push(p);
            }
        }
    }
    out
}

/// Answers OffsetFetch: one group (v1–7; no topics from v2 on means all of them) or a
/// list of groups (v8+).
pub(crate) fn offset_fetch(
    broker: &ListenerState,
    request: OffsetFetchRequest,
    version: i16,
) -> OffsetFetchResponse {
    let mut response = OffsetFetchResponse::default();
    if version >= 8 {
        // A group named twice is answered once.
        let mut seen = HashSet::new();
        for asked in request.groups {
            if !seen.insert(asked.group_id.clone()) {
                continue;
            }
            let mut answer = OffsetFetchResponseGroup::default();
            // v9 names the member of a consumer group (KIP-848): its epoch is checked.
            if version >= 9
                && (asked.member_epoch >= 0 || asked.member_id.is_some())
                && let Ok(g) = group(broker, asked.group_id.as_str())
                && g.is_consumer_group()
                && let Err(e) = g.consumer_check_offsets(
                    asked.member_id.as_deref().unwrap_or(""),
                    asked.member_epoch,
                    true,
                    version,
                )
            {
                answer.error_code = refusal_code(e.refusal);
                answer.group_id = asked.group_id;
                response.groups.push(answer);
                continue;
            }
            let topics = asked_topics(asked.topics, |t| (t.name.to_string(), t.partition_indexes));
            match committed(broker, asked.group_id.as_str(), topics) {
                Ok(rows) => {
                    answer.topics = offset_rows!(
                        rows,
                        OffsetFetchResponseTopics,
                        OffsetFetchResponsePartitions
                    );
                }
                Err(code) => answer.error_code = code,
            }
            answer.group_id = asked.group_id;
            response.groups.push(answer);
        }
        return response;
    }
    let topics = asked_topics(request.topics, |t| {
        (t.name.to_string(), t.partition_indexes)
    });
    match committed(broker, request.group_id.as_str(), topics) {
        Ok(rows) => {
            response.topics =
                offset_rows!(rows, OffsetFetchResponseTopic, OffsetFetchResponsePartition);
        }
        Err(code) if version >= 2 => response.error_code = code,
        Err(_) => {}
    }
    response
}
