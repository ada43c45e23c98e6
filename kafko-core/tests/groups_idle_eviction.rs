//! A group that holds nothing on disk and has no live member is forgotten once idle; a
//! configured group, a group with a committed offset, a group with a live member and a
//! group with an answer in flight are kept.

use std::time::Duration;

use kafko_core::{Bytes, GroupConfig, GroupPollOptions, Kafko, TopicConfig, TopicHandle};

async fn open(dir: &std::path::Path, idle: Duration) -> Kafko {
    Kafko::builder(dir)
        .idle_group_timeout(idle)
        .open()
        .await
        .unwrap()
}

async fn topic(kafko: &Kafko, partitions: u32) -> TopicHandle {
    let config = TopicConfig {
        partitions,
        ..Default::default()
    };
    kafko.create_topic_with_config("t", config).await.unwrap();
    kafko.topic("t").unwrap()
}

async fn send(topic: &TopicHandle, value: &'static str) {
    topic
        .producer()
        .send(None, Bytes::from(value))
        .await
        .unwrap();
}

fn names(kafko: &Kafko) -> Vec<String> {
    kafko.list_groups().into_iter().map(|g| g.group).collect()
}

/// Waits (at most 5 s) until the listed groups are `want`.
async fn until_groups(kafko: &Kafko, want: &[&str]) {
    let started = std::time::Instant::now();
    while names(kafko) != want {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "groups stayed {:?}, expected {want:?}",
            names(kafko)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn idle_groups_without_offsets_are_forgotten_and_the_others_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let kafko = open(tmp.path(), Duration::from_millis(200)).await;
    let topic = topic(&kafko, 4).await;
    send(&topic, "x").await;
    let poll = GroupPollOptions::default();

    // Only polled: in memory only.
    let idle = kafko.group("only-polled").unwrap();
    let _ = idle.poll(&topic, None, &poll).await.unwrap().delivered();
    // Configured: on disk.
    let configured = kafko.group("configured").unwrap();
    configured.configure(GroupConfig::default()).await.unwrap();
    // Committed: on disk.
    let committed = kafko.group("committed").unwrap();
    let _ = committed
        .poll(&topic, None, &poll)
        .await
        .unwrap()
        .delivered();
    committed.commit(&topic, None, None).await.unwrap();
    // A live member (its session is long).
    let joined = kafko.group("joined").unwrap();
    joined.join(&topic, None, Duration::from_secs(60)).unwrap();
    // An answer in flight: not delivered yet.
    let in_flight = kafko.group("in-flight").unwrap();
    let answer = in_flight.poll(&topic, None, &poll).await.unwrap();
    assert_eq!(answer.records().len(), 1);

    until_groups(&kafko, &["committed", "configured", "in-flight", "joined"]).await;
    // The answer's records go back; the group is forgotten once idle after that.
    drop(answer);
    until_groups(&kafko, &["committed", "configured", "joined"]).await;

    // A forgotten group starts again at its reset policy, like after a restart.
    let again = idle.poll(&topic, None, &poll).await.unwrap().delivered();
    assert_eq!(again.len(), 1, "earliest: the record comes again");
}

#[tokio::test]
async fn a_group_in_use_is_not_forgotten() {
    let tmp = tempfile::tempdir().unwrap();
    let kafko = open(tmp.path(), Duration::from_millis(300)).await;
    let topic = topic(&kafko, 1).await;
    let g = kafko.group("busy").unwrap();
    let poll = GroupPollOptions::default();
    // Polled more often than the idle timeout: it stays, and keeps its position.
    for i in 0..10u8 {
        send(&topic, "x").await;
        let got = g.poll(&topic, None, &poll).await.unwrap().delivered();
        assert_eq!(got.len(), 1, "poll {i}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(names(&kafko), ["busy"]);
}
