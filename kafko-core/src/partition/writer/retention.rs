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
        // Persist the new start before deleting, so a crash cannot resurrect a gap.
        let storage = self.storage.clone();
        let checkpoint = self.log.dir.join(LOG_START_FILE);
        blocking("persisting the log start", move || {
            state_file::write(&*storage, &checkpoint, &new_start)
        })
        .await?;
        self.log.set_segments(segments[count..].to_vec());
        self.log.set_log_start(new_start);
        let doomed: Vec<Arc<Segment>> = segments[..count].to_vec();
        outcome.bytes_deleted = doomed.iter().map(|seg| seg.len()).sum();
        let storage = self.storage.clone();
        let dir = self.log.dir.clone();
        blocking("deleting expired segments", move || {
            for seg in &doomed {
                seg.remove_files(&*storage)?;
            }
            storage
                .sync_dir(&dir)
                .map_err(|e| KafkoError::io("syncing directory", &dir, e))
        })
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
