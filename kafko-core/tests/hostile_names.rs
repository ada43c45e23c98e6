//! Names that could escape the data directory are rejected before touching a path.
mod common;

use kafko_core::{AdminError, ErrorKind};

/// The data directory path, with the `path()` accessor the other tests use.
struct DataDir(std::path::PathBuf);

impl DataDir {
    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_topic_names_are_invalid_and_create_nothing() {
    // The data dir sits alone inside a private parent, so anything escaping it shows.
    let parent = tempfile::tempdir().unwrap();
    let data = parent.path().join("data");
    let dir = DataDir(data.clone());
    let k = common::open(dir.path()).await;
    let long = "x".repeat(250);
    let huge = "y".repeat(10_000);
    for name in [
        "..",
        ".",
        "a/b",
        "../x",
        "%2e%2e%2f",
        "a\0b",
        "",
        long.as_str(),
        huge.as_str(),
        "ünïcode",
        "a b",
        "/abs",
    ] {
        let e = k.create_topic(name).await.unwrap_err();
        assert!(matches!(e, AdminError::InvalidName { .. }), "{name:?}: {e}");
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
    assert!(k.list_topics().is_empty());
    let entries: Vec<_> = std::fs::read_dir(dir.path().join("topics"))
        .unwrap()
        .collect();
    assert!(entries.is_empty());
    let outside: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("data")]);
    k.shutdown().await.unwrap();
}
