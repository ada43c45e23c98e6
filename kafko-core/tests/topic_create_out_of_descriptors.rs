//! Running out of file descriptors while creating a topic is a typed, retryable error
//! naming the cause, and leaves nothing half-made: no topic, no directory, and a retry
//! with descriptors to spare succeeds.
mod common;

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::interposed::Hook;
use kafko_core::{AdminError, ErrorKind, StorageError, TopicConfig};

/// Fails every open of a segment of an ordinary topic's partition 3 or above with EMFILE
/// while armed (the internal `__consumer_offsets` opens as usual).
struct OutOfDescriptors(Arc<AtomicBool>);

impl Hook for OutOfDescriptors {
    fn before(&self, op: &str, path: &Path) -> io::Result<()> {
        let partition = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u32>().ok());
        let ordinary = path.components().any(|c| c.as_os_str() == "topics");
        if self.0.load(Ordering::SeqCst)
            && op == "open"
            && ordinary
            && partition.is_some_and(|p| p >= 3)
        {
            return Err(io::Error::from_raw_os_error(24)); // EMFILE
        }
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn emfile_on_create_is_unavailable_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let armed = Arc::new(AtomicBool::new(true));
    let k = common::open_interposed(dir.path(), OutOfDescriptors(armed.clone())).await;
    let config = TopicConfig {
        partitions: 8,
        ..Default::default()
    };
    let err = k
        .create_topic_with_config("wide", config.clone())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            AdminError::Storage(StorageError::TooManyOpenFiles { .. })
        ),
        "expected TooManyOpenFiles, got {err}"
    );
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("file descriptors"), "{err}");
    assert!(k.list_topics().is_empty());
    assert!(
        !dir.path().join("topics/wide").exists(),
        "a failed create left its directory"
    );

    armed.store(false, Ordering::SeqCst);
    k.create_topic_with_config("wide", config).await.unwrap();
    let p = k.producer_for("wide").unwrap();
    p.send(None, "after".into()).await.unwrap();
    k.shutdown().await.unwrap();
    let k = common::open(dir.path()).await;
    assert_eq!(k.list_topics(), vec!["wide".to_owned()]);
    k.shutdown().await.unwrap();
}
