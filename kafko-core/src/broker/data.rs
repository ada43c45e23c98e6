//! The data plane of a [`Kafko`]: producers, consumers, produce/fetch by topic name,
//! offsets, waits, explicit sync and retention.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::consumer::Consumer;
use crate::error::Result;
use crate::partition::FetchedRecords;
use crate::partition::command::RetentionOutcome;
use crate::producer::Producer;
use crate::record::{ProducerRecord, RecordMetadata, now_ms};
use crate::topic::SendOptions;

use super::Kafko;

impl Kafko {
    /// A producer for an existing topic.
    pub async fn producer_for(&self, name: &str) -> Result<Producer> {
        Ok(Producer {
            topic: self.topic(name)?,
        })
    }

    /// A consumer over every partition of an existing topic, starting at the log start.
    pub async fn consumer_for(&self, name: &str) -> Result<Consumer> {
        Ok(Consumer::new(self.topic(name)?))
    }

    /// Appends records to a topic by name: [`producer_for`](Self::producer_for) and
    /// [`Producer::send_batch_with`] in one call.
    pub async fn produce(
        &self,
        topic: &str,
        records: Vec<ProducerRecord>,
        options: SendOptions,
    ) -> Result<Vec<RecordMetadata>> {
        self.topic(topic)?.send(records, options).await
    }

    /// Reads one partition from `offset`.
    pub fn fetch(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<FetchedRecords> {
        self.topic(topic)?
            .partition(partition)?
            .log
            .read(offset, max_records, max_bytes)
    }

    /// `(log_start_offset, high_watermark)` of a partition.
    pub fn offsets(&self, topic: &str, partition: u32) -> Result<(u64, u64)> {
        let t = self.topic(topic)?;
        let log = &t.partition(partition)?.log;
        Ok((log.log_start(), log.high_watermark()))
    }

    /// Number of partitions of a topic.
    pub fn partition_count(&self, topic: &str) -> Result<u32> {
        Ok(self.topic(topic)?.partitions.len() as u32)
    }

    /// The first offset at or after `timestamp` in a partition, if any record is that new.
    pub fn offset_for_timestamp(
        &self,
        topic: &str,
        partition: u32,
        timestamp: i64,
    ) -> Result<Option<u64>> {
        self.topic(topic)?
            .partition(partition)?
            .log
            .offset_for_timestamp(timestamp)
    }

    /// Waits until the partition holds a record at `offset` or `timeout` passes.
    pub async fn wait_for(
        &self,
        topic: &str,
        partition: u32,
        offset: u64,
        timeout: Duration,
    ) -> Result<bool> {
        let t = self.topic(topic)?;
        let log = t.partition(partition)?.log.clone();
        Ok(log.wait_for(offset, timeout).await)
    }

    /// A receiver of the partition's high watermark, for streaming readers.
    pub fn watch_high_watermark(
        &self,
        topic: &str,
        partition: u32,
    ) -> Result<watch::Receiver<u64>> {
        Ok(self.topic(topic)?.partition(partition)?.log.subscribe())
    }

    /// A notifier woken whenever any partition of the topic grows.
    pub fn topic_activity(&self, topic: &str) -> Result<Arc<Notify>> {
        Ok(self.topic(topic)?.activity.clone())
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
