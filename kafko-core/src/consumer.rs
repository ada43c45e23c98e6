//! [`Consumer`]: a client-side cursor over every partition of a topic, with seek and
//! replay. It keeps its own positions (no group); see `group` for server-kept cursors.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use crate::activity::ActivityWatch;
use crate::convert::u32_saturating;
use crate::error::FetchError;
use crate::record::Record;
use crate::topic::Topic;

/// Records fetched per partition read.
const FETCH_RECORDS: usize = 500;
/// Bytes fetched per partition read.
const FETCH_BYTES: usize = 1024 * 1024;

/// Where to start reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekTo {
    /// The log start offset.
    Earliest,
    /// The high watermark (only new records).
    Latest,
    /// An exact offset.
    Offset(u64),
    /// The first record at or after this timestamp (ms), else the high watermark.
    Timestamp(i64),
}

/// Reads a topic from positions it keeps itself. A position below the log start offset
/// (removed by retention) continues at the log start, as Kafka's `earliest` reset; a
/// partition added to the topic is read from its log start.
pub struct Consumer {
    topic: Arc<Topic>,
    positions: Vec<u64>,
    buffer: VecDeque<Record>,
    next_partition: usize,
}

impl Consumer {
    pub(crate) fn new(topic: Arc<Topic>) -> Self {
        let positions = topic.partitions.iter().map(|p| p.log.log_start()).collect();
        Consumer {
            topic,
            positions,
            buffer: VecDeque::new(),
            next_partition: 0,
        }
    }

    /// Takes up the partitions added to the topic since (`Kafko::create_partitions`):
    /// they are read from their log start.
    fn take_up_new_partitions(&mut self) {
        if self.topic.partitions.len() <= self.positions.len() {
            return;
        }
        let added: Vec<u64> = self
            .topic
            .partitions
            .iter()
            .skip(self.positions.len())
            .map(|p| p.log.log_start())
            .collect();
        self.positions.extend(added);
    }

    /// Moves every partition to `offset`.
    pub fn seek(&mut self, offset: u64) {
        self.take_up_new_partitions();
        self.positions.iter_mut().for_each(|p| *p = offset);
        self.buffer.clear();
    }

    /// Moves every partition to `to`.
    ///
    /// # Errors
    /// As [`seek_partition`](Self::seek_partition).
    pub fn seek_all(&mut self, to: SeekTo) -> Result<(), FetchError> {
        self.take_up_new_partitions();
        for p in 0..u32_saturating(self.positions.len()) {
            self.seek_partition(p, to)?;
        }
        Ok(())
    }

    /// Moves one partition to `to`.
    ///
    /// # Errors
    /// [`FetchError::PartitionNotFound`], [`FetchError::TopicDeleted`], or a storage
    /// failure reading the time index (for [`SeekTo::Timestamp`]).
    pub fn seek_partition(&mut self, partition: u32, to: SeekTo) -> Result<(), FetchError> {
        self.take_up_new_partitions();
        let log = &self.topic.partition(partition)?.log;
        let offset = match to {
            SeekTo::Earliest => log.log_start(),
            SeekTo::Latest => log.high_watermark(),
            SeekTo::Offset(o) => o,
            SeekTo::Timestamp(ts) => log
                .offset_for_timestamp(ts)?
                .unwrap_or_else(|| log.high_watermark()),
        };
        self.positions[partition as usize] = offset;
        self.buffer.retain(|r| r.partition != partition);
        Ok(())
    }

    /// The next offset this consumer will read from `partition` (a partition added
    /// since the last poll or seek: none yet).
    pub fn position(&self, partition: u32) -> Option<u64> {
        self.positions.get(partition as usize).copied()
    }

    /// Fetches what is available now from all partitions (round robin), up to `max`.
    ///
    /// # Errors
    /// [`FetchError::OffsetOutOfRange`] for a position past the high watermark,
    /// [`FetchError::TopicDeleted`], or a storage failure reading.
    pub fn poll_now(&mut self, max: usize) -> Result<Vec<Record>, FetchError> {
        let mut out = Vec::new();
        while out.len() < max
            && let Some(r) = self.buffer.pop_front()
        {
            out.push(r);
        }
        self.take_up_new_partitions();
        let n = self.positions.len();
        for i in 0..n {
            if out.len() >= max {
                break;
            }
            let p = (self.next_partition + i) % n;
            let log = &self.topic.partition(u32_saturating(p))?.log;
            let mut pos = self.positions[p].max(log.log_start());
            if pos > log.high_watermark() {
                return Err(FetchError::OffsetOutOfRange {
                    requested: pos,
                    log_start_offset: log.log_start(),
                    high_watermark: log.high_watermark(),
                });
            }
            let fetched = log.read(pos, max - out.len(), FETCH_BYTES)?;
            pos = fetched.next_offset;
            self.positions[p] = pos;
            out.extend(fetched.records);
        }
        self.next_partition = (self.next_partition + 1) % n.max(1);
        Ok(out)
    }

    /// Waits up to `timeout` for records, returning at most `max` (possibly none).
    ///
    /// # Errors
    /// As [`poll_now`](Self::poll_now).
    pub async fn poll(&mut self, max: usize, timeout: Duration) -> Result<Vec<Record>, FetchError> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Counted as waiting from the first wait on, until the records or the deadline.
        let mut waiting = None;
        let mut watch = ActivityWatch::new([self.topic.activity.clone()]);
        loop {
            let got = self.poll_now(max)?;
            if !got.is_empty() {
                return Ok(got);
            }
            waiting.get_or_insert_with(|| self.topic.wait_begins());
            if tokio::time::timeout_at(deadline, watch.signalled())
                .await
                .is_err()
            {
                return Ok(Vec::new());
            }
        }
    }

    /// The next record, waiting as long as it takes.
    ///
    /// # Errors
    /// As [`poll_now`](Self::poll_now).
    pub async fn next_record(&mut self) -> Result<Record, FetchError> {
        loop {
            if let Some(r) = self.buffer.pop_front() {
                return Ok(r);
            }
            let batch = self.poll(FETCH_RECORDS, Duration::from_secs(3600)).await?;
            self.buffer.extend(batch);
        }
    }
}
