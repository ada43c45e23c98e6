//! Produce: each partition's record batch is checked by the log (`ProducedBatch::check`:
//! one batch, its CRC-32C, its declared count against what the request may still hold,
//! `--max-records-per-request` → RECORD_LIST_TOO_LARGE, before its area is inflated
//! within the request's bound, `--max-body-bytes` → MESSAGE_TOO_LARGE, every record
//! whole and in order), checked for its producer's id and sequence (`idempotence`) and
//! appended as sent, through the topic's rules (`--max-record-bytes` and the topic's
//! largest record → MESSAGE_TOO_LARGE, keys on a compacted topic, auto-create, a full
//! write queue refused at once). The log stores the producer's bytes: keys, values,
//! headers (duplicates and null values kept), timestamps and codec as sent, unless the
//! topic's `compression.type` names another codec; a batch with LogAppendTime gets the
//! append time. The partitions of a request are appended concurrently (a bounded number
//! at a time), each all or nothing, and answered each with its own error code.
//!
//! acks: 0 gets no answer at all (a refused partition closes the connection, as Kafka
//! does); 1 and -1 (all: this node is every replica) are
//! answered once the batch is appended as the topic's fsync policy acknowledges writes —
//! in the page cache (`never`, `interval_ms`), or fsynced (`always`).
//!
//! A transactional producer's request (a transactional id) carries transactional
//! batches only (a plain one is INVALID_RECORD); each is appended under its producer's
//! turn after the transaction coordinator confirms the partition is in the producer's
//! ongoing transaction at its epoch (INVALID_TXN_STATE when not, INVALID_PRODUCER_EPOCH
//! when fenced). From v12 on (transactions v2, as Kafka 4.0 decides by the version), a
//! partition not yet in the transaction joins it first, as AddPartitionsToTxn would
//! (opening the transaction if none is), and the coordinator's refusal is the
//! partition's answer. A transactional batch without a transactional id is
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers.

use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse};
use kafka_protocol::protocol::StrBytes;
use kafko_core::transaction::TxnPartition;
use kafko_core::{
    AppendedBatch, BatchBudget, BatchError, ProducedBatch, Producer, ProducerRejection,
    SendOptions, UnknownProducer,
};

use crate::idempotence::{Admission, Limits};
use crate::{ListenerState, errors};
use kafko_service::failure::Failure;
use kafko_service::produce as service;

/// Topics of one request handled at once, and partitions of each topic: enough to
/// overlap their appends, few enough that a request naming 100,000 partitions holds the
/// work of no more than 128 in memory at a time (the answers aside).
const TOPICS_AT_ONCE: usize = 4;
const PARTITIONS_AT_ONCE: usize = 32;

/// One partition's answer.
struct Answer {
    code: i16,
    base_offset: i64,
    log_start: i64,
    message: Option<String>,
}

impl Answer {
    fn error(code: i16, message: impl Into<String>) -> Self {
        Answer {
            code,
            base_offset: -1,
            log_start: -1,
            message: Some(message.into()),
        }
    }

    fn failure(failure: &Failure) -> Self {
        Answer::error(errors::code(failure), failure.detail.clone())
    }
}

/// What a produce answers.
pub(crate) enum Produced {
    /// The answer (acks 1 or -1).
    Answer(ProduceResponse),
    /// Nothing: acks=0, every partition appended.
    Silent,
    /// acks=0 with a partition refused: the connection is closed, as Kafka does, so the
    /// client learns something failed (and refreshes its metadata).
    SilentFailure,
}

/// Answers Produce.
pub(crate) async fn handle(
    broker: &ListenerState,
    request: ProduceRequest,
    version: i16,
) -> Produced {
    let acks = request.acks;
    let transactional = Transactional {
        id: request.transactional_id.as_deref().map(|id| id.as_str()),
        adds: version >= ADDS_PARTITIONS,
    };
    let refuse_all = if !matches!(acks, -1..=1) {
        Some((errors::INVALID_REQUIRED_ACKS, "acks must be -1, 0 or 1"))
    } else {
        None
    };
    let budget = Mutex::new(budget(&broker.service.config));
    let topics: Vec<TopicAnswer> = stream::iter(request.topic_data)
        .map(|topic| produce_topic(broker, topic, transactional, refuse_all, &budget))
        .buffered(TOPICS_AT_ONCE)
        .collect()
        .await;
    if acks == 0 {
        let failed = topics
            .iter()
            .any(|(_, answers)| answers.iter().any(|(_, a)| a.code != errors::NONE));
        return if failed {
            Produced::SilentFailure
        } else {
            Produced::Silent
        };
    }
    let mut response = ProduceResponse::default();
    response.responses = topics
        .into_iter()
        .map(|(name, answers)| {
            let mut t = TopicProduceResponse::default();
            t.name = name;
            t.partition_responses = answers
                .into_iter()
                .map(|(index, a)| {
                    let mut p = PartitionProduceResponse::default();
                    p.index = index;
                    // UNKNOWN_PRODUCER_ID came with v5 (and its log start offset);
                    // earlier clients know the sequence error.
                    p.error_code = if version < 5 && a.code == errors::UNKNOWN_PRODUCER_ID {
                        errors::OUT_OF_ORDER_SEQUENCE_NUMBER
                    } else {
                        a.code
                    };
                    p.base_offset = a.base_offset;
                    p.log_append_time_ms = -1;
                    if version >= 5 {
                        p.log_start_offset = a.log_start;
                    }
                    if version >= 8 && a.code != errors::NONE {
                        p.error_message = a.message.map(StrBytes::from_string);
                    }
                    p
                })
                .collect();
            t
        })
        .collect();
    Produced::Answer(response)
}

type TopicAnswer = (kafka_protocol::messages::TopicName, Vec<(i32, Answer)>);

/// The first Produce version whose transactional batches add their partition to the
/// transaction (transactions v2).
const ADDS_PARTITIONS: i16 = 12;

/// What a request says of transactions: its transactional id, and whether a partition
/// joins the transaction with its batch.
#[derive(Clone, Copy)]
struct Transactional<'a> {
    id: Option<&'a str>,
    adds: bool,
}

async fn produce_topic(
    broker: &ListenerState,
    topic: TopicProduceData,
    transactional: Transactional<'_>,
    refuse_all: Option<(i16, &'static str)>,
    budget: &Mutex<BatchBudget>,
) -> TopicAnswer {
    let name = topic.name.clone();
    let all = |code: i16, message: &str| -> TopicAnswer {
        let answers = topic
            .partition_data
            .iter()
            .map(|p| (p.index, Answer::error(code, message)))
            .collect();
        (name.clone(), answers)
    };
    if let Some((code, message)) = refuse_all {
        return all(code, message);
    }
    if kafko_service::topics::is_internal(name.as_str()) {
        return all(
            errors::INVALID_TOPIC_EXCEPTION,
            "a Kafka internal topic takes no client's records",
        );
    }
    let state = &broker.service;
    let producer =
        match service::producer(&state.kafko, &state.config.auto_create, topic.name.as_str()).await
        {
            Ok(producer) => producer,
            Err(e) => {
                let failure = Failure::from(e);
                return all(errors::code(&failure), &failure.detail);
            }
        };
    let answers = stream::iter(topic.partition_data)
        .map(|data| produce_partition(broker, &producer, data, transactional, budget))
        .buffered(PARTITIONS_AT_ONCE)
        .collect()
        .await;
    (name, answers)
}

async fn produce_partition(
    broker: &ListenerState,
    producer: &Producer,
    data: PartitionProduceData,
    transactional: Transactional<'_>,
    budget: &Mutex<BatchBudget>,
) -> (i32, Answer) {
    let index = data.index;
    let partition = match u32::try_from(index) {
        Ok(p) if p < producer.partitions() => p,
        _ => {
            return (
                index,
                Answer::error(errors::UNKNOWN_TOPIC_OR_PARTITION, "no such partition"),
            );
        }
    };
    let batch = match decode(data.records, budget) {
        Ok(batch) => batch,
        Err((code, message)) => return (index, Answer::error(code, message)),
    };
    if transactional.id.is_some() || batch.is_transactional() {
        return (
            index,
            append_transactional(broker, producer, partition, batch, transactional).await,
        );
    }
    let answer = if batch.is_idempotent() {
        let limits = Limits::of(&broker.service.config);
        let (id, epoch) = (batch.producer_id(), batch.producer_epoch());
        let unknown = match broker.producers.admit(limits, id, epoch) {
            Ok(Admission::Issued) => UnknownProducer::Accept,
            Ok(Admission::NotIssued) => UnknownProducer::Refuse,
            Err(code) => return (index, Answer::error(code, "producer epoch fenced")),
        };
        let answer = append(broker, producer, partition, batch, unknown).await;
        if answer.code == errors::NONE && unknown == UnknownProducer::Refuse {
            // A producer of an earlier run that this partition knew.
            broker.producers.adopt(limits, id, epoch);
        }
        answer
    } else {
        append(broker, producer, partition, batch, UnknownProducer::Accept).await
    };
    (index, answer)
}

/// What the batches of one request may take together: the records of
/// `--max-records-per-request`, and inflated, no more bytes than the request could carry
/// uncompressed (`--max-body-bytes`, the frame limit, at least 1 MiB).
fn budget(config: &kafko_service::config::ServerConfig) -> BatchBudget {
    BatchBudget {
        inflate: config.max_body_bytes.max(1024 * 1024),
        records: config.max_records_per_request,
        max_record_bytes: config.max_record_bytes,
    }
}

/// The Kafka error code of a refused batch.
fn batch_code(e: &BatchError) -> i16 {
    match e {
        BatchError::Corrupt(_) => errors::CORRUPT_MESSAGE,
        BatchError::Invalid(_) => errors::INVALID_RECORD,
        BatchError::Magic(_) => errors::UNSUPPORTED_FOR_MESSAGE_FORMAT,
        BatchError::Codec(_) => errors::UNSUPPORTED_COMPRESSION_TYPE,
        BatchError::TooManyRecords(_) => errors::RECORD_LIST_TOO_LARGE,
        BatchError::TooLarge(_) => errors::MESSAGE_TOO_LARGE,
    }
}

/// The one batch of a partition's records, checked within what the request may still
/// take (`budget`, reduced by it).
fn decode(
    records: Option<Bytes>,
    budget: &Mutex<BatchBudget>,
) -> Result<ProducedBatch, (i16, String)> {
    let Some(data) = records else {
        return Err((errors::INVALID_RECORD, "no records".into()));
    };
    // Held for the check alone, which never waits: the request's partitions take turns.
    let batch = {
        let mut left = budget.lock().unwrap_or_else(PoisonError::into_inner);
        ProducedBatch::check(data, &mut left)
    }
    .map_err(|e| (batch_code(&e), e.to_string()))?;
    if batch.is_control() {
        return Err((
            errors::INVALID_RECORD,
            "control batches are not accepted".into(),
        ));
    }
    Ok(batch)
}

/// Appends a transactional producer's batch (`transactional`: the request named a
/// transactional id) once the coordinator confirms its partition is in the producer's
/// ongoing transaction, checked under the producer's turn so that no marker lands
/// between the check and the append.
async fn append_transactional(
    broker: &ListenerState,
    producer: &Producer,
    partition: u32,
    batch: ProducedBatch,
    transactional: Transactional<'_>,
) -> Answer {
    if !batch.is_transactional() {
        return Answer::error(
            errors::INVALID_RECORD,
            "a transactional producer's batches must be transactional",
        );
    }
    let Some(transactional_id) = transactional.id else {
        return Answer::error(
            errors::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "a transactional batch needs the request's transactional id",
        );
    };
    if !batch.is_idempotent() {
        return Answer::error(
            errors::INVALID_RECORD,
            "a transactional batch needs a producer id",
        );
    }
    let (records, bytes) = (batch.record_count(), batch.len());
    let (id, epoch) = (batch.producer_id(), batch.producer_epoch());
    let kafko = &broker.service.kafko;
    let topic = producer.topic();
    let options = SendOptions {
        sync: false,
        no_wait: true,
    };
    let verify = || kafko.verify_transaction(id, epoch, topic, partition);
    if transactional.adds
        && let Err(ProducerRejection::NotInTransaction) = verify()
    {
        let joining = [TxnPartition {
            topic: topic.to_owned(),
            partition,
        }];
        let added = kafko
            .add_partitions_to_txn(transactional_id, id, epoch, &joining, false)
            .await;
        if let Err(e) = added {
            let message = e.to_string();
            return Answer::error(
                crate::transactions::code(e, errors::INVALID_PRODUCER_EPOCH),
                message,
            );
        }
    }
    match producer
        .append_transactional(partition, batch, options, verify)
        .await
    {
        Ok(appended) => appended_answer(broker, producer, &appended, records, bytes),
        Err(e) => Answer::failure(&Failure::from(e)),
    }
}

/// The answer of an appended batch, counted in the metrics unless it was a duplicate.
fn appended_answer(
    broker: &ListenerState,
    producer: &Producer,
    appended: &AppendedBatch,
    records: u32,
    bytes: usize,
) -> Answer {
    let AppendedBatch { append, duplicate } = appended;
    if !duplicate {
        let metrics = &broker.service.metrics;
        metrics.produced(producer.topic(), records as usize, bytes);
    }
    Answer {
        code: errors::NONE,
        base_offset: i64::try_from(append.base_offset).unwrap_or(i64::MAX),
        log_start: i64::try_from(append.log_start).unwrap_or(i64::MAX),
        message: None,
    }
}

/// Appends one partition's batch as sent, under the topic's rules and, for an
/// idempotent producer, the partition's producer state (`unknown`: whether a producer it
/// does not know may start).
async fn append(
    broker: &ListenerState,
    producer: &Producer,
    partition: u32,
    batch: ProducedBatch,
    unknown: UnknownProducer,
) -> Answer {
    let (records, bytes) = (batch.record_count(), batch.len());
    // A full write queue is refused at once: the client retries, nothing waits here.
    let options = SendOptions {
        sync: false,
        no_wait: true,
    };
    match producer
        .append_batch_with(partition, batch, options, unknown)
        .await
    {
        Ok(appended) => appended_answer(broker, producer, &appended, records, bytes),
        Err(e) => Answer::failure(&Failure::from(e)),
    }
}
