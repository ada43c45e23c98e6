//! Independent groups on one topic each receive every record (pub/sub fan-out), and
//! a long poll wakes up when a record arrives.
mod gc_support;

use std::collections::BTreeSet;
use std::time::Duration;

use gc_support::{GroupOps, open, small};
use kafko_core::{Bytes, GroupPollOptions};

#[tokio::test]
async fn two_groups_each_get_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(4)).await.unwrap();
    let p = k.producer_for("t").unwrap();
    let mut sent = BTreeSet::new();
    for i in 0..200u32 {
        let m = p
            .send(
                Some(Bytes::from(format!("key-{i}"))),
                Bytes::from(format!("{i}")),
            )
            .await
            .unwrap();
        sent.insert((m.partition, m.offset));
    }
    let opts = GroupPollOptions {
        max_records: 37,
        auto_commit: true,
        ..Default::default()
    };
    for group in ["billing", "audit"] {
        let mut got = BTreeSet::new();
        loop {
            let batch = k.group_poll(group, "t", &opts).await.unwrap();
            if batch.records.is_empty() {
                break;
            }
            for r in batch.records {
                assert!(got.insert((r.partition, r.offset)), "duplicate for {group}");
            }
        }
        assert_eq!(got, sent, "group {group} missed records");
    }
    // A waiting poll returns as soon as a record lands.
    let waiter = {
        let k = k.clone();
        tokio::spawn(async move {
            let opts = GroupPollOptions {
                wait: Duration::from_secs(10),
                ..Default::default()
            };
            k.group_poll("billing", "t", &opts).await.unwrap()
        })
    };
    // On this one-thread runtime the spawned poll runs at the yield and stops only at
    // its wait: nothing in a poll of an idle group awaits before that.
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished(), "the poll waits: nothing to read yet");
    p.send(Some(Bytes::from("late")), Bytes::from("x"))
        .await
        .unwrap();
    let got = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("long poll did not wake up")
        .unwrap();
    assert_eq!(got.records.len(), 1);
    assert_eq!(got.records[0].value().unwrap(), &Bytes::from("x"));
    let listed: Vec<String> = k.list_groups().into_iter().map(|g| g.group).collect();
    assert_eq!(listed, vec!["audit".to_string(), "billing".to_string()]);
    k.shutdown().await.unwrap();
}
