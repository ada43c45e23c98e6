//! Deleting records below an offset (Kafka's DeleteRecords), run by the writer between
//! groups: the log start moves up to the offset, persisted before it takes effect, and
//! the sealed segments wholly below it are deleted as retention deletes them. The file
//! work (checkpoint, unlinks, directory fsync) runs on the blocking pool.

use super::Writer;
use crate::error::{KafkoError, Result};

impl Writer {
    /// Moves the log start up to `to` (`None`: the high watermark) and deletes the
    /// sealed segments wholly below it; the log start afterwards. A start already at or
    /// past `to` stays. Waits for a pending seal first: it may cover a segment this
    /// deletes.
    ///
    /// # Errors
    /// `OffsetOutOfRange` past the high watermark, `InvalidRequest` on a topic whose
    /// cleanup policy does not delete, or the storage failure persisting the start (the
    /// start then stays) or deleting the segments.
    pub(crate) async fn delete_records(&mut self, to: Option<u64>) -> Result<u64> {
        let hw = self.log.high_watermark();
        let start = self.log.log_start();
        let to = to.unwrap_or(hw);
        if to > hw {
            return Err(KafkoError::OffsetOutOfRange {
                requested: to,
                log_start_offset: start,
                high_watermark: hw,
            });
        }
        if !self.config.cleanup_policy.deletes() {
            return Err(KafkoError::InvalidRequest {
                reason: format!(
                    "records of topic '{}' cannot be deleted: its cleanup policy does not delete",
                    self.log.topic
                ),
            });
        }
        if to <= start {
            return Ok(start);
        }
        self.finish_seal().await?;
        // Persist the new start before it shows, and before any file goes.
        self.persist_log_start(to).await?;
        let segments = self.log.segments();
        // A segment is wholly below `to` when the next one starts at or below it; the
        // active segment always stays.
        let count = segments
            .windows(2)
            .take_while(|pair| pair[1].base_offset <= to)
            .count();
        if count > 0 {
            self.delete_first_segments(&segments, count, "deleting segments below the log start")
                .await?;
        }
        tracing::info!(topic = %self.log.topic, partition = self.log.partition, deleted = count, log_start = to, "records deleted below the log start");
        Ok(to)
    }
}
