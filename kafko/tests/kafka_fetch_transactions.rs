//! Reads of a log holding transactions, through the server: Kafka Fetch at isolation
//! level 1 serves batches below the last stable offset with the aborted transactions
//! among them, level 0 everything; ListOffsets' latest follows the isolation level; the
//! `/v1` record read is read committed unless asked otherwise. The log is written
//! through kafko-core first (committed, aborted and open transactions), then served.
mod common;

use common::kafka::{Kafka, fetch_request, fetched_batches, list_offsets_request};
use common::{Server, client, json};
use kafko_core::Kafko;
use kafko_test_support::transactions::{append_plain, append_txn, end_txn};

const A: i64 = 7000;
const B: i64 = 7001;

/// Plain 0, A's 1–2 committed at 6, B's 3–4 aborted at 7, plain 5, C's 8 still open:
/// C is a transactional id the coordinator knows with t/0 in its open transaction (an
/// open aborts a partition's open transaction no transactional id lists).
async fn write_log(dir: &std::path::Path) {
    let k = Kafko::open(dir).await.unwrap();
    k.create_topic("t").await.unwrap();
    let t = k.topic("t").unwrap();
    let p = t.producer();
    append_plain(&p, 0, &[(b"k", b"plain0")], 1).await;
    append_txn(&p, 0, &[(b"a", b"a1"), (b"a", b"a2")], (A, 0, 0), 2)
        .await
        .unwrap();
    append_txn(&p, 0, &[(b"b", b"b1"), (b"b", b"b2")], (B, 0, 0), 3)
        .await
        .unwrap();
    append_plain(&p, 0, &[(b"k", b"plain5")], 4).await;
    assert_eq!(end_txn(&t, 0, A, 0, true).await.unwrap(), 6);
    assert_eq!(end_txn(&t, 0, B, 0, false).await.unwrap(), 7);
    let (c, epoch) = k
        .init_transactional_producer("c", 60_000, None)
        .await
        .unwrap();
    let t0 = kafko_core::TxnPartition {
        topic: "t".into(),
        partition: 0,
    };
    k.add_partitions_to_txn("c", c, epoch, &[t0], false)
        .await
        .unwrap();
    assert_eq!(
        append_txn(&p, 0, &[(b"c", b"c1")], (c, epoch, 0), 5)
            .await
            .unwrap(),
        8
    );
    k.shutdown().await.unwrap();
}

#[tokio::test]
async fn fetch_list_offsets_and_v1_reads_follow_the_isolation_level() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    write_log(&dir).await;
    let s = Server::start(&dir, &["--kafka-bind", "127.0.0.1:0"]).await;
    let mut k = Kafka::connect(&s).await;

    // Read committed: up to the last stable offset (C's open transaction at 8), B's
    // aborted transaction named for the client to drop.
    let mut committed = fetch_request("t", 0, 0, 0);
    committed.isolation_level = 1;
    let r = k.call(&committed, 12).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert_eq!((p.high_watermark, p.last_stable_offset), (9, 8));
    let aborted: Vec<(i64, i64)> = p
        .aborted_transactions
        .as_ref()
        .expect("a read-committed answer lists aborted transactions")
        .iter()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect();
    assert_eq!(aborted, vec![(B, 3)]);
    let batches = fetched_batches(p.records.clone().unwrap());
    let bases: Vec<i64> = batches.iter().map(|b| b.base_offset).collect();
    assert_eq!(
        bases,
        vec![0, 1, 3, 5, 6, 7],
        "the markers too, not C's batch"
    );

    // From the last stable offset there is nothing yet to read committed.
    let mut at_lso = fetch_request("t", 0, 8, 0);
    at_lso.isolation_level = 1;
    let r = k.call(&at_lso, 12).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    assert!(p.records.clone().unwrap().is_empty());
    assert_eq!(p.aborted_transactions.as_deref().map(<[_]>::len), Some(0));

    // Read uncommitted: everything, the last stable offset still told.
    let r = k.call(&fetch_request("t", 0, 0, 0), 12).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!((p.high_watermark, p.last_stable_offset), (9, 8));
    assert!(p.aborted_transactions.as_ref().is_none_or(Vec::is_empty));
    let bases: Vec<i64> = fetched_batches(p.records.clone().unwrap())
        .iter()
        .map(|b| b.base_offset)
        .collect();
    assert_eq!(bases, vec![0, 1, 3, 5, 6, 7, 8]);

    // ListOffsets: latest is the last stable offset at isolation level 1.
    for (isolation, latest) in [(0, 9), (1, 8)] {
        let mut request = list_offsets_request("t", 0, -1);
        request.isolation_level = isolation;
        let r = k.call(&request, 7).await;
        assert_eq!(
            r.topics[0].partitions[0].offset, latest,
            "isolation {isolation}"
        );
    }

    // /v1: read committed by default; read_uncommitted on request.
    let c = client();
    let values = |v: &serde_json::Value| -> Vec<String> {
        v["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["value"].as_str().unwrap().to_owned())
            .collect()
    };
    let got = json(c.get(s.url("/v1/topics/t/records")).send().await.unwrap()).await;
    assert_eq!(values(&got), ["plain0", "a1", "a2", "plain5"]);
    assert_eq!(got["next_offset"], 8);
    assert_eq!(got["last_stable_offset"], 8);
    let url = s.url("/v1/topics/t/records?isolation=read_uncommitted");
    let got = json(c.get(url).send().await.unwrap()).await;
    assert_eq!(
        values(&got),
        ["plain0", "a1", "a2", "b1", "b2", "plain5", "c1"]
    );
    let url = s.url("/v1/topics/t/records?isolation=dirty");
    assert_eq!(c.get(url).send().await.unwrap().status(), 400);
}
