//! A panic inside the log is an internal error of the operation that met it, never an
//! I/O failure or a client mistake: here the storage layer panics while a blocking task
//! writes a group's config, and while one creates a topic's files.
mod common;

use common::interposed::PanicsOn;
use kafko_core::{
    AdminError, ErrorKind, GroupConfig, GroupError, InternalError, KafkoError, OffsetReset,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicked_blocking_task_is_internal() {
    let dir = tempfile::tempdir().unwrap();
    let k = common::open_interposed(dir.path(), PanicsOn("boom")).await;

    let config = GroupConfig {
        offset_reset: OffsetReset::Latest,
    };
    let err = k
        .group("boom")
        .unwrap()
        .configure(config)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            GroupError::Internal(InternalError::TaskPanicked { task: "group config", message })
                if message.contains("panicked")
        ),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Internal);
    assert!(matches!(KafkoError::from(err), KafkoError::Internal(_)));

    let err = k.create_topic("boom").await.unwrap_err();
    assert!(
        matches!(
            err,
            AdminError::Internal(InternalError::TaskPanicked {
                task: "creating topic",
                ..
            })
        ),
        "{err:?}"
    );
    assert_eq!(err.kind(), ErrorKind::Internal);

    // The log goes on: other groups and topics are unaffected.
    k.group("fine")
        .unwrap()
        .configure(GroupConfig::default())
        .await
        .unwrap();
    k.create_topic("fine").await.unwrap();
    k.shutdown().await.unwrap();
}
