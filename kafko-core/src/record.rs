//! Records as producers hand them in ([`ProducerRecord`]) and as readers get them back
//! ([`Record`]), plus the metadata a send returns.

use bytes::Bytes;

/// One record header: an ordered name → bytes pair (names may repeat, as in Kafka).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Header name (UTF-8).
    pub name: String,
    /// Header value bytes.
    pub value: Bytes,
}

impl Header {
    /// A header from a name and value.
    pub fn new(name: impl Into<String>, value: impl Into<Bytes>) -> Self {
        Header {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// A record to append.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerRecord {
    /// Routing and compaction key.
    pub key: Option<Bytes>,
    /// Payload; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Ordered headers.
    pub headers: Vec<Header>,
    /// Producer timestamp in ms since the epoch; `None` = append time.
    pub timestamp: Option<i64>,
    /// Explicit partition; wins over key routing.
    pub partition: Option<u32>,
}

impl ProducerRecord {
    /// A record with a value and no key.
    pub fn new(value: impl Into<Bytes>) -> Self {
        ProducerRecord {
            value: Some(value.into()),
            ..Default::default()
        }
    }
    /// A tombstone for `key`.
    pub fn tombstone(key: impl Into<Bytes>) -> Self {
        ProducerRecord {
            key: Some(key.into()),
            ..Default::default()
        }
    }
    /// Sets the key.
    pub fn with_key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }
    /// Adds a header.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push(Header::new(name, value));
        self
    }
    /// Sets the producer timestamp.
    pub fn with_timestamp(mut self, timestamp_ms: i64) -> Self {
        self.timestamp = Some(timestamp_ms);
        self
    }
    /// Pins the partition.
    pub fn with_partition(mut self, partition: u32) -> Self {
        self.partition = Some(partition);
        self
    }
    /// Bytes this record counts against `max_record_bytes`.
    pub fn size(&self) -> usize {
        self.key.as_ref().map_or(0, Bytes::len)
            + self.value.as_ref().map_or(0, Bytes::len)
            + self
                .headers
                .iter()
                .map(|h| h.name.len() + h.value.len())
                .sum::<usize>()
    }
}

/// A record read from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Partition it was read from.
    pub partition: u32,
    /// Its offset in that partition.
    pub offset: u64,
    /// Timestamp, ms since the epoch.
    pub timestamp: i64,
    /// Key, if any.
    pub key: Option<Bytes>,
    /// Value; `None` is a tombstone.
    pub value: Option<Bytes>,
    /// Headers in produce order.
    pub headers: Vec<Header>,
}

impl Record {
    /// The value, if the record is not a tombstone.
    pub fn value(&self) -> Option<&Bytes> {
        self.value.as_ref()
    }
    /// The key, if any.
    pub fn key(&self) -> Option<&Bytes> {
        self.key.as_ref()
    }
}

/// Where an appended record landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMetadata {
    /// Partition.
    pub partition: u32,
    /// Assigned offset.
    pub offset: u64,
    /// Stored timestamp.
    pub timestamp: i64,
}

impl std::fmt::Display for RecordMetadata {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.partition, self.offset)
    }
}

/// Milliseconds since the Unix epoch, as used for append-time timestamps.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
