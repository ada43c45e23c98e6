//! Group delivery is at-least-once: a poll's records count as read only once the caller
//! confirms them, a confirmed poll is committed by the member's next poll (auto-commit),
//! a commit whose write fails leaves the group exactly where it was, and only a join,
//! poll, commit, seek or configure creates a group.
mod common;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::interposed::{Hook, Interposed};
use kafko_core::{
    ErrorKind, GroupError, GroupPollOptions, Kafko, PartitionOffset, ProducerRecord, TopicConfig,
};

fn opts(max_records: usize) -> GroupPollOptions {
    GroupPollOptions {
        max_records,
        ..Default::default()
    }
}

/// Offsets of the records, in order.
fn offsets(records: &[kafko_core::Record]) -> Vec<u64> {
    records.iter().map(|r| r.offset).collect()
}

async fn with_records(k: &Kafko, n: u64) {
    k.create_topic_with_config(
        "t",
        TopicConfig {
            partitions: 1,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let batch = (0..n)
        .map(|i| ProducerRecord::new(format!("r{i}")))
        .collect();
    k.producer_for("t")
        .unwrap()
        .send_batch(batch)
        .await
        .unwrap();
}

fn committed(k: &Kafko, group: &str) -> Option<u64> {
    k.group(group).unwrap().describe().unwrap().topics[0].partitions[0].committed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undelivered_poll_puts_its_records_back() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    with_records(&k, 10).await;
    let (g, t) = (k.group("g").unwrap(), k.topic("t").unwrap());

    let lost = g.poll(&t, None, &opts(4)).await.unwrap();
    assert_eq!(offsets(lost.records()), [0, 1, 2, 3]);
    // While the answer is in flight its partition is leased: nobody else reads it.
    let meanwhile = g.poll(&t, None, &opts(4)).await.unwrap();
    assert!(meanwhile.records().is_empty());
    drop(meanwhile);
    drop(lost);

    let again = g.poll(&t, None, &opts(4)).await.unwrap();
    assert_eq!(
        offsets(again.records()),
        [0, 1, 2, 3],
        "lost records came back"
    );
    assert_eq!(committed(&k, "g"), None, "nothing counts as consumed yet");
    let delivered = again.delivered();
    assert_eq!(delivered.len(), 4);
    assert_eq!(committed(&k, "g"), None, "delivery alone commits nothing");

    // The next poll commits what the previous one delivered, then reads on.
    let next = g.poll(&t, None, &opts(4)).await.unwrap();
    assert_eq!(
        next.committed(),
        [PartitionOffset {
            partition: 0,
            offset: 4
        }]
    );
    assert_eq!(committed(&k, "g"), Some(4));
    assert_eq!(offsets(&next.delivered()), [4, 5, 6, 7]);

    // After a restart the group resumes at its last commit: the delivered but
    // uncommitted poll comes again.
    k.shutdown().await.unwrap();
    drop((g, t, k));
    let k = common::open(dir.path()).await;
    let (g, t) = (k.group("g").unwrap(), k.topic("t").unwrap());
    let after = g.poll(&t, None, &opts(100)).await.unwrap();
    assert_eq!(offsets(&after.delivered()), [4, 5, 6, 7, 8, 9]);

    // Leaving commits what the member was delivered.
    let m = g
        .join(&t, Some("m1"), std::time::Duration::from_secs(30))
        .unwrap();
    g.seek(
        &t,
        Some(&m.member_ref()),
        None,
        kafko_core::SeekTo::Offset(2),
    )
    .await
    .unwrap();
    let polled = g
        .poll(&t, Some(&m.member_ref()), &opts(3))
        .await
        .unwrap()
        .delivered();
    assert_eq!(offsets(&polled), [2, 3, 4]);
    g.leave_topic(&t, "m1").await.unwrap();
    assert_eq!(committed(&k, "g"), Some(5));
    k.shutdown().await.unwrap();
}

/// Fails every synced small-file write under `groups/` with ENOSPC while armed.
struct FullDiskForGroups(AtomicBool);

impl Hook for FullDiskForGroups {
    fn before(&self, op: &str, path: &Path) -> io::Result<()> {
        let groups = path.components().any(|c| c.as_os_str() == "groups");
        if self.0.load(Ordering::SeqCst) && op == "write" && groups {
            return Err(io::Error::from_raw_os_error(28));
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_or_commit_whose_write_fails_leaves_the_group_where_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let full = Arc::new(FullDiskForGroups(AtomicBool::new(false)));
    let k = Kafko::builder(dir.path())
        .storage(Arc::new(Interposed(full.clone())))
        .open()
        .await
        .unwrap();
    with_records(&k, 20).await;
    let (g, t) = (k.group("g").unwrap(), k.topic("t").unwrap());
    let first = g.poll(&t, None, &opts(5)).await.unwrap().delivered();
    assert_eq!(offsets(&first), [0, 1, 2, 3, 4]);

    full.0.store(true, Ordering::SeqCst);
    // The poll must commit 0..5 before reading on; the write fails, so it reads nothing
    // and moves nothing.
    let err = g.poll(&t, None, &opts(5)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StorageFull, "{err}");
    let err = g
        .commit(
            &t,
            None,
            Some(&[PartitionOffset {
                partition: 0,
                offset: 15,
            }]),
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::StorageFull, "{err}");
    let d = g.describe().unwrap();
    assert_eq!(d.topics[0].partitions[0].committed, None);
    assert_eq!(d.topics[0].partitions[0].position, Some(5));

    full.0.store(false, Ordering::SeqCst);
    let next = g.poll(&t, None, &opts(5)).await.unwrap();
    assert_eq!(
        offsets(next.records()),
        [5, 6, 7, 8, 9],
        "no record skipped or doubled"
    );
    assert_eq!(committed(&k, "g"), Some(5));
    drop(next.delivered());
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_joins_polls_commits_seeks_and_configs_create_groups() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    with_records(&k, 3).await;
    let t = k.topic("t").unwrap();
    let ghost = k.group("ghost").unwrap();
    let not_found = |e: kafko_core::GroupError| matches!(e, GroupError::GroupNotFound { .. });
    assert!(not_found(ghost.leave_topic(&t, "m").await.unwrap_err()));
    assert!(not_found(ghost.describe().unwrap_err()));
    assert!(not_found(ghost.delete().await.unwrap_err()));
    // A refused poll or commit creates nothing either.
    let stranger = kafko_core::MemberRef {
        member_id: "m".into(),
        generation: 1,
    };
    let err = ghost.poll(&t, Some(&stranger), &opts(1)).await.unwrap_err();
    assert!(matches!(err, GroupError::UnknownMember { .. }), "{err}");
    let err = ghost
        .commit(
            &t,
            None,
            Some(&[PartitionOffset {
                partition: 0,
                offset: 99,
            }]),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, GroupError::OffsetOutOfRange { .. }), "{err}");
    assert!(k.list_groups().is_empty(), "{:?}", k.list_groups());

    // A known group and an unknown member: 409, and the topic entry is not created.
    k.create_topic("other").await.unwrap();
    let other = k.topic("other").unwrap();
    let g = k.group("g").unwrap();
    g.seek(&t, None, None, kafko_core::SeekTo::Latest)
        .await
        .unwrap();
    let err = g.leave_topic(&other, "m").await.unwrap_err();
    assert!(matches!(err, GroupError::UnknownMember { .. }), "{err}");
    let listed = k.list_groups();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].topics, ["t"]);
    k.shutdown().await.unwrap();
}
