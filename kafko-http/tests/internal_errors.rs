//! A bug inside the log answers 500 `internal`, not a client error: here the blocking
//! task that writes a group's config panics (a storage layer that panics on that one
//! file), and the request that ran it gets a problem with code `internal` and no detail.
//! The server runs in this process, on a loopback port, so the storage can be swapped.

use std::any::Any;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kafko_core::Kafko;
use kafko_core::storage::{StdStorage, Storage, StorageFile};
use kafko_http::{AppState, ServerConfig};

/// The real filesystem, except that writing anything of the group `boom` panics.
struct PanicsOnGroupBoom;

impl Storage for PanicsOnGroupBoom {
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        StdStorage.create_dir_all(path)
    }
    fn open(&self, path: &Path) -> io::Result<Arc<dyn StorageFile>> {
        StdStorage.open(path)
    }
    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        StdStorage.read(path)
    }
    fn write_synced(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        assert!(
            !path.to_string_lossy().contains("boom"),
            "injected panic writing {}",
            path.display()
        );
        StdStorage.write_synced(path, data)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdStorage.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        StdStorage.remove_file(path)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        StdStorage.remove_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        StdStorage.sync_dir(path)
    }
    fn list_dir(&self, path: &Path) -> io::Result<Vec<PathBuf>> {
        StdStorage.list_dir(path)
    }
    fn exists(&self, path: &Path) -> bool {
        StdStorage.exists(path)
    }
    fn try_lock(&self, path: &Path) -> io::Result<Box<dyn Any + Send + Sync>> {
        StdStorage.try_lock(path)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicked_blocking_task_is_500_internal() {
    let dir = tempfile::tempdir().unwrap();
    let kafko = Kafko::builder(dir.path())
        .storage(Arc::new(PanicsOnGroupBoom))
        .open()
        .await
        .unwrap();
    let app = kafko_http::app(AppState::new(kafko.clone(), ServerConfig::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let client = reqwest::Client::new();
    let url = |path: &str| format!("http://{addr}{path}");

    let resp = client
        .put(url("/v1/groups/boom"))
        .json(&serde_json::json!({ "offset_reset": "latest" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 500);
    assert_eq!(
        resp.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
    let problem: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(problem["code"], "internal", "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        !detail.contains("injected"),
        "the panic stays in the log: {detail}"
    );

    // The server keeps serving, and the group was not configured.
    let resp = client
        .put(url("/v1/groups/fine"))
        .json(&serde_json::json!({ "offset_reset": "latest" }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    server.abort();
    kafko.shutdown().await.unwrap();
}
