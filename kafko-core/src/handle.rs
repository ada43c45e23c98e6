//! Handles: a topic resolved once by name ([`TopicHandle`]) and one of its partitions
//! ([`PartitionReader`]). A handle is bound to the topic it was resolved from: once that
//! topic is deleted every call on it fails with
//! `TopicDeleted` (of its operation's error), even after a topic of the same name is
//! created again.

use std::sync::Arc;
use std::time::Duration;

use crate::activity::Activity;

use crate::consumer::Consumer;
use crate::error::{AdminError, FetchError, ProduceError};
use crate::partition::{FetchedBatches, FetchedRecords, Isolation};
use crate::producer::Producer;
use crate::record::{ProducerRecord, RecordMetadata};
use crate::send::SendOptions;
use crate::topic::{Topic, TopicDescription};
use crate::topic_id::TopicId;

/// One existing topic, resolved once: produce, describe, and its partitions. Cheap to
/// clone; get it with [`Kafko::topic`](crate::Kafko::topic).
#[derive(Clone)]
pub struct TopicHandle {
    pub(crate) topic: Arc<Topic>,
}

impl std::fmt::Debug for TopicHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopicHandle")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// The range of offsets a partition holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offsets {
    /// First offset still stored (earlier ones were removed by retention).
    pub log_start: u64,
    /// One past the last readable offset: where the next record will land.
    pub high_watermark: u64,
    /// The last stable offset: below it no transaction is open; a read-committed read
    /// stops there. At most the high watermark.
    pub last_stable_offset: u64,
}

impl Offsets {
    /// Whether `offset` is a valid read position (`log_start..=high_watermark`).
    pub fn contains(&self, offset: u64) -> bool {
        (self.log_start..=self.high_watermark).contains(&offset)
    }

    /// The error for a read position outside this range.
    pub fn out_of_range(&self, requested: u64) -> FetchError {
        FetchError::OffsetOutOfRange {
            requested,
            log_start_offset: self.log_start,
            high_watermark: self.high_watermark,
        }
    }
}

impl TopicHandle {
    pub(crate) fn new(topic: Arc<Topic>) -> Self {
        TopicHandle { topic }
    }

    /// The topic's name.
    pub fn name(&self) -> &str {
        &self.topic.name
    }

    /// This incarnation's id: a topic deleted and created again under the same name has
    /// another.
    pub fn id(&self) -> TopicId {
        self.topic.id
    }

    /// Number of partitions now ([`Kafko::create_partitions`](crate::Kafko::create_partitions)
    /// raises it; it is never lowered).
    pub fn partitions(&self) -> u32 {
        self.topic.partition_count()
    }

    /// Readers waiting for this topic's records now, in [`PartitionReader::read_wait`]
    /// or a consumer's `poll`: a test writes once a reader waits, so only a wake-up
    /// can answer it.
    #[doc(hidden)]
    pub fn waiting_readers(&self) -> usize {
        self.topic.waiting_readers()
    }

    /// Writes a transaction marker (COMMIT when `commit`, else ABORT) for producer
    /// `producer_id` at `epoch` to `partition`, as the transaction coordinator does:
    /// fsynced, under the producer's turn. For tests that need a decided transaction
    /// without a coordinator; not a supported API.
    ///
    /// # Errors
    /// `ProducerRejected` for an epoch older than the producer's, `PartitionNotFound`,
    /// `TopicDeleted`, or the write's failure.
    #[doc(hidden)]
    pub async fn append_transaction_marker(
        &self,
        partition: u32,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<u64, ProduceError> {
        let marker = crate::produced::Marker {
            producer_id,
            epoch,
            commit,
            coordinator_epoch: 0,
        };
        Ok(self.topic.append_marker(partition, marker).await?)
    }

    /// Whether the topic this handle was resolved from has been deleted.
    pub fn is_deleted(&self) -> bool {
        self.topic.check_live().is_err()
    }

    /// Config and per-partition facts.
    ///
    /// # Errors
    /// [`AdminError::TopicDeleted`].
    pub fn describe(&self) -> Result<TopicDescription, AdminError> {
        self.topic.check_live()?;
        Ok(self.topic.describe())
    }

    /// A reader of one partition.
    ///
    /// # Errors
    /// [`FetchError::PartitionNotFound`], [`FetchError::TopicDeleted`].
    pub fn partition(&self, partition: u32) -> Result<PartitionReader, FetchError> {
        self.topic.partition(partition)?;
        Ok(PartitionReader {
            topic: self.topic.clone(),
            partition,
        })
    }

    /// Appends records (see [`Producer::send_batch_with`]).
    ///
    /// # Errors
    /// As [`Producer::send_batch_with`].
    pub async fn produce(
        &self,
        records: Vec<ProducerRecord>,
        options: SendOptions,
    ) -> Result<Vec<RecordMetadata>, ProduceError> {
        self.topic.send(records, options).await
    }

    /// Deletes the records of `partition` below `to` (`None`: below the high
    /// watermark, so all of them): its log start offset moves up to `to`, durably
    /// before this returns, and the segments wholly below it are deleted. A log start
    /// already at or past `to` stays. Returns the log start offset afterwards.
    ///
    /// # Errors
    /// [`AdminError::PartitionNotFound`], [`AdminError::OffsetOutOfRange`] past the
    /// high watermark, [`AdminError::InvalidRequest`] when the topic's cleanup policy
    /// does not delete (`compact` alone), [`AdminError::TopicDeleted`], `ShuttingDown`,
    /// or a storage failure (a start that could not be persisted does not move).
    pub async fn delete_records(&self, partition: u32, to: Option<u64>) -> Result<u64, AdminError> {
        let handle = self.topic.partition(partition)?;
        Ok(handle.delete_records(to).await?)
    }

    /// A producer for this topic.
    pub fn producer(&self) -> Producer {
        Producer {
            topic: self.topic.clone(),
        }
    }

    /// A client-side consumer over every partition, starting at the log start.
    pub fn consumer(&self) -> Consumer {
        Consumer::new(self.topic.clone())
    }

    /// Signals whenever any partition grows, a group poll's answer settles, or the topic
    /// is deleted. Watch it ([`ActivityWatch`](crate::ActivityWatch)) before looking, so
    /// a signal in between is not lost.
    pub fn activity(&self) -> Arc<Activity> {
        self.topic.activity.clone()
    }

    pub(crate) fn inner(&self) -> &Arc<Topic> {
        &self.topic
    }
}

/// Reads one partition of a topic. Cheap to clone; get it with
/// [`TopicHandle::partition`].
#[derive(Clone)]
pub struct PartitionReader {
    topic: Arc<Topic>,
    partition: u32,
}

impl std::fmt::Debug for PartitionReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionReader")
            .field("topic", &&*self.topic.name)
            .field("partition", &self.partition)
            .finish()
    }
}

impl PartitionReader {
    /// The topic's name.
    pub fn topic(&self) -> &str {
        &self.topic.name
    }

    /// The id of the topic incarnation this reader reads.
    pub fn topic_id(&self) -> TopicId {
        self.topic.id
    }

    /// The partition number.
    pub fn partition(&self) -> u32 {
        self.partition
    }

    fn log(&self) -> Result<&crate::partition::PartitionLog, FetchError> {
        Ok(&self.topic.partition(self.partition)?.log)
    }

    /// The partition's log start offset, high watermark and last stable offset.
    ///
    /// # Errors
    /// [`FetchError::TopicDeleted`].
    pub fn offsets(&self) -> Result<Offsets, FetchError> {
        let log = self.log()?;
        let high_watermark = log.high_watermark();
        Ok(Offsets {
            log_start: log.log_start(),
            high_watermark,
            last_stable_offset: log.last_stable_offset().min(high_watermark),
        })
    }

    /// Reads committed records from `offset`: at most `max_records`, and at most
    /// `max_bytes` of keys, values and headers (but at least one record when one
    /// exists). See [`read_with`](Self::read_with).
    ///
    /// # Errors
    /// [`FetchError::OffsetOutOfRange`] outside `log_start..=high_watermark`,
    /// [`FetchError::TopicDeleted`], or a storage failure (damaged data, I/O) reading it.
    pub fn read(
        &self,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<FetchedRecords, FetchError> {
        self.read_with(offset, max_records, max_bytes, Isolation::ReadCommitted)
    }

    /// [`read`](Self::read) at `isolation`: read committed stops at the last stable
    /// offset and leaves out the records of aborted transactions (its `next_offset`
    /// moves past them); read uncommitted reads up to the high watermark.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn read_with(
        &self,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
        isolation: Isolation,
    ) -> Result<FetchedRecords, FetchError> {
        Ok(self
            .log()?
            .read_with(offset, max_records, max_bytes, isolation)?)
    }

    /// Whole stored record batches (Kafka's magic 2) from the one holding `offset`, up to
    /// `max_bytes` (the first batch even past it when `at_least_one`): what a Kafka fetch
    /// answers, served as stored. The first batch may begin before `offset`. Read
    /// committed serves only batches below the last stable offset and names the aborted
    /// transactions among them.
    ///
    /// # Errors
    /// [`FetchError::OffsetOutOfRange`] outside `log_start..=high_watermark`,
    /// `TopicDeleted`, or a storage failure (`Corruption` for a damaged batch).
    pub fn read_batches(
        &self,
        offset: u64,
        max_bytes: usize,
        at_least_one: bool,
        isolation: Isolation,
    ) -> Result<FetchedBatches, FetchError> {
        Ok(self
            .log()?
            .read_batches(offset, max_bytes, at_least_one, isolation)?)
    }

    /// [`read`](Self::read) (read committed), waiting up to `wait` for a record at
    /// `offset` when none is there yet.
    ///
    /// # Errors
    /// As [`read`](Self::read); `TopicDeleted` as soon as the topic is deleted.
    pub async fn read_wait(
        &self,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
        wait: Duration,
    ) -> Result<FetchedRecords, FetchError> {
        self.read_wait_with(
            offset,
            max_records,
            max_bytes,
            wait,
            Isolation::ReadCommitted,
        )
        .await
    }

    /// [`read_with`](Self::read_with), waiting up to `wait` for a record at `offset`
    /// when none is there yet: until the end `isolation` reads to (the last stable
    /// offset, or the high watermark) moves past where the read stopped.
    ///
    /// # Errors
    /// As [`read`](Self::read); `TopicDeleted` as soon as the topic is deleted.
    pub async fn read_wait_with(
        &self,
        offset: u64,
        max_records: usize,
        max_bytes: usize,
        wait: Duration,
        isolation: Isolation,
    ) -> Result<FetchedRecords, FetchError> {
        // Subscribed before the liveness check: a delete after it still wakes us.
        let mut rx = self.topic.partitions[self.partition as usize]
            .log
            .subscribe();
        rx.borrow_and_update();
        let log = self.log()?;
        let fetched = log.read_with(offset, max_records, max_bytes, isolation)?;
        if !fetched.records.is_empty() || wait.is_zero() {
            return Ok(fetched);
        }
        let caught_up = fetched.next_offset;
        let deadline = tokio::time::Instant::now() + wait;
        let waiting = self.topic.wait_begins();
        // Wakes on every new high watermark (the last stable offset moves only with
        // it) and on the topic's deletion.
        while let Ok(Ok(())) = tokio::time::timeout_at(deadline, rx.changed()).await {
            self.topic.check_live()?;
            rx.borrow_and_update();
            if log.readable_end(isolation) > caught_up {
                break;
            }
        }
        drop(waiting);
        self.read_with(offset, max_records, max_bytes, isolation)
    }

    /// The largest record timestamp (ms) of the segments holding this partition's
    /// readable records, from their summaries (no record is read); `None` when empty.
    /// A segment that begins before the log start counts its records before it too.
    ///
    /// # Errors
    /// [`FetchError::TopicDeleted`].
    pub fn max_timestamp(&self) -> Result<Option<i64>, FetchError> {
        Ok(self.log()?.max_timestamp())
    }

    /// The first offset whose record timestamp (ms) is at or after `timestamp`, if any.
    ///
    /// # Errors
    /// [`FetchError::TopicDeleted`], or a storage failure reading the time index.
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<u64>, FetchError> {
        Ok(self.log()?.offset_for_timestamp(timestamp)?)
    }
}
