//! # kafko-registry
//!
//! A schema registry that speaks Confluent Schema Registry's REST API, kept in the
//! log's compacted, single-partition `_schemas` topic in Confluent's own record
//! format, so that serializers (`schema.registry.url`) and registries that read that
//! topic (Confluent's, Karapace) work with it unchanged.
//!
//! ## Modules (each owns one concept)
//! - [`error`]: [`RegistryError`], with Confluent's error codes and HTTP statuses;
//! - [`limits`]: [`Limits`], the bounds every call runs under;
//! - [`level`]: compatibility levels and modes;
//! - [`version`]: a version as a path names it;
//! - [`record`]: the `_schemas` key and value formats;
//! - `state`: what the registry knows, rebuilt from the records;
//! - `store`: the `_schemas` topic (replay, durable appends);
//! - `max_id`: the largest id handed out, kept in the data directory;
//! - [`schema`]: schema types (Avro, JSON Schema, Protobuf), identity, normalization,
//!   compatibility of two schemas, and decoding a record's payload;
//! - `compat`: which versions a check covers, references, the cost bound;
//! - [`registry`]: [`Registry`], the operations (and decoding a record in Confluent's
//!   wire format by its schema id);
//! - [`http`]: the REST API as an axum router, and its OpenAPI document.
//!
//! ## Durability and ids
//! A write is appended with an fsync and applied to the state by reading it back
//! from the log; only then is it answered. A new id is one past the largest id the
//! topic shows and the largest the data directory keeps (so ids are never reused,
//! whatever compaction removes), and the same schema keeps its id across subjects.

// Bad input and I/O failures answer with a typed error, never a panic (tests may
// unwrap: clippy.toml).
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![deny(missing_docs)]

mod compat;
pub mod error;
pub mod http;
pub mod level;
pub mod limits;
mod max_id;
pub mod record;
pub mod registry;
pub mod schema;
mod state;
mod store;
pub mod version;

pub use error::RegistryError;
pub use limits::Limits;
pub use registry::Registry;
pub use state::StoredSchema;
pub use store::TOPIC;
