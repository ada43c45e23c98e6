//! The registry's HTTP API (Confluent Schema Registry's REST paths) as an axum
//! [`Router`]: [`routes`] for mounting beside other routes, [`not_found`] for a
//! listener of its own.
//!
//! - `wire`: media type, JSON answers, errors, bodies, query flags;
//! - `subjects`, `schemas`, `settings`: the handlers by path prefix;
//! - `api_doc`: their OpenAPI description ([`openapi`]).

mod api_doc;
mod schemas;
mod settings;
mod subjects;
pub mod wire;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::Response;
use axum::routing::{get, post};

use crate::registry::Registry;

/// Every registry route, without a fallback (so that it merges into another router).
/// Request bodies are bounded by what the largest schema, escaped, needs.
pub fn routes(registry: Registry) -> Router {
    let body_limit = registry
        .limits()
        .max_schema_bytes
        .saturating_mul(6)
        .saturating_add(64 * 1024);
    Router::new()
        .route("/subjects", get(subjects::list))
        .route(
            "/subjects/{subject}",
            post(subjects::lookup).delete(subjects::delete),
        )
        .route(
            "/subjects/{subject}/versions",
            get(subjects::versions).post(subjects::register),
        )
        .route(
            "/subjects/{subject}/versions/{version}",
            get(subjects::version).delete(subjects::delete_version),
        )
        .route(
            "/subjects/{subject}/versions/{version}/schema",
            get(subjects::version_schema),
        )
        .route(
            "/subjects/{subject}/versions/{version}/referencedby",
            get(subjects::referenced_by),
        )
        .route("/schemas", get(schemas::list))
        .route("/schemas/types", get(schemas::types))
        .route(
            "/schemas/decode",
            post(schemas::decode).layer(DefaultBodyLimit::max(
                crate::registry::MAX_DECODE_BYTES.saturating_add(1),
            )),
        )
        .route("/schemas/ids/{id}", get(schemas::by_id))
        .route("/schemas/ids/{id}/schema", get(schemas::by_id_raw))
        .route("/schemas/ids/{id}/subjects", get(schemas::id_subjects))
        .route("/schemas/ids/{id}/versions", get(schemas::id_versions))
        .route(
            "/config",
            get(settings::get_global)
                .put(settings::put_global)
                .delete(settings::delete_global),
        )
        .route(
            "/config/{subject}",
            get(settings::get_subject)
                .put(settings::put_subject)
                .delete(settings::delete_subject),
        )
        .route("/mode", get(settings::get_mode).put(settings::put_mode))
        .route(
            "/mode/{subject}",
            get(settings::get_subject_mode)
                .put(settings::put_subject_mode)
                .delete(settings::delete_subject_mode),
        )
        .route(
            "/compatibility/subjects/{subject}/versions",
            post(settings::check_all),
        )
        .route(
            "/compatibility/subjects/{subject}/versions/{version}",
            post(settings::check_version),
        )
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(registry)
}

/// The registry's routes as an OpenAPI document, to merge into the server's.
pub fn openapi() -> utoipa::openapi::OpenApi {
    api_doc::document()
}

/// The registry's answer to a path it does not serve: `{"error_code":404,…}`.
pub async fn not_found() -> Response {
    wire::not_found().await
}
