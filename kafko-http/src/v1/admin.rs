//! `POST /v1/admin/shutdown`: starts the same graceful shutdown as SIGTERM.

use axum::extract::State;
use axum::http::StatusCode;

use crate::dto::{Problem, StatusResponse};
use crate::state::AppState;

/// Stops accepting, finishes in-flight requests, drains and fsyncs the log, exits 0.
#[utoipa::path(post, path = "/v1/admin/shutdown", operation_id = "shutdown_server", tag = "admin",
    responses(
        (status = 202, description = "Shutdown started", body = StatusResponse),
        (status = 401, description = "code unauthorized (when a token is configured)", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn shutdown(
    State(state): State<AppState>,
) -> (StatusCode, axum::Json<StatusResponse>) {
    tracing::info!("shutdown requested over HTTP");
    state.trigger_shutdown();
    (
        StatusCode::ACCEPTED,
        axum::Json(StatusResponse {
            status: "shutting_down".into(),
        }),
    )
}
