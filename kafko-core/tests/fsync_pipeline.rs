//! The fsync pipeline: while an fsync runs, later groups are written but neither
//! visible nor acknowledged; the next fsync starts as soon as the running one returns
//! and covers all of them; acknowledgements follow offset order; a group that needs no
//! fsync still waits behind one that does; a failed fsync fails every waiting group.
//!
//! A storage hook holds the next fsync of a segment at a gate until the test opens it.
mod common;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use common::interposed::{Hook, Interposed};
use kafko_core::storage::StorageFile;
use kafko_core::{
    Bytes, FsyncPolicy, Kafko, ProduceError, Producer, ProducerRecord, RecordMetadata, SendOptions,
    StorageError, TopicConfig,
};
use tempfile::TempDir;
use tokio::task::JoinHandle;

#[derive(Default)]
struct GateState {
    /// Hold the next fsync of a segment file.
    hold: bool,
    /// An fsync is waiting at the gate.
    holding: bool,
    /// The held fsync fails when released.
    fail: bool,
}

#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
    /// fsyncs of segment files that reached the disk.
    syncs: AtomicU64,
}

impl Gate {
    fn hold(&self) {
        self.state.lock().unwrap().hold = true;
    }
    fn release(&self, fail: bool) {
        let mut s = self.state.lock().unwrap();
        s.hold = false;
        s.fail = fail;
        self.changed.notify_all();
    }
    fn holding(&self) -> bool {
        self.state.lock().unwrap().holding
    }
    fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::SeqCst)
    }
}

struct GatedFile {
    inner: Arc<dyn StorageFile>,
    gate: Arc<Gate>,
}

impl StorageFile for GatedFile {
    fn append(&self, buf: &[u8]) -> std::io::Result<()> {
        self.inner.append(buf)
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> std::io::Result<usize> {
        self.inner.read_at(buf, pos)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        let mut s = self.gate.state.lock().unwrap();
        if s.hold {
            s.holding = true;
            while s.hold {
                s = self.gate.changed.wait(s).unwrap();
            }
            s.holding = false;
            if std::mem::take(&mut s.fail) {
                return Err(std::io::Error::other("injected fsync failure"));
            }
        }
        drop(s);
        self.inner.sync_data()?;
        self.gate.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn truncate(&self, len: u64) -> std::io::Result<()> {
        self.inner.truncate(len)
    }
}

/// The storage hook that puts every file behind the gate.
struct GateHook(Arc<Gate>);

impl Hook for GateHook {
    fn before(&self, _op: &str, _path: &Path) -> std::io::Result<()> {
        Ok(())
    }
    fn file(&self, inner: Arc<dyn StorageFile>) -> Arc<dyn StorageFile> {
        Arc::new(GatedFile {
            inner,
            gate: self.0.clone(),
        })
    }
}

/// A log on the gated storage with topic `t` (one partition, `fsync`), its producer, and
/// `first` already acknowledged at offset 0.
async fn gated(fsync: FsyncPolicy, first: &'static str) -> (TempDir, Arc<Gate>, Kafko, Producer) {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(Gate::default());
    let k = Kafko::builder(dir.path())
        .storage(Arc::new(Interposed(GateHook(gate.clone()))))
        .open()
        .await
        .unwrap();
    k.create_topic_with_config(
        "t",
        TopicConfig {
            fsync,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let p = k.producer_for("t").unwrap();
    assert_eq!(p.send(None, first.into()).await.unwrap().offset, 0);
    (dir, gate, k, p)
}

/// Sends `value` on a task of its own, so the test can watch it wait.
fn spawn_send(
    p: &Producer,
    value: &'static str,
) -> JoinHandle<Result<RecordMetadata, ProduceError>> {
    let p = p.clone();
    tokio::spawn(async move { p.send(None, value.into()).await })
}

/// Polls `cond` every millisecond for up to 10 s.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Whether the partition's segment file holds `value` (written, published or not).
fn on_disk(dir: &Path, value: &str) -> bool {
    let bytes = std::fs::read(common::last_segment(dir, "t", 0)).unwrap();
    bytes.windows(value.len()).any(|w| w == value.as_bytes())
}

/// Holds the next fsync and sends `value`, returning once its fsync waits at the gate.
async fn send_held(
    gate: &Gate,
    p: &Producer,
    value: &'static str,
) -> JoinHandle<Result<RecordMetadata, ProduceError>> {
    gate.hold();
    let sending = spawn_send(p, value);
    eventually("an fsync is held", || gate.holding()).await;
    sending
}

fn high_watermark(k: &Kafko) -> u64 {
    common::offsets(k, "t", 0).high_watermark
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_written_during_an_fsync_share_the_next_one_and_wait_for_it() {
    let (dir, gate, k, p) = gated(FsyncPolicy::Always, "warm-up").await;
    let first = send_held(&gate, &p, "first-value").await;
    let syncs_before = gate.syncs();
    let later = [
        spawn_send(&p, "second-value"),
        spawn_send(&p, "third-value"),
    ];
    // Written while the fsync is held: the writer does not wait for it to write.
    eventually("both later records are written", || {
        on_disk(dir.path(), "second-value") && on_disk(dir.path(), "third-value")
    })
    .await;
    // …but nothing after the last fsync is visible or acknowledged.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(high_watermark(&k), 1);
    assert!(!first.is_finished());
    assert!(later.iter().all(|t| !t.is_finished()));

    gate.release(false);
    assert_eq!(first.await.unwrap().unwrap().offset, 1);
    let mut offsets: Vec<u64> = Vec::new();
    for t in later {
        offsets.push(t.await.unwrap().unwrap().offset);
    }
    offsets.sort_unstable();
    assert_eq!(offsets, [2, 3]);
    assert_eq!(high_watermark(&k), 4);
    // The held fsync, then one more for both later records, started as soon as the
    // held one returned.
    assert_eq!(gate.syncs() - syncs_before, 2);
    let values: Vec<_> = common::read_all(&k, "t", 0)
        .into_iter()
        .map(|r| r.value.unwrap())
        .collect();
    assert_eq!(
        values[..2],
        [Bytes::from("warm-up"), Bytes::from("first-value")]
    );
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsynced_send_waits_behind_a_synced_one() {
    let (dir, gate, k, p) = gated(FsyncPolicy::Never, "plain").await;
    gate.hold();
    let synced = tokio::spawn({
        let p = p.clone();
        async move {
            let options = SendOptions {
                sync: true,
                ..Default::default()
            };
            p.send_batch_with(vec![ProducerRecord::new("synced-value")], options)
                .await
        }
    });
    eventually("the requested fsync is held", || gate.holding()).await;
    let unsynced = spawn_send(&p, "unsynced-value");
    eventually("the unsynced record is written", || {
        on_disk(dir.path(), "unsynced-value")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Publishing it would expose the unsynced record before it: it waits instead.
    assert_eq!(high_watermark(&k), 1);
    assert!(!unsynced.is_finished());

    gate.release(false);
    assert_eq!(synced.await.unwrap().unwrap()[0].offset, 1);
    assert_eq!(unsynced.await.unwrap().unwrap().offset, 2);
    assert_eq!(high_watermark(&k), 3);
    k.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fsync_fails_every_group_waiting_for_it() {
    let (dir, gate, k, p) = gated(FsyncPolicy::Always, "kept").await;
    let first = send_held(&gate, &p, "lost-first").await;
    let second = spawn_send(&p, "lost-second");
    eventually("the second record is written", || {
        on_disk(dir.path(), "lost-second")
    })
    .await;
    gate.release(true);

    for waiting in [first, second] {
        let e = waiting.await.unwrap().unwrap_err();
        assert!(
            matches!(e, ProduceError::Storage(StorageError::Io { .. })),
            "{e}"
        );
    }
    // Nothing of the failed groups was ever visible, and the partition takes no more.
    assert_eq!(high_watermark(&k), 1);
    let e = p.send(None, "refused".into()).await.unwrap_err();
    assert!(matches!(e, ProduceError::PartitionReadOnly { .. }), "{e}");
    let records = common::read_all(&k, "t", 0);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].value.as_ref().unwrap(), "kept");
}
