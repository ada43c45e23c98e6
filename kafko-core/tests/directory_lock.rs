//! A second open of the same data directory fails fast; the lock is released by shutdown.
mod common;

use kafko_core::{AdminError, Kafko, OpenError, ProduceError, TopicConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_open_fails_until_the_first_shuts_down() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open(dir.path()).await;
    let second = Kafko::open(dir.path()).await;
    assert!(matches!(second, Err(OpenError::AlreadyOpen { .. })));
    assert_eq!(
        second.err().unwrap().kind(),
        kafko_core::ErrorKind::Unavailable
    );
    k.shutdown().await.unwrap();
    let again = Kafko::open(dir.path()).await.unwrap();
    again.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_after_shutdown_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_topic(dir.path(), TopicConfig::default()).await;
    k.shutdown().await.unwrap();
    assert!(matches!(
        p.send(None, "late".into()).await,
        Err(ProduceError::ShuttingDown)
    ));
    assert!(matches!(
        k.create_topic("u").await,
        Err(AdminError::ShuttingDown)
    ));
}

/// Deleting `kafko.lock` under a live log must not let a second open in: the data
/// directory itself is locked, and a directory cannot be deleted while it holds data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_lock_file_does_not_let_a_second_open_in() {
    let dir = tempfile::tempdir().unwrap();
    let (k, p) = common::open_small_topic(dir.path()).await;
    p.send(None, "live".into()).await.unwrap();
    std::fs::remove_file(dir.path().join("kafko.lock")).unwrap();
    let second = Kafko::open(dir.path()).await;
    assert!(
        matches!(second, Err(OpenError::AlreadyOpen { .. })),
        "a second open of a live directory: {:?}",
        second.as_ref().map(|_| "opened")
    );
    // The first log is unharmed and still takes writes.
    p.send(None, "still live".into()).await.unwrap();
    k.shutdown().await.unwrap();
    let again = Kafko::open(dir.path()).await.unwrap();
    assert_eq!(common::read_all(&again, "t", 0).len(), 2);
    again.shutdown().await.unwrap();
}
