//! One membership per group over every topic its members read: a member of three topics
//! is one member in one generation, another member's join moves the whole group to a
//! new generation and splits each topic by range among the members that read it, and a
//! rebalance loses no record. A data directory written by an earlier build (whose
//! groups were kept per topic) opens with its offsets, and a member of both of a
//! group's topics resumes at them.
mod common;
mod gc_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use gc_support::{open, small};
use kafko_core::{Bytes, GroupError, GroupPollOptions, Kafko, MemberRef, ProducerRecord};

const SESSION: Duration = Duration::from_secs(30);

async fn fill(k: &Kafko, topic: &str, partitions: u32, per_partition: u32) {
    let p = k.producer_for(topic).unwrap();
    for part in 0..partitions {
        for i in 0..per_partition {
            let value = Bytes::from(format!("{topic}-{part}-{i}"));
            p.send_record(ProducerRecord::new(value).with_partition(part))
                .await
                .unwrap();
        }
    }
}

fn no_auto_commit() -> GroupPollOptions {
    GroupPollOptions {
        max_records: 1000,
        auto_commit: false,
        ..Default::default()
    }
}

/// Polls `topic` as `member`, confirms the answer, and returns the values read.
async fn poll(k: &Kafko, topic: &str, member: &MemberRef) -> Result<Vec<String>, GroupError> {
    let g = k.group("g")?;
    let t = k.topic(topic).unwrap();
    let got = g.poll(&t, Some(member), &no_auto_commit()).await?;
    let values = got
        .delivered()
        .iter()
        .map(|r| String::from_utf8(r.value().unwrap().to_vec()).unwrap())
        .collect();
    Ok(values)
}

#[tokio::test]
async fn a_member_of_three_topics_is_one_member_with_one_generation() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    for (topic, partitions) in [("a", 2), ("b", 3), ("c", 1)] {
        k.create_topic_with_config(topic, small(partitions))
            .await
            .unwrap();
    }
    let (a, b, c) = (
        k.topic("a").unwrap(),
        k.topic("b").unwrap(),
        k.topic("c").unwrap(),
    );
    let g = k.group("g").unwrap();
    let first = g.join_topics(&[&a, &b, &c], Some("m1"), SESSION).unwrap();
    assert_eq!(first.generation, 1);
    assert_eq!(
        first.assignment,
        vec![
            ("a".to_string(), vec![0, 1]),
            ("b".to_string(), vec![0, 1, 2]),
            ("c".to_string(), vec![0]),
        ]
    );
    let description = g.describe().unwrap();
    assert_eq!(description.generation, 1);
    for t in &description.topics {
        let ids: Vec<&str> = t.members.iter().map(|m| m.member_id.as_str()).collect();
        assert_eq!((t.generation, ids), (1, vec!["m1"]), "{}", t.topic);
    }
    assert_eq!(k.list_groups()[0].members, 1);

    // The same join again is a heartbeat: no new generation.
    let again = g.join_topics(&[&a, &b, &c], Some("m1"), SESSION).unwrap();
    assert_eq!(again, first);
    g.heartbeat(&first.member_ref()).unwrap();

    // A second member on b and c: one new generation for the whole group.
    let second = g.join_topics(&[&b, &c], Some("m2"), SESSION).unwrap();
    assert_eq!(second.generation, 2);
    assert!(matches!(
        g.heartbeat(&first.member_ref()),
        Err(GroupError::StaleGeneration {
            current: 2,
            given: 1,
            ..
        })
    ));
    let first = g.join_topics(&[&a, &b, &c], Some("m1"), SESSION).unwrap();
    assert_eq!(first.generation, 2);
    assert_eq!(first.partitions("a"), [0, 1]);
    assert_eq!(first.partitions("b"), [0, 1]);
    assert_eq!(first.partitions("c"), [0]);
    assert_eq!(second.partitions("b"), [2]);
    assert!(second.partitions("c").is_empty());
    assert!(second.partitions("a").is_empty());
}

#[tokio::test]
async fn a_rebalance_across_topics_loses_and_repeats_no_committed_record() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    for topic in ["x", "y"] {
        k.create_topic_with_config(topic, small(4)).await.unwrap();
        fill(&k, topic, 4, 5).await;
    }
    let (x, y) = (k.topic("x").unwrap(), k.topic("y").unwrap());
    let g = k.group("g").unwrap();
    let m1 = g.join_topics(&[&x, &y], Some("m1"), SESSION).unwrap();
    let mut seen = BTreeSet::new();
    for topic in ["x", "y"] {
        for v in poll(&k, topic, &m1.member_ref()).await.unwrap() {
            assert!(seen.insert(v));
        }
        let t = k.topic(topic).unwrap();
        g.commit(&t, Some(&m1.member_ref()), None).await.unwrap();
    }
    assert_eq!(seen.len(), 40);
    // More records, then a second member: each reads only what is past the commits.
    for topic in ["x", "y"] {
        let p = k.producer_for(topic).unwrap();
        for part in 0..4u32 {
            p.send_record(
                ProducerRecord::new(Bytes::from(format!("{topic}-{part}-late")))
                    .with_partition(part),
            )
            .await
            .unwrap();
        }
    }
    let m2 = g.join_topics(&[&x, &y], Some("m2"), SESSION).unwrap();
    assert!(matches!(
        poll(&k, "x", &m1.member_ref()).await,
        Err(GroupError::StaleGeneration { .. })
    ));
    let m1 = g.join_topics(&[&x, &y], Some("m1"), SESSION).unwrap();
    let mut late = Vec::new();
    for member in [&m1, &m2] {
        for topic in ["x", "y"] {
            late.extend(poll(&k, topic, &member.member_ref()).await.unwrap());
        }
    }
    late.sort();
    let mut expected: Vec<String> = ["x", "y"]
        .iter()
        .flat_map(|t| (0..4).map(move |p| format!("{t}-{p}-late")))
        .collect();
    expected.sort();
    assert_eq!(late, expected);
}

#[tokio::test]
async fn leaving_one_topic_keeps_the_member_and_leaving_the_group_ends_it() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    for topic in ["x", "y"] {
        k.create_topic_with_config(topic, small(2)).await.unwrap();
    }
    let (x, y) = (k.topic("x").unwrap(), k.topic("y").unwrap());
    let g = k.group("g").unwrap();
    // The one-topic join adds topics to what a member reads.
    g.join(&x, Some("m"), SESSION).unwrap();
    let both = g.join(&y, Some("m"), SESSION).unwrap();
    assert_eq!((both.generation, both.assignment.clone()), (2, vec![0, 1]));
    g.leave_topic(&x, "m").await.unwrap();
    let description = g.describe().unwrap();
    let on: Vec<(String, usize)> = description
        .topics
        .iter()
        .map(|t| (t.topic.clone(), t.members.len()))
        .collect();
    assert_eq!(on, vec![("x".into(), 0), ("y".into(), 1)]);
    assert!(matches!(
        g.leave_topic(&x, "m").await,
        Err(GroupError::UnknownMember { .. })
    ));
    g.leave("m").await.unwrap();
    assert_eq!(g.describe().unwrap().topics[1].members.len(), 0);
    // A deleted topic leaves the subscriptions of the members that read it.
    let m = g.join_topics(&[&x, &y], Some("n"), SESSION).unwrap();
    k.delete_topic("x").await.unwrap();
    let after = g.join_topics(&[&y], Some("n"), SESSION).unwrap();
    assert!(after.generation > m.generation);
    assert_eq!(after.partitions("y"), [0, 1]);
}

fn fixture_copy(dir: &Path) {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/data-v1");
    common::on_disk::copy_dir(&fixture, dir);
}

#[tokio::test]
async fn groups_of_an_earlier_build_open_and_a_member_of_both_topics_resumes_at_their_commits() {
    let dir = tempfile::tempdir().unwrap();
    fixture_copy(dir.path());
    let k = common::open(dir.path()).await;
    // audit committed orders-1 at 3 and events-0 at 2 (one file per topic on disk).
    let (orders, events) = (k.topic("orders").unwrap(), k.topic("events").unwrap());
    let g = k.group("audit").unwrap();
    let m = g
        .join_topics(&[&orders, &events], Some("reader"), SESSION)
        .unwrap();
    assert_eq!(m.partitions("orders"), [0, 1, 2]);
    let options = GroupPollOptions {
        max_records: 10_000,
        max_bytes: 64 << 20,
        auto_commit: false,
        ..Default::default()
    };
    let got = g
        .poll(&orders, Some(&m.member_ref()), &options)
        .await
        .unwrap();
    let records = got.delivered();
    let first_of_1 = records.iter().find(|r| r.partition == 1).unwrap();
    assert_eq!(first_of_1.offset, 3);
    let got = g
        .poll(&events, Some(&m.member_ref()), &options)
        .await
        .unwrap();
    assert!(
        got.delivered().is_empty(),
        "events has 2 records, committed at 2"
    );
    let committed = g.classic_committed().unwrap();
    let names: Vec<&String> = committed.keys().collect();
    assert_eq!(names, ["events", "orders"]);
}
