//! The transaction coordinator on real files: producer ids and epochs, fencing, the
//! requests' checks and bounds, the state surviving restarts (clean and killed), offsets
//! committed only by a commit, the timeout abort (expiry: the timer's unit test in
//! `src/transaction/complete.rs`).
use std::path::Path;
use std::time::Duration;

use kafko_test_support::transactions::{append_plain, append_txn};

use kafko_core::{
    CommitOffset, Isolation, Kafko, KafkoOptions, TopicConfig, TransactionLimits, TxnError,
    TxnPartition, TxnState,
};

fn limits() -> TransactionLimits {
    TransactionLimits {
        max_timeout: Duration::from_secs(60),
        abort_check_interval: Duration::from_millis(20),
        max_transactional_ids: 3,
        max_partitions_per_transaction: 4,
        ..TransactionLimits::default()
    }
}

async fn open_with(dir: &Path, limits: TransactionLimits) -> Kafko {
    let k = KafkoOptions::new(dir)
        .transactions(limits)
        .open()
        .await
        .unwrap();
    if k.find_topic("t").unwrap().is_none() {
        let config = TopicConfig {
            partitions: 3,
            ..TopicConfig::default()
        };
        k.create_topic_with_config("t", config).await.unwrap();
    }
    k
}

fn tp(topic: &str, partition: u32) -> TxnPartition {
    TxnPartition {
        topic: topic.into(),
        partition,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn epochs_fence_older_instances_and_requests_check_id_epoch_and_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let k = open_with(dir.path(), limits()).await;
    assert!(matches!(
        k.init_transactional_producer("a", 61_000, None).await,
        Err(TxnError::InvalidTimeout { max_ms: 60_000 })
    ));
    assert!(matches!(
        k.init_transactional_producer("a", 0, None).await,
        Err(TxnError::InvalidTimeout { .. })
    ));
    let (pid, e0) = k
        .init_transactional_producer("a", 10_000, None)
        .await
        .unwrap();
    assert_eq!(e0, 0);
    let (pid2, e1) = k
        .init_transactional_producer("a", 10_000, None)
        .await
        .unwrap();
    assert_eq!((pid2, e1), (pid, 1));
    // The first instance is fenced everywhere.
    assert!(matches!(
        k.add_offsets_to_txn("a", pid, e0, "g").await,
        Err(TxnError::ProducerFenced)
    ));
    assert!(matches!(
        k.end_txn("a", pid, e0, true).await,
        Err(TxnError::ProducerFenced)
    ));
    assert!(matches!(
        k.add_offsets_to_txn("a", pid + 1, e1, "g").await,
        Err(TxnError::InvalidProducerIdMapping)
    ));
    assert!(matches!(
        k.add_offsets_to_txn("nobody", pid, e1, "g").await,
        Err(TxnError::InvalidProducerIdMapping)
    ));
    // Unknown partitions: named, and nothing is added.
    match k
        .add_partitions_to_txn("a", pid, e1, &[tp("t", 0), tp("t", 9), tp("u", 0)], false)
        .await
    {
        Err(TxnError::UnknownTopicOrPartition(bad)) => assert_eq!(bad, [tp("t", 9), tp("u", 0)]),
        other => panic!("{other:?}"),
    }
    assert_eq!(k.describe_transaction("a").unwrap().state, TxnState::Empty);
    // Nothing open: no end, and no offsets.
    assert!(matches!(
        k.end_txn("a", pid, e1, true).await,
        Err(TxnError::InvalidTxnState)
    ));
    assert!(matches!(
        k.txn_offset_commit("a", pid, e1, "g", "t", &[]).await,
        Err(TxnError::InvalidTxnState)
    ));
    // A verify of a partition not in the (not yet open) transaction fails.
    assert!(matches!(
        k.add_partitions_to_txn("a", pid, e1, &[tp("t", 0)], true)
            .await,
        Err(TxnError::InvalidTxnState)
    ));
    k.add_offsets_to_txn("a", pid, e1, "g").await.unwrap();
    let d = k.describe_transaction("a").unwrap();
    assert_eq!(d.state, TxnState::Ongoing);
    assert!(d.start_ms > 0);
    // Bounds: at most 4 partitions, groups and offsets together.
    let three = [tp("t", 0), tp("t", 1), tp("t", 2), tp("t", 2)];
    k.add_partitions_to_txn("a", pid, e1, &three, false)
        .await
        .unwrap();
    assert!(matches!(
        k.add_offsets_to_txn("a", pid, e1, "g2").await,
        Err(TxnError::TooManyPartitions { max: 4 })
    ));
    assert_eq!(k.describe_transaction("a").unwrap().partitions.len(), 3);
    // And at most 3 transactional ids.
    k.init_transactional_producer("b", 1000, None)
        .await
        .unwrap();
    k.init_transactional_producer("c", 1000, None)
        .await
        .unwrap();
    assert!(matches!(
        k.init_transactional_producer("d", 1000, None).await,
        Err(TxnError::TooManyTransactions { max: 3 })
    ));
    let ids: Vec<String> = k
        .list_transactions()
        .into_iter()
        .map(|d| d.transactional_id)
        .collect();
    assert_eq!(ids, ["a", "b", "c"]);
    // Producer ids are never handed out twice, transactional or not.
    let other = k.allocate_producer_id();
    assert!(k.list_transactions().iter().all(|d| d.producer_id != other));
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_become_the_groups_only_when_the_transaction_commits() {
    let dir = tempfile::tempdir().unwrap();
    let k = open_with(dir.path(), limits()).await;
    let (pid, epoch) = k
        .init_transactional_producer("a", 10_000, None)
        .await
        .unwrap();
    let offset = |partition, offset| CommitOffset {
        partition,
        offset,
        metadata: Some("m".into()),
        leader_epoch: None,
    };
    // An aborted transaction's offsets are dropped.
    k.add_offsets_to_txn("a", pid, epoch, "g").await.unwrap();
    assert!(matches!(
        k.txn_offset_commit("a", pid, epoch, "other", "t", &[offset(0, 1)])
            .await,
        Err(TxnError::InvalidTxnState)
    ));
    assert!(matches!(
        k.txn_offset_commit("a", pid, epoch, "g", "t", &[offset(7, 1)])
            .await,
        Err(TxnError::UnknownTopicOrPartition(_))
    ));
    k.txn_offset_commit("a", pid, epoch, "g", "t", &[offset(0, 5)])
        .await
        .unwrap();
    k.end_txn("a", pid, epoch, false).await.unwrap();
    assert_eq!(
        k.describe_transaction("a").unwrap().state,
        TxnState::CompleteAbort
    );
    // A retry of the same end succeeds; the other end does not.
    k.end_txn("a", pid, epoch, false).await.unwrap();
    assert!(matches!(
        k.end_txn("a", pid, epoch, true).await,
        Err(TxnError::InvalidTxnState)
    ));
    let committed = k.group("g").and_then(|g| g.classic_committed());
    assert!(
        committed.as_ref().map(|c| c.is_empty()).unwrap_or(true),
        "{committed:?}"
    );
    // A committed transaction's offsets are the group's; the later commit of a
    // partition in one transaction wins.
    k.add_offsets_to_txn("a", pid, epoch, "g").await.unwrap();
    k.txn_offset_commit("a", pid, epoch, "g", "t", &[offset(0, 5), offset(1, 2)])
        .await
        .unwrap();
    k.txn_offset_commit("a", pid, epoch, "g", "t", &[offset(0, 6)])
        .await
        .unwrap();
    k.end_txn("a", pid, epoch, true).await.unwrap();
    let committed = k.group("g").unwrap().classic_committed().unwrap();
    let t: Vec<(u32, u64)> = committed["t"]
        .iter()
        .map(|c| (c.partition, c.offset))
        .collect();
    assert_eq!(t, [(0, 6), (1, 2)]);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_state_survives_restarts_and_an_open_transaction_can_still_commit() {
    let dir = tempfile::tempdir().unwrap();
    let (pid, epoch) = {
        let k = open_with(dir.path(), limits()).await;
        let (pid, epoch) = k
            .init_transactional_producer("a", 30_000, None)
            .await
            .unwrap();
        k.add_offsets_to_txn("a", pid, epoch, "g").await.unwrap();
        let o = CommitOffset {
            partition: 2,
            offset: 9,
            metadata: None,
            leader_epoch: Some(4),
        };
        k.txn_offset_commit("a", pid, epoch, "g", "t", &[o])
            .await
            .unwrap();
        k.init_transactional_producer("idle", 1000, None)
            .await
            .unwrap();
        // Not shut down: dropped as a killed process leaves it (the log is fsynced on
        // every append).
        drop(k);
        (pid, epoch)
    };
    let k = open_with(dir.path(), limits()).await;
    let d = k.describe_transaction("a").unwrap();
    assert_eq!(
        (d.state, d.producer_id, d.producer_epoch, d.timeout_ms),
        (TxnState::Ongoing, pid, epoch, 30_000)
    );
    assert_eq!(
        k.describe_transaction("idle").unwrap().state,
        TxnState::Empty
    );
    k.end_txn("a", pid, epoch, true).await.unwrap();
    let committed = k.group("g").unwrap().classic_committed().unwrap();
    assert_eq!(committed["t"][0].offset, 9);
    assert_eq!(committed["t"][0].leader_epoch, Some(4));
    // New producer ids stay above every one the log holds.
    assert!(k.allocate_producer_id() > pid);
    k.shutdown().await.unwrap();
    let k = open_with(dir.path(), limits()).await;
    assert_eq!(
        k.describe_transaction("a").unwrap().state,
        TxnState::CompleteCommit
    );
    // The next instance gets the next epoch, after the restart too.
    assert_eq!(
        k.init_transactional_producer("a", 30_000, None)
            .await
            .unwrap(),
        (pid, epoch + 1)
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let k = open_with(dir.path(), limits()).await;
    let (pid, epoch) = k
        .init_transactional_producer("slow", 100, None)
        .await
        .unwrap();
    k.add_offsets_to_txn("slow", pid, epoch, "g").await.unwrap();
    let o = CommitOffset {
        partition: 0,
        offset: 3,
        metadata: None,
        leader_epoch: None,
    };
    k.txn_offset_commit("slow", pid, epoch, "g", "t", &[o])
        .await
        .unwrap();
    // Its record, then a plain one: a read-committed long poll from the plain record
    // returns once the timer's abort marker moves the last stable offset past it.
    let t0 = TxnPartition {
        topic: "t".into(),
        partition: 0,
    };
    k.add_partitions_to_txn("slow", pid, epoch, &[t0], false)
        .await
        .unwrap();
    let topic = k.topic("t").unwrap();
    let p = topic.producer();
    append_txn(&p, 0, &[(b"k", b"open")], (pid, epoch, 0), 1)
        .await
        .unwrap();
    let plain = append_plain(&p, 0, &[(b"k", b"plain")], 2).await;
    let read = topic
        .partition(0)
        .unwrap()
        .read_wait_with(
            plain,
            10,
            1 << 20,
            Duration::from_secs(30),
            Isolation::ReadCommitted,
        )
        .await
        .unwrap();
    assert_eq!(read.records.len(), 1, "the abort came within the wait");
    assert_eq!(read.records[0].offset, plain);
    // Read committed from the start: the aborted record is skipped.
    let all = topic.partition(0).unwrap().read(0, 10, 1 << 20).unwrap();
    let offsets: Vec<u64> = all.records.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [plain]);
    let d = k.describe_transaction("slow").unwrap();
    assert_eq!(d.producer_epoch, epoch + 1);
    assert!(matches!(
        k.end_txn("slow", pid, epoch, true).await,
        Err(TxnError::ProducerFenced)
    ));
    // Its own abort (after the timer's end, whose lock it waits for) has nothing left
    // to do; its offsets were dropped.
    k.end_txn("slow", pid, epoch, false).await.unwrap();
    assert_eq!(
        k.describe_transaction("slow").unwrap().state,
        TxnState::CompleteAbort
    );
    assert!(
        k.group("g")
            .and_then(|g| g.classic_committed())
            .map(|c| c.is_empty())
            .unwrap_or(true)
    );
    // It may re-initialize naming its fenced epoch (KIP-360); a stranger may not.
    assert!(matches!(
        k.init_transactional_producer("slow", 100, Some((pid + 1, epoch)))
            .await,
        Err(TxnError::ProducerFenced)
    ));
    assert_eq!(
        k.init_transactional_producer("slow", 100, Some((pid, epoch)))
            .await
            .unwrap(),
        (pid, epoch + 2)
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transactions_v2_end_bumps_the_epoch_its_markers_carry_and_its_retry_survives_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let (pid, e0) = {
        let k = open_with(dir.path(), limits()).await;
        let (pid, e0) = k
            .init_transactional_producer("v2", 30_000, None)
            .await
            .unwrap();
        k.add_partitions_to_txn("v2", pid, e0, &[tp("t", 0)], false)
            .await
            .unwrap();
        let p = k.topic("t").unwrap().producer();
        append_txn(&p, 0, &[(b"k", b"one")], (pid, e0, 0), 1)
            .await
            .unwrap();
        assert_eq!(
            k.end_txn_v2("v2", pid, e0, true).await.unwrap(),
            (pid, e0 + 1)
        );
        // The partition knows the new epoch from the marker: the old one is fenced there.
        assert!(
            append_txn(&p, 0, &[(b"k", b"late")], (pid, e0, 1), 2)
                .await
                .is_err()
        );
        // Not shut down: dropped as a killed process leaves it.
        drop(k);
        (pid, e0)
    };
    let k = open_with(dir.path(), limits()).await;
    let d = k.describe_transaction("v2").unwrap();
    assert_eq!(
        (d.state, d.producer_id, d.producer_epoch),
        (TxnState::CompleteCommit, pid, e0 + 1)
    );
    // The retry of the same end, after the restart: the current id and epoch.
    assert_eq!(
        k.end_txn_v2("v2", pid, e0, true).await.unwrap(),
        (pid, e0 + 1)
    );
    assert!(matches!(
        k.end_txn_v2("v2", pid, e0, false).await,
        Err(TxnError::InvalidTxnState)
    ));
    // An older version's end at the old epoch is fenced.
    assert!(matches!(
        k.end_txn("v2", pid, e0, true).await,
        Err(TxnError::ProducerFenced)
    ));
    // The next transaction at the new epoch, from sequence 0.
    k.add_partitions_to_txn("v2", pid, e0 + 1, &[tp("t", 0)], false)
        .await
        .unwrap();
    let p = k.topic("t").unwrap().producer();
    append_txn(&p, 0, &[(b"k", b"two")], (pid, e0 + 1, 0), 3)
        .await
        .unwrap();
    assert_eq!(
        k.end_txn_v2("v2", pid, e0 + 1, false).await.unwrap(),
        (pid, e0 + 2)
    );
    let read = k
        .topic("t")
        .unwrap()
        .partition(0)
        .unwrap()
        .read(0, 10, 1 << 20)
        .unwrap();
    let values: Vec<&[u8]> = read
        .records
        .iter()
        .filter_map(|r| r.value.as_deref())
        .collect();
    assert_eq!(values, [&b"one"[..]]);
    k.shutdown().await.unwrap();
}
