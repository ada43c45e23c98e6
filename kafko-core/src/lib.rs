//! # kafko-core
//!
//! An embedded, durable, single-node log with Kafka semantics: topics, partitions with
//! key routing, CRC-framed batches in size-rolled segments with sparse indexes, reads by
//! offset and timestamp, retention, per-topic compression, fsync policies, crash
//! recovery, write groups (one writer of a partition at a time, no writer task), and
//! graceful shutdown.
//!
//! ```no_run
//! # async fn demo() -> kafko_core::Result<()> {
//! use bytes::Bytes;
//! use kafko_core::Kafko;
//!
//! let broker = Kafko::open("./data").await?;
//! broker.create_topic("orders").await?;
//! let orders = broker.topic("orders")?;                  // resolved once
//! let meta = orders.producer().send(None, Bytes::from("order-1")).await?;
//! let mut consumer = orders.consumer();
//! consumer.seek(meta.offset);
//! let record = consumer.next_record().await?;
//! assert_eq!(record.value().unwrap(), &Bytes::from("order-1"));
//! broker.shutdown().await?;
//! # Ok(()) }
//! ```
//!
//! ## Layout
//! - [`broker`]: [`Kafko`], the open data directory (topic registry, lock, marker).
//! - `topic`: a topic's partitions and record routing; [`SendOptions`].
//! - [`handle`]: [`TopicHandle`] and [`PartitionReader`], a topic and a partition
//!   resolved once by name.
//! - [`producer`] / [`consumer`]: appending to a topic, and a client-side cursor;
//!   [`send`]: a send of many records (bounded batches, all partitions handed over at
//!   once, per-partition answer).
//! - `partition`: shared read state, the write queue (write groups), the writer, its
//!   commands, open-time loading.
//! - `segment`: the batch codec, sparse indexes, batch iteration, recovery scan.
//! - [`group`]: consumer groups ([`GroupHandle`]) — the two-phase poll, committed
//!   offsets, members, generations, assignment.
//! - [`compaction`]: the cleaner that keeps the latest record per key.
//! - [`storage`]: the file-system seam (real, or fault-injecting in tests).
//! - `state_file`: CRC-framed small files replaced atomically; `disk`: their versioned
//!   JSON bodies.
//! - [`config`], [`record`], [`routing`], [`naming`], `compression`, [`error`].
//!
//! The byte layout is specified in `FORMAT.md` beside this crate's manifest.

#![deny(missing_docs)]
// I/O and user input fail with a typed error, never a panic (tests may unwrap: clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]
// Curated pedantic lints for library code (tests may cast freely): no silently
// truncating cast (convert through `convert` or `try_from`), every fallible public fn
// says how it fails, no `async` without an await.
#![cfg_attr(
    not(test),
    deny(
        clippy::cast_possible_truncation,
        clippy::missing_errors_doc,
        clippy::unused_async
    )
)]

pub mod activity;
pub mod broker;
pub mod compaction;
pub mod config;
pub mod consumer;
pub mod error;
pub mod group;
pub mod handle;
pub mod naming;
pub mod producer;
pub mod record;
pub mod routing;
pub mod send;
pub mod storage;
pub mod transaction;

/// Decoder entry points for the fuzz targets (`fuzz/`); not a supported API.
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
#[allow(clippy::cast_possible_truncation)] // a test harness: its inputs are small
pub mod fuzzing;

mod compression;
mod convert;
mod disk;
mod partition;
mod partition_list;
mod produced;
mod producer_state;
mod segment;
mod state_file;
mod topic;
mod topic_id;

pub use activity::{Activity, ActivityWatch};
pub use broker::{CreateOutcome, Kafko, KafkoOptions, OFFSETS_TOPIC, OFFSETS_TOPIC_PARTITIONS};
pub use bytes::Bytes;
pub use compaction::CompactionOutcome;
pub use compression::{InflateError, inflate};
pub use config::{
    CleanupPolicy, ClientConfigs, Compression, DEFAULT_SEGMENT_MS, FsyncPolicy, LogConfig,
    TopicConfig, TopicConfigUpdate,
};
pub use consumer::{Consumer, SeekTo};
pub use error::{
    AdminError, ErrorKind, FetchError, GroupError, InternalError, KafkoError, OpenError,
    ProduceError, Result, StorageError,
};
pub use group::{
    ClassicGroupDescription, ClassicMemberDescription, ClassicMemberId, CommitOffset,
    CommittedOffset, ConsumerError, ConsumerGroupDescription, ConsumerHeartbeat,
    ConsumerHeartbeatAnswer, ConsumerMemberDescription, ConsumerRefusal, ConsumerSubscription,
    DEFAULT_OFFSETS_RETENTION, Delivery, GroupConfig, GroupDescription, GroupHandle, GroupLag,
    GroupLagPage, GroupLimits, GroupListing, GroupMemberDescription, GroupMembership,
    GroupPartitionDescription, GroupPoll, GroupPollOptions, GroupProtocol, GroupTopicDescription,
    JoinGroupAnswer, JoinGroupOutcome, JoinGroupRequest, JoinedMember, LeaveOutcome,
    MemberAssignment, MemberRef, Membership, OffsetReset, PartitionOffset,
};
pub use handle::{Offsets, PartitionReader, TopicHandle};
pub use partition::command::RetentionOutcome;
pub use partition::{FetchedBatches, FetchedRecords, Isolation};
#[allow(unused_imports)] // the transaction coordinator writes markers
pub(crate) use produced::Marker;
pub use produced::{AppendedBatch, BatchBudget, BatchError, ProducedBatch};
pub use producer::Producer;
pub use producer_state::{AbortedTransaction, ProducerInfo, ProducerRejection, UnknownProducer};
pub use record::{Header, ProducerRecord, Record, RecordMetadata};
pub use segment::batch::crc32c;
pub use send::{
    PartialSend, PartitionAppend, PartitionFailure, RecordRef, SendBatch, SendOptions, SendReceipt,
};
pub use topic::{PartitionInfo, TopicDescription};
pub use topic_id::TopicId;
pub use transaction::{
    TRANSACTION_TOPIC, TransactionDescription, TransactionLimits, TxnError, TxnPartition, TxnState,
};
