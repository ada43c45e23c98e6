//! Transactions in the partitions, on real files: the last stable offset, read-committed
//! and read-uncommitted reads (records, batches with their aborted transactions), a
//! long-poll woken by a marker, the aborted list and open transactions across a clean
//! and an unclean restart, and compaction keeping markers while it drops aborted records.
mod common;

use std::path::Path;
use std::time::Duration;

use common::on_disk::copy_dir;
use kafko_core::{
    CleanupPolicy, FetchError, Isolation, Kafko, KafkoOptions, PartitionReader, TopicConfig,
    TopicHandle,
};
use kafko_test_support::transactions::{append_plain, append_txn, end_txn};

const A: i64 = 1000;
const B: i64 = 1001;
const C: i64 = 1002;

async fn open(dir: &Path) -> Kafko {
    KafkoOptions::new(dir)
        .retention_check_interval(Duration::from_secs(3600))
        .open()
        .await
        .unwrap()
}

/// The offsets `reader` reads from `from` at `isolation`, and where it stopped.
fn offsets(reader: &PartitionReader, from: u64, isolation: Isolation) -> (Vec<u64>, u64) {
    let got = reader.read_with(from, 1000, 1 << 20, isolation).unwrap();
    (
        got.records.iter().map(|r| r.offset).collect(),
        got.next_offset,
    )
}

/// The aborted transactions a read-committed batch read from `from` names.
fn aborted(reader: &PartitionReader, from: u64) -> Vec<(i64, u64)> {
    let got = reader
        .read_batches(from, 1 << 20, true, Isolation::ReadCommitted)
        .unwrap();
    got.aborted
        .iter()
        .map(|a| (a.producer_id, a.first_offset))
        .collect()
}

/// The attributes of each stored batch from `from` (read uncommitted).
fn batch_attributes(reader: &PartitionReader, from: u64) -> Vec<u16> {
    let got = reader
        .read_batches(from, 1 << 20, true, Isolation::ReadUncommitted)
        .unwrap();
    let mut bytes = &got.bytes[..];
    let mut out = Vec::new();
    while bytes.len() >= 61 {
        let len = 12 + i32::from_be_bytes(bytes[8..12].try_into().unwrap()) as usize;
        out.push(u16::from_be_bytes([bytes[21], bytes[22]]));
        bytes = &bytes[len..];
    }
    out
}

/// Writes: plain 0, A's 1–2 (committed at 6), B's 3–4 (aborted at 7), plain 5.
async fn write_two_transactions(t: &TopicHandle, (a, b): (i64, i64)) {
    let p = t.producer();
    let r = t.partition(0).unwrap();
    assert_eq!(append_plain(&p, 0, &[(b"k", b"plain0")], 1).await, 0);
    let two: &[(&[u8], &[u8])] = &[(b"a", b"a1"), (b"a", b"a2")];
    assert_eq!(append_txn(&p, 0, two, (a, 0, 0), 2).await.unwrap(), 1);
    let two: &[(&[u8], &[u8])] = &[(b"b", b"b1"), (b"b", b"b2")];
    assert_eq!(append_txn(&p, 0, two, (b, 0, 0), 3).await.unwrap(), 3);
    assert_eq!(append_plain(&p, 0, &[(b"k", b"plain5")], 4).await, 5);
    let o = r.offsets().unwrap();
    assert_eq!((o.high_watermark, o.last_stable_offset), (6, 1));
    // Read committed stops at the last stable offset; read uncommitted sees it all.
    assert_eq!(offsets(&r, 0, Isolation::ReadCommitted), (vec![0], 1));
    assert_eq!(offsets(&r, 1, Isolation::ReadCommitted), (vec![], 1));
    assert_eq!(
        offsets(&r, 0, Isolation::ReadUncommitted),
        ((0..6).collect(), 6)
    );
    // Batches: none at or past the last stable offset.
    let none = r
        .read_batches(1, 1 << 20, true, Isolation::ReadCommitted)
        .unwrap();
    assert!(none.bytes.is_empty());
    assert_eq!((none.next_offset, none.last_stable_offset), (1, 1));

    // A long-poll at the last stable offset waits for it to move, not for new offsets.
    let waiting = r.clone();
    let poll = tokio::spawn(async move {
        waiting
            .read_wait_with(
                1,
                100,
                1 << 20,
                Duration::from_secs(30),
                Isolation::ReadCommitted,
            )
            .await
            .unwrap()
    });
    while t.waiting_readers() == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(end_txn(t, 0, a, 0, true).await.unwrap(), 6);
    let woken = poll.await.unwrap();
    let got: Vec<u64> = woken.records.iter().map(|r| r.offset).collect();
    assert_eq!(got, vec![1, 2], "A's records, up to B's open transaction");
    assert_eq!(woken.last_stable_offset, 3);

    assert_eq!(end_txn(t, 0, b, 0, false).await.unwrap(), 7);
}

/// The producer id of transactional id `id`, initialized until its epoch is `epoch`,
/// with t/0 in its open transaction.
async fn coordinated(k: &Kafko, id: &str, epoch: i16) -> i64 {
    let mut pid = (0, -1);
    while pid.1 < epoch {
        pid = k
            .init_transactional_producer(id, 60_000, None)
            .await
            .unwrap();
    }
    let t0 = kafko_core::TxnPartition {
        topic: "t".into(),
        partition: 0,
    };
    k.add_partitions_to_txn(id, pid.0, pid.1, &[t0], false)
        .await
        .unwrap();
    pid.0
}

/// What the log of `write_two_transactions` reads as once both are decided.
fn check_decided(r: &PartitionReader, b: i64) {
    let o = r.offsets().unwrap();
    assert_eq!((o.high_watermark, o.last_stable_offset), (8, 8));
    // B's records are left out, and so are both markers.
    assert_eq!(
        offsets(r, 0, Isolation::ReadCommitted),
        (vec![0, 1, 2, 5], 8)
    );
    assert_eq!(
        offsets(r, 0, Isolation::ReadUncommitted),
        ((0..6).collect(), 8)
    );
    assert_eq!(offsets(r, 3, Isolation::ReadCommitted), (vec![5], 8));
    assert_eq!(aborted(r, 0), vec![(b, 3)]);
    // Past the aborted transaction's marker none is named.
    assert_eq!(aborted(r, 8), vec![]);
    // The default record read is read committed.
    let default: Vec<u64> = r
        .read(0, 100, 1 << 20)
        .unwrap()
        .records
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(default, vec![0, 1, 2, 5]);
}

#[tokio::test]
async fn stable_offsets_reads_and_aborted_transactions_survive_clean_and_unclean_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("d");
    let (a, b, c);
    {
        let k = open(&dir).await;
        k.create_topic("t").await.unwrap();
        // Producers the coordinator knows with t/0 in an open transaction: an open finds
        // a partition's open transactions listed there, and keeps them.
        a = coordinated(&k, "a", 0).await;
        b = coordinated(&k, "b", 0).await;
        c = coordinated(&k, "c", 3).await;
        let t = k.topic("t").unwrap();
        write_two_transactions(&t, (a, b)).await;
        check_decided(&t.partition(0).unwrap(), b);
        // A marker from an older epoch is fenced.
        let p = t.producer();
        assert_eq!(
            append_txn(&p, 0, &[(b"c", b"c1")], (c, 3, 0), 5)
                .await
                .unwrap(),
            8
        );
        let fenced = end_txn(&t, 0, c, 2, true).await.unwrap_err();
        assert!(fenced.to_string().contains("epoch"), "{fenced}");
        assert_eq!(
            t.partition(0)
                .unwrap()
                .offsets()
                .unwrap()
                .last_stable_offset,
            8
        );
        k.shutdown().await.unwrap();
    }
    // Clean restart: the snapshot written at shutdown carries C's open transaction and
    // the aborted list.
    let k = open(&dir).await;
    let t = k.topic("t").unwrap();
    let r = t.partition(0).unwrap();
    assert_eq!(r.offsets().unwrap().last_stable_offset, 8);
    assert_eq!(
        offsets(&r, 0, Isolation::ReadCommitted),
        (vec![0, 1, 2, 5], 8)
    );
    assert_eq!(aborted(&r, 0), vec![(b, 3)]);
    let states = t.producer().producer_states(0).unwrap();
    let c_state = states.iter().find(|s| s.producer_id == c).unwrap();
    assert_eq!(c_state.current_txn_start_offset, Some(8));
    // C aborts; then a copy of the live directory is a stop with no shutdown: the open
    // folds the log from the snapshot on.
    assert_eq!(end_txn(&t, 0, c, 3, false).await.unwrap(), 9);
    let p = t.producer();
    assert_eq!(
        append_txn(&p, 0, &[(b"a", b"a3")], (a, 0, 2), 6)
            .await
            .unwrap(),
        10
    );
    let copy = tmp.path().join("copy");
    copy_dir(&dir, &copy);
    k.shutdown().await.unwrap();
    drop(k);
    let k = open(&copy).await;
    let t = k.topic("t").unwrap();
    let r = t.partition(0).unwrap();
    let o = r.offsets().unwrap();
    assert_eq!((o.high_watermark, o.last_stable_offset), (11, 10));
    assert_eq!(aborted(&r, 0), vec![(b, 3), (c, 8)]);
    assert_eq!(
        offsets(&r, 0, Isolation::ReadCommitted),
        (vec![0, 1, 2, 5], 10)
    );
    let open_txn = t
        .producer()
        .producer_states(0)
        .unwrap()
        .into_iter()
        .find(|s| s.producer_id == a)
        .unwrap();
    assert_eq!(open_txn.current_txn_start_offset, Some(10));
    assert_eq!(end_txn(&t, 0, a, 0, true).await.unwrap(), 11);
    assert_eq!(
        offsets(&r, 0, Isolation::ReadCommitted),
        (vec![0, 1, 2, 5, 10], 12)
    );
    // A transactional batch goes only through its transaction's append.
    let plain_path =
        kafko_test_support::transactions::batch(&[(b"x", b"y")], Some((a, 0, 3)), true, 7);
    let refused = p_append(&t, plain_path).await;
    assert!(refused.contains("transaction"), "{refused}");
    // The coordinator's answer is asked under the producer's turn, and refuses.
    let b = kafko_test_support::transactions::batch(&[(b"x", b"y")], Some((a, 0, 3)), true, 7);
    let no = t
        .producer()
        .append_transactional(0, b, Default::default(), || {
            Err(kafko_core::ProducerRejection::NotInTransaction)
        })
        .await
        .unwrap_err();
    assert!(no.to_string().contains("no ongoing transaction"), "{no}");
    assert_eq!(r.offsets().unwrap().high_watermark, 12);
    k.shutdown().await.unwrap();
}

async fn p_append(t: &TopicHandle, b: kafko_core::ProducedBatch) -> String {
    t.producer()
        .append_batch(0, b, Default::default())
        .await
        .unwrap_err()
        .to_string()
}

#[tokio::test]
async fn delete_records_past_an_aborted_transaction_forgets_it() {
    let tmp = tempfile::tempdir().unwrap();
    let k = open(tmp.path()).await;
    k.create_topic("t").await.unwrap();
    let t = k.topic("t").unwrap();
    write_two_transactions(&t, (A, B)).await;
    t.delete_records(0, Some(7)).await.unwrap();
    let r = t.partition(0).unwrap();
    // Its marker is still there: it stays.
    assert_eq!(aborted(&r, 7), vec![(B, 3)]);
    t.delete_records(0, Some(8)).await.unwrap();
    assert_eq!(aborted(&r, 8), vec![]);
    assert!(matches!(
        r.read_with(5, 10, 1 << 20, Isolation::ReadCommitted),
        Err(FetchError::OffsetOutOfRange { .. })
    ));
    k.shutdown().await.unwrap();
}

#[tokio::test]
async fn compaction_cleans_below_the_last_stable_offset_drops_aborted_records_keeps_markers() {
    let tmp = tempfile::tempdir().unwrap();
    let k = open(tmp.path()).await;
    let config = TopicConfig {
        cleanup_policy: CleanupPolicy::Compact,
        segment_bytes: 4096,
        ..Default::default()
    };
    k.create_topic_with_config("t", config).await.unwrap();
    let t = k.topic("t").unwrap();
    let p = t.producer();
    let r = t.partition(0).unwrap();
    // C's transaction stays open over the first segments: nothing is cleaned.
    assert_eq!(
        append_txn(&p, 0, &[(b"c", b"c0")], (C, 0, 0), 1)
            .await
            .unwrap(),
        0
    );
    assert_eq!(append_plain(&p, 0, &[(b"k", b"old")], 1).await, 1);
    assert_eq!(
        append_txn(&p, 0, &[(b"k", b"committed")], (A, 0, 0), 2)
            .await
            .unwrap(),
        2
    );
    assert_eq!(end_txn(&t, 0, A, 0, true).await.unwrap(), 3);
    // B writes k and j, then aborts: k stays "committed", j is gone.
    let bs: &[(&[u8], &[u8])] = &[(b"k", b"aborted"), (b"j", b"aborted")];
    assert_eq!(append_txn(&p, 0, bs, (B, 0, 0), 3).await.unwrap(), 4);
    assert_eq!(end_txn(&t, 0, B, 0, false).await.unwrap(), 6);
    // Fillers of 3000 bytes: each rolls a segment, so the ones before are sealed.
    let filler = vec![b'f'; 3000];
    for i in 0..4u8 {
        append_plain(&p, 0, &[(&[b'z', i], &filler)], 4).await;
    }
    let outcome = k.compact_now("t").await.unwrap();
    assert_eq!(outcome.records_removed, 0, "all behind an open transaction");
    assert_eq!(end_txn(&t, 0, C, 0, true).await.unwrap(), 11);
    for i in 4..8u8 {
        append_plain(&p, 0, &[(&[b'z', i], &filler)], 5).await;
    }
    let outcome = k.compact_now("t").await.unwrap();
    assert!(outcome.records_removed >= 3, "{outcome:?}");
    let all = r
        .read_with(0, 100, 1 << 20, Isolation::ReadUncommitted)
        .unwrap();
    let kv: Vec<(u64, &[u8], &[u8])> = all
        .records
        .iter()
        .filter(|r| !r.key.as_ref().unwrap().starts_with(b"z"))
        .map(|r| {
            (
                r.offset,
                &r.key.as_ref().unwrap()[..],
                &r.value.as_ref().unwrap()[..],
            )
        })
        .collect();
    assert_eq!(
        kv,
        vec![
            (0, &b"c"[..], &b"c0"[..]),
            (2, &b"k"[..], &b"committed"[..])
        ],
        "the old value and both of B's aborted records are gone"
    );
    // The three markers are still stored, as they were.
    let markers = batch_attributes(&r, 0)
        .into_iter()
        .filter(|a| a & 0x20 != 0)
        .count();
    assert_eq!(markers, 3);
    assert_eq!(
        r.offsets().unwrap().last_stable_offset,
        r.offsets().unwrap().high_watermark
    );
    k.shutdown().await.unwrap();
}
