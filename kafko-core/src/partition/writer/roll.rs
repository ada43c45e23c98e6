//! Rolling: the writer starts a new active segment and seals the old one (fdatasync,
//! then its index files) on a blocking thread, with at most one seal in flight.

use std::future::Future;
use std::sync::Arc;

use super::Writer;
use crate::error::{KafkoError, Result};
use crate::producer_state::snapshot;
use crate::segment::Segment;
use crate::storage::blocking;

/// A rolled segment's seal running on a blocking thread.
pub(super) struct Sealing {
    pub(super) log_path: std::path::PathBuf,
    pub(super) task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Writer {
    /// Starts a new active segment and seals the old one (fsync, then its index files) on
    /// a blocking thread.
    ///
    /// Why not seal inline: the fsync of a whole segment writes it out (25 ms for 64 MiB
    /// on the bench machine, seconds for a large segment on a slow disk), and every
    /// producer of the partition would wait for it. Kafka flushes a rolled segment in
    /// the background too. A crash before the seal completes leaves a sealed segment
    /// whose index files do not match its log; recovery scans it, and a lost tail (torn,
    /// or ending before the next segment) ends the log there (FORMAT.md, recovery rule 7).
    pub(super) async fn roll(&mut self) -> Result<()> {
        // The pipeline belongs to the active segment's file: empty it first, so every
        // group of this segment is published (or failed) before the next one starts.
        self.pipeline.drained().await;
        if self.active.len() == 0 {
            // The flush before this roll failed and left the active segment empty: a new
            // segment would have the same base offset, and the two would share one file
            // (compacting the stale twin later deleted the live segment's file).
            return Ok(());
        }
        if let Some(reason) = self.poison.get() {
            return Err(self.read_only_error(reason));
        }
        self.finish_seal().await?;
        let storage = self.storage.clone();
        let dir = self.log.dir.clone();
        let base = self.active.next_offset();
        let next = Arc::new(
            blocking("creating a segment", move || {
                Segment::create(&*storage, &dir, base)
            })
            .await?,
        );
        let mut segments: Vec<_> = self.log.segments().iter().cloned().collect();
        segments.push(next.clone());
        self.log.set_segments(segments);
        let sealed = std::mem::replace(&mut self.active, next);
        self.rolling_timestamp = None;
        self.written_len = self.active.len();
        // The sealed segment's unsynced data is the seal's to make durable now.
        // Until the seal's fsync returns, no fsync of the new segment may raise the
        // recovery point past the sealed one.
        self.recovery_point.begin_seal();
        self.pipeline = super::pipeline::SyncPipeline::new(
            self.log.clone(),
            self.active.clone(),
            self.poison.clone(),
            self.recovery_point.clone(),
        );
        let storage = self.storage.clone();
        let log_path = sealed.log_path.clone();
        let recovery_point = self.recovery_point.clone();
        let files = self.log.files.clone();
        // Every group of the sealed segment is published, none of the new one: the table
        // is the fold of the log up to the sealed segment's end.
        let producers = self.log.producers.copy();
        let dir = self.log.dir.clone();
        let task = tokio::task::spawn_blocking(move || {
            sealed.io_file()?.sync_data()?;
            // A cache: without it the next open folds the batches from an older one.
            if let Err(e) = snapshot::write(&*storage, &dir, sealed.next_offset(), &producers) {
                tracing::warn!(dir = %dir.display(), error = %e, "could not write a producer state snapshot");
            }
            // Without index files recovery rebuilds them by a scan: not worth failing for.
            if let Err(e) = sealed.write_indexes(&*storage) {
                tracing::warn!(path = %sealed.log_path.display(), error = %e, "could not write the index files of a sealed segment");
            }
            // Everything below the sealed segment's end is durable now. Part of the seal,
            // so whatever waits for the seal (an fsync=always ack) finds it written.
            // Without it a damaged sealed segment could pass for an unsynced tail.
            recovery_point.sealed(sealed.next_offset());
            // Durable and never written again: its descriptor joins the bounded cache.
            sealed.release_file(&files);
            Ok(())
        });
        self.sealing = Some(Sealing { log_path, task });
        Ok(())
    }

    /// Notices a seal that has finished, without waiting, so a failed one turns the
    /// partition read-only at the next append rather than at the next roll or sync.
    pub(super) fn reap_finished_seal(&mut self) {
        let Some(sealing) = self.sealing.as_mut() else {
            return;
        };
        if !sealing.task.is_finished() {
            return;
        }
        // Finished: one poll returns its result (a noop waker: nothing is woken later).
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if let std::task::Poll::Ready(joined) = std::pin::Pin::new(&mut sealing.task).poll(&mut cx)
        {
            let log_path = sealing.log_path.clone();
            self.sealing = None;
            // A failed seal poisons the partition: the next group sees it.
            let _ = self.on_sealed(&log_path, joined);
        }
    }

    /// Waits for the seal of the previously active segment, if one is in flight. A failed
    /// seal fsync poisons the partition like any failed fsync.
    pub(super) async fn finish_seal(&mut self) -> Result<()> {
        let Some(sealing) = self.sealing.take() else {
            return Ok(());
        };
        let joined = sealing.task.await;
        self.on_sealed(&sealing.log_path, joined)
    }

    /// A finished seal: a failed one poisons the partition like any failed fsync.
    fn on_sealed(
        &mut self,
        log_path: &std::path::Path,
        joined: std::result::Result<std::io::Result<()>, tokio::task::JoinError>,
    ) -> Result<()> {
        let result = match joined {
            Ok(result) => result,
            Err(join) => Err(std::io::Error::other(format!("seal task failed: {join}"))),
        };
        if let Err(e) = result {
            self.poison(format!("fsync of a sealed segment failed: {e}"));
            return Err(KafkoError::io("fsyncing", log_path, e));
        }
        Ok(())
    }
}
