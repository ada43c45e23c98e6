//! [`Producer`]: a cheap, cloneable handle that appends to one topic.

use std::sync::Arc;

use bytes::Bytes;

use crate::error::ProduceError;
use crate::record::{ProducerRecord, RecordMetadata};
use crate::send::SendBatch;
use crate::send::SendOptions;
use crate::topic::Topic;

/// Appends records to one topic. Clone freely; all clones share the partition writers.
#[derive(Clone)]
pub struct Producer {
    pub(crate) topic: Arc<Topic>,
}

impl Producer {
    /// Appends one record (`key` routes it) and returns where it landed.
    ///
    /// # Errors
    /// As [`send_record`](Self::send_record).
    pub async fn send(
        &self,
        key: Option<Bytes>,
        value: Bytes,
    ) -> Result<RecordMetadata, ProduceError> {
        self.send_record(ProducerRecord {
            key,
            value: Some(value),
            ..Default::default()
        })
        .await
    }

    /// Appends one fully specified record.
    ///
    /// # Errors
    /// A refused record (`RecordTooLarge`, `KeyRequired`, `PartitionNotFound`),
    /// `TopicDeleted`, a partition that cannot take writes (`PartitionReadOnly`,
    /// `PartitionPanicked`, `ShuttingDown`), or the write's storage failure: the record
    /// was not appended.
    pub async fn send_record(
        &self,
        record: ProducerRecord,
    ) -> Result<RecordMetadata, ProduceError> {
        Ok(self.topic.send_one(record, SendOptions::default()).await?)
    }

    /// A send to build record by record: each record is routed and encoded as it is
    /// added, and [`SendBatch::send`] appends them all (see [`SendBatch`]). The way to
    /// send many records without holding a [`ProducerRecord`] for each.
    pub fn batch(&self) -> SendBatch<'_> {
        self.topic.batch()
    }

    /// Appends records, all partitions at once; each partition's records are appended
    /// together at consecutive offsets, or not at all.
    ///
    /// # Errors
    /// As [`SendBatch::send`].
    pub async fn send_batch(
        &self,
        records: Vec<ProducerRecord>,
    ) -> Result<Vec<RecordMetadata>, ProduceError> {
        self.topic.send(records, SendOptions::default()).await
    }

    /// [`send_batch`](Self::send_batch) with explicit options (fsync, no-wait backpressure).
    ///
    /// # Errors
    /// As [`SendBatch::send`].
    pub async fn send_batch_with(
        &self,
        records: Vec<ProducerRecord>,
        options: SendOptions,
    ) -> Result<Vec<RecordMetadata>, ProduceError> {
        self.topic.send(records, options).await
    }

    /// fsyncs every partition of the topic.
    ///
    /// # Errors
    /// The first partition whose fsync failed (storage, or already `PartitionReadOnly`)
    /// or whose writer is gone (`ShuttingDown`, `PartitionPanicked`).
    pub async fn sync(&self) -> Result<(), ProduceError> {
        for p in &self.topic.partitions {
            p.sync().await?;
        }
        Ok(())
    }

    /// The topic name.
    pub fn topic(&self) -> &str {
        &self.topic.name
    }

    /// Number of partitions.
    pub fn partitions(&self) -> u32 {
        self.topic.partition_count()
    }

    /// The topic's id: which incarnation of the name this producer writes to.
    pub fn topic_id(&self) -> crate::TopicId {
        self.topic.id
    }

    /// The log start offset of `partition` now (`None` past the partition count).
    pub fn log_start(&self, partition: u32) -> Option<u64> {
        let index = usize::try_from(partition).ok()?;
        Some(self.topic.partitions.get(index)?.log.log_start())
    }
}
