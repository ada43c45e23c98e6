//! Graceful shutdown: stop maintenance, drain and fsync every partition (group offsets
//! are durable before a commit returns), write the clean-shutdown marker, release the
//! lock; `Drop` as a fallback.

use std::path::Path;
use std::sync::atomic::Ordering;

use crate::error::{AdminError, KafkoError, Result};
use crate::record::now_ms;
use crate::state_file;
use crate::storage::{Storage, blocking};

use super::{CLEAN_MARKER, CLEAN_MARKER_SPARE, Inner, Kafko};

impl Kafko {
    /// Stops intake, drains and fsyncs every partition, writes the clean-shutdown
    /// marker and releases the directory lock. Idempotent.
    ///
    /// # Errors
    /// The first partition that could not drain or fsync (storage, `PartitionPanicked`),
    /// or the marker's write: the next open then recovers as after a crash.
    pub async fn shutdown(&self) -> Result<(), AdminError> {
        Ok(shutdown_inner(&self.inner).await?)
    }

    /// Whether `shutdown` has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.closing.load(Ordering::Acquire)
    }

    /// Signals whenever a topic is created or deleted: a reader waiting for a topic that
    /// does not exist yet watches it ([`ActivityWatch`](crate::ActivityWatch)) instead
    /// of looking again and again. Take the watch before looking, so a creation in
    /// between still ends the wait.
    pub fn topics_changed(&self) -> std::sync::Arc<crate::activity::Activity> {
        self.inner.topics_changed.clone()
    }
}

async fn shutdown_inner(inner: &Inner) -> Result<()> {
    if inner.closing.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    inner.stop.send_replace(true);
    let tasks: Vec<_> = inner
        .background
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain(..)
        .collect();
    for t in tasks {
        let _ = t.await;
    }
    let mut topics: Vec<_> = inner
        .topics
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .values()
        .cloned()
        .collect();
    topics.push(inner.offsets_topic.clone());
    topics.push(inner.transactions.log().clone());
    let mut first_error = None;
    for t in &topics {
        for p in &t.partitions {
            if let Err(e) = p.shutdown().await {
                tracing::error!(topic = %t.name, partition = p.log.partition, error = %e, "partition shutdown failed");
                first_error.get_or_insert(e);
            }
        }
    }
    if first_error.is_none() {
        // Written last, and only when every partition is durable.
        let dir = inner.dir.clone();
        let storage = inner.storage.clone();
        let written = blocking("writing the clean-shutdown marker", move || {
            write_marker(&*storage, &dir)
        })
        .await;
        if let Err(e) = written {
            // The next open then scans, as after a crash: nothing is lost.
            tracing::error!(error = %e, "writing the clean-shutdown marker failed");
            first_error = Some(e);
        }
    }
    inner.lock.lock().unwrap_or_else(|p| p.into_inner()).take();
    inner.closed.store(true, Ordering::Release);
    tracing::info!(dir = %inner.dir.display(), "kafko shut down");
    first_error.map_or(Ok(()), Err)
}

/// Puts the clean-shutdown marker in place: the spare the open kept is renamed back
/// (no new file, so a full disk does not stop it), else a new one is written.
fn write_marker(s: &dyn Storage, dir: &Path) -> Result<()> {
    let marker = dir.join(CLEAN_MARKER);
    let spare = dir.join(CLEAN_MARKER_SPARE);
    if s.exists(&spare) {
        match s.rename(&spare, &marker) {
            Ok(()) => {
                return s
                    .sync_dir(dir)
                    .map_err(|e| KafkoError::io("syncing directory", dir, e));
            }
            Err(e) => {
                tracing::warn!(path = %spare.display(), error = %e, "could not rename the spare clean-shutdown marker; writing a new one");
            }
        }
    }
    state_file::write(s, &marker, &now_ms())
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        // Best-effort fallback: a multi-thread runtime can block this thread to finish the
        // graceful path. Elsewhere each partition dropped unshut spawns its own shutdown.
        if let Ok(handle) = tokio::runtime::Handle::try_current()
            && handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
        {
            let result = tokio::task::block_in_place(|| handle.block_on(shutdown_inner(self)));
            if let Err(e) = result {
                tracing::error!(error = %e, "shutdown on drop failed");
            }
        }
    }
}
