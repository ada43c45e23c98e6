//! # kafko-service
//!
//! What every front end of the kafko server (`/v1`, the Kafka REST Proxy, the Kafka
//! wire protocol) is a codec over, with no HTTP and no Kafka wire types in it: each
//! front end parses its request, calls the service, and renders the outcome (or the
//! [`failure::Failure`]) in its own shape.
//!
//! ## Modules (each depends only on those above it)
//! 1. Ground: [`config`] ([`ServerConfig`]: every server setting), [`descriptors`] (the
//!    file-descriptor budget), [`metrics`] (the `/metrics` registry and the gauge of
//!    waiting reads), [`connections`] (every listener's connections under one cap),
//!    [`answer_budget`] (the memory record answers hold until sent).
//! 2. [`Service`]: the log and all of the above, shared by every front end, with the
//!    one shutdown signal.
//! 3. Operations: [`produce`] (one produce policy: limits, a full queue, auto-create),
//!    [`topics`] (the one topic-create path, and config changes), [`topic_config`]
//!    (Kafka's topic config names, both directions; every standard one in
//!    [`topic_config_catalog`]), [`auth`] (the token check), [`failure`] (the one
//!    exhaustive mapping from a core error to a [`failure::Failure`]), [`wait`] (the one
//!    long-poll wait of every front end, counted per front end).

// Bad input and I/O failures answer with a failure, never a panic (tests may unwrap:
// clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![deny(missing_docs)]
#![deny(
    clippy::cast_possible_truncation,
    clippy::missing_errors_doc,
    clippy::unused_async
)]

pub mod answer_budget;
pub mod auth;
pub mod config;
pub mod connections;
pub mod descriptors;
pub mod failure;
pub mod metrics;
pub mod produce;
mod service;
pub mod topic_config;
pub mod topic_config_catalog;
pub mod topics;
pub mod wait;

pub use config::{AutoCreate, DEFAULT_CLUSTER_ID, DEFAULT_MAX_TAGGED_FIELDS, ServerConfig};
pub use service::{Service, Shared};
