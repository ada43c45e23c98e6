//! A topic handle is bound to the topic it was resolved from: its id survives restarts,
//! a delete wakes its waiting readers with `TopicDeleted`, and a topic created again
//! under the same name is another topic the old handle never reads. Looking a topic up
//! (`find_topic`) and auto-creating it (`topic_or_create`) act on a missing topic with
//! no error to match: concurrent creators with different configurations all get the
//! one topic that won.
mod common;

use std::time::Duration;

use kafko_core::{FetchError, KafkoError, ProducerRecord, SendOptions, TopicConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_of_a_deleted_topic_fail_and_its_waiting_readers_wake() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    k.create_topic("x").await.unwrap();
    let old = k.topic("x").unwrap();
    let id = old.id();
    assert_eq!(old.describe().unwrap().topic_id, id);
    old.produce(vec![ProducerRecord::new("old0")], SendOptions::default())
        .await
        .unwrap();
    let reader = old.partition(0).unwrap();
    assert_eq!(reader.offsets().unwrap().high_watermark, 1);

    let waiting = {
        let reader = reader.clone();
        tokio::spawn(async move {
            reader
                .read_wait(1, 10, 1 << 20, Duration::from_secs(30))
                .await
        })
    };
    // Deleted once the reader waits: only a wake-up answers it before its 30 s.
    let started = std::time::Instant::now();
    while old.waiting_readers() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the reader never waited"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(!waiting.is_finished());
    k.delete_topic("x").await.unwrap();
    let woken = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the delete did not wake the waiting reader")
        .unwrap();
    assert!(
        matches!(woken, Err(FetchError::TopicDeleted { .. })),
        "{woken:?}"
    );

    k.create_topic("x").await.unwrap();
    let new = k.topic("x").unwrap();
    assert_ne!(new.id(), id, "a re-created topic is a new incarnation");
    new.produce(vec![ProducerRecord::new("new0")], SendOptions::default())
        .await
        .unwrap();
    assert!(old.is_deleted());
    for err in [
        reader.read(0, 10, 1 << 20).unwrap_err().into(),
        reader.offsets().unwrap_err().into(),
        old.describe().unwrap_err().into(),
        KafkoError::from(
            old.produce(vec![ProducerRecord::new("lost")], SendOptions::default())
                .await
                .unwrap_err(),
        ),
    ] {
        assert!(matches!(err, KafkoError::TopicDeleted { .. }), "{err}");
    }

    // The id is stored with the topic: it survives a restart.
    let new_id = new.id();
    k.shutdown().await.unwrap();
    drop((old, new, reader, k));
    let k = common::open(dir.path()).await;
    assert_eq!(k.topic("x").unwrap().id(), new_id);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topic_or_create_creates_once_and_returns_the_topic_whatever_its_config() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    assert!(k.find_topic("auto").unwrap().is_none());
    let partitions = |n| TopicConfig {
        partitions: n,
        ..Default::default()
    };
    // Eight creators race, each with its own partition count: one creates the topic,
    // every one gets that topic, none fails.
    let racers: Vec<_> = (1..=8)
        .map(|n| {
            let k = k.clone();
            tokio::spawn(async move { k.topic_or_create("auto", partitions(n)).await })
        })
        .collect();
    let mut ids = Vec::new();
    for r in racers {
        ids.push(r.await.unwrap().unwrap().id());
    }
    let found = k.find_topic("auto").unwrap().expect("created");
    assert!(ids.iter().all(|&id| id == found.id()), "{ids:?}");
    let won = found.describe().unwrap().config.partitions;
    // A later call with another configuration keeps the topic as it is.
    let again = k
        .topic_or_create("auto", partitions(won + 1))
        .await
        .unwrap();
    assert_eq!(again.id(), found.id());
    assert_eq!(again.describe().unwrap().config.partitions, won);
    assert!(matches!(
        k.topic_or_create("..", partitions(1)).await,
        Err(kafko_core::AdminError::InvalidName { .. })
    ));
    k.shutdown().await.unwrap();
}
