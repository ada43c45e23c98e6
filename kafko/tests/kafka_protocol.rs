//! The Kafka wire-protocol listener, black-box: the real binary with `--kafka-bind`,
//! spoken to with requests encoded by the `kafka-protocol` crate and record batches
//! built here, next to `/v1` on the same log.

mod common;

use std::time::{Duration, Instant};

use bytes::{Buf, Bytes, BytesMut};
use common::kafka::{
    Got, Kafka, Rec, batch, fetch_request, from_offset, init_producer_id, list_offsets_request,
    name, produce_batch, produce_request, read_batches,
};
use common::{Server, client, get_json, metric, produce};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, CreateTopicsRequest, DeleteTopicsRequest,
    FetchRequest, FindCoordinatorRequest, InitProducerIdRequest, ListOffsetsRequest,
    MetadataRequest, ProduceRequest,
};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

// ---------------------------------------------------------------- requests

async fn start(dir: &std::path::Path, extra: &[&str]) -> Server {
    let mut args = vec!["--kafka-bind", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    Server::start(dir, &args).await
}

/// Fetches (v12) once: (error, high watermark, log start, records).
async fn fetch(
    k: &mut Kafka,
    topic: &str,
    partition: i32,
    offset: i64,
    wait: i32,
) -> (i16, i64, i64, Vec<Got>) {
    let r = k
        .call(&fetch_request(topic, partition, offset, wait), 12)
        .await;
    let p = &r.responses[0].partitions[0];
    let records = p.records.clone().map(read_batches).unwrap_or_default();
    (p.error_code, p.high_watermark, p.log_start_offset, records)
}

async fn list_offset(
    k: &mut Kafka,
    topic: &str,
    partition: i32,
    timestamp: i64,
) -> (i16, i64, i64) {
    let r = k
        .call(&list_offsets_request(topic, partition, timestamp), 7)
        .await;
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.offset, p.timestamp)
}

/// CreateTopics of one topic with string-valued `configs`: its error code.
async fn create_topic(
    k: &mut Kafka,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> i16 {
    let configs: Vec<_> = configs.iter().map(|(n, v)| (*n, Some(*v))).collect();
    common::kafka::create_topic(k, topic, partitions, &configs).await
}

fn rec(key: &'static str, value: &'static str, ts: i64) -> Rec {
    Rec {
        key: Some(key.as_bytes()),
        value: Some(value.as_bytes()),
        headers: vec![],
        timestamp: ts,
    }
}

// ---------------------------------------------------------------- tests

#[tokio::test]
async fn api_versions_advertises_exactly_the_served_ranges_and_answers_a_newer_version_in_v0() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    // A version newer than served: the answer is error 35 in the v0 layout.
    let newest = kafko_kafka::served_apis()
        .iter()
        .find(|api| api.key == 18)
        .map(|api| *api.versions.end())
        .unwrap();
    // Flexible, as v3: a header with no tagged fields, two empty compact strings.
    let correlation: i32 = 99;
    let mut request = BytesMut::new();
    request.extend_from_slice(&18i16.to_be_bytes());
    request.extend_from_slice(&(newest + 1).to_be_bytes());
    request.extend_from_slice(&correlation.to_be_bytes());
    request.extend_from_slice(&[0xff, 0xff, 0, 1, 1, 0]);
    k.write_frame(&request).await;
    let mut body = k.read_frame().await;
    assert_eq!(
        body.get_i32(),
        correlation,
        "v0 response header: the correlation id only"
    );
    let refused = ApiVersionsResponse::decode(&mut body, 0).unwrap();
    assert!(body.is_empty());
    assert_eq!(refused.error_code, 35);
    // Every API the table serves without a token, and nothing else.
    let mut expected: Vec<(i16, i16, i16)> = kafko_kafka::served_apis()
        .iter()
        .filter(|api| !api.with_auth_token_only)
        .map(|api| (api.key, *api.versions.start(), *api.versions.end()))
        .collect();
    expected.sort_unstable();
    assert!(expected.len() > 10, "{expected:?}");
    let ranges = |r: &ApiVersionsResponse| {
        let mut v: Vec<_> = r
            .api_keys
            .iter()
            .map(|a| (a.api_key, a.min_version, a.max_version))
            .collect();
        v.sort_unstable();
        v
    };
    assert_eq!(ranges(&refused), expected);
    // Then v3 (flexible): the same ranges, and no tagged field at all (kcat's librdkafka
    // misreads default-valued ones): the body is exactly what its fields encode to,
    // ending in an empty tagged-field set.
    let correlation = k.send(&ApiVersionsRequest::default(), 3, &[]).await;
    let mut body = k.read_frame().await;
    assert_eq!(
        body.get_i32(),
        correlation,
        "ApiVersions answers have a v0 header"
    );
    let raw = body.clone();
    let ok = ApiVersionsResponse::decode(&mut body, 3).unwrap();
    assert_eq!(ok.error_code, 0);
    assert_eq!(ranges(&ok), expected);
    assert!(ok.unknown_tagged_fields.is_empty());
    let mut again = BytesMut::new();
    ok.encode(&mut again, 3).unwrap();
    assert_eq!(&again[..], &raw[..]);
    assert_eq!(raw.last(), Some(&0));
    // And v0, as aiokafka asks.
    assert_eq!(
        ranges(&k.call(&ApiVersionsRequest::default(), 0).await),
        expected
    );
}

#[tokio::test]
async fn trailing_bytes_after_a_metadata_body_are_tolerated() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "t", 3, &[]).await, 0);
    // librdkafka 2.16's all-topics Metadata v12 carries 3 bytes after the body.
    let sent = k
        .send(
            &MetadataRequest::default().with_topics(None),
            12,
            &[0, 0, 0],
        )
        .await;
    let (correlation, r) = k.recv::<MetadataRequest>(12).await;
    assert_eq!(correlation, sent);
    assert_eq!(r.brokers.len(), 1);
    let broker = &r.brokers[0];
    assert_eq!(
        format!("{}:{}", broker.host.as_str(), broker.port),
        s.kafka.clone().unwrap()
    );
    let topic = r
        .topics
        .iter()
        .find(|t| t.name.as_ref().unwrap().as_str() == "t")
        .unwrap();
    assert_eq!(topic.partitions.len(), 3);
    assert!(
        topic
            .partitions
            .iter()
            .all(|p| p.leader_id.0 == 0 && p.error_code == 0)
    );
}

#[tokio::test]
async fn metadata_auto_creates_only_when_the_server_and_the_client_allow_it() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &["--auto-create", "false"]).await;
    let mut k = Kafka::connect(&s).await;
    let ask = |t: &str, allow: bool| {
        MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name(t))),
            ]))
            .with_allow_auto_topic_creation(allow)
    };
    assert_eq!(k.call(&ask("nope", true), 12).await.topics[0].error_code, 3);
    let tmp2 = tempfile::tempdir().unwrap();
    let s2 = start(&tmp2.path().join("d"), &[]).await;
    let mut k2 = Kafka::connect(&s2).await;
    assert_eq!(
        k2.call(&ask("later", false), 12).await.topics[0].error_code,
        3
    );
    let created = k2.call(&ask("made", true), 12).await;
    assert_eq!(created.topics[0].error_code, 0);
    assert_eq!(created.topics[0].partitions.len(), 1);
}

#[tokio::test]
async fn acks_zero_gets_no_answer_and_the_next_request_is_answered_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "z", 1, &[]).await, 0);
    let quiet = k
        .send(
            &produce_request("z", 0, batch(&[rec("k", "v0", 1000)], 0, None), 0),
            9,
            &[],
        )
        .await;
    // Pipelined: three requests before reading any answer.
    let a = k
        .send(
            &produce_request("z", 0, batch(&[rec("k", "v1", 1001)], 0, None), 1),
            9,
            &[],
        )
        .await;
    let b = k.send(&MetadataRequest::default(), 12, &[]).await;
    let (first, produced) = k.recv::<ProduceRequest>(9).await;
    assert_ne!(first, quiet, "acks=0 is never answered");
    assert_eq!(first, a);
    // acks=0 was appended before the next request was read: the acks=1 record follows it.
    assert_eq!(produced.responses[0].partition_responses[0].base_offset, 1);
    let (second, _) = k.recv::<MetadataRequest>(12).await;
    assert_eq!(second, b);
    // An acks=0 produce that fails closes the connection, as Kafka does: the client
    // has no answer to learn it from.
    k.send(
        &produce_request("z", 7, batch(&[rec("k", "v", 1)], 0, None), 0),
        9,
        &[],
    )
    .await;
    assert!(k.closed_by_server().await);
}

#[tokio::test]
async fn a_corrupt_batch_is_corrupt_message_and_stores_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "c", 1, &[]).await, 0);
    let good = batch(&[rec("k", "value", 1000)], 0, None);
    let mut bad = BytesMut::from(&good[..]);
    let last = bad.len() - 1;
    bad[last] ^= 0x55;
    assert_eq!(produce_batch(&mut k, "c", 0, bad.freeze()).await.0, 2);
    assert_eq!(list_offset(&mut k, "c", 0, -1).await.1, 0, "nothing stored");
    // The connection is still usable.
    assert_eq!(produce_batch(&mut k, "c", 0, good).await, (0, 0));
}

#[tokio::test]
async fn a_record_past_max_record_bytes_is_message_too_large() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &["--max-record-bytes", "100"]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "big", 1, &[]).await, 0);
    let value: &'static [u8] = Box::leak(vec![b'x'; 200].into_boxed_slice());
    let records = [
        rec("k", "small", 1),
        Rec {
            key: None,
            value: Some(value),
            headers: vec![],
            timestamp: 2,
        },
    ];
    assert_eq!(
        produce_batch(&mut k, "big", 0, batch(&records, 0, None))
            .await
            .0,
        10
    );
    assert_eq!(
        list_offset(&mut k, "big", 0, -1).await.1,
        0,
        "the batch is all or nothing"
    );
}

#[tokio::test]
async fn a_replayed_idempotent_batch_keeps_its_offsets_and_is_written_once() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "idem", 1, &[]).await, 0);
    let (pid, epoch) = init_producer_id(&mut k).await;
    assert!(pid >= 0);
    let first = batch(
        &[rec("a", "1", 1), rec("b", "2", 2), rec("c", "3", 3)],
        0,
        Some((pid, epoch, 0)),
    );
    let second = batch(
        &[rec("d", "4", 4), rec("e", "5", 5)],
        0,
        Some((pid, epoch, 3)),
    );
    assert_eq!(
        produce_batch(&mut k, "idem", 0, first.clone()).await,
        (0, 0)
    );
    assert_eq!(
        produce_batch(&mut k, "idem", 0, second.clone()).await,
        (0, 3)
    );
    // Retries of both, as a producer whose answers were lost sends them.
    assert_eq!(produce_batch(&mut k, "idem", 0, first).await, (0, 0));
    assert_eq!(produce_batch(&mut k, "idem", 0, second).await, (0, 3));
    let (_, hw, _, records) = fetch(&mut k, "idem", 0, 0, 0).await;
    assert_eq!(hw, 5, "written once");
    let values: Vec<_> = records.iter().map(|r| r.value.clone().unwrap()).collect();
    assert_eq!(values, [b"1", b"2", b"3", b"4", b"5"].map(|v| v.to_vec()));
    // A gap in the sequence is refused; so is an older epoch after a re-init.
    let gap = batch(&[rec("f", "6", 6)], 0, Some((pid, epoch, 7)));
    assert_eq!(produce_batch(&mut k, "idem", 0, gap).await.0, 45);
    let next = batch(&[rec("f", "6", 6)], 0, Some((pid, epoch, 5)));
    assert_eq!(produce_batch(&mut k, "idem", 0, next).await, (0, 5));
}

/// Kafka's Java producer, with batches in flight when one fails, bumps its epoch itself
/// (no InitProducerId) and starts the partition's sequences again at 0: the broker takes
/// the new epoch and fences the old one on that partition, while a partition the bump
/// has not reached still takes the old epoch's in-flight batches.
#[tokio::test]
async fn an_idempotent_producer_may_bump_its_own_epoch_with_batches_in_flight() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    let (pid, epoch) = init_producer_id(&mut k).await;
    let values = ["0", "1", "2", "3", "4"];
    let one = |value: &'static str, epoch: i16, sequence: i32| {
        batch(&[rec("k", value, 1)], 0, Some((pid, epoch, sequence)))
    };
    // Five produces in flight on one connection, to a topic the first one creates.
    let mut sent = Vec::new();
    for (sequence, value) in (0..).zip(values) {
        let request = produce_request("bump", 0, one(value, epoch, sequence), -1);
        sent.push(k.send(&request, 9, &[]).await);
    }
    for (offset, correlation) in (0..).zip(sent) {
        let (got, r) = k.recv::<ProduceRequest>(9).await;
        let p = &r.responses[0].partition_responses[0];
        assert_eq!(got, correlation, "answered in request order");
        assert_eq!((p.error_code, p.base_offset), (0, offset));
    }
    // Sequence 5 was lost: 6 is out of order, and the producer bumps its epoch.
    assert_eq!(
        produce_batch(&mut k, "bump", 0, one("6", epoch, 6)).await.0,
        45
    );
    let bumped = epoch + 1;
    // The new epoch starts at 0 (anything else is out of order), and is deduplicated.
    assert_eq!(
        produce_batch(&mut k, "bump", 0, one("x", bumped, 3))
            .await
            .0,
        45
    );
    assert_eq!(
        produce_batch(&mut k, "bump", 0, one("5", bumped, 0)).await,
        (0, 5)
    );
    assert_eq!(
        produce_batch(&mut k, "bump", 0, one("5", bumped, 0)).await,
        (0, 5)
    );
    // The old epoch is fenced on this partition now.
    assert_eq!(
        produce_batch(&mut k, "bump", 0, one("y", epoch, 5)).await.0,
        47
    );
    let (_, hw, _, records) = fetch(&mut k, "bump", 0, 0, 0).await;
    assert_eq!(hw, 6, "every batch written once");
    let got: Vec<_> = records.iter().map(|r| r.value.clone().unwrap()).collect();
    assert_eq!(
        got,
        [b"0", b"1", b"2", b"3", b"4", b"5"].map(|v| v.to_vec())
    );
    // InitProducerId hands out an epoch past the bumped one (whose sequences partition 0
    // holds) and fences both.
    let again = k
        .call(
            &InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(kafka_protocol::messages::ProducerId(pid))
                .with_producer_epoch(epoch),
            4,
        )
        .await;
    assert_eq!((again.error_code, again.producer_epoch), (0, bumped + 1));
    assert_eq!(
        produce_batch(&mut k, "bump", 0, one("z", bumped, 1))
            .await
            .0,
        47
    );
    let fresh = again.producer_epoch;
    assert_eq!(
        produce_batch(&mut k, "bump", 0, one("6", fresh, 0)).await,
        (0, 6)
    );
}

#[tokio::test]
async fn a_topic_created_again_under_its_name_starts_its_producers_sequences_afresh() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "reborn", 1, &[]).await, 0);
    let (pid, epoch) = init_producer_id(&mut k).await;
    let old = batch(&[rec("a", "old", 1)], 0, Some((pid, epoch, 0)));
    assert_eq!(produce_batch(&mut k, "reborn", 0, old).await, (0, 0));
    let r = c.delete(s.url("/v1/topics/reborn")).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(create_topic(&mut k, "reborn", 1, &[]).await, 0);
    // The same producer's first batch to the new topic: not a duplicate of the old
    // topic's batch 0, so it is written, and the answer carries the new log's start.
    let new = batch(&[rec("a", "new", 2)], 0, Some((pid, epoch, 0)));
    let r = k.call(&produce_request("reborn", 0, new, -1), 9).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.base_offset, p.log_start_offset), (0, 0, 0));
    let (_, hw, _, records) = fetch(&mut k, "reborn", 0, 0, 0).await;
    assert_eq!(hw, 1);
    assert_eq!(records[0].value.as_deref(), Some(&b"new"[..]));
}

#[tokio::test]
async fn a_fetch_long_poll_is_woken_by_a_produce_through_v1() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "lp", 1, &[]).await, 0);
    // Nothing there: the fetch waits its max_wait_ms, then answers empty.
    let t0 = Instant::now();
    let (err, hw, _, records) = fetch(&mut k, "lp", 0, 0, 300).await;
    assert_eq!((err, hw, records.len()), (0, 0, 0));
    assert!(
        t0.elapsed() >= Duration::from_millis(290),
        "{:?}",
        t0.elapsed()
    );
    // A long fetch (30 s) waiting, then a produce through /v1: the fetch answers with it.
    let t0 = Instant::now();
    let sent = k.send(&fetch_request("lp", 0, 0, 30_000), 12, &[]).await;
    common::until_reads_waiting(&c, &s, "kafka", 1).await;
    produce(&c, &s, "lp", "", json!([{"key": "k", "value": "woken"}])).await;
    let (correlation, r) = k.recv::<FetchRequest>(12).await;
    assert_eq!(correlation, sent);
    let got = read_batches(r.responses[0].partitions[0].records.clone().unwrap());
    assert_eq!(got[0].value.as_deref(), Some(&b"woken"[..]));
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "woken, not timed out: {:?}",
        t0.elapsed()
    );
    assert_eq!(
        metric(&c, &s, r#"kafko_reads_waiting{front_end="kafka"}"#).await,
        0
    );
}

#[tokio::test]
async fn records_produced_through_kafka_read_the_same_through_v1_and_back() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "rt", 1, &[]).await, 0);
    let records = [
        Rec {
            key: Some(b"k1"),
            value: Some(b"v1"),
            headers: vec![("h", Some(b"1")), ("h", Some(b"2")), ("n", None)],
            timestamp: 1_700_000_000_000,
        },
        Rec {
            key: None,
            value: Some(b"no key"),
            headers: vec![],
            timestamp: 1_700_000_000_001,
        },
        Rec {
            key: Some(b"gone"),
            value: None,
            headers: vec![],
            timestamp: 1_700_000_000_002,
        },
        Rec {
            key: Some(b"empty"),
            value: Some(b""),
            headers: vec![],
            timestamp: 1_700_000_000_003,
        },
    ];
    // gzip, as a producer may compress.
    assert_eq!(
        produce_batch(&mut k, "rt", 0, batch(&records, 1, None)).await,
        (0, 0)
    );
    let b = get_json(
        &c,
        &s,
        "/v1/topics/rt/records?partition=0&offset=0&max_records=10",
    )
    .await;
    let r = b["records"].as_array().unwrap();
    assert_eq!(r.len(), 4);
    assert_eq!(r[0]["key"], "k1");
    assert_eq!(r[0]["value"], "v1");
    assert_eq!(r[0]["timestamp"], 1_700_000_000_000i64);
    // Duplicate header keys kept in order; a null header value is stored empty.
    assert_eq!(
        r[0]["headers"],
        json!([{"name": "h", "value": "1"}, {"name": "h", "value": "2"}, {"name": "n", "value": ""}])
    );
    assert_eq!(r[1]["key"], serde_json::Value::Null);
    assert_eq!(r[2]["value"], serde_json::Value::Null, "tombstone");
    assert_eq!(r[3]["value"], "");
    // And back: /v1 records read through Kafka.
    produce(
        &c,
        &s,
        "rt",
        "",
        json!([
            {"key": "v1key", "value": "from v1", "timestamp": 1_700_000_000_100i64,
             "headers": [{"name": "x", "value": "1"}, {"name": "x", "value": "2"}]},
        ]),
    )
    .await;
    let (err, hw, log_start, got) = fetch(&mut k, "rt", 0, 0, 0).await;
    assert_eq!((err, hw, log_start), (0, 5, 0));
    assert_eq!(got.len(), 5);
    assert_eq!(
        got[0],
        Got {
            offset: 0,
            timestamp: 1_700_000_000_000,
            key: Some(b"k1".to_vec()),
            value: Some(b"v1".to_vec()),
            headers: vec![
                ("h".into(), b"1".to_vec()),
                ("h".into(), b"2".to_vec()),
                ("n".into(), vec![])
            ],
        }
    );
    assert_eq!(got[1].key, None);
    assert_eq!(got[2].value, None);
    assert_eq!(got[3].value, Some(vec![]));
    assert_eq!(
        got[4],
        Got {
            offset: 4,
            timestamp: 1_700_000_000_100,
            key: Some(b"v1key".to_vec()),
            value: Some(b"from v1".to_vec()),
            headers: vec![("x".into(), b"1".to_vec()), ("x".into(), b"2".to_vec())],
        }
    );
    // From the middle; and past the end is OFFSET_OUT_OF_RANGE.
    // A fetch from inside a batch gets the whole batch; the client keeps what is at or
    // after its offset, as with Kafka.
    let (_, _, _, tail) = fetch(&mut k, "rt", 0, 3, 0).await;
    assert_eq!(tail.first().map(|g| g.offset), Some(0));
    let tail = from_offset(tail, 3);
    assert_eq!(tail.iter().map(|g| g.offset).collect::<Vec<_>>(), [3, 4]);
    assert_eq!(fetch(&mut k, "rt", 0, 6, 0).await.0, 1);
    assert_eq!(fetch(&mut k, "missing", 0, 0, 0).await.0, 3);
    // The server's metrics count Kafka traffic as /v1's: 4 + 1 records in; out, the /v1
    // read (4) and the records of the batches the Kafka fetches sent (5 + 5).
    let metrics = c
        .get(s.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("kafko_records_in_total{topic=\"rt\"} 5"),
        "{metrics}"
    );
    assert!(
        metrics.contains("kafko_records_out_total{topic=\"rt\"} 14"),
        "{metrics}"
    );
}

#[tokio::test]
async fn list_offsets_answers_earliest_latest_and_by_timestamp() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "lo", 1, &[]).await, 0);
    let records = [
        rec("a", "1", 1000),
        rec("b", "2", 2000),
        rec("c", "3", 3000),
    ];
    assert_eq!(
        produce_batch(&mut k, "lo", 0, batch(&records, 0, None)).await,
        (0, 0)
    );
    assert_eq!(list_offset(&mut k, "lo", 0, -2).await, (0, 0, -1));
    assert_eq!(list_offset(&mut k, "lo", 0, -1).await, (0, 3, -1));
    assert_eq!(list_offset(&mut k, "lo", 0, 1500).await, (0, 1, 2000));
    assert_eq!(list_offset(&mut k, "lo", 0, 3000).await, (0, 2, 3000));
    assert_eq!(list_offset(&mut k, "lo", 0, 9000).await, (0, -1, -1));
    assert_eq!(list_offset(&mut k, "lo", 0, -3).await, (0, 2, 3000));
    assert_eq!(list_offset(&mut k, "lo", 5, -1).await.0, 3);
}

#[tokio::test]
async fn keyed_records_land_where_kafkas_murmur2_partitioner_puts_them() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "keys", 3, &[]).await, 0);
    // Kafka's UtilsTest: murmur2("21") = -973932308; toPositive = 1173551340; % 3 = 0.
    // murmur2("foobar") = -790332482 → 1357151166 % 3 = 0; "abc" = 479470107 → % 3 = 0;
    // "a-little-bit-long-string" = -985981536 → 1161502112 % 3 = 2.
    for (key, partition) in [("21", 0), ("a-little-bit-long-string", 2)] {
        let offsets = produce(&c, &s, "keys", "", json!([{"key": key, "value": "x"}])).await;
        assert_eq!(offsets[0]["partition"], partition, "key {key}");
    }
    assert_eq!(list_offset(&mut k, "keys", 0, -1).await.1, 1);
    assert_eq!(list_offset(&mut k, "keys", 2, -1).await.1, 1);
}

#[tokio::test]
async fn create_and_delete_topics_answer_kafka_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let c = client();
    let mut k = Kafka::connect(&s).await;
    let configs = [
        ("cleanup.policy", "compact"),
        ("retention.ms", "-1"),
        ("compression.type", "zstd"),
        ("max.message.bytes", "2048"),
    ];
    assert_eq!(create_topic(&mut k, "made", 2, &configs).await, 0);
    let b = get_json(&c, &s, "/v1/topics/made").await;
    assert_eq!(b["config"]["partitions"], 2);
    assert_eq!(b["config"]["cleanup_policy"], "compact");
    assert_eq!(b["config"]["retention_ms"], serde_json::Value::Null);
    assert_eq!(b["config"]["compression"], "zstd");
    assert_eq!(b["config"]["max_record_bytes"], 2048);
    assert_eq!(create_topic(&mut k, "made", 2, &[]).await, 36);
    assert_eq!(create_topic(&mut k, "zero", 0, &[]).await, 37);
    assert_eq!(
        create_topic(&mut k, "conf", 1, &[("unclean.leader.election", "true")]).await,
        40
    );
    assert_eq!(
        create_topic(&mut k, "codec", 1, &[("compression.type", "brotli")]).await,
        40
    );
    let delete = |names: &[&str]| {
        DeleteTopicsRequest::default()
            .with_timeout_ms(10_000)
            .with_topic_names(names.iter().map(|n| name(n)).collect())
    };
    let r = k.call(&delete(&["made", "absent"]), 4).await;
    assert_eq!(r.responses[0].error_code, 0);
    assert_eq!(r.responses[1].error_code, 3);
    assert_eq!(fetch(&mut k, "made", 0, 0, 0).await.0, 3);
}

#[tokio::test]
async fn offsets_and_data_survive_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let mut s = start(&dir, &[]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "keep", 2, &[]).await, 0);
    let records = [rec("a", "1", 1000), rec("b", "2", 2000)];
    assert_eq!(
        produce_batch(&mut k, "keep", 1, batch(&records, 0, None)).await,
        (0, 0)
    );
    assert!(s.sigterm().await.success());
    let s = start(&dir, &[]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(list_offset(&mut k, "keep", 1, -2).await.1, 0);
    assert_eq!(list_offset(&mut k, "keep", 1, -1).await.1, 2);
    assert_eq!(list_offset(&mut k, "keep", 1, 1500).await, (0, 1, 2000));
    let (_, hw, _, got) = fetch(&mut k, "keep", 1, 0, 0).await;
    assert_eq!(hw, 2);
    assert_eq!(
        got.iter()
            .map(|g| g.value.clone().unwrap())
            .collect::<Vec<_>>(),
        vec![b"1".to_vec(), b"2".to_vec()]
    );
}

#[tokio::test]
async fn garbage_bytes_close_that_connection_only() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut healthy = Kafka::connect(&s).await;
    assert_eq!(
        healthy
            .call(&ApiVersionsRequest::default(), 3)
            .await
            .error_code,
        0
    );
    // An HTTP request on the Kafka port: its first four bytes are a huge size.
    let mut http = Kafka::connect(&s).await;
    http.stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert!(http.closed_by_server().await);
    // A small frame that is no request: an unknown API key.
    let mut junk = Kafka::connect(&s).await;
    junk.write_frame(&[0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3])
        .await;
    assert!(junk.closed_by_server().await);
    // A known API at a version past the served ones (a flexible header, an empty
    // body): closed.
    let newest = kafko_kafka::served_apis()
        .iter()
        .find(|api| api.key == MetadataRequest::KEY)
        .map(|api| *api.versions.end())
        .unwrap();
    let mut old = Kafka::connect(&s).await;
    old.write_frame(&raw_request(MetadataRequest::KEY, newest + 1, 1, &[0]))
        .await;
    assert!(old.closed_by_server().await);
    // A Metadata request of 14 bytes declaring 2^31 - 1 topics: refused before anything
    // is reserved for them (the server lives on).
    let mut huge = Kafka::connect(&s).await;
    let mut body = vec![0, 3, 0, 1, 0, 0, 0, 9, 0xff, 0xff];
    body.extend_from_slice(&i32::MAX.to_be_bytes());
    huge.write_frame(&body).await;
    assert!(huge.closed_by_server().await);
    // The first connection is unaffected.
    assert_eq!(
        healthy
            .call(&ApiVersionsRequest::default(), 3)
            .await
            .error_code,
        0
    );
}

#[tokio::test]
async fn an_oversize_frame_is_refused_from_its_size_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &["--max-body-bytes", "2000000"]).await;
    let mut k = Kafka::connect(&s).await;
    // Declares 1 GiB and sends nothing more: refused without waiting for the body.
    k.stream
        .write_all(&(1i32 << 30).to_be_bytes())
        .await
        .unwrap();
    assert!(k.closed_by_server().await);
    let mut fine = Kafka::connect(&s).await;
    assert_eq!(
        fine.call(&ApiVersionsRequest::default(), 3)
            .await
            .error_code,
        0
    );
}

#[tokio::test]
async fn silent_and_idle_connections_are_closed_by_the_server_timeouts() {
    let tmp = tempfile::tempdir().unwrap();
    let flags = [
        "--header-read-timeout-ms",
        "300",
        "--idle-timeout-ms",
        "600",
    ];
    let s = start(&tmp.path().join("d"), &flags).await;
    // Never a request: closed after the header-read timeout.
    let mut silent = Kafka::connect(&s).await;
    let t0 = Instant::now();
    assert!(silent.closed_by_server().await);
    assert!(
        t0.elapsed() >= Duration::from_millis(250),
        "{:?}",
        t0.elapsed()
    );
    // One request, then nothing: closed after the idle timeout from its answer.
    let mut idle = Kafka::connect(&s).await;
    assert_eq!(
        idle.call(&ApiVersionsRequest::default(), 3)
            .await
            .error_code,
        0
    );
    let t0 = Instant::now();
    assert!(idle.closed_by_server().await);
    assert!(
        t0.elapsed() >= Duration::from_millis(500),
        "{:?}",
        t0.elapsed()
    );
}

#[tokio::test]
async fn kafka_connections_count_under_the_servers_connection_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &["--max-connections", "2"]).await;
    // Two connections busy with long fetches fill the cap: a third is closed unserved.
    let mut busy = Vec::new();
    for i in 0..2 {
        let mut k = Kafka::connect(&s).await;
        // Answered once: the connection is registered; then a long fetch keeps it busy.
        if i == 0 {
            assert_eq!(create_topic(&mut k, "cap", 1, &[]).await, 0);
        } else {
            assert_eq!(
                k.call(&ApiVersionsRequest::default(), 3).await.error_code,
                0
            );
        }
        k.send(&fetch_request("cap", 0, 0, 30_000), 12, &[]).await;
        busy.push(k);
    }
    let mut third = Kafka::connect(&s).await;
    assert!(
        third.closed_by_server().await,
        "the cap refuses a newcomer when all are busy"
    );
    // HTTP connections count under the same cap: a new one is answered 503 at once,
    // before it sends anything, and closed.
    let mut http = TcpStream::connect(&s.addr).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), http.read_to_end(&mut answer))
        .await
        .expect("the refusal in time")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.starts_with("HTTP/1.1 503"),
        "HTTP shares the cap: {answer}"
    );
    drop(busy);
}

#[tokio::test]
async fn with_a_token_sasl_plain_comes_first_and_a_wrong_password_closes() {
    use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let tmp = tempfile::tempdir().unwrap();
    let s = Server::start_env(
        &tmp.path().join("d"),
        &["--kafka-bind", "127.0.0.1:0"],
        &[("KAFKO_AUTH_TOKEN", "s3cret")],
    )
    .await;
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let plain = |password: &str| {
        SaslAuthenticateRequest::default()
            .with_auth_bytes(Bytes::from(format!("\0user\0{password}")))
    };
    // ApiVersions is open, and lists the SASL APIs.
    let mut k = Kafka::connect(&s).await;
    let versions = k.call(&ApiVersionsRequest::default(), 3).await;
    let keys: Vec<i16> = versions.api_keys.iter().map(|a| a.api_key).collect();
    assert!(keys.contains(&17) && keys.contains(&36), "{keys:?}");
    // Anything else first closes the connection.
    k.send(&MetadataRequest::default().with_topics(None), 12, &[])
        .await;
    assert!(k.closed_by_server().await);
    // A mechanism other than PLAIN is refused, listing PLAIN.
    let mut k = Kafka::connect(&s).await;
    let other = k
        .call(
            &SaslHandshakeRequest::default()
                .with_mechanism(StrBytes::from_static_str("SCRAM-SHA-256")),
            1,
        )
        .await;
    assert_eq!(other.error_code, 33);
    assert_eq!(other.mechanisms, vec![StrBytes::from_static_str("PLAIN")]);
    // A wrong password: SASL_AUTHENTICATION_FAILED, then the connection closes.
    assert_eq!(k.call(&handshake, 1).await.error_code, 0);
    assert_eq!(k.call(&plain("wrong"), 2).await.error_code, 58);
    assert!(k.closed_by_server().await);
    // The token as password: then the broker serves.
    let mut k = Kafka::connect(&s).await;
    assert_eq!(k.call(&handshake, 1).await.error_code, 0);
    assert_eq!(k.call(&plain("s3cret"), 2).await.error_code, 0);
    assert_eq!(create_topic(&mut k, "authed", 1, &[]).await, 0);
    let r = k
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await;
    assert_eq!(r.topics.iter().filter(|t| !t.is_internal).count(), 1);
    // With a token, ApiVersions lists the whole table, and every version of the SASL
    // APIs it serves only then logs a connection in.
    let served = kafko_kafka::served_apis();
    let ranges = |r: &kafka_protocol::messages::ApiVersionsResponse| {
        let mut v: Vec<_> = r
            .api_keys
            .iter()
            .map(|a| (a.api_key, a.min_version, a.max_version))
            .collect();
        v.sort_unstable();
        v
    };
    let mut table: Vec<_> = served
        .iter()
        .map(|api| (api.key, *api.versions.start(), *api.versions.end()))
        .collect();
    table.sort_unstable();
    assert_eq!(ranges(&versions), table);
    let auth_only: Vec<i16> = served
        .iter()
        .filter(|api| api.with_auth_token_only)
        .map(|api| api.key)
        .collect();
    assert_eq!(
        auth_only,
        [SaslHandshakeRequest::KEY, SaslAuthenticateRequest::KEY],
        "the SASL APIs, driven at every version by \
         with_a_token_every_advertised_version_of_every_api_is_answered"
    );
}

/// Asserts that `k` is served now (logged in): a Metadata request of every topic is
/// answered, naming no topic but the internal ones of a fresh server.
async fn served_after(k: &mut Kafka, what: &str) {
    let r = k
        .call(&MetadataRequest::default().with_topics(None), 12)
        .await;
    assert!(
        r.topics.iter().all(|t| t.is_internal),
        "served after {what}"
    );
}

#[tokio::test]
async fn with_a_token_every_advertised_version_of_every_api_is_answered() {
    use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let s = Server::start_env(
        &dir,
        &["--kafka-bind", "127.0.0.1:0"],
        &[("KAFKO_AUTH_TOKEN", "s3cret")],
    )
    .await;
    let served = kafko_kafka::served_apis();
    let range = |key: i16| {
        served
            .iter()
            .find(|api| api.key == key)
            .map(|api| api.versions.clone())
            .unwrap()
    };
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
    let credentials = |password: &str| format!("\0user\0{password}").into_bytes();
    let mut driven = std::collections::BTreeSet::new();
    // Every SaslHandshake version with every SaslAuthenticate version the table serves:
    // v0 is followed by the credentials as a raw frame (no request header), answered by
    // an empty frame; from v1 by a SaslAuthenticate request.
    for hv in range(SaslHandshakeRequest::KEY) {
        driven.insert((SaslHandshakeRequest::KEY, hv));
        if hv == 0 {
            let mut k = Kafka::connect(&s).await;
            let r = k.call(&handshake, 0).await;
            assert_eq!(r.error_code, 0, "SaslHandshake v0");
            assert_eq!(r.mechanisms, vec![StrBytes::from_static_str("PLAIN")]);
            k.write_frame(&credentials("s3cret")).await;
            assert!(
                k.read_frame().await.is_empty(),
                "an empty frame: authenticated"
            );
            served_after(&mut k, "SaslHandshake v0").await;
            // Once authenticated, another handshake is ILLEGAL_SASL_STATE.
            assert_eq!(k.call(&handshake, 0).await.error_code, 34);
            served_after(&mut k, "a refused second handshake").await;
            // A wrong password: no answer (v0 has none), the connection closed.
            let mut k = Kafka::connect(&s).await;
            assert_eq!(k.call(&handshake, 0).await.error_code, 0);
            k.write_frame(&credentials("wrong")).await;
            assert!(k.closed_by_server().await, "a wrong raw password closes");
            continue;
        }
        for av in range(SaslAuthenticateRequest::KEY) {
            driven.insert((SaslAuthenticateRequest::KEY, av));
            let mut k = Kafka::connect(&s).await;
            let r = k.call(&handshake, hv).await;
            assert_eq!(r.error_code, 0, "SaslHandshake v{hv}");
            let login = SaslAuthenticateRequest::default()
                .with_auth_bytes(Bytes::from(credentials("s3cret")));
            assert_eq!(
                k.call(&login, av).await.error_code,
                0,
                "SaslAuthenticate v{av}"
            );
            served_after(
                &mut k,
                &format!("SaslHandshake v{hv}, SaslAuthenticate v{av}"),
            )
            .await;
        }
    }
    let sasl: std::collections::BTreeSet<(i16, i16)> = served
        .iter()
        .filter(|api| api.with_auth_token_only)
        .flat_map(|api| api.versions.clone().map(move |v| (api.key, v)))
        .collect();
    assert_eq!(driven, sasl, "every version of the SASL APIs");
    // Then every other API at every version, on an authenticated connection.
    let mut k = Kafka::connect(&s).await;
    assert_eq!(k.call(&handshake, 1).await.error_code, 0);
    let login =
        SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(credentials("s3cret")));
    assert_eq!(k.call(&login, 2).await.error_code, 0);
    let mut seen = drive_every_version(&s, &mut k, true).await;
    seen.extend(sasl.iter().map(|&(key, _)| key));
    let all: std::collections::BTreeSet<i16> = served.iter().map(|api| api.key).collect();
    assert_eq!(seen, all, "with a token, every served API at every version");
    // No version was refused on the way.
    let log = std::fs::read_to_string(dir.with_extension("log")).unwrap();
    assert!(!log.contains("refused a Kafka request version"), "{log}");
}

#[tokio::test]
async fn an_unread_fetch_answer_holds_the_answer_budget_and_others_are_throttled() {
    let tmp = tempfile::tempdir().unwrap();
    let flags = [
        "--max-answer-buffer-bytes",
        "1048576",
        "--max-fetch-bytes",
        "67108864",
    ];
    let s = start(&tmp.path().join("d"), &flags).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "wide", 1, &[]).await, 0);
    let value: &'static [u8] = Box::leak(vec![b'v'; 1_000_000].into_boxed_slice());
    let four = vec![
        Rec {
            key: None,
            value: Some(value),
            headers: vec![],
            timestamp: 1
        };
        4
    ];
    for _ in 0..8 {
        assert_eq!(
            produce_batch(&mut k, "wide", 0, batch(&four, 0, None))
                .await
                .0,
            0
        );
    }
    // A client asks for all 32 MB and does not read: its answer cannot be written whole.
    let mut hog = Kafka::connect(&s).await;
    let all = fetch_request("wide", 0, 0, 0)
        .with_max_bytes(64 << 20)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(name("wide"))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(0)
                        .with_fetch_offset(0)
                        .with_partition_max_bytes(64 << 20),
                ]),
        ]);
    let sent = hog.send(&all, 12, &[]).await;
    // Another fetch finds no room: no records, and a throttle time to wait out. (It may
    // come before the hog's answer is built: then it fits, and the next one is refused.)
    let mut other = Kafka::connect(&s).await;
    let small = fetch_request("wide", 0, 0, 0);
    let mut throttled = None;
    for _ in 0..20 {
        let r = other.call(&small, 12).await;
        if r.throttle_time_ms > 0 {
            throttled = Some(r);
            break;
        }
    }
    let r = throttled.expect("a fetch throttled while the unread answer holds the budget");
    assert_eq!(r.throttle_time_ms, 1000);
    assert_eq!(r.responses[0].partitions[0].error_code, 0);
    assert!(
        r.responses[0].partitions[0]
            .records
            .as_ref()
            .unwrap()
            .is_empty()
    );
    // Once the hog reads its answer, the room comes back.
    let (correlation, answer) = hog.recv::<FetchRequest>(12).await;
    assert_eq!(correlation, sent);
    assert_eq!(
        read_batches(answer.responses[0].partitions[0].records.clone().unwrap()).len(),
        32
    );
    let (err, _, _, got) = fetch(&mut other, "wide", 0, 0, 0).await;
    assert_eq!(err, 0);
    assert!(!got.is_empty());
}

/// Sends `make(v)` at every version the broker's table serves `R` at that the codec
/// encodes (older ones: `old_versions_are_served_or_refused_in_their_own_layout`), and
/// checks each is answered (not a closed connection) with a body that decodes whole;
/// notes `R` in `seen` and returns the answers.
async fn every_version<R: Request>(
    k: &mut Kafka,
    seen: &mut std::collections::BTreeSet<i16>,
    make: impl Fn(i16) -> R,
) -> Vec<(i16, R::Response)> {
    let api = kafko_kafka::served_apis()
        .into_iter()
        .find(|api| api.key == R::KEY)
        .expect("a served API");
    seen.insert(R::KEY);
    let mut out = Vec::new();
    for v in api.codec_versions {
        out.push((v, k.call(&make(v), v).await));
    }
    out
}

#[tokio::test]
async fn every_advertised_version_of_every_api_is_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    let seen = drive_every_version(&s, &mut k, false).await;
    // Every API the table serves without a token was driven.
    let served: std::collections::BTreeSet<i16> = kafko_kafka::served_apis()
        .iter()
        .filter(|api| !api.with_auth_token_only)
        .map(|api| api.key)
        .collect();
    assert_eq!(seen, served, "every served API is driven at every version");
}

/// Drives every API the table serves without a token at every version the codec
/// encodes, on `k` (authenticated, when `token`), checking each answer; the API keys
/// driven.
async fn drive_every_version(
    s: &Server,
    k: &mut Kafka,
    token: bool,
) -> std::collections::BTreeSet<i16> {
    use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
    use kafka_protocol::messages::{
        DescribeGroupsRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest, JoinGroupRequest,
        LeaveGroupRequest, ListGroupsRequest, OffsetCommitRequest, OffsetFetchRequest,
        SyncGroupRequest,
    };
    let mut seen = std::collections::BTreeSet::new();
    for (v, r) in every_version(k, &mut seen, |_| ApiVersionsRequest::default()).await {
        assert_eq!(r.error_code, 0, "ApiVersions v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |v| {
        CreateTopicsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(name(&format!("v{v}")))
                    .with_num_partitions(2)
                    .with_replication_factor(1),
            ])
    })
    .await
    {
        assert_eq!(r.topics[0].error_code, 0, "CreateTopics v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        MetadataRequest::default().with_topics(Some(vec![
            MetadataRequestTopic::default().with_name(Some(name("v2"))),
        ]))
    })
    .await
    {
        assert_eq!(r.topics[0].partitions.len(), 2, "Metadata v{v}");
        assert_eq!(r.error_code, 0, "Metadata v{v}: no top-level error (v13)");
    }
    let mut produced = 0;
    for (v, r) in every_version(k, &mut seen, |v| {
        produce_request("v2", 1, batch(&[rec("k", "v", i64::from(v))], 0, None), 1)
    })
    .await
    {
        let p = &r.responses[0].partition_responses[0];
        assert_eq!((p.error_code, p.base_offset), (0, produced), "Produce v{v}");
        produced += 1;
    }
    let v2_id = k
        .call(
            &MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name("v2"))),
            ])),
            12,
        )
        .await
        .topics[0]
        .topic_id;
    for (v, r) in every_version(k, &mut seen, |v| {
        let mut request = fetch_request("v2", 1, 0, 0);
        if v >= 13 {
            request.topics[0].topic = Default::default();
            request.topics[0].topic_id = v2_id;
        }
        request
    })
    .await
    {
        let t = &r.responses[0];
        if v >= 13 {
            assert_eq!(t.topic_id, v2_id, "Fetch v{v}");
        }
        let p = &t.partitions[0];
        assert_eq!(
            (p.error_code, p.high_watermark),
            (0, produced),
            "Fetch v{v}"
        );
        assert_eq!(
            read_batches(p.records.clone().unwrap()).len() as i64,
            produced,
            "Fetch v{v}"
        );
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        ListOffsetsRequest::default()
            .with_timeout_ms(5000)
            .with_replica_id((-1).into())
            .with_topics(vec![
                ListOffsetsTopic::default()
                    .with_name(name("v2"))
                    .with_partitions(vec![
                        ListOffsetsPartition::default()
                            .with_partition_index(1)
                            .with_timestamp(-1),
                    ]),
            ])
    })
    .await
    {
        assert_eq!(
            r.topics[0].partitions[0].offset, produced,
            "ListOffsets v{v}"
        );
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        InitProducerIdRequest::default().with_transactional_id(None)
    })
    .await
    {
        assert!(
            r.error_code == 0 && r.producer_id.0 >= 0,
            "InitProducerId v{v}"
        );
    }
    // The transaction APIs, for a transactional id the coordinator never saw: Kafka's
    // INVALID_PRODUCER_ID_MAPPING, or TRANSACTIONAL_ID_NOT_FOUND when described.
    {
        use kafka_protocol::messages::add_partitions_to_txn_request::{
            AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
        };
        use kafka_protocol::messages::txn_offset_commit_request::{
            TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
        };
        use kafka_protocol::messages::{
            AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, DescribeTransactionsRequest,
            EndTxnRequest, GroupId, ListTransactionsRequest, ProducerId, TransactionalId,
            TxnOffsetCommitRequest,
        };
        let unseen = || TransactionalId(StrBytes::from_static_str("never-seen"));
        let topics = || {
            vec![
                AddPartitionsToTxnTopic::default()
                    .with_name(name("v2"))
                    .with_partitions(vec![0]),
            ]
        };
        for (v, r) in every_version(k, &mut seen, |v| {
            if v >= 4 {
                AddPartitionsToTxnRequest::default().with_transactions(vec![
                    AddPartitionsToTxnTransaction::default()
                        .with_transactional_id(unseen())
                        .with_producer_id(ProducerId(5))
                        .with_topics(topics()),
                ])
            } else {
                AddPartitionsToTxnRequest::default()
                    .with_v3_and_below_transactional_id(unseen())
                    .with_v3_and_below_producer_id(ProducerId(5))
                    .with_v3_and_below_topics(topics())
            }
        })
        .await
        {
            let topics = if v >= 4 {
                &r.results_by_transaction[0].topic_results
            } else {
                &r.results_by_topic_v3_and_below
            };
            let code = topics[0].results_by_partition[0].partition_error_code;
            assert_eq!(code, 49, "AddPartitionsToTxn v{v}");
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            AddOffsetsToTxnRequest::default()
                .with_transactional_id(unseen())
                .with_producer_id(ProducerId(5))
                .with_group_id(GroupId(StrBytes::from_static_str("g")))
        })
        .await
        {
            assert_eq!(r.error_code, 49, "AddOffsetsToTxn v{v}");
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            EndTxnRequest::default()
                .with_transactional_id(unseen())
                .with_producer_id(ProducerId(5))
                .with_committed(true)
        })
        .await
        {
            assert_eq!(r.error_code, 49, "EndTxn v{v}");
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            TxnOffsetCommitRequest::default()
                .with_transactional_id(unseen())
                .with_group_id(GroupId(StrBytes::from_static_str("g")))
                .with_producer_id(ProducerId(5))
                .with_topics(vec![
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(name("v2"))
                        .with_partitions(vec![
                            TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(0)
                                .with_committed_offset(1),
                        ]),
                ])
        })
        .await
        {
            let code = r.topics[0].partitions[0].error_code;
            assert!(matches!(code, 48 | 49), "TxnOffsetCommit v{v}: {code}");
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            DescribeTransactionsRequest::default().with_transactional_ids(vec![unseen()])
        })
        .await
        {
            let state = &r.transaction_states[0];
            assert_eq!(
                (state.error_code, state.transactional_id.as_str()),
                (105, "never-seen"),
                "DescribeTransactions v{v}"
            );
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            ListTransactionsRequest::default()
                .with_state_filters(vec![StrBytes::from_static_str("NoSuchState")])
        })
        .await
        {
            assert_eq!(
                (
                    r.error_code,
                    r.transaction_states.len(),
                    r.unknown_state_filters.len()
                ),
                (0, 0, 1),
                "ListTransactions v{v}"
            );
        }
    }
    for (v, r) in every_version(k, &mut seen, |v| {
        if v >= 4 {
            FindCoordinatorRequest::default()
                .with_coordinator_keys(vec![StrBytes::from_static_str("g")])
        } else {
            FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("g"))
        }
    })
    .await
    {
        let (error_code, node_id, port) = match r.coordinators.first() {
            Some(c) if v >= 4 => (c.error_code, c.node_id, c.port),
            _ => (r.error_code, r.node_id, r.port),
        };
        assert_eq!(
            (error_code, node_id.0, port),
            (
                0,
                0,
                s.kafka
                    .as_ref()
                    .unwrap()
                    .rsplit_once(':')
                    .unwrap()
                    .1
                    .parse()
                    .unwrap()
            ),
            "FindCoordinator v{v}"
        );
    }
    let group = || GroupId(StrBytes::from_static_str("g"));
    for (v, r) in every_version(k, &mut seen, |v| {
        JoinGroupRequest::default()
            .with_group_id(group())
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(if v >= 1 { 10_000 } else { -1 })
            .with_protocol_type(StrBytes::from_static_str("consumer"))
    })
    .await
    {
        // No protocol named: nothing every member could agree on.
        assert_eq!(r.error_code, 23, "JoinGroup v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        SyncGroupRequest::default().with_group_id(group())
    })
    .await
    {
        assert_eq!(r.error_code, 25, "SyncGroup v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        HeartbeatRequest::default().with_group_id(group())
    })
    .await
    {
        assert_eq!(r.error_code, 25, "Heartbeat v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        LeaveGroupRequest::default().with_group_id(group())
    })
    .await
    {
        // v0–2 name one member (unknown here); v3+ a list (empty here).
        assert_eq!(r.error_code, if v < 3 { 25 } else { 0 }, "LeaveGroup v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        OffsetCommitRequest::default()
            .with_group_id(group())
            .with_generation_id_or_member_epoch(-1)
            .with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(name("v2"))
                    .with_partitions(vec![
                        OffsetCommitRequestPartition::default()
                            .with_partition_index(1)
                            .with_committed_offset(3),
                    ]),
            ])
    })
    .await
    {
        assert_eq!(r.topics[0].partitions[0].error_code, 0, "OffsetCommit v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |v| {
        if v >= 8 {
            use kafka_protocol::messages::offset_fetch_request::{
                OffsetFetchRequestGroup, OffsetFetchRequestTopics,
            };
            return OffsetFetchRequest::default().with_groups(vec![
                OffsetFetchRequestGroup::default()
                    .with_group_id(group())
                    .with_topics(Some(vec![
                        OffsetFetchRequestTopics::default()
                            .with_name(name("v2"))
                            .with_partition_indexes(vec![1]),
                    ])),
            ]);
        }
        OffsetFetchRequest::default()
            .with_group_id(group())
            .with_topics(Some(vec![
                OffsetFetchRequestTopic::default()
                    .with_name(name("v2"))
                    .with_partition_indexes(vec![1]),
            ]))
    })
    .await
    {
        let (error_code, offset) = if v >= 8 {
            let p = &r.groups[0].topics[0].partitions[0];
            (p.error_code, p.committed_offset)
        } else {
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.committed_offset)
        };
        assert_eq!((error_code, offset), (0, 3), "OffsetFetch v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        DescribeGroupsRequest::default().with_groups(vec![group()])
    })
    .await
    {
        assert_eq!(r.groups[0].error_code, 0, "DescribeGroups v{v}");
        assert_eq!(
            r.groups[0].group_state.as_str(),
            "Empty",
            "DescribeGroups v{v}"
        );
    }
    for (v, r) in every_version(k, &mut seen, |_| ListGroupsRequest::default()).await {
        assert_eq!(r.error_code, 0, "ListGroups v{v}");
        assert!(
            r.groups.iter().any(|g| g.group_id.as_str() == "g"),
            "ListGroups v{v}"
        );
    }
    use kafka_protocol::messages::{
        AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
        alter_configs_request, describe_configs_request, incremental_alter_configs_request,
    };
    for (v, r) in every_version(k, &mut seen, |_| {
        DescribeConfigsRequest::default().with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("v2"))
                .with_configuration_keys(Some(vec![StrBytes::from_static_str("retention.ms")])),
        ])
    })
    .await
    {
        let configs = &r.results[0].configs;
        assert_eq!(
            (configs.len(), configs[0].value.as_deref()),
            (1, Some("604800000")),
            "DescribeConfigs v{v}"
        );
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        AlterConfigsRequest::default().with_resources(vec![
            alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("v2"))
                .with_configs(vec![
                    alter_configs_request::AlterableConfig::default()
                        .with_name(StrBytes::from_static_str("retention.ms"))
                        .with_value(Some(StrBytes::from_static_str("604800000"))),
                ]),
        ])
    })
    .await
    {
        assert_eq!(r.responses[0].error_code, 0, "AlterConfigs v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |_| {
        IncrementalAlterConfigsRequest::default().with_resources(vec![
            incremental_alter_configs_request::AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("v2"))
                .with_configs(vec![
                    incremental_alter_configs_request::AlterableConfig::default()
                        .with_name(StrBytes::from_static_str("retention.ms"))
                        .with_config_operation(1)
                        .with_value(None),
                ]),
        ])
    })
    .await
    {
        assert_eq!(r.responses[0].error_code, 0, "IncrementalAlterConfigs v{v}");
    }
    {
        use kafka_protocol::messages::{
            DeleteGroupsRequest, DescribeAclsRequest, DescribeClusterRequest,
        };
        for (v, r) in every_version(k, &mut seen, |_| {
            DescribeClusterRequest::default().with_endpoint_type(1)
        })
        .await
        {
            assert_eq!(r.error_code, 0, "DescribeCluster v{v}");
            assert_eq!(
                (r.controller_id.0, r.brokers.len(), r.brokers[0].broker_id.0),
                (0, 1, 0),
                "DescribeCluster v{v}"
            );
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_operation(1)
                .with_permission_type(1)
        })
        .await
        {
            // SECURITY_DISABLED without a token; with one, no ACL at all.
            let want = if token { 0 } else { 54 };
            assert_eq!(r.error_code, want, "DescribeAcls v{v}");
            assert!(r.resources.is_empty(), "DescribeAcls v{v}");
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            DeleteGroupsRequest::default().with_groups_names(vec![group(), group()])
        })
        .await
        {
            // Deleted by the first version, not found by the next ones; named once.
            assert_eq!(r.results.len(), 1, "DeleteGroups v{v}");
            assert_eq!(
                r.results[0].error_code,
                if v == 0 { 0 } else { 69 },
                "DeleteGroups v{v}"
            );
        }
    }
    {
        use kafka_protocol::messages::delete_records_request::{
            DeleteRecordsPartition, DeleteRecordsTopic,
        };
        use kafka_protocol::messages::describe_producers_request::TopicRequest;
        use kafka_protocol::messages::offset_delete_request::{
            OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
        };
        use kafka_protocol::messages::{
            DeleteRecordsRequest, DescribeLogDirsRequest, DescribeProducersRequest,
            OffsetDeleteRequest,
        };
        for (v, r) in every_version(k, &mut seen, |_| {
            DeleteRecordsRequest::default()
                .with_timeout_ms(5000)
                .with_topics(vec![
                    DeleteRecordsTopic::default()
                        .with_name(name("v2"))
                        .with_partitions(vec![
                            DeleteRecordsPartition::default()
                                .with_partition_index(0)
                                .with_offset(-1),
                        ]),
                ])
        })
        .await
        {
            assert_eq!(
                r.topics[0].partitions[0].error_code, 0,
                "DeleteRecords v{v}"
            );
        }
        for (v, r) in every_version(k, &mut seen, |v| {
            use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
            kafka_protocol::messages::CreatePartitionsRequest::default()
                .with_timeout_ms(5000)
                .with_topics(vec![
                    CreatePartitionsTopic::default()
                        .with_name(name("v3"))
                        .with_count(i32::from(v) + 3)
                        .with_assignments(None),
                ])
        })
        .await
        {
            assert_eq!(r.results[0].error_code, 0, "CreatePartitions v{v}");
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            DescribeLogDirsRequest::default().with_topics(None)
        })
        .await
        {
            assert_eq!(r.results.len(), 1, "DescribeLogDirs v{v}");
            assert!(
                r.results[0].topics.iter().any(|t| t.name.as_str() == "v2"),
                "DescribeLogDirs v{v}"
            );
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            OffsetDeleteRequest::default()
                .with_group_id(GroupId(common::kafka::s("nobody")))
                .with_topics(vec![
                    OffsetDeleteRequestTopic::default()
                        .with_name(name("v2"))
                        .with_partitions(vec![
                            OffsetDeleteRequestPartition::default().with_partition_index(0),
                        ]),
                ])
        })
        .await
        {
            assert_eq!(r.error_code, 69, "OffsetDelete v{v}: GROUP_ID_NOT_FOUND");
        }
        for (v, r) in every_version(k, &mut seen, |_| {
            DescribeProducersRequest::default().with_topics(vec![
                TopicRequest::default()
                    .with_name(name("v2"))
                    .with_partition_indexes(vec![0]),
            ])
        })
        .await
        {
            let p = &r.topics[0].partitions[0];
            assert_eq!(p.error_code, 0, "DescribeProducers v{v}");
        }
    }
    for (v, r) in every_version(k, &mut seen, |v| {
        let topic = name(&format!("v{}", v + 1));
        if v >= 6 {
            DeleteTopicsRequest::default()
                .with_timeout_ms(5000)
                .with_topics(vec![DeleteTopicState::default().with_name(Some(topic))])
        } else {
            DeleteTopicsRequest::default()
                .with_timeout_ms(5000)
                .with_topic_names(vec![topic])
        }
    })
    .await
    {
        assert_eq!(r.responses[0].error_code, 0, "DeleteTopics v{v}");
    }
    for (v, r) in every_version(k, &mut seen, |v| {
        use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, GroupId, TopicName};
        // From v1 the client makes the member id.
        ConsumerGroupHeartbeatRequest::default()
            .with_group_id(GroupId(common::kafka::s(&format!("cg-v{v}"))))
            .with_member_id(common::kafka::s(if v >= 1 { "member-1" } else { "" }))
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(vec![TopicName(common::kafka::s("t"))]))
            .with_topic_partitions(Some(vec![]))
    })
    .await
    {
        assert_eq!(
            r.error_code, 0,
            "ConsumerGroupHeartbeat v{v}: {:?}",
            r.error_message
        );
        assert_eq!(r.member_epoch, 1, "ConsumerGroupHeartbeat v{v}");
        assert!(r.member_id.is_some_and(|m| !m.is_empty()));
    }
    for (v, r) in every_version(k, &mut seen, |v| {
        use kafka_protocol::messages::{ConsumerGroupDescribeRequest, GroupId};
        ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(common::kafka::s(&format!("cg-v{v}")))])
    })
    .await
    {
        let g = &r.groups[0];
        assert_eq!(
            (g.error_code, g.members.len()),
            (0, 1),
            "ConsumerGroupDescribe v{v}"
        );
    }
    seen
}

#[tokio::test]
async fn fetch_honours_partition_and_request_max_bytes_but_returns_a_first_large_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    assert_eq!(create_topic(&mut k, "mb", 2, &[]).await, 0);
    let value: &'static [u8] = Box::leak(vec![b'v'; 1000].into_boxed_slice());
    let ten = vec![
        Rec {
            key: None,
            value: Some(value),
            headers: vec![],
            timestamp: 1
        };
        10
    ];
    // Ten batches of one record each: the limits cut between batches.
    for p in 0..2 {
        for i in 0..10 {
            assert_eq!(
                produce_batch(&mut k, "mb", p, batch(&ten[..1], 0, None)).await,
                (0, i)
            );
        }
    }
    let part = |p: i32, max: i32| {
        FetchPartition::default()
            .with_partition(p)
            .with_fetch_offset(0)
            .with_partition_max_bytes(max)
    };
    let ask = |max_bytes: i32, parts: Vec<FetchPartition>| {
        fetch_request("mb", 0, 0, 0)
            .with_max_bytes(max_bytes)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(name("mb"))
                    .with_partitions(parts),
            ])
    };
    let counts = |r: &kafka_protocol::messages::FetchResponse| -> Vec<usize> {
        r.responses[0]
            .partitions
            .iter()
            .map(|p| read_batches(p.records.clone().unwrap()).len())
            .collect()
    };
    // Per partition: 2,500 bytes hold two batches of a record of 1,000.
    let r = k
        .call(&ask(1 << 20, vec![part(0, 2500), part(1, 2500)]), 12)
        .await;
    assert_eq!(counts(&r), [2, 2]);
    // The request's max_bytes: the first partition takes it, the second gets none.
    let r = k
        .call(&ask(3500, vec![part(0, 1 << 20), part(1, 1 << 20)]), 12)
        .await;
    assert_eq!(counts(&r), [3, 0]);
    assert_eq!(r.responses[0].partitions[1].high_watermark, 10);
    // A first batch larger than every limit still comes, alone.
    let r = k.call(&ask(10, vec![part(0, 10), part(1, 10)]), 12).await;
    assert_eq!(counts(&r), [1, 0]);
}

/// A request frame of `key` at `version` (a header v1: no tagged fields) with `body`.
fn raw_request(key: i16, version: i16, correlation: i32, body: &[u8]) -> Vec<u8> {
    let mut frame = BytesMut::new();
    use bytes::BufMut;
    frame.put_i16(key);
    frame.put_i16(version);
    frame.put_i32(correlation);
    frame.put_i16(-1);
    frame.put_slice(body);
    frame.to_vec()
}

fn put_str(out: &mut BytesMut, s: &str) {
    use bytes::BufMut;
    out.put_i16(s.len() as i16);
    out.put_slice(s.as_bytes());
}

#[tokio::test]
async fn old_versions_are_served_or_refused_in_their_own_layout() {
    use bytes::BufMut;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let s = start(&dir, &[]).await;
    let mut k = Kafka::connect(&s).await;
    let served = kafko_kafka::served_apis();
    let old = |key: i16| {
        let api = served.iter().find(|a| a.key == key).unwrap();
        *api.versions.start()..*api.codec_versions.start()
    };
    let mut driven = std::collections::BTreeSet::new();

    // CreateTopics v0 (name, error) and v1 (and the message).
    for v in old(19) {
        driven.insert((19, v));
        let mut body = BytesMut::new();
        body.put_i32(2);
        for (topic, partitions) in [(format!("old{v}"), 3), (format!("old{v}x"), 0)] {
            put_str(&mut body, &topic);
            body.put_i32(partitions);
            body.put_i16(1);
            body.put_i32(0); // assignments
            body.put_i32(0); // configs
        }
        body.put_i32(5000);
        if v == 1 {
            body.put_u8(0);
        }
        k.write_frame(&raw_request(19, v, 40 + i32::from(v), &body))
            .await;
        let mut b = k.read_frame().await;
        assert_eq!(b.get_i32(), 40 + i32::from(v));
        assert_eq!(b.get_i32(), 2);
        for (topic, expected) in [(format!("old{v}"), 0), (format!("old{v}x"), 37)] {
            let len = b.get_i16() as usize;
            assert_eq!(&b.split_to(len)[..], topic.as_bytes());
            assert_eq!(b.get_i16(), expected, "CreateTopics v{v}");
            if v == 1 {
                let len = b.get_i16();
                if expected == 0 {
                    assert_eq!(len, -1);
                } else {
                    b.advance(len as usize);
                }
            }
        }
        assert!(b.is_empty());
    }
    // ListOffsets v0: latest and earliest as lists of one offset; an unknown partition.
    let records = [rec("a", "1", 1000), rec("b", "2", 2000)];
    assert_eq!(
        produce_batch(&mut k, "old0", 1, batch(&records, 0, None)).await,
        (0, 0)
    );
    for v in old(2) {
        driven.insert((2, v));
        let mut body = BytesMut::new();
        body.put_i32(-1);
        body.put_i32(1);
        put_str(&mut body, "old0");
        body.put_i32(3);
        for (partition, timestamp) in [(1, -1i64), (1, -2), (9, -1)] {
            // Listed twice: INVALID_REQUEST for both listings, as Kafka answers.
            let partition = if timestamp == -2 { 2 } else { partition };
            body.put_i32(partition);
            body.put_i64(timestamp);
            body.put_i32(1);
        }
        k.write_frame(&raw_request(2, v, 50, &body)).await;
        let mut b = k.read_frame().await;
        assert_eq!(b.get_i32(), 50);
        assert_eq!(b.get_i32(), 1);
        let len = b.get_i16() as usize;
        assert_eq!(&b.split_to(len)[..], b"old0");
        assert_eq!(b.get_i32(), 3);
        for (partition, error, offsets) in [(1, 0, vec![2]), (2, 0, vec![0]), (9, 3, vec![])] {
            assert_eq!((b.get_i32(), b.get_i16()), (partition, error));
            let n = b.get_i32();
            let got: Vec<i64> = (0..n).map(|_| b.get_i64()).collect();
            assert_eq!(got, offsets, "ListOffsets v{v} partition {partition}");
        }
        assert!(b.is_empty());
    }
    // Produce v0–2 and Fetch v0–3 (message formats v0/v1) are refused per partition.
    for v in 0..=2 {
        let mut body = BytesMut::new();
        body.put_i16(1);
        body.put_i32(1000);
        body.put_i32(1);
        put_str(&mut body, "old0");
        body.put_i32(1);
        body.put_i32(0);
        body.put_i32(3);
        body.put_slice(b"old");
        k.write_frame(&raw_request(0, v, 60, &body)).await;
        let mut b = k.read_frame().await;
        assert_eq!(b.get_i32(), 60);
        b.advance(4 + 2 + 4 + 4 + 4);
        assert_eq!(b.get_i16(), 35, "Produce v{v}: UNSUPPORTED_VERSION");
    }
    for v in 0..=3 {
        let mut body = BytesMut::new();
        body.put_i32(-1);
        body.put_i32(0);
        body.put_i32(0);
        if v == 3 {
            body.put_i32(1 << 20);
        }
        body.put_i32(1);
        put_str(&mut body, "old0");
        body.put_i32(1);
        body.put_i32(1);
        body.put_i64(0);
        body.put_i32(1 << 20);
        k.write_frame(&raw_request(1, v, 70, &body)).await;
        let mut b = k.read_frame().await;
        assert_eq!(b.get_i32(), 70);
        if v >= 1 {
            assert_eq!(b.get_i32(), 0);
        }
        b.advance(4 + 2 + 4 + 4 + 4);
        assert_eq!(b.get_i16(), 35, "Fetch v{v}: UNSUPPORTED_VERSION");
    }
    // Every old version the table serves was driven above.
    let advertised: std::collections::BTreeSet<(i16, i16)> = served
        .iter()
        .flat_map(|a| old(a.key).map(move |v| (a.key, v)))
        .collect();
    assert_eq!(driven, advertised);
    // The connection still serves; each refusal is in the log at info.
    assert_eq!(list_offset(&mut k, "old0", 1, -1).await.1, 2);
    assert_eq!(refusals_logged_at_info(&dir), 3 + 4);
}

/// How many refused request versions the server's log holds, each at `info`: a line
/// saying so is an INFO line.
fn refusals_logged_at_info(dir: &std::path::Path) -> usize {
    let log = std::fs::read_to_string(dir.with_extension("log")).unwrap();
    let refused: Vec<&str> = log
        .lines()
        .filter(|line| line.contains("refused a Kafka request version"))
        .collect();
    for line in &refused {
        assert!(line.contains(" INFO "), "logged at info: {line}");
    }
    refused.len()
}

#[tokio::test]
async fn transactions_v2_versions_are_served_and_the_feature_is_not_advertised() {
    use kafka_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{
        ApiVersionsRequest, EndTxnRequest, GroupId, ProducerId, TransactionalId,
        TxnOffsetCommitRequest,
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let s = start(&dir, &[]).await;
    let mut k = Kafka::connect(&s).await;
    let served = kafko_kafka::served_apis();
    let newest = |key: i16| {
        *served
            .iter()
            .find(|api| api.key == key)
            .unwrap()
            .versions
            .end()
    };
    assert_eq!(newest(EndTxnRequest::KEY), 5);
    assert_eq!(newest(TxnOffsetCommitRequest::KEY), 5);
    // ApiVersions finalizes no `transaction.version`: clients keep to transactions v1
    // unless they pick v5 themselves.
    let versions = k.call(&ApiVersionsRequest::default(), 3).await;
    assert!(
        versions
            .finalized_features
            .iter()
            .all(|f| f.name.as_str() != "transaction.version"),
        "{:?}",
        versions.finalized_features
    );
    // Served by the coordinator: an unknown transactional id, in each API's layout.
    let tx = || TransactionalId(StrBytes::from_static_str("tx"));
    let r = k
        .call(
            &EndTxnRequest::default()
                .with_transactional_id(tx())
                .with_producer_id(ProducerId(5))
                .with_committed(true),
            5,
        )
        .await;
    assert_eq!(
        (r.error_code, r.producer_id.0, r.producer_epoch),
        (49, -1, -1),
        "EndTxn v5: INVALID_PRODUCER_ID_MAPPING"
    );
    assert_eq!(create_topic(&mut k, "t", 3, &[]).await, 0);
    let r = k
        .call(
            &TxnOffsetCommitRequest::default()
                .with_transactional_id(tx())
                .with_group_id(GroupId(StrBytes::from_static_str("g")))
                .with_producer_id(ProducerId(5))
                .with_topics(vec![
                    TxnOffsetCommitRequestTopic::default()
                        .with_name(name("t"))
                        .with_partitions(vec![
                            TxnOffsetCommitRequestPartition::default().with_partition_index(0),
                            TxnOffsetCommitRequestPartition::default().with_partition_index(2),
                        ]),
                ]),
            5,
        )
        .await;
    let rows: Vec<(i32, i16)> = r.topics[0]
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.error_code))
        .collect();
    assert_eq!(rows, [(0, 49), (2, 49)], "TxnOffsetCommit v5");
    // Nothing was refused.
    assert_eq!(refusals_logged_at_info(&dir), 0);
}

#[tokio::test]
async fn metadata_v0s_empty_topic_list_means_every_topic() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    for topic in ["apples", "pears"] {
        assert_eq!(create_topic(&mut k, topic, 2, &[]).await, 0);
    }
    let names = |r: &kafka_protocol::messages::MetadataResponse| {
        let mut v: Vec<String> = r
            .topics
            .iter()
            .map(|t| t.name.as_ref().unwrap().to_string())
            .collect();
        v.sort();
        v
    };
    // v0 has no null list: an empty one asks for every topic, as v1's null does.
    let every = k
        .call(&MetadataRequest::default().with_topics(Some(vec![])), 0)
        .await;
    let listed = names(&every);
    assert!(
        ["apples", "pears"]
            .iter()
            .all(|t| listed.iter().any(|n| n == t)),
        "{listed:?}"
    );
    for t in &every.topics {
        if !t.name.as_ref().unwrap().starts_with("__") {
            assert_eq!((t.error_code, t.partitions.len()), (0, 2), "{:?}", t.name);
        }
    }
    let null_v1 = k
        .call(&MetadataRequest::default().with_topics(None), 1)
        .await;
    assert_eq!(listed, names(&null_v1), "v0's empty list is v1's null");
    // From v1 an empty list asks for none; in v0 a list of names asks for those.
    let none_v1 = k
        .call(&MetadataRequest::default().with_topics(Some(vec![])), 1)
        .await;
    assert!(none_v1.topics.is_empty());
    let one = k
        .call(
            &MetadataRequest::default().with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name("pears"))),
            ])),
            0,
        )
        .await;
    assert_eq!(names(&one), ["pears"]);
}

#[tokio::test]
async fn a_batched_find_coordinator_answers_each_key_once_within_its_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let s = start(&tmp.path().join("d"), &[]).await;
    let mut k = Kafka::connect(&s).await;
    let keys = |n: usize| {
        (0..n)
            .map(|i| StrBytes::from_string(format!("g{i}")))
            .collect::<Vec<_>>()
    };
    let mut twice = keys(3);
    twice.extend(keys(2));
    let r = k
        .call(
            &FindCoordinatorRequest::default().with_coordinator_keys(twice.clone()),
            4,
        )
        .await;
    assert_eq!(r.coordinators.len(), 3);
    assert!(
        r.coordinators
            .iter()
            .all(|c| c.error_code == 0 && c.node_id.0 == 0)
    );
    let r = k
        .call(
            &FindCoordinatorRequest::default()
                .with_key_type(2)
                .with_coordinator_keys(keys(1)),
            6,
        )
        .await;
    assert_eq!(r.coordinators[0].error_code, 42, "no share groups");
    let mut many = Kafka::connect(&s).await;
    many.send(
        &FindCoordinatorRequest::default().with_coordinator_keys(keys(10_001)),
        4,
        &[],
    )
    .await;
    assert!(many.closed_by_server().await);
    let r = k
        .call(
            &FindCoordinatorRequest::default().with_coordinator_keys(keys(10_000)),
            4,
        )
        .await;
    assert_eq!(r.coordinators.len(), 10_000);
}
