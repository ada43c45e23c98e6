//! The data plane of a [`Kafko`]: topics resolved by name into handles (produce, read,
//! wait through [`TopicHandle`]), explicit sync and retention.

use crate::error::Result;
use crate::handle::TopicHandle;
use crate::partition::command::RetentionOutcome;
use crate::producer::Producer;
use crate::record::now_ms;

use super::Kafko;

impl Kafko {
    /// The topic `name`, resolved once: produce, describe, and read its partitions
    /// through the handle. Fails with `TopicNotFound` when it does not exist.
    pub fn topic(&self, name: &str) -> Result<TopicHandle> {
        Ok(TopicHandle::new(self.resolve(name)?))
    }

    /// A producer for the topic `name`: `topic(name)?.producer()`.
    pub fn producer_for(&self, name: &str) -> Result<Producer> {
        Ok(self.topic(name)?.producer())
    }

    /// fsyncs every partition of every topic.
    pub async fn sync(&self) -> Result<()> {
        for t in self.all_topics() {
            for p in &t.partitions {
                p.sync().await?;
            }
        }
        Ok(())
    }

    /// Runs retention on every partition now.
    pub async fn enforce_retention(&self) -> Result<RetentionOutcome> {
        let mut total = RetentionOutcome::default();
        let now = now_ms();
        for t in self.all_topics() {
            for p in &t.partitions {
                let o = p.retention(now).await?;
                total.segments_deleted += o.segments_deleted;
                total.bytes_deleted += o.bytes_deleted;
            }
        }
        Ok(total)
    }
}
