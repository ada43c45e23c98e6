//! Probes and introspection: `/healthz`, `/readyz`, `/metrics`.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

use crate::dto::{Problem, StatusResponse};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Alive: the process answers.
#[utoipa::path(get, path = "/healthz", operation_id = "healthz", tag = "operations",
    responses((status = 200, description = "Alive", body = StatusResponse)))]
pub(crate) async fn healthz() -> axum::Json<StatusResponse> {
    axum::Json(StatusResponse {
        status: "ok".into(),
    })
}

/// Ready: recovery finished and writes are accepted (503 while shutting down).
#[utoipa::path(get, path = "/readyz", operation_id = "readyz", tag = "operations",
    responses(
        (status = 200, description = "Ready", body = StatusResponse),
        (status = 503, description = "code shutting_down", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn readyz(State(state): State<AppState>) -> ApiResult<axum::Json<StatusResponse>> {
    if state.is_shutting_down() || state.kafko.is_shutting_down() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down",
        )
        .retry_after(5));
    }
    Ok(axum::Json(StatusResponse {
        status: "ready".into(),
    }))
}

/// Prometheus metrics (text exposition 0.0.4).
#[utoipa::path(get, path = "/metrics", operation_id = "get_metrics", tag = "operations",
    responses((status = 200, description = "Metrics", body = String, content_type = "text/plain; version=0.0.4")))]
pub(crate) async fn metrics(State(state): State<AppState>) -> ApiResult<impl IntoResponse> {
    // On a blocking thread: a scrape reads every partition and every group's committed
    // offsets, which the async workers should not wait for.
    let text = tokio::task::spawn_blocking(move || state.metrics.render())
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                "rendering the metrics failed",
            )
        })?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    ))
}
