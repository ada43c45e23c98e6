//! Transactions (KIP-98) on the Kafka wire: InitProducerId with a transactional id,
//! AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn, over the log's
//! transaction coordinator (`kafko_core::transaction`); the transactional produce is
//! `produce`'s, DescribeTransactions and ListTransactions are `transactions_describe`'s.
//!
//! Transactions v2 (KIP-890 part 2) by the request's version, as Kafka 4.0 decides it:
//! EndTxn v5 bumps the producer's epoch and answers the producer id and epoch to go on
//! with; TxnOffsetCommit v5 adds its group to the transaction first. AddPartitionsToTxn
//! v5 is v4 (the TRANSACTION_ABORTABLE it may answer in Kafka never arises here).
//!
//! Errors as Kafka answers them: a producer fenced by a newer epoch is PRODUCER_FENCED
//! for the versions that know it (InitProducerId v4+, AddPartitionsToTxn,
//! AddOffsetsToTxn and EndTxn v2+), INVALID_PRODUCER_EPOCH before and in TxnOffsetCommit
//! (the group's answer in Kafka). An AddPartitionsToTxn naming partitions that do not
//! exist answers UNKNOWN_TOPIC_OR_PARTITION for them and OPERATION_NOT_ATTEMPTED for the
//! rest; a Kafka internal topic is INVALID_TOPIC_EXCEPTION. The coordinator's bounds on
//! transactional ids and on a transaction's partitions answer COORDINATOR_LOAD_IN_PROGRESS
//! (retriable, as for idempotent ids) and POLICY_VIOLATION; a coordinator shutting down
//! answers COORDINATOR_NOT_AVAILABLE, on which clients look for it again. Group ids are
//! Kafka's, mapped to kafko's group names as every group API does (INVALID_GROUP_ID for
//! one that maps to none).
//!
//! Bounds: one request adds at most [`MAX_PARTITIONS_PER_REQUEST`] distinct partitions
//! (over all its transactions) and commits at most as many offsets; a request past it
//! closes the connection, as a FindCoordinator of too many keys does.

use std::collections::HashSet;

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse, EndTxnRequest, EndTxnResponse, InitProducerIdRequest,
    InitProducerIdResponse, ProducerId, TopicName, TransactionalId, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
};
use kafko_core::naming::group_name_for_id;
use kafko_core::transaction::{TxnError, TxnPartition};
use kafko_service::failure::Failure;

use crate::group_offsets::{CommitRow, commit_rows};
use crate::{ListenerState, errors};

/// The version of EndTxn and TxnOffsetCommit that speaks transactions v2 (KIP-890 part
/// 2), as Kafka 4.0 decides it: by the request's version.
pub(crate) const TRANSACTIONS_V2: i16 = 5;

/// Distinct partitions one AddPartitionsToTxn adds, or offsets one TxnOffsetCommit
/// commits, at most.
pub(crate) const MAX_PARTITIONS_PER_REQUEST: usize = 10_000;

/// The Kafka error code of a coordinator's refusal; `fenced` is what a fenced producer
/// gets at the request's version.
pub(crate) fn code(e: TxnError, fenced: i16) -> i16 {
    match e {
        TxnError::ProducerFenced => fenced,
        TxnError::InvalidProducerIdMapping => errors::INVALID_PRODUCER_ID_MAPPING,
        TxnError::ConcurrentTransactions => errors::CONCURRENT_TRANSACTIONS,
        TxnError::InvalidTxnState => errors::INVALID_TXN_STATE,
        TxnError::InvalidTimeout { .. } => errors::INVALID_TRANSACTION_TIMEOUT,
        TxnError::UnknownTopicOrPartition(_) => errors::UNKNOWN_TOPIC_OR_PARTITION,
        TxnError::InvalidGroupId => errors::INVALID_GROUP_ID,
        TxnError::TooManyTransactions { .. } => errors::COORDINATOR_LOAD_IN_PROGRESS,
        TxnError::TooManyPartitions { .. } => errors::POLICY_VIOLATION,
        // Clients look for the coordinator again, and find the restarted server.
        TxnError::ShuttingDown => errors::COORDINATOR_NOT_AVAILABLE,
        TxnError::Kafko(e) => errors::code(&Failure::from(e)),
    }
}

/// PRODUCER_FENCED from `since` on, INVALID_PRODUCER_EPOCH before.
fn fenced(version: i16, since: i16) -> i16 {
    if version >= since {
        errors::PRODUCER_FENCED
    } else {
        errors::INVALID_PRODUCER_EPOCH
    }
}

/// Answers InitProducerId for `transactional_id`: the coordinator's id and epoch (a
/// bump of the producer's own, v3+, when it names them).
pub(crate) async fn init_producer_id(
    broker: &ListenerState,
    transactional_id: &str,
    request: &InitProducerIdRequest,
    version: i16,
) -> InitProducerIdResponse {
    let mut response = InitProducerIdResponse::default();
    response.producer_id = ProducerId(-1);
    response.producer_epoch = -1;
    if transactional_id.is_empty() {
        response.error_code = errors::INVALID_REQUEST;
        return response;
    }
    let current =
        (request.producer_id.0 >= 0).then_some((request.producer_id.0, request.producer_epoch));
    let kafko = &broker.service.kafko;
    match kafko
        .init_transactional_producer(transactional_id, request.transaction_timeout_ms, current)
        .await
    {
        Ok((id, epoch)) => {
            response.producer_id = ProducerId(id);
            response.producer_epoch = epoch;
        }
        Err(e) => response.error_code = code(e, fenced(version, 4)),
    }
    response
}

/// Answers AddPartitionsToTxn: v0–3 one producer's transaction, v4+ a batch of them,
/// each answered on its own (`verify_only`: checked, not added).
///
/// # Errors
/// The request adds more than [`MAX_PARTITIONS_PER_REQUEST`] partitions.
pub(crate) async fn add_partitions_to_txn(
    broker: &ListenerState,
    request: AddPartitionsToTxnRequest,
    version: i16,
) -> Result<AddPartitionsToTxnResponse, String> {
    let asked: usize = if version < 4 {
        count(&request.v3_and_below_topics)
    } else {
        request.transactions.iter().map(|t| count(&t.topics)).sum()
    };
    if asked > MAX_PARTITIONS_PER_REQUEST {
        return Err(format!(
            "an AddPartitionsToTxn of more than {MAX_PARTITIONS_PER_REQUEST} partitions"
        ));
    }
    let mut response = AddPartitionsToTxnResponse::default();
    let fenced = fenced(version, 2);
    if version < 4 {
        let txn = Txn {
            id: &request.v3_and_below_transactional_id,
            producer_id: request.v3_and_below_producer_id.0,
            epoch: request.v3_and_below_producer_epoch,
            verify_only: false,
        };
        response.results_by_topic_v3_and_below =
            add_one(broker, &txn, &request.v3_and_below_topics, fenced).await;
        return Ok(response);
    }
    for t in &request.transactions {
        let txn = Txn {
            id: &t.transactional_id,
            producer_id: t.producer_id.0,
            epoch: t.producer_epoch,
            verify_only: t.verify_only,
        };
        let mut result = AddPartitionsToTxnResult::default();
        result.transactional_id = t.transactional_id.clone();
        result.topic_results = add_one(broker, &txn, &t.topics, fenced).await;
        response.results_by_transaction.push(result);
    }
    Ok(response)
}

/// The partitions a request names, each at most once per transaction (an upper bound:
/// repeats count).
fn count(topics: &[AddPartitionsToTxnTopic]) -> usize {
    topics.iter().map(|t| t.partitions.len()).sum()
}

/// One transaction of an AddPartitionsToTxn.
struct Txn<'a> {
    id: &'a TransactionalId,
    producer_id: i64,
    epoch: i16,
    verify_only: bool,
}

/// Adds (or verifies) one transaction's partitions: every partition answered once, in
/// the order first named.
async fn add_one(
    broker: &ListenerState,
    txn: &Txn<'_>,
    topics: &[AddPartitionsToTxnTopic],
    fenced: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    // The distinct partitions, in order, each with the error the front end finds alone.
    let mut seen: HashSet<(&TopicName, i32)> = HashSet::new();
    let mut rows: Vec<(&TopicName, i32, Option<i16>)> = Vec::new();
    for topic in topics {
        let internal = kafko_service::topics::is_internal(topic.name.as_str());
        for &p in &topic.partitions {
            if !seen.insert((&topic.name, p)) {
                continue;
            }
            let refused = if internal {
                Some(errors::INVALID_TOPIC_EXCEPTION)
            } else if p < 0 {
                Some(errors::UNKNOWN_TOPIC_OR_PARTITION)
            } else {
                None
            };
            rows.push((&topic.name, p, refused));
        }
    }
    let codes: Vec<i16> = if rows.iter().any(|(_, _, refused)| refused.is_some()) {
        rows.iter()
            .map(|(_, _, refused)| refused.unwrap_or(errors::OPERATION_NOT_ATTEMPTED))
            .collect()
    } else {
        let partitions: Vec<TxnPartition> = rows
            .iter()
            .filter_map(|(topic, p, _)| {
                Some(TxnPartition {
                    topic: topic.to_string(),
                    partition: u32::try_from(*p).ok()?,
                })
            })
            .collect();
        let done = broker
            .service
            .kafko
            .add_partitions_to_txn(
                txn.id.as_str(),
                txn.producer_id,
                txn.epoch,
                &partitions,
                txn.verify_only,
            )
            .await;
        match done {
            Ok(()) => vec![errors::NONE; partitions.len()],
            Err(TxnError::UnknownTopicOrPartition(unknown)) => {
                let unknown: HashSet<&TxnPartition> = unknown.iter().collect();
                partitions
                    .iter()
                    .map(|p| {
                        if unknown.contains(p) {
                            errors::UNKNOWN_TOPIC_OR_PARTITION
                        } else {
                            errors::OPERATION_NOT_ATTEMPTED
                        }
                    })
                    .collect()
            }
            Err(e) => vec![code(e, fenced); partitions.len()],
        }
    };
    // Grouped by topic, in the order first named.
    let mut answer: Vec<AddPartitionsToTxnTopicResult> = Vec::new();
    for ((topic, p, _), code) in rows.into_iter().zip(codes) {
        let at = match answer.iter().position(|t| &t.name == topic) {
            Some(at) => at,
            None => {
                let mut t = AddPartitionsToTxnTopicResult::default();
                t.name = topic.clone();
                answer.push(t);
                answer.len() - 1
            }
        };
        let mut row = AddPartitionsToTxnPartitionResult::default();
        row.partition_index = p;
        row.partition_error_code = code;
        answer[at].results_by_partition.push(row);
    }
    answer
}

/// Answers AddOffsetsToTxn: the group's offsets join the transaction.
pub(crate) async fn add_offsets_to_txn(
    broker: &ListenerState,
    request: AddOffsetsToTxnRequest,
    version: i16,
) -> AddOffsetsToTxnResponse {
    let mut response = AddOffsetsToTxnResponse::default();
    let Some(group) = group_name_for_id(request.group_id.as_str()) else {
        response.error_code = errors::INVALID_GROUP_ID;
        return response;
    };
    let done = broker
        .service
        .kafko
        .add_offsets_to_txn(
            request.transactional_id.as_str(),
            request.producer_id.0,
            request.producer_epoch,
            &group,
        )
        .await;
    if let Err(e) = done {
        response.error_code = code(e, fenced(version, 2));
    }
    response
}

/// Answers TxnOffsetCommit: each topic's offsets are held in the transaction, and
/// become the group's committed offsets when it commits. At v5 (transactions v2) the
/// group joins the transaction first, as AddOffsetsToTxn would; when it cannot, every
/// offset is answered with why.
///
/// # Errors
/// The request commits more than [`MAX_PARTITIONS_PER_REQUEST`] offsets.
pub(crate) async fn txn_offset_commit(
    broker: &ListenerState,
    request: TxnOffsetCommitRequest,
    version: i16,
) -> Result<TxnOffsetCommitResponse, String> {
    let asked: usize = request.topics.iter().map(|t| t.partitions.len()).sum();
    if asked > MAX_PARTITIONS_PER_REQUEST {
        return Err(format!(
            "a TxnOffsetCommit of more than {MAX_PARTITIONS_PER_REQUEST} offsets"
        ));
    }
    let kafko = &broker.service.kafko;
    let max_metadata = kafko.group_limits().offset_metadata_max_bytes;
    let group = group_name_for_id(request.group_id.as_str());
    let joined = match &group {
        Some(group) if version >= TRANSACTIONS_V2 => kafko
            .add_offsets_to_txn(
                request.transactional_id.as_str(),
                request.producer_id.0,
                request.producer_epoch,
                group,
            )
            .await
            .map_err(|e| code(e, errors::INVALID_PRODUCER_EPOCH)),
        _ => Ok(()),
    };
    let mut response = TxnOffsetCommitResponse::default();
    for topic in request.topics {
        let mut codes = vec![errors::NONE; topic.partitions.len()];
        let handle = match kafko.find_topic(topic.name.as_str()) {
            _ if group.is_none() => {
                codes.fill(errors::INVALID_GROUP_ID);
                None
            }
            _ if joined.is_err() => {
                codes.fill(joined.err().unwrap_or_default());
                None
            }
            Ok(Some(h)) => Some(h),
            Ok(None) => {
                codes.fill(errors::UNKNOWN_TOPIC_OR_PARTITION);
                None
            }
            Err(e) => {
                codes.fill(errors::code(&Failure::from(e)));
                None
            }
        };
        if let Some(handle) = handle {
            let rows = topic.partitions.iter().map(|p| CommitRow {
                partition_index: p.partition_index,
                committed_offset: p.committed_offset,
                metadata: p.committed_metadata.as_deref(),
                leader_epoch: p.committed_leader_epoch,
            });
            let (offsets, committing) = commit_rows(&handle, rows, max_metadata, &mut codes);
            if !offsets.is_empty() {
                let done = kafko
                    .txn_offset_commit(
                        request.transactional_id.as_str(),
                        request.producer_id.0,
                        request.producer_epoch,
                        group.as_deref().unwrap_or_default(),
                        topic.name.as_str(),
                        &offsets,
                    )
                    .await;
                if let Err(e) = done {
                    let failed = code(e, errors::INVALID_PRODUCER_EPOCH);
                    for i in committing {
                        codes[i] = failed;
                    }
                }
            }
        }
        let mut answer = TxnOffsetCommitResponseTopic::default();
        answer.partitions = topic
            .partitions
            .iter()
            .zip(codes)
            .map(|(p, code)| {
                let mut row = TxnOffsetCommitResponsePartition::default();
                row.partition_index = p.partition_index;
                row.error_code = code;
                row
            })
            .collect();
        answer.name = topic.name;
        response.topics.push(answer);
    }
    Ok(response)
}

/// Answers EndTxn: the transaction commits or aborts (its markers written) before the
/// answer; v5 (transactions v2) bumps the producer's epoch and answers the producer id
/// and epoch to go on with.
pub(crate) async fn end_txn(
    broker: &ListenerState,
    request: EndTxnRequest,
    version: i16,
) -> EndTxnResponse {
    let mut response = EndTxnResponse::default();
    response.producer_id = ProducerId(-1);
    response.producer_epoch = -1;
    let kafko = &broker.service.kafko;
    let (id, producer_id, epoch) = (
        request.transactional_id.as_str(),
        request.producer_id.0,
        request.producer_epoch,
    );
    let done = if version >= TRANSACTIONS_V2 {
        kafko
            .end_txn_v2(id, producer_id, epoch, request.committed)
            .await
            .map(|(producer_id, epoch)| {
                response.producer_id = ProducerId(producer_id);
                response.producer_epoch = epoch;
            })
    } else {
        kafko
            .end_txn(id, producer_id, epoch, request.committed)
            .await
    };
    if let Err(e) = done {
        response.error_code = code(e, fenced(version, 2));
    }
    response
}
