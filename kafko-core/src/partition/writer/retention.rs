//! Retention, run by the writer between groups: deletes the oldest segments beyond the
//! topic's age or size limit, persisting the new log start first. The file work
//! (checkpoint, unlinks, directory fsync) runs on the blocking pool.
//!
//! As in Kafka, the active segment is not exempt: when every segment, the active one
//! included, is past the limits (an idle topic whose newest record is older than
//! `retention_ms`), the active segment is rolled and then deleted with the others, and
//! the log goes on, empty, at the offset it had reached.

use std::sync::Arc;

use super::{LOG_START_FILE, Writer};
use crate::error::{KafkoError, Result};
use crate::partition::command::RetentionOutcome;
use crate::segment::Segment;
use crate::state_file;
use crate::storage::blocking;

impl Writer {
    /// Persists `new_start` as the log start, then makes it the log's: persisted first,
    /// so no crash leaves files deleted below a start that was not kept.
    pub(super) async fn persist_log_start(&mut self, new_start: u64) -> Result<()> {
        let storage = self.storage.clone();
        let checkpoint = self.log.dir.join(LOG_START_FILE);
        blocking("persisting the log start", move || {
            state_file::write(&*storage, &checkpoint, &new_start)
        })
        .await?;
        self.log.set_log_start(new_start);
        Ok(())
    }

    /// Takes the first `count` of `segments` (the log's, all below the persisted log
    /// start) out of the log and deletes their files, then fsyncs the directory.
    pub(super) async fn delete_first_segments(
        &mut self,
        segments: &[Arc<Segment>],
        count: usize,
        what: &'static str,
    ) -> Result<()> {
        self.log.set_segments(segments[count..].to_vec());
        let doomed: Vec<Arc<Segment>> = segments[..count].to_vec();
        let storage = self.storage.clone();
        let dir = self.log.dir.clone();
        blocking(what, move || {
            for seg in &doomed {
                seg.remove_files(&*storage)?;
            }
            storage
                .sync_dir(&dir)
                .map_err(|e| KafkoError::io("syncing directory", &dir, e))
        })
        .await
    }

    /// Deletes the oldest sealed segments beyond `retention_ms` / `retention_bytes`.
    /// Waits for a pending seal first: it may cover a segment this deletes.
    pub(crate) async fn enforce_retention(&mut self, now_ms: i64) -> Result<RetentionOutcome> {
        self.finish_seal().await?;
        let mut outcome = RetentionOutcome {
            log_start_offset: self.log.log_start(),
            ..Default::default()
        };
        if !self.config.cleanup_policy.deletes() {
            return Ok(outcome);
        }
        let mut segments = self.log.segments();
        if self.active.len() > 0 && self.deletable(&segments, now_ms) == segments.len() {
            // The active segment is past the limits too: roll it, so that it is deleted
            // like a sealed one (the roll waits for its unpublished groups first).
            self.roll().await?;
            self.finish_seal().await?;
            segments = self.log.segments();
        }
        // The active segment stays (it is empty if it was just rolled).
        let count = self.deletable(&segments, now_ms).min(segments.len() - 1);
        if count == 0 {
            return Ok(outcome);
        }
        let new_start = segments[count].base_offset.max(self.log.log_start());
        self.persist_log_start(new_start).await?;
        outcome.bytes_deleted = segments[..count].iter().map(|seg| seg.len()).sum();
        self.delete_first_segments(&segments, count, "deleting expired segments")
            .await?;
        outcome.segments_deleted = count;
        outcome.log_start_offset = new_start;
        tracing::info!(topic = %self.log.topic, partition = self.log.partition, deleted = count, log_start = new_start, "retention deleted segments");
        Ok(outcome)
    }

    /// How many of `segments`, oldest first, are past the age or size limit (the caller
    /// decides what becomes of the active one).
    fn deletable(&self, segments: &[Arc<Segment>], now_ms: i64) -> usize {
        let mut total: u64 = segments.iter().map(|s| s.len()).sum();
        let mut count = 0;
        for seg in segments {
            let expired = self
                .config
                .retention_ms
                // `ms as i64` made a retention past i64::MAX negative, so "keep for
                // ~forever" expired every sealed segment at once (found via schemathesis).
                .is_some_and(|ms| {
                    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
                    seg.max_timestamp() < now_ms.saturating_sub(ms)
                });
            // Kafka's rule: drop a segment only if what remains still meets the limit.
            let oversized = self
                .config
                .retention_bytes
                .is_some_and(|max| total - seg.len() >= max);
            if !(expired || oversized) {
                break;
            }
            total -= seg.len();
            count += 1;
        }
        count
    }
}
