//! The data plane of a [`Kafko`]: topics resolved by name into handles (produce, read,
//! wait through [`TopicHandle`]), explicit sync and retention.

use crate::error::AdminError;
use crate::handle::TopicHandle;
use crate::partition::command::RetentionOutcome;
use crate::producer::Producer;
use crate::record::now_ms;
use crate::topic_id::TopicId;

use super::Kafko;

impl Kafko {
    /// The topic `name`, resolved once: produce, describe, and read its partitions
    /// through the handle.
    ///
    /// # Errors
    /// [`AdminError::TopicNotFound`] when it does not exist, `ShuttingDown` once
    /// shutdown began.
    pub fn topic(&self, name: &str) -> Result<TopicHandle, AdminError> {
        Ok(TopicHandle::new(self.resolve(name)?))
    }

    /// The topic `name` if it exists, `None` if it does not: the existence check of a
    /// caller that acts on a missing topic (creates it, say), with no error to match.
    ///
    /// # Errors
    /// `ShuttingDown` once shutdown began.
    pub fn find_topic(&self, name: &str) -> Result<Option<TopicHandle>, AdminError> {
        self.check_open()?;
        Ok(self.lookup(name).map(TopicHandle::new))
    }

    /// The live topic whose id is `id`, if any: one map probe, whatever the number of
    /// topics (Kafka's lookups by topic id).
    ///
    /// # Errors
    /// `ShuttingDown` once shutdown began.
    pub fn topic_by_id(&self, id: TopicId) -> Result<Option<TopicHandle>, AdminError> {
        self.check_open()?;
        let name = self
            .inner
            .topic_ids
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned();
        // The name may since hold a later topic (deleted and created again).
        Ok(name
            .and_then(|n| self.lookup(&n))
            .filter(|t| t.id == id)
            .map(TopicHandle::new))
    }

    /// A producer for the topic `name`: `topic(name)?.producer()`.
    ///
    /// # Errors
    /// As [`topic`](Self::topic).
    pub fn producer_for(&self, name: &str) -> Result<Producer, AdminError> {
        Ok(self.topic(name)?.producer())
    }

    /// fsyncs every partition of every topic.
    ///
    /// # Errors
    /// The first partition whose fsync failed (a storage error, or a partition already
    /// read-only), or whose writer is gone (`ShuttingDown`, `PartitionPanicked`).
    pub async fn sync(&self) -> Result<(), AdminError> {
        for t in self.all_topics() {
            for p in &t.partitions {
                p.sync().await?;
            }
        }
        Ok(())
    }

    /// Runs retention on every partition now, and forgets the idempotent producers
    /// idle for the producer id expiration
    /// ([`KafkoOptions::producer_id_expiration`](crate::KafkoOptions::producer_id_expiration)).
    ///
    /// # Errors
    /// The first partition whose retention failed to delete (storage), or whose writer
    /// is gone (`ShuttingDown`, `PartitionPanicked`).
    pub async fn enforce_retention(&self) -> Result<RetentionOutcome, AdminError> {
        let mut total = RetentionOutcome::default();
        let now = now_ms();
        let expiration =
            i64::try_from(self.inner.producer_id_expiration.as_millis()).unwrap_or(i64::MAX);
        for t in self.all_topics() {
            for p in &t.partitions {
                p.log.producers.expire(now, expiration);
                let o = p.retention(now).await?;
                total.segments_deleted += o.segments_deleted;
                total.bytes_deleted += o.bytes_deleted;
            }
        }
        Ok(total)
    }
}
