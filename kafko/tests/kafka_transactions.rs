//! Kafka transactions (KIP-98) on the Kafka listener of the real binary, request by
//! request: a transaction across two topics committed and one aborted (read_committed
//! and read_uncommitted fetches, record by record), the group offsets of a transaction,
//! fencing by a newer InitProducerId (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH by
//! version), each API's errors, a transaction aborted by its timeout, the bounds on
//! a request's partitions and ids, and transactions v2 by request version (EndTxn v5's
//! epoch bump and its retry, across a SIGKILL too; TxnOffsetCommit v5 and Produce v12
//! joining the transaction).

mod common;

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use common::Server;
use common::kafka::{Kafka, Rec, batch, create_topic, fetch_request, name, produce_request, s};
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, DescribeTransactionsRequest,
    DescribeTransactionsResponse, EndTxnRequest, FindCoordinatorRequest, GroupId,
    InitProducerIdRequest, ListTransactionsRequest, OffsetFetchRequest, ProducerId,
    TransactionalId, TxnOffsetCommitRequest,
};

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_REQUEST: i16 = 42;
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
const OPERATION_NOT_ATTEMPTED: i16 = 55;
const INVALID_RECORD: i16 = 87;
const PRODUCER_FENCED: i16 = 90;
const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;

/// A server with a Kafka listener that checks open transactions against their timeout
/// every 100 ms.
async fn start(dir: &std::path::Path) -> Server {
    let flags = [
        "--kafka-bind",
        "127.0.0.1:0",
        "--transaction-abort-check-interval-ms",
        "100",
    ];
    Server::start(dir, &flags).await
}

fn txn_id(id: &str) -> TransactionalId {
    TransactionalId(s(id))
}

/// A transactional producer as the requests name it.
#[derive(Clone, Copy)]
struct Txn<'a> {
    id: &'a str,
    pid: i64,
    epoch: i16,
}

/// InitProducerId v4 of `id` with a `timeout_ms` transaction timeout: (error, pid, epoch).
async fn init(k: &mut Kafka, id: &str, timeout_ms: i32) -> (i16, i64, i16) {
    let r = k
        .call(
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(txn_id(id)))
                .with_transaction_timeout_ms(timeout_ms),
            4,
        )
        .await;
    (r.error_code, r.producer_id.0, r.producer_epoch)
}

async fn begin<'a>(k: &mut Kafka, id: &'a str) -> Txn<'a> {
    let (code, pid, epoch) = init(k, id, 60_000).await;
    assert_eq!(code, 0, "InitProducerId of {id}");
    assert!(pid >= 0 && epoch >= 0);
    Txn { id, pid, epoch }
}

/// AddPartitionsToTxn (v0–3) of `partitions`: each partition's error, by (topic, index).
async fn add(
    k: &mut Kafka,
    t: Txn<'_>,
    partitions: &[(&str, i32)],
    version: i16,
) -> HashMap<(String, i32), i16> {
    let mut topics: Vec<AddPartitionsToTxnTopic> = Vec::new();
    for (topic, p) in partitions {
        match topics.iter_mut().find(|x| x.name.as_str() == *topic) {
            Some(x) => x.partitions.push(*p),
            None => topics.push(
                AddPartitionsToTxnTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![*p]),
            ),
        }
    }
    let r = k
        .call(
            &AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(txn_id(t.id))
                .with_v3_and_below_producer_id(ProducerId(t.pid))
                .with_v3_and_below_producer_epoch(t.epoch)
                .with_v3_and_below_topics(topics),
            version,
        )
        .await;
    r.results_by_topic_v3_and_below
        .iter()
        .flat_map(|t| {
            t.results_by_partition.iter().map(|p| {
                (
                    (t.name.to_string(), p.partition_index),
                    p.partition_error_code,
                )
            })
        })
        .collect()
}

async fn add_ok(k: &mut Kafka, t: Txn<'_>, partitions: &[(&str, i32)]) {
    let codes = add(k, t, partitions, 3).await;
    assert_eq!(codes.len(), partitions.len());
    assert!(codes.values().all(|c| *c == 0), "{codes:?}");
}

async fn end(k: &mut Kafka, t: Txn<'_>, commit: bool, version: i16) -> i16 {
    k.call(
        &EndTxnRequest::default()
            .with_transactional_id(txn_id(t.id))
            .with_producer_id(ProducerId(t.pid))
            .with_producer_epoch(t.epoch)
            .with_committed(commit),
        version,
    )
    .await
    .error_code
}

fn rec(value: &'static str) -> Rec {
    Rec {
        key: None,
        value: Some(value.as_bytes()),
        headers: vec![],
        timestamp: 1_700_000_000_000,
    }
}

/// A batch of `values` of a producer, with the transactional bit when `transactional`.
fn producer_batch(
    values: &[&'static str],
    pid: i64,
    epoch: i16,
    seq: i32,
    transactional: bool,
) -> Bytes {
    let records: Vec<Rec> = values.iter().map(|v| rec(v)).collect();
    let raw = batch(&records, 0, Some((pid, epoch, seq)));
    if !transactional {
        return raw;
    }
    let mut b = BytesMut::from(&raw[..]);
    let attributes = u16::from_be_bytes([b[21], b[22]]) | 0x10;
    b[21..23].copy_from_slice(&attributes.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b.freeze()
}

/// Produces (v9) one batch, with the request's transactional id `txn`: the error code.
async fn produce(k: &mut Kafka, txn: Option<&str>, topic: &str, records: Bytes) -> i16 {
    let r = k
        .call(
            &produce_request(topic, 0, records, -1).with_transactional_id(txn.map(txn_id)),
            9,
        )
        .await;
    r.responses[0].partition_responses[0].error_code
}

/// One partition's fetch: (high watermark, last stable offset, the values a consumer of
/// `isolation` keeps, as a Kafka client filters them: control batches dropped, and for
/// read_committed the aborted transactions' batches).
async fn fetch(k: &mut Kafka, topic: &str, isolation: i8) -> (i64, i64, Vec<String>) {
    let r = k
        .call(
            &fetch_request(topic, 0, 0, 0).with_isolation_level(isolation),
            12,
        )
        .await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    // As a Kafka client filters: an aborted transaction (producer, first offset)
    // starts dropping its producer's batches at its first offset, once, until the
    // producer's next control batch.
    let mut aborted: Vec<(i64, i64)> = p
        .aborted_transactions
        .iter()
        .flatten()
        .map(|a| (a.first_offset, a.producer_id.0))
        .collect();
    aborted.sort_unstable();
    let mut aborted = VecDeque::from(aborted);
    let mut values = Vec::new();
    let mut dropping: HashSet<i64> = HashSet::new();
    let mut data = p.records.clone().unwrap_or_default();
    while !data.is_empty() {
        let base = data.get_i64();
        let len = data.get_i32() as usize;
        let whole = data.split_to(len);
        let mut header = whole.clone();
        header.advance(9);
        let attributes = header.get_i16();
        header.advance(4 + 8 + 8);
        let pid = header.get_i64();
        let control = attributes & 0x20 != 0;
        if isolation == 1 {
            while aborted.front().is_some_and(|(first, _)| *first <= base) {
                let (_, aborted_pid) = aborted.pop_front().unwrap();
                dropping.insert(aborted_pid);
            }
        }
        if control {
            dropping.remove(&pid);
            continue;
        }
        if dropping.contains(&pid) {
            continue;
        }
        let mut framed = BytesMut::new();
        framed.extend_from_slice(&base.to_be_bytes());
        framed.extend_from_slice(&(len as i32).to_be_bytes());
        framed.extend_from_slice(&whole);
        for got in common::kafka::read_batches(framed.freeze()) {
            values.push(String::from_utf8(got.value.unwrap()).unwrap());
        }
    }
    (p.high_watermark, p.last_stable_offset, values)
}

async fn describe(k: &mut Kafka, id: &str) -> DescribeTransactionsResponse {
    k.call(
        &DescribeTransactionsRequest::default().with_transactional_ids(vec![txn_id(id)]),
        0,
    )
    .await
}

/// The state DescribeTransactions shows for `id`, and its partitions as (topic, index).
async fn state(k: &mut Kafka, id: &str) -> (String, Vec<(String, i32)>) {
    let r = describe(k, id).await;
    let t = &r.transaction_states[0];
    assert_eq!(t.error_code, 0, "{id} described");
    let mut partitions: Vec<(String, i32)> = t
        .topics
        .iter()
        .flat_map(|x| x.partitions.iter().map(|p| (x.topic.to_string(), *p)))
        .collect();
    partitions.sort();
    (t.transaction_state.to_string(), partitions)
}

#[tokio::test]
async fn a_transaction_across_two_topics_commits_and_another_aborts() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(create_topic(&mut k, "ta", 1, &[]).await, 0);
    assert_eq!(create_topic(&mut k, "tb", 1, &[]).await, 0);
    // The transaction coordinator is this node, old and batched forms.
    let old = k
        .call(
            &FindCoordinatorRequest::default()
                .with_key(s("t1"))
                .with_key_type(1),
            3,
        )
        .await;
    assert_eq!((old.error_code, old.node_id.0), (0, 0));
    let batched = k
        .call(
            &FindCoordinatorRequest::default()
                .with_coordinator_keys(vec![s("t1")])
                .with_key_type(1),
            4,
        )
        .await;
    assert_eq!(
        (
            batched.coordinators[0].error_code,
            batched.coordinators[0].node_id.0
        ),
        (0, 0)
    );

    let t = begin(&mut k, "t1").await;
    add_ok(&mut k, t, &[("ta", 0), ("tb", 0)]).await;
    assert_eq!(
        state(&mut k, "t1").await,
        ("Ongoing".into(), vec![("ta".into(), 0), ("tb".into(), 0)])
    );
    let a1 = producer_batch(&["a1", "a2"], t.pid, t.epoch, 0, true);
    assert_eq!(produce(&mut k, Some("t1"), "ta", a1).await, 0);
    let b1 = producer_batch(&["b1"], t.pid, t.epoch, 0, true);
    assert_eq!(produce(&mut k, Some("t1"), "tb", b1).await, 0);
    // Open: read_committed sees nothing, read_uncommitted everything.
    assert_eq!(fetch(&mut k, "ta", 1).await, (2, 0, vec![]));
    assert_eq!(
        fetch(&mut k, "ta", 0).await,
        (2, 0, vec!["a1".into(), "a2".into()])
    );
    assert_eq!(end(&mut k, t, true, 3).await, 0);
    // Committed: the marker takes an offset.
    assert_eq!(
        fetch(&mut k, "ta", 1).await,
        (3, 3, vec!["a1".into(), "a2".into()])
    );
    assert_eq!(fetch(&mut k, "tb", 1).await, (2, 2, vec!["b1".into()]));
    assert_eq!(state(&mut k, "t1").await.0, "CompleteCommit");

    // The next transaction of the same producer aborts.
    add_ok(&mut k, t, &[("ta", 0), ("tb", 0)]).await;
    let a2 = producer_batch(&["x1"], t.pid, t.epoch, 2, true);
    assert_eq!(produce(&mut k, Some("t1"), "ta", a2).await, 0);
    let b2 = producer_batch(&["y1", "y2"], t.pid, t.epoch, 1, true);
    assert_eq!(produce(&mut k, Some("t1"), "tb", b2).await, 0);
    assert_eq!(end(&mut k, t, false, 3).await, 0);
    assert_eq!(
        fetch(&mut k, "ta", 1).await,
        (5, 5, vec!["a1".into(), "a2".into()])
    );
    assert_eq!(
        fetch(&mut k, "ta", 0).await,
        (5, 5, vec!["a1".into(), "a2".into(), "x1".into()])
    );
    assert_eq!(fetch(&mut k, "tb", 1).await, (5, 5, vec!["b1".into()]));
    assert_eq!(
        fetch(&mut k, "tb", 0).await,
        (5, 5, vec!["b1".into(), "y1".into(), "y2".into()])
    );
    assert_eq!(state(&mut k, "t1").await.0, "CompleteAbort");

    // ListTransactions filters by state and producer id; unknown states come back.
    let listed = k
        .call(
            &ListTransactionsRequest::default()
                .with_state_filters(vec![s("CompleteAbort"), s("Bogus")]),
            0,
        )
        .await;
    let ids: Vec<_> = listed
        .transaction_states
        .iter()
        .map(|t| (t.transactional_id.to_string(), t.producer_id.0))
        .collect();
    assert_eq!(ids, vec![("t1".to_string(), t.pid)]);
    assert_eq!(listed.unknown_state_filters, vec![s("Bogus")]);
    let other = k
        .call(
            &ListTransactionsRequest::default()
                .with_producer_id_filters(vec![ProducerId(t.pid + 1)]),
            1,
        )
        .await;
    assert!(other.transaction_states.is_empty());
    let ongoing = k
        .call(
            &ListTransactionsRequest::default().with_state_filters(vec![s("Ongoing")]),
            1,
        )
        .await;
    assert!(ongoing.transaction_states.is_empty());
}

/// The group's committed offset of `topic`'s partition 0 (OffsetFetch v7), −1 for none.
async fn committed(k: &mut Kafka, group: &str, topic: &str) -> i64 {
    committed_with_epoch(k, group, topic).await.0
}

/// The group's committed offset and leader epoch of `topic`'s partition 0 (OffsetFetch
/// v7), each −1 for none.
async fn committed_with_epoch(k: &mut Kafka, group: &str, topic: &str) -> (i64, i32) {
    let request = OffsetFetchRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(name(topic))
                .with_partition_indexes(vec![0]),
        ]));
    let r = k.call(&request, 7).await;
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    (p.committed_offset, p.committed_leader_epoch)
}

#[tokio::test]
async fn group_offsets_of_a_transaction_move_only_when_it_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(create_topic(&mut k, "src", 1, &[]).await, 0);
    let t = begin(&mut k, "ctp").await;
    let commit = |offset: i64| {
        TxnOffsetCommitRequest::default()
            .with_transactional_id(txn_id("ctp"))
            .with_group_id(GroupId(s("ctp-group")))
            .with_producer_id(ProducerId(t.pid))
            .with_producer_epoch(t.epoch)
            .with_topics(vec![
                TxnOffsetCommitRequestTopic::default()
                    .with_name(name("src"))
                    .with_partitions(vec![
                        TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(offset)
                            .with_committed_leader_epoch(5),
                    ]),
            ])
    };
    let add_offsets = AddOffsetsToTxnRequest::default()
        .with_transactional_id(txn_id("ctp"))
        .with_producer_id(ProducerId(t.pid))
        .with_producer_epoch(t.epoch)
        .with_group_id(GroupId(s("ctp-group")));
    assert_eq!(k.call(&add_offsets, 3).await.error_code, 0);
    let r = k.call(&commit(0), 3).await;
    assert_eq!(r.topics[0].partitions[0].error_code, 0);
    // A partition that does not exist, alone.
    let mut bad = commit(0);
    bad.topics[0].partitions[0].partition_index = 7;
    let r = k.call(&bad, 3).await;
    assert_eq!(
        r.topics[0].partitions[0].error_code,
        UNKNOWN_TOPIC_OR_PARTITION
    );
    assert_eq!(
        committed(&mut k, "ctp-group", "src").await,
        -1,
        "not before the commit"
    );
    assert_eq!(end(&mut k, t, true, 3).await, 0);
    // The commit stores the offset with the leader epoch it was given.
    assert_eq!(
        committed_with_epoch(&mut k, "ctp-group", "src").await,
        (0, 5)
    );

    // An aborted transaction's offsets never land.
    assert_eq!(k.call(&add_offsets, 3).await.error_code, 0);
    assert_eq!(
        k.call(&commit(1), 3).await.topics[0].partitions[0].error_code,
        0
    );
    assert_eq!(end(&mut k, t, false, 3).await, 0);
    assert_eq!(committed(&mut k, "ctp-group", "src").await, 0);
}

#[tokio::test]
async fn a_newer_init_fences_the_older_producer_with_each_versions_code() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(create_topic(&mut k, "fz", 1, &[]).await, 0);
    let zombie = begin(&mut k, "fence").await;
    add_ok(&mut k, zombie, &[("fz", 0)]).await;
    let open = producer_batch(&["zombie"], zombie.pid, zombie.epoch, 0, true);
    assert_eq!(produce(&mut k, Some("fence"), "fz", open).await, 0);
    // The newer instance: same id, a newer epoch; the open transaction is aborted.
    let fresh = begin(&mut k, "fence").await;
    assert_eq!(fresh.pid, zombie.pid);
    assert!(fresh.epoch > zombie.epoch);
    assert_eq!(fetch(&mut k, "fz", 1).await.2, Vec::<String>::new());
    assert_eq!(fetch(&mut k, "fz", 0).await.2, vec!["zombie".to_string()]);
    let (hw, lso, _) = fetch(&mut k, "fz", 1).await;
    assert_eq!(hw, lso, "nothing left open");

    // The zombie: PRODUCER_FENCED where the version knows it, INVALID_PRODUCER_EPOCH
    // before it, and always on Produce and TxnOffsetCommit.
    for (version, code) in [(1, INVALID_PRODUCER_EPOCH), (3, PRODUCER_FENCED)] {
        let codes = add(&mut k, zombie, &[("fz", 0)], version).await;
        assert_eq!(
            codes[&("fz".to_string(), 0)],
            code,
            "AddPartitionsToTxn v{version}"
        );
        assert_eq!(
            end(&mut k, zombie, true, version).await,
            code,
            "EndTxn v{version}"
        );
        let offsets = AddOffsetsToTxnRequest::default()
            .with_transactional_id(txn_id("fence"))
            .with_producer_id(ProducerId(zombie.pid))
            .with_producer_epoch(zombie.epoch)
            .with_group_id(GroupId(s("g")));
        assert_eq!(
            k.call(&offsets, version).await.error_code,
            code,
            "AddOffsetsToTxn v{version}"
        );
    }
    let late = producer_batch(&["late"], zombie.pid, zombie.epoch, 1, true);
    assert_eq!(
        produce(&mut k, Some("fence"), "fz", late).await,
        INVALID_PRODUCER_EPOCH
    );
    let txn_commit = TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id("fence"))
        .with_group_id(GroupId(s("g")))
        .with_producer_id(ProducerId(zombie.pid))
        .with_producer_epoch(zombie.epoch)
        .with_topics(vec![
            TxnOffsetCommitRequestTopic::default()
                .with_name(name("fz"))
                .with_partitions(vec![
                    TxnOffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(1),
                ]),
        ]);
    assert_eq!(
        k.call(&txn_commit, 3).await.topics[0].partitions[0].error_code,
        INVALID_PRODUCER_EPOCH
    );
    // The newer instance works.
    add_ok(&mut k, fresh, &[("fz", 0)]).await;
    let good = producer_batch(&["fresh"], fresh.pid, fresh.epoch, 0, true);
    assert_eq!(produce(&mut k, Some("fence"), "fz", good).await, 0);
    assert_eq!(end(&mut k, fresh, true, 3).await, 0);
    assert_eq!(fetch(&mut k, "fz", 1).await.2, vec!["fresh".to_string()]);
}

#[tokio::test]
async fn each_api_refuses_what_kafka_refuses() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(create_topic(&mut k, "er", 1, &[]).await, 0);
    assert_eq!(create_topic(&mut k, "other", 1, &[]).await, 0);
    // InitProducerId: an empty id, timeouts out of range.
    assert_eq!(init(&mut k, "", 60_000).await.0, INVALID_REQUEST);
    assert_eq!(init(&mut k, "tmo", 0).await.0, INVALID_TRANSACTION_TIMEOUT);
    assert_eq!(
        init(&mut k, "tmo", i32::MAX).await.0,
        INVALID_TRANSACTION_TIMEOUT
    );
    let t = begin(&mut k, "errs").await;
    // EndTxn with no transaction begun.
    assert_eq!(end(&mut k, t, true, 3).await, INVALID_TXN_STATE);
    // Produce: to a partition not in the transaction; a plain batch in a transactional
    // request; a transactional batch with no transactional id.
    let b = producer_batch(&["v"], t.pid, t.epoch, 0, true);
    assert_eq!(
        produce(&mut k, Some("errs"), "er", b.clone()).await,
        INVALID_TXN_STATE
    );
    let plain = producer_batch(&["v"], t.pid, t.epoch, 0, false);
    assert_eq!(
        produce(&mut k, Some("errs"), "er", plain).await,
        INVALID_RECORD
    );
    assert_eq!(
        produce(&mut k, None, "er", b).await,
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    );
    assert_eq!(fetch(&mut k, "er", 0).await.0, 0, "nothing written");
    // AddPartitionsToTxn: a partition that does not exist fails alone, the rest is
    // not attempted; nothing is added.
    let codes = add(&mut k, t, &[("er", 0), ("er", 5), ("nope", 0)], 3).await;
    assert_eq!(codes[&("er".to_string(), 0)], OPERATION_NOT_ATTEMPTED);
    assert_eq!(codes[&("er".to_string(), 5)], UNKNOWN_TOPIC_OR_PARTITION);
    assert_eq!(codes[&("nope".to_string(), 0)], UNKNOWN_TOPIC_OR_PARTITION);
    assert!(state(&mut k, "errs").await.1.is_empty());
    // A producer id the transactional id does not have.
    let wrong = Txn {
        pid: t.pid + 1,
        ..t
    };
    let codes = add(&mut k, wrong, &[("er", 0)], 3).await;
    assert_eq!(codes[&("er".to_string(), 0)], INVALID_PRODUCER_ID_MAPPING);
    // The batched form (v4+): verify_only checks and adds nothing; each transaction is
    // answered on its own.
    add_ok(&mut k, t, &[("er", 0)]).await;
    let verify = |partition_topic: &str| {
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(txn_id("errs"))
            .with_producer_id(ProducerId(t.pid))
            .with_producer_epoch(t.epoch)
            .with_verify_only(true)
            .with_topics(vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(name(partition_topic))
                    .with_partitions(vec![0]),
            ])
    };
    let r = k
        .call(
            &AddPartitionsToTxnRequest::default().with_transactions(vec![
                verify("er"),
                verify("other"),
                AddPartitionsToTxnTransaction::default()
                    .with_transactional_id(txn_id("unknown-id"))
                    .with_producer_id(ProducerId(1))
                    .with_topics(vec![
                        AddPartitionsToTxnTopic::default()
                            .with_name(name("er"))
                            .with_partitions(vec![0]),
                    ]),
            ]),
            4,
        )
        .await;
    assert_eq!(r.error_code, 0);
    let codes: Vec<i16> = r
        .results_by_transaction
        .iter()
        .map(|t| t.topic_results[0].results_by_partition[0].partition_error_code)
        .collect();
    assert_eq!(
        codes,
        [0, INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING],
        "verified, not in the transaction, unknown id"
    );
    assert_eq!(state(&mut k, "errs").await.1, vec![("er".to_string(), 0)]);
    // DescribeTransactions: an unknown id; each id answered once.
    let r = k
        .call(
            &DescribeTransactionsRequest::default().with_transactional_ids(vec![
                txn_id("errs"),
                txn_id("nobody"),
                txn_id("errs"),
            ]),
            0,
        )
        .await;
    let answered: Vec<_> = r
        .transaction_states
        .iter()
        .map(|t| (t.transactional_id.to_string(), t.error_code))
        .collect();
    assert_eq!(
        answered,
        vec![
            ("errs".to_string(), 0),
            ("nobody".to_string(), TRANSACTIONAL_ID_NOT_FOUND)
        ]
    );
    let d = &r.transaction_states[0];
    assert_eq!(
        (d.producer_id.0, d.producer_epoch, d.transaction_timeout_ms),
        (t.pid, t.epoch, 60_000)
    );
    assert!(d.transaction_start_time_ms > 0);
    assert_eq!(end(&mut k, t, false, 3).await, 0);
}

#[tokio::test]
async fn a_transaction_left_open_past_its_timeout_is_aborted() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(create_topic(&mut k, "slow", 1, &[]).await, 0);
    let (code, pid, epoch) = init(&mut k, "slow", 1_000).await;
    assert_eq!(code, 0);
    let t = Txn {
        id: "slow",
        pid,
        epoch,
    };
    add_ok(&mut k, t, &[("slow", 0)]).await;
    let b = producer_batch(&["left"], pid, epoch, 0, true);
    assert_eq!(produce(&mut k, Some("slow"), "slow", b).await, 0);
    // The coordinator aborts it: the partition's LSO reaches its high watermark (the
    // marker written). A bounded wait on that condition.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (hw, lso, committed) = fetch(&mut k, "slow", 1).await;
        if hw == 2 && lso == 2 {
            assert!(committed.is_empty(), "{committed:?}");
            break;
        }
        assert!(Instant::now() < deadline, "still open: hw {hw}, lso {lso}");
        let wait = k
            .call(
                &fetch_request("slow", 0, hw, 500).with_isolation_level(0),
                12,
            )
            .await;
        assert_eq!(wait.responses[0].partitions[0].error_code, 0);
    }
    // The coordinator completes the abort once its markers are written: a bounded
    // retry on that condition.
    loop {
        let now = state(&mut k, "slow").await.0;
        if now == "CompleteAbort" {
            break;
        }
        assert_eq!(now, "PrepareAbort");
        assert!(Instant::now() < deadline, "the abort never completed");
        tokio::task::yield_now().await;
    }
    // The producer's next EndTxn is fenced: the abort bumped its epoch.
    assert_eq!(end(&mut k, t, true, 3).await, PRODUCER_FENCED);
}

#[tokio::test]
async fn requests_past_the_bounds_close_the_connection() {
    let tmp = tempfile::tempdir().unwrap();
    let server = start(&tmp.path().join("d")).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(create_topic(&mut k, "bd", 1, &[]).await, 0);
    let t = begin(&mut k, "bounds").await;
    // 10,001 partitions in one AddPartitionsToTxn.
    let many = AddPartitionsToTxnRequest::default()
        .with_v3_and_below_transactional_id(txn_id("bounds"))
        .with_v3_and_below_producer_id(ProducerId(t.pid))
        .with_v3_and_below_producer_epoch(t.epoch)
        .with_v3_and_below_topics(vec![
            AddPartitionsToTxnTopic::default()
                .with_name(name("bd"))
                .with_partitions((0..10_001).collect()),
        ]);
    k.send(&many, 3, &[]).await;
    assert!(k.closed_by_server().await, "AddPartitionsToTxn of 10,001");
    // 10,001 distinct ids in one DescribeTransactions.
    let mut k = Kafka::connect(&server).await;
    let ids = (0..10_001).map(|i| txn_id(&format!("id-{i}"))).collect();
    k.send(
        &DescribeTransactionsRequest::default().with_transactional_ids(ids),
        0,
        &[],
    )
    .await;
    assert!(k.closed_by_server().await, "DescribeTransactions of 10,001");
    // 10,001 offsets in one TxnOffsetCommit.
    let mut k = Kafka::connect(&server).await;
    let partitions = (0..10_001)
        .map(|p| {
            TxnOffsetCommitRequestPartition::default()
                .with_partition_index(p)
                .with_committed_offset(0)
        })
        .collect();
    let commit = TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id("bounds"))
        .with_group_id(GroupId(s("g")))
        .with_producer_id(ProducerId(t.pid))
        .with_producer_epoch(t.epoch)
        .with_topics(vec![
            TxnOffsetCommitRequestTopic::default()
                .with_name(name("bd"))
                .with_partitions(partitions),
        ]);
    k.send(&commit, 3, &[]).await;
    assert!(k.closed_by_server().await, "TxnOffsetCommit of 10,001");
    // At the bound, a DescribeTransactions is answered, each id once.
    let mut k = Kafka::connect(&server).await;
    let ids: Vec<_> = (0..10_000)
        .map(|i| txn_id(&format!("id-{}", i % 5_000)))
        .collect();
    let r = k
        .call(
            &DescribeTransactionsRequest::default().with_transactional_ids(ids),
            0,
        )
        .await;
    assert_eq!(r.transaction_states.len(), 5_000);
    assert!(
        r.transaction_states
            .iter()
            .all(|t| t.error_code == TRANSACTIONAL_ID_NOT_FOUND)
    );
    common::kafka::assert_bystanders_served(&server).await;
}

/// Produces one batch at `version` with the request's transactional id `txn`: the error
/// code.
async fn produce_at(k: &mut Kafka, txn: &str, topic: &str, records: Bytes, version: i16) -> i16 {
    let r = k
        .call(
            &produce_request(topic, 0, records, -1).with_transactional_id(Some(txn_id(txn))),
            version,
        )
        .await;
    r.responses[0].partition_responses[0].error_code
}

/// EndTxn v5 (transactions v2): (error, producer id, producer epoch) answered.
async fn end_v2(k: &mut Kafka, t: Txn<'_>, commit: bool) -> (i16, i64, i16) {
    let r = k
        .call(
            &EndTxnRequest::default()
                .with_transactional_id(txn_id(t.id))
                .with_producer_id(ProducerId(t.pid))
                .with_producer_epoch(t.epoch)
                .with_committed(commit),
            5,
        )
        .await;
    (r.error_code, r.producer_id.0, r.producer_epoch)
}

/// A TxnOffsetCommit v5 (no AddOffsetsToTxn before it) of `offset` for `group` on
/// `topic`'s partition 0: its error code.
async fn offset_commit_v2(k: &mut Kafka, t: Txn<'_>, group: &str, topic: &str, offset: i64) -> i16 {
    let request = TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id(t.id))
        .with_group_id(GroupId(s(group)))
        .with_producer_id(ProducerId(t.pid))
        .with_producer_epoch(t.epoch)
        .with_topics(vec![
            TxnOffsetCommitRequestTopic::default()
                .with_name(name(topic))
                .with_partitions(vec![
                    TxnOffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset),
                ]),
        ]);
    k.call(&request, 5).await.topics[0].partitions[0].error_code
}

#[tokio::test]
async fn transactions_v2_bump_the_epoch_at_each_end_and_join_by_produce_and_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let mut server = start(&dir).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(create_topic(&mut k, "v2", 1, &[]).await, 0);
    assert_eq!(create_topic(&mut k, "v1", 1, &[]).await, 0);
    assert_eq!(create_topic(&mut k, "src", 1, &[]).await, 0);
    let t0 = begin(&mut k, "tv2").await;

    // Produce v12 adds its partition; up to v11 a partition must have been added.
    let b = producer_batch(&["c1", "c2"], t0.pid, t0.epoch, 0, true);
    assert_eq!(produce_at(&mut k, "tv2", "v2", b, 12).await, 0);
    let b = producer_batch(&["no"], t0.pid, t0.epoch, 0, true);
    assert_eq!(
        produce_at(&mut k, "tv2", "v1", b, 11).await,
        INVALID_TXN_STATE
    );
    // TxnOffsetCommit v5 adds the group.
    assert_eq!(offset_commit_v2(&mut k, t0, "g2", "src", 7).await, 0);
    assert_eq!(
        state(&mut k, "tv2").await,
        ("Ongoing".into(), vec![("v2".into(), 0)])
    );
    assert_eq!(committed(&mut k, "g2", "src").await, -1);

    // EndTxn v5 commits and answers the next epoch.
    let (code, pid, epoch) = end_v2(&mut k, t0, true).await;
    assert_eq!((code, pid, epoch), (0, t0.pid, t0.epoch + 1));
    let t1 = Txn { epoch, ..t0 };
    assert_eq!(
        fetch(&mut k, "v2", 1).await,
        (3, 3, vec!["c1".into(), "c2".into()])
    );
    assert_eq!(committed(&mut k, "g2", "src").await, 7);
    let (_, described) = state(&mut k, "tv2").await;
    assert!(described.is_empty());
    assert_eq!(
        describe(&mut k, "tv2").await.transaction_states[0].producer_epoch,
        t1.epoch
    );
    // The old epoch is fenced, on the produce and on another end.
    let old = producer_batch(&["late"], t0.pid, t0.epoch, 2, true);
    assert_eq!(
        produce_at(&mut k, "tv2", "v2", old, 12).await,
        INVALID_PRODUCER_EPOCH
    );
    // A retry of the same end answers success with the current id and epoch; the other
    // decision at the old epoch is refused.
    assert_eq!(end_v2(&mut k, t0, true).await, (0, t1.pid, t1.epoch));
    assert_eq!(end_v2(&mut k, t0, false).await.0, INVALID_TXN_STATE);
    assert_eq!(
        offset_commit_v2(&mut k, t0, "g2", "src", 9).await,
        INVALID_PRODUCER_EPOCH
    );

    // The next transaction, at the new epoch, aborts: its records stay hidden.
    let b = producer_batch(&["a1"], t1.pid, t1.epoch, 0, true);
    assert_eq!(produce_at(&mut k, "tv2", "v2", b, 12).await, 0);
    assert_eq!(offset_commit_v2(&mut k, t1, "g2", "src", 9).await, 0);
    let (code, pid, epoch) = end_v2(&mut k, t1, false).await;
    assert_eq!((code, pid, epoch), (0, t1.pid, t1.epoch + 1));
    let t2 = Txn { epoch, ..t1 };
    assert_eq!(
        fetch(&mut k, "v2", 1).await,
        (5, 5, vec!["c1".into(), "c2".into()])
    );
    assert_eq!(
        fetch(&mut k, "v2", 0).await.2,
        ["c1", "c2", "a1"],
        "read_uncommitted keeps the aborted record"
    );
    assert_eq!(committed(&mut k, "g2", "src").await, 7);
    assert_eq!(end_v2(&mut k, t1, false).await, (0, t2.pid, t2.epoch));
    // An abort with nothing open bumps the epoch too; a commit has nothing to commit.
    assert_eq!(end_v2(&mut k, t2, true).await.0, INVALID_TXN_STATE);
    let (code, _, epoch) = end_v2(&mut k, t2, false).await;
    assert_eq!((code, epoch), (0, t2.epoch + 1));
    let t3 = Txn { epoch, ..t2 };

    // A commit, then SIGKILL: the retry after the restart still answers success.
    let b = producer_batch(&["k1"], t3.pid, t3.epoch, 0, true);
    assert_eq!(produce_at(&mut k, "tv2", "v2", b, 12).await, 0);
    let (code, _, epoch) = end_v2(&mut k, t3, true).await;
    assert_eq!((code, epoch), (0, t3.epoch + 1));
    let t4 = Txn { epoch, ..t3 };
    drop(k);
    server.sigkill().await;
    let server = start(&dir).await;
    let mut k = Kafka::connect(&server).await;
    assert_eq!(end_v2(&mut k, t3, true).await, (0, t4.pid, t4.epoch));
    assert_eq!(end_v2(&mut k, t3, false).await.0, INVALID_TXN_STATE);
    assert_eq!(
        fetch(&mut k, "v2", 1).await,
        (7, 7, vec!["c1".into(), "c2".into(), "k1".into()])
    );
    let old = producer_batch(&["late"], t3.pid, t3.epoch, 1, true);
    assert_eq!(
        produce_at(&mut k, "tv2", "v2", old, 12).await,
        INVALID_PRODUCER_EPOCH
    );
    // The next transaction goes on at the answered epoch.
    let b = producer_batch(&["n1"], t4.pid, t4.epoch, 0, true);
    assert_eq!(produce_at(&mut k, "tv2", "v2", b, 12).await, 0);
    assert_eq!(end_v2(&mut k, t4, true).await, (0, t4.pid, t4.epoch + 1));
    assert_eq!(fetch(&mut k, "v2", 1).await.2, ["c1", "c2", "k1", "n1"]);
}
