//! # kafko-http
//!
//! The HTTP/REST face of [`kafko_core`]: topics, produce, stateless consume (JSON,
//! NDJSON streaming, Server-Sent Events), consumer groups, operations endpoints and an
//! OpenAPI 3.1 spec.
//! The contract is `openapi/openapi.json`, generated from the handlers in this crate.
//!
//! ## Layers
//! Modules depend downward only; the front ends do not know one another.
//! 1. Shared ground: [`config`] ([`ServerConfig`]), `descriptors` (the file-descriptor
//!    budget), `connections` (every listener's connections under one cap), `metrics`, `answer_budget`, `on_sent`, `doc_parts`; then [`state`]
//!    ([`AppState`]: log, config, metrics, shutdown).
//! 2. `service/`: what every front end calls, with no HTTP in it: `produce` (one policy:
//!    limits, full queue, auto-create) and `failure` (the one exhaustive mapping from a
//!    core error to a `Failure`).
//! 3. HTTP toolkit: `error` (problem+json, `/v1`'s rendering of a `Failure`), `extract`
//!    (extractors whose rejections are problem+json), `json`, `dto`, `codec`.
//! 4. Front ends: `routes/` (`/v1`: topics, records, groups, admin, health, the console),
//!    `rest_proxy/` (the Kafka REST Proxy v2/v3 subset, with its own error shape and its
//!    consumer-instance registry) and [`kafka`] (the Kafka wire-protocol listener,
//!    `--kafka-bind`: stock Kafka clients on the same log).
//! 5. The edge: `router` ([`app`]: every front end's routes and the middleware stack),
//!    [`openapi`] (the merged spec), `middleware`, [`server`] (accept loop, connection
//!    limits, graceful shutdown), [`probe`] (`kafko-http --healthcheck`).

// Bad input and I/O failures answer with a problem, never a panic (tests may unwrap:
// clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]
// Curated pedantic lints: no silently truncating cast, every fallible public fn says
// how it fails, no `async` without an await.
#![deny(
    clippy::cast_possible_truncation,
    clippy::missing_errors_doc,
    clippy::unused_async
)]

pub mod config;
pub mod kafka;
pub mod openapi;
pub mod probe;
pub mod server;
pub mod state;

mod answer_budget;
mod codec;
mod connections;
mod descriptors;
mod doc_parts;
mod dto;
mod error;
mod extract;
#[cfg(test)]
mod front_end_answers;
mod json;
mod metrics;
mod middleware;
mod on_sent;
mod rest_proxy;
mod router;
mod routes;
mod service;

pub use config::{
    AutoCreate, DEFAULT_CLUSTER_ID, DEFAULT_MAX_TAGGED_FIELDS, ServerConfig, public_url,
};
pub use error::ServerError;
pub use router::app;
pub use state::AppState;
