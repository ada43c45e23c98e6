//! # kafko-http
//!
//! The HTTP front ends of kafko over [`kafko_service`]: `/v1` (topics, produce,
//! stateless consume as JSON, NDJSON streams and Server-Sent Events, consumer groups,
//! operations endpoints, the web console) and the Kafka REST Proxy (v2 and v3), with an
//! OpenAPI 3.1 spec. The contract is `openapi/openapi.json`, generated from the handlers
//! in this crate. It does not know the Kafka wire protocol's front end.
//!
//! ## Layers
//! Modules depend downward only; the front ends do not know one another.
//! 1. Ground: [`state`] ([`AppState`]: the service and the HTTP admission limits),
//!    `on_sent`, `doc_parts`.
//! 2. HTTP toolkit: `error` (problem+json, `/v1`'s rendering of a `Failure`), `extract`
//!    (extractors whose rejections are problem+json), `json`, `dto`, `body_format`
//!    (the `string`/`json`/`base64` formats of keys and values in JSON bodies).
//! 3. Front ends: `v1/` (`/v1`: topics, records, groups, admin, health, the
//!    console) and `rest_proxy/` (the Kafka REST Proxy v2/v3 subset, with its own error
//!    shape and its consumer-instance registry).
//! 4. The edge: `router` ([`app`]: every route and the middleware stack), [`openapi`]
//!    (the merged spec), `middleware`, [`server`] (the accept loop, connection limits,
//!    graceful shutdown of HTTP connections).

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

pub mod openapi;
pub mod probe;
pub mod server;
pub mod state;

mod body_format;
mod doc_parts;
mod dto;
mod error;
mod extract;
mod json;
mod middleware;
mod on_sent;
mod rest_proxy;
mod router;
mod v1;

pub use router::{app, app_with, envelope};

/// `/v1`'s answer to a core failure: status, code and `Retry-After`. For the table test
/// at the edge, which knows every front end.
#[doc(hidden)]
pub fn v1_answer(e: kafko_core::KafkoError) -> (u16, &'static str, Option<u32>) {
    let a = error::ApiError::from(e);
    (a.status.as_u16(), a.code, a.retry_after)
}

/// The REST Proxy's answer to a core failure: status and `error_code`. For the table
/// test at the edge.
#[doc(hidden)]
pub fn rest_proxy_answer(e: kafko_core::KafkoError) -> (u16, u32) {
    let p = rest_proxy::error::ProxyError::from(e);
    (p.status.as_u16(), p.error_code)
}
pub use state::AppState;
