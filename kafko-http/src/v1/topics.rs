//! Topics: list, create (idempotent PUT), describe, update mutable config, delete.

use axum::extract::State;
use axum::http::StatusCode;
use kafko_core::CreateOutcome;

use crate::dto::{Problem, TopicConfigRequest, TopicDescription, TopicList};
use crate::error::ApiResult;
use crate::extract::{Json, OptionalJson, Path, check_topic};
use crate::state::AppState;

/// Lists topic names.
#[utoipa::path(get, path = "/v1/topics", operation_id = "list_topics", tag = "topics",
    responses((status = 200, description = "Topic names, sorted", body = TopicList)))]
pub(crate) async fn list(State(state): State<AppState>) -> axum::Json<TopicList> {
    axum::Json(TopicList {
        topics: state.kafko.list_topics(),
    })
}

/// Creates a topic; repeating the call with the same config is a no-op (200).
#[utoipa::path(put, path = "/v1/topics/{topic}", operation_id = "create_topic", tag = "topics",
    params(("topic" = String, Path, description = "Topic name: [a-zA-Z0-9._-]{1,249}, not . or ..")),
    request_body(content = Option<TopicConfigRequest>, content_type = "application/json",
        description = "Optional configuration; absent fields take defaults"),
    responses(
        (status = 201, description = "Created", body = TopicDescription),
        (status = 200, description = "Already exists with this configuration", body = TopicDescription),
        (status = 400, description = "Invalid name or configuration", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Exists with a different configuration (code topic_exists), or it would pass the server's --max-topics or --max-partitions (code limit_reached, with resource and limit)", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn create(
    State(state): State<AppState>,
    Path(topic): Path<String>,
    OptionalJson(config): OptionalJson<TopicConfigRequest>,
) -> ApiResult<(StatusCode, axum::Json<TopicDescription>)> {
    check_topic(&topic)?;
    let config = config.unwrap_or_default().into();
    let outcome = state.kafko.create_topic_with_config(&topic, config).await?;
    let status = match outcome {
        CreateOutcome::Created => StatusCode::CREATED,
        CreateOutcome::AlreadyExisted => StatusCode::OK,
    };
    Ok((
        status,
        axum::Json(state.kafko.describe_topic(&topic)?.into()),
    ))
}

/// Config and per-partition facts of a topic.
#[utoipa::path(get, path = "/v1/topics/{topic}", operation_id = "describe_topic", tag = "topics",
    params(("topic" = String, Path, description = "Topic name")),
    responses(
        (status = 200, description = "The topic", body = TopicDescription),
        (status = 400, description = "Invalid name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn describe(
    State(state): State<AppState>,
    Path(topic): Path<String>,
) -> ApiResult<axum::Json<TopicDescription>> {
    check_topic(&topic)?;
    Ok(axum::Json(state.kafko.describe_topic(&topic)?.into()))
}

/// Changes mutable configuration (retention, fsync, compression, limits…).
#[utoipa::path(patch, path = "/v1/topics/{topic}", operation_id = "update_topic", tag = "topics",
    params(("topic" = String, Path, description = "Topic name")),
    request_body(content = TopicConfigRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The updated topic", body = TopicDescription),
        (status = 400, description = "Invalid value, or partitions changed", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not JSON", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn update(
    State(state): State<AppState>,
    Path(topic): Path<String>,
    Json(update): Json<TopicConfigRequest>,
) -> ApiResult<axum::Json<TopicDescription>> {
    check_topic(&topic)?;
    let update = update.into();
    state.kafko.update_topic_config(&topic, &update).await?;
    Ok(axum::Json(state.kafko.describe_topic(&topic)?.into()))
}

/// Deletes a topic and all its data.
#[utoipa::path(delete, path = "/v1/topics/{topic}", operation_id = "delete_topic", tag = "topics",
    params(("topic" = String, Path, description = "Topic name")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Invalid name", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "code topic_not_found", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path(topic): Path<String>,
) -> ApiResult<StatusCode> {
    check_topic(&topic)?;
    state.kafko.delete_topic(&topic).await?;
    state.metrics.forget_topic(&topic);
    Ok(StatusCode::NO_CONTENT)
}
