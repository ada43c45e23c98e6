//! # kafko-kafka
//!
//! The Kafka wire-protocol front end: stock Kafka clients (librdkafka, kafka-python,
//! aiokafka, kafkajs, kcat) use this server as their one broker, on the same log as the
//! HTTP front ends. It depends downward only: this crate → [`kafko_service`] (produce
//! policy, topics, config names, failure mapping, limits) → [`kafko_core`]; it knows
//! neither HTTP nor the other front ends.
//!
//! - `listener`: accepting, the connection cap, one task per connection that reads a
//!   frame, answers it and only then reads the next (answers in request order), the idle
//!   timeout, shutdown.
//! - `frame`: the size-prefixed frames, refused past the limit before reading;
//!   `request_limit`: how long one request may be handled, and the client's close.
//! - `apis`: the one table of served APIs (key, versions, the guard's layout, who may
//!   call it, request type, handler); ApiVersions, the dispatch and the decoder come
//!   from it. `dispatch`: the request header, the version check, SASL gating and
//!   encoding answers. `legacy`: old versions served (ListOffsets v0, CreateTopics
//!   v0–1); `refusals`: versions answered UNSUPPORTED_VERSION in their own layout
//!   (Produce v0–2, Fetch v0–3). `fuzz_entry`: the
//!   decoder and whole-request entries for fuzzing.
//! - One file per API family: `metadata` (Metadata, FindCoordinator), `produce`, `fetch`
//!   (reading in `fetch_read`), `offsets` (ListOffsets), `admin` (CreateTopics,
//!   DeleteTopics), `configs` (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs;
//!   the broker's configs in `broker_configs`), `cluster` (DescribeCluster,
//!   DescribeAcls, DeleteGroups, OffsetDelete), `log_admin` (DeleteRecords,
//!   DescribeLogDirs), `idempotence` (InitProducerId, sequence numbers,
//!   DescribeProducers), `transactions` (InitProducerId with a transactional id,
//!   AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn; DescribeTransactions
//!   and ListTransactions in `transactions_describe`), `groups` (the group
//!   APIs; commits and offset fetches in `group_offsets`, the consumer protocol's
//!   assignments read defensively in `consumer_protocol`), `sasl`.
//! - `guard`: bounds on a request body's arrays before the codec decodes it, walking
//!   the body layouts of `layouts`.
//! - `errors`: Kafka error codes; `records` (tests only): producers' batches.

// Bad input and I/O failures answer with a Kafka error, never a panic (tests may
// unwrap: clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![deny(missing_docs)]
#![deny(
    clippy::cast_possible_truncation,
    clippy::missing_errors_doc,
    clippy::unused_async
)]

mod admin;
mod apis;
mod broker_configs;
mod cluster;
mod configs;
mod consumer_groups;
mod consumer_protocol;
mod dispatch;
mod errors;
mod fetch;
mod fetch_frame;
mod fetch_read;
mod frame;
mod fuzz_entry;
mod group_offsets;
mod groups;
mod guard;
mod idempotence;
mod layouts;
mod legacy;
mod listener;
mod log_admin;
mod metadata;
mod offsets;
mod produce;
#[cfg(test)]
mod records;
mod refusals;
mod request_limit;
mod sasl;
mod transactions;
mod transactions_describe;

pub use apis::{ServedApi, served_apis};
pub use fuzz_entry::{RequestTarget, decode_request};
pub use listener::{Advertised, AdvertisedError, serve};

/// The Kafka error code a client gets for a core failure. For the table test at the
/// edge, which knows every front end.
#[doc(hidden)]
pub fn error_code(e: kafko_core::KafkoError) -> i16 {
    errors::code(&kafko_service::failure::Failure::from(e))
}

use kafko_service::Service;

/// What every connection of the listener shares (handlers take it as `broker`: it is
/// what this one-node cluster's broker knows).
pub(crate) struct ListenerState {
    /// The service under every front end (log, configuration, limits, shutdown).
    pub(crate) service: Service,
    /// The address this broker tells clients to connect to.
    pub(crate) advertised: Advertised,
    /// Idempotent producers' ids and sequence numbers.
    pub(crate) producers: idempotence::Producers,
    /// The request frames read and not yet handled (`--queued-max-request-bytes`).
    pub(crate) requests: frame::RequestPool,
}

impl ListenerState {
    /// The listener's state around the server's, advertising `advertised`.
    pub(crate) fn new(service: Service, advertised: Advertised) -> Self {
        ListenerState {
            advertised,
            producers: idempotence::Producers::new(),
            requests: frame::RequestPool::new(service.config.queued_max_request_bytes),
            service,
        }
    }
}

/// The node id of this broker: the one node of the cluster.
pub(crate) const NODE_ID: i32 = 0;
