//! DeleteRecords and DescribeLogDirs: the log's own administration.
//!
//! DeleteRecords moves a partition's log start offset up to the offset given (−1: the
//! high watermark), durably before it answers, through the partition's writer (the
//! segments wholly below the new start are deleted as retention deletes them); the
//! answer's low watermark is the log start afterwards. An offset past the high
//! watermark (or negative, other than −1) is OFFSET_OUT_OF_RANGE; a topic whose cleanup
//! policy does not delete is POLICY_VIOLATION, as Kafka refuses it. A partition named
//! twice is answered once, with the last offset named, as Kafka reads the request into
//! a map.
//!
//! DescribeLogDirs answers the one log directory: the data directory's absolute path,
//! each partition's size (the bytes of its segment files), an offset lag of 0 (no
//! replica trails) and no future replica; from v4 the file system's total and usable
//! bytes (−1 when they cannot be read). Partitions asked that do not exist are left
//! out, as Kafka leaves out the ones a directory does not hold.

use std::collections::{HashMap, HashSet};

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol::messages::{
    DeleteRecordsRequest, DeleteRecordsResponse, DescribeLogDirsRequest, DescribeLogDirsResponse,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafko_core::AdminError;

use crate::{ListenerState, errors};
use kafko_service::failure::Failure;

/// DeleteRecords' offset for "the high watermark".
const HIGH_WATERMARK: i64 = -1;
/// The low watermark of a partition whose deletion failed.
const NO_LOW_WATERMARK: i64 = -1;

/// Answers DeleteRecords.
pub(crate) async fn delete_records(
    broker: &ListenerState,
    request: DeleteRecordsRequest,
) -> DeleteRecordsResponse {
    // Topics in the order first named; each partition once, with its last offset.
    let mut topics: Vec<(TopicName, Vec<(i32, i64)>)> = Vec::new();
    let mut slot: HashMap<TopicName, usize> = HashMap::new();
    let mut row: HashMap<(usize, i32), usize> = HashMap::new();
    for topic in request.topics {
        let t = *slot.entry(topic.name.clone()).or_insert_with(|| {
            topics.push((topic.name.clone(), Vec::new()));
            topics.len() - 1
        });
        for p in topic.partitions {
            let rows = &mut topics[t].1;
            match row.get(&(t, p.partition_index)) {
                Some(&i) => rows[i].1 = p.offset,
                None => {
                    row.insert((t, p.partition_index), rows.len());
                    rows.push((p.partition_index, p.offset));
                }
            }
        }
    }
    let mut response = DeleteRecordsResponse::default();
    for (name, partitions) in topics {
        let handle = broker
            .service
            .kafko
            .find_topic(name.as_str())
            .map_err(|e| errors::code(&Failure::from(e)));
        let mut result = DeleteRecordsTopicResult::default();
        for (partition, offset) in partitions {
            let mut answer = DeleteRecordsPartitionResult::default();
            answer.partition_index = partition;
            let outcome = match &handle {
                Ok(Some(topic)) => delete_one(topic, partition, offset).await,
                Ok(None) => Err(errors::UNKNOWN_TOPIC_OR_PARTITION),
                Err(code) => Err(*code),
            };
            match outcome {
                Ok(low) => answer.low_watermark = low,
                Err(code) => {
                    answer.error_code = code;
                    answer.low_watermark = NO_LOW_WATERMARK;
                }
            }
            result.partitions.push(answer);
        }
        result.name = name;
        response.topics.push(result);
    }
    response
}

/// Deletes one partition's records below `offset`; the new low watermark, or the error
/// code.
async fn delete_one(
    topic: &kafko_core::TopicHandle,
    partition: i32,
    offset: i64,
) -> Result<i64, i16> {
    let partition = u32::try_from(partition).map_err(|_| errors::UNKNOWN_TOPIC_OR_PARTITION)?;
    // An unknown partition is answered as such whatever the offset.
    topic
        .partition(partition)
        .map_err(|_| errors::UNKNOWN_TOPIC_OR_PARTITION)?;
    let to = match offset {
        HIGH_WATERMARK => None,
        o => Some(u64::try_from(o).map_err(|_| errors::OFFSET_OUT_OF_RANGE)?),
    };
    match topic.delete_records(partition, to).await {
        Ok(start) => Ok(i64::try_from(start).unwrap_or(i64::MAX)),
        Err(AdminError::InvalidRequest { .. }) => Err(errors::POLICY_VIOLATION),
        Err(e) => Err(errors::code(&Failure::from(e))),
    }
}

/// Answers DescribeLogDirs.
pub(crate) fn describe_log_dirs(
    broker: &ListenerState,
    request: DescribeLogDirsRequest,
    version: i16,
) -> DescribeLogDirsResponse {
    let kafko = &broker.service.kafko;
    // The topics to describe, each once, with the partitions asked (`None`: all).
    let asked: Vec<(String, Option<HashSet<i32>>)> = match request.topics {
        None => kafko.list_topics().into_iter().map(|t| (t, None)).collect(),
        Some(topics) => {
            let mut order = Vec::new();
            let mut wanted: HashMap<String, HashSet<i32>> = HashMap::new();
            for t in topics {
                let name = t.topic.as_str().to_owned();
                let set = wanted.entry(name.clone()).or_insert_with(|| {
                    order.push(name);
                    HashSet::new()
                });
                set.extend(t.partitions);
            }
            order
                .into_iter()
                .map(|name| {
                    let set = wanted.remove(&name);
                    (name, set)
                })
                .collect()
        }
    };
    let mut dir = DescribeLogDirsResult::default();
    dir.log_dir = StrBytes::from_string(log_dir_path(kafko.data_dir()));
    for (name, partitions) in asked {
        let Ok(Some(topic)) = kafko.find_topic(&name) else {
            continue;
        };
        let Ok(description) = topic.describe() else {
            continue;
        };
        let mut t = DescribeLogDirsTopic::default();
        for p in description.partitions {
            let index = i32::try_from(p.partition).unwrap_or(i32::MAX);
            if partitions.as_ref().is_some_and(|set| !set.contains(&index)) {
                continue;
            }
            let mut row = DescribeLogDirsPartition::default();
            row.partition_index = index;
            row.partition_size = i64::try_from(p.size_bytes).unwrap_or(i64::MAX);
            row.offset_lag = 0;
            row.is_future_key = false;
            t.partitions.push(row);
        }
        if t.partitions.is_empty() {
            continue;
        }
        t.name = TopicName(StrBytes::from_string(name));
        dir.topics.push(t);
    }
    (dir.total_bytes, dir.usable_bytes) = if version >= 4 {
        space(kafko.data_dir())
    } else {
        (-1, -1)
    };
    let mut response = DescribeLogDirsResponse::default();
    response.results = vec![dir];
    response
}

/// The data directory as an absolute path.
fn log_dir_path(dir: &std::path::Path) -> String {
    std::path::absolute(dir)
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

/// The total and usable bytes of the file system holding `dir`; −1 each when unknown.
fn space(dir: &std::path::Path) -> (i64, i64) {
    match rustix::fs::statvfs(dir) {
        Ok(s) => {
            let bytes =
                |blocks: u64| i64::try_from(blocks.saturating_mul(s.f_frsize)).unwrap_or(i64::MAX);
            (bytes(s.f_blocks), bytes(s.f_bavail))
        }
        Err(_) => (-1, -1),
    }
}
