//! Committed offsets are durable: after a restart every group resumes exactly after its
//! last commit, independently of the others.
mod gc_support;

use gc_support::{GroupOps, open, small};
use kafko_core::{Bytes, CommitOffset, GroupPollOptions, PartitionOffset};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_group_resumes_after_its_last_commit() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(3)).await.unwrap();
    let p = k.producer_for("t").unwrap();
    for i in 0..90u32 {
        p.send(
            Some(Bytes::from(format!("k{i}"))),
            Bytes::from(format!("v{i}")),
        )
        .await
        .unwrap();
    }
    let opts = GroupPollOptions {
        max_records: 20,
        auto_commit: true,
        ..Default::default()
    };
    // "a" reads 40 records with auto-commit: its second poll commits the first 20, and
    // the second 20 stay uncommitted until a third poll; "b" reads 90 and commits
    // explicitly only partition 1 at offset 5; "c" never commits.
    let mut a_seen = Vec::new();
    for _ in 0..2 {
        a_seen.extend(k.group_poll("a", "t", &opts).await.unwrap().records);
    }
    assert_eq!(a_seen.len(), 40);
    let uncommitted: Vec<(u32, u64)> = a_seen[20..]
        .iter()
        .map(|r| (r.partition, r.offset))
        .collect();
    let no_commit = GroupPollOptions {
        max_records: 1000,
        auto_commit: false,
        ..Default::default()
    };
    assert_eq!(
        k.group_poll("b", "t", &no_commit)
            .await
            .unwrap()
            .records
            .len(),
        90
    );
    k.commit_group_offsets(
        "b",
        "t",
        None,
        Some(&[PartitionOffset {
            partition: 1,
            offset: 5,
        }]),
    )
    .await
    .unwrap();
    assert_eq!(
        k.group_poll("c", "t", &no_commit)
            .await
            .unwrap()
            .records
            .len(),
        90
    );
    k.shutdown().await.unwrap();
    drop(k);

    let k = open(dir.path()).await;
    let mut a_rest = Vec::new();
    loop {
        let got = k.group_poll("a", "t", &opts).await.unwrap();
        if got.records.is_empty() {
            break;
        }
        a_rest.extend(got.records);
    }
    // At-least-once: exactly the uncommitted poll comes again, nothing committed does.
    let mut again: Vec<(u32, u64)> = a_rest
        .iter()
        .map(|r| (r.partition, r.offset))
        .filter(|r| a_seen.iter().any(|s| (s.partition, s.offset) == *r))
        .collect();
    again.sort_unstable();
    let mut expected = uncommitted.clone();
    expected.sort_unstable();
    assert_eq!(
        again, expected,
        "only the uncommitted poll is delivered again"
    );
    let mut all: Vec<(u32, u64)> = a_seen
        .iter()
        .chain(&a_rest)
        .map(|r| (r.partition, r.offset))
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 90, "a record was lost across the restart");

    // "b": partition 1 resumes at 5, partitions 0 and 2 had no commit → earliest.
    let b = k.group_poll("b", "t", &no_commit).await.unwrap();
    for part in 0..3u32 {
        let first = b.records.iter().find(|r| r.partition == part).unwrap();
        assert_eq!(first.offset, if part == 1 { 5 } else { 0 });
    }
    // "c" never committed: it starts over.
    assert_eq!(
        k.group_poll("c", "t", &no_commit)
            .await
            .unwrap()
            .records
            .len(),
        90
    );
    let d = k.group("b").and_then(|g| g.describe()).unwrap();
    assert_eq!(d.topics[0].partitions[1].committed, Some(5));
    k.shutdown().await.unwrap();
}

/// A Kafka commit's leader epoch is durable with its offset; a later commit without
/// one replaces it with none, durably too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commits_leader_epoch_survives_a_restart_and_a_commit_without_one_clears_it() {
    let dir = tempfile::tempdir().unwrap();
    let commit = |partition, offset, leader_epoch| CommitOffset {
        partition,
        offset,
        metadata: None,
        leader_epoch,
    };
    let epochs = |k: &kafko_core::Kafko| {
        let committed = k.group("g").unwrap().classic_committed().unwrap();
        committed["t"]
            .iter()
            .map(|o| (o.partition, o.offset, o.leader_epoch))
            .collect::<Vec<_>>()
    };
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(2)).await.unwrap();
    let t = k.topic("t").unwrap();
    let g = k.group("g").unwrap();
    g.classic_commit(None, &t, &[commit(0, 0, Some(3)), commit(1, 0, Some(-1))])
        .await
        .unwrap();
    assert_eq!(epochs(&k), [(0, 0, Some(3)), (1, 0, None)]);
    k.shutdown().await.unwrap();
    drop(k);

    let k = open(dir.path()).await;
    assert_eq!(epochs(&k), [(0, 0, Some(3)), (1, 0, None)]);
    let t = k.topic("t").unwrap();
    let g = k.group("g").unwrap();
    // The same offset without an epoch: the epoch goes.
    g.classic_commit(None, &t, &[commit(0, 0, None), commit(1, 0, Some(0))])
        .await
        .unwrap();
    assert_eq!(epochs(&k), [(0, 0, None), (1, 0, Some(0))]);
    k.shutdown().await.unwrap();
    drop(k);

    let k = open(dir.path()).await;
    assert_eq!(epochs(&k), [(0, 0, None), (1, 0, Some(0))]);
    k.shutdown().await.unwrap();
}
