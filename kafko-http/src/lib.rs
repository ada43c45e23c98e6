//! # kafko-http
//!
//! The HTTP/REST face of [`kafko_core`]: topics, produce, stateless consume (JSON,
//! NDJSON streaming, Server-Sent Events), consumer groups, operations endpoints and an
//! OpenAPI 3.1 spec.
//! The contract is `openapi/openapi.json`, generated from the handlers in this crate.
//!
//! ## Layout
//! - [`config`]: [`ServerConfig`], every server setting (the binary fills it from flags).
//! - [`state`]: [`AppState`], what every handler shares (log, config, metrics, shutdown).
//! - `router`: [`app`], the full [`axum::Router`] with its middleware stack.
//! - [`server`]: the accept loop with header-read timeout and graceful shutdown.
//! - `routes/`: `topics`, `records/{produce,fetch,single,stream}`, `groups`, `admin`,
//!   `health`.
//! - `service/`: what every front end calls, with no HTTP in it: `produce` (one policy:
//!   limits, full queue, auto-create) and `failure` (the one exhaustive mapping from a
//!   core error to a `Failure`).
//! - `error`: problem+json responses: `/v1`'s rendering of a `Failure`.
//! - `extract`: extractors whose rejections are problem+json too.
//! - `dto`, `codec`: wire types and the `format` (string/json/base64) encodings.
//! - `metrics`, `middleware`: Prometheus counters; auth, limits, timing.
//! - [`openapi`]: the generated spec.
//! - `rest_proxy/`: a wire-compatible subset of the Kafka REST Proxy API (v2 and v3); its
//!   `error` renders a `Failure` as `{error_code, message}`.
//! - [`kafka`]: the Kafka wire-protocol listener (`--kafka-bind`): stock Kafka clients
//!   produce, fetch and manage topics on the same log.
//! - [`probe`]: `kafko-http --healthcheck`, the container health probe (no curl needed).

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
mod dto;
mod error;
mod extract;
mod json;
mod metrics;
mod middleware;
mod on_sent;
mod rest_proxy;
mod router;
mod routes;
mod service;

pub use config::{AutoCreate, DEFAULT_CLUSTER_ID, ServerConfig, public_url};
pub use error::ServerError;
pub use router::app;
pub use state::AppState;
