//! The protocol-neutral operations every front end (`/v1`, REST Proxy v2 and v3, the
//! Kafka listener) is a codec over: no axum types and no wire DTOs here. Each front end
//! parses its request, calls the service, and renders the outcome (or the
//! [`failure::Failure`]) in its own shape.

pub(crate) mod auth;
pub(crate) mod failure;
pub(crate) mod produce;
pub(crate) mod topic_config;
pub(crate) mod topics;
