//! An instance's subscription (`…/subscription`): the topics it follows (at most
//! [`MAX_SUBSCRIBED_TOPICS`]), and the group memberships it holds on them.

use std::collections::HashSet;

use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};

use super::InstanceAt;
use super::lifecycle::bad_config;
use crate::rest_proxy::api_doc::{InstanceNotFound, InstancePath, V2NotJson};
use crate::rest_proxy::error::{ErrorBody, ProxyError, ProxyResult};
use crate::rest_proxy::v2::instances::Instance;
use crate::rest_proxy::v2::v2_json;
use crate::rest_proxy::{ProxyBody, parse_body};
use crate::state::AppState;

/// Most distinct topics one instance may subscribe to: a larger subscription is refused
/// (422, error_code 42204). Every waiting read looks at each subscribed topic, so the
/// cap bounds what one instance costs the server.
pub(crate) const MAX_SUBSCRIBED_TOPICS: usize = 1024;

/// A subscription request: the topics to follow (at least one, at most 1,024 distinct).
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV2Subscription)]
pub(crate) struct Subscription {
    #[schema(min_items = 1)]
    topics: Vec<String>,
    /// Not supported (a 42204), so not in the document.
    #[serde(default)]
    #[schema(ignore)]
    topic_pattern: Option<String>,
}

/// The topics an instance follows: empty before its first subscription and after an
/// unsubscribe, so unlike the request it carries no lower bound.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2SubscribedTopics)]
pub(crate) struct SubscribedTopics {
    topics: Vec<String>,
}

/// Subscribes to topics (replacing the current subscription, as Kafka does).
#[utoipa::path(post, path = "/consumers/{group}/instances/{instance}/subscription", tag = "rest-proxy-v2",
    params(InstancePath),
    request_body(content = Subscription),
    responses(
        V2NotJson,
        (status = 204, description = "Subscribed"),
        InstanceNotFound,
        (status = 422, description = "error_code 42204 (topic_pattern, no topics, more than 1024 distinct topics) or 422", body = ErrorBody),
    ))]
pub(crate) async fn subscribe(
    at: InstanceAt,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<StatusCode> {
    let sub: Subscription = parse_body(&body)?;
    let mut inst = at.lock().await?;
    let state = &at.state;
    if !inst.assignment.is_empty() {
        return Err(ProxyError::subscribed_or_assigned());
    }
    if sub.topic_pattern.is_some() {
        return Err(bad_config(
            "topic_pattern subscriptions are not supported by kafko; list the topics",
        ));
    }
    if sub.topics.is_empty() {
        return Err(bad_config("subscribe to at least one topic"));
    }
    inst.subscription = distinct_topics(sub.topics)?;
    join_subscribed(state, &mut inst).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The topics of a subscription, each once (the first mention keeps its place), in time
/// linear in their number; more than [`MAX_SUBSCRIBED_TOPICS`] distinct ones are refused.
fn distinct_topics(requested: Vec<String>) -> ProxyResult<Vec<String>> {
    let listed = requested.len();
    let mut seen: HashSet<String> = HashSet::new();
    let mut topics = Vec::new();
    for topic in requested {
        if seen.contains(&topic) {
            continue;
        }
        if seen.len() == MAX_SUBSCRIBED_TOPICS {
            return Err(bad_config(format!(
                "a subscription holds at most {MAX_SUBSCRIBED_TOPICS} distinct topics; {listed} were listed"
            )));
        }
        seen.insert(topic.clone());
        topics.push(topic);
    }
    Ok(topics)
}

/// Joins (or heartbeats) as the instance's one member over every subscribed topic that
/// exists; a join whose topics changed (one appeared, or the subscription changed)
/// starts a new generation of the group.
/// A member none of whose topics exists any more leaves.
pub(super) async fn join_subscribed(state: &AppState, inst: &mut Instance) -> ProxyResult<()> {
    let timeout = state.config.consumer_instance_timeout;
    let joined = inst
        .groups(&state.kafko, timeout)
        .join(&inst.subscription)?;
    if joined.is_none() && inst.member.is_some() {
        inst.groups(&state.kafko, timeout).leave().await?;
    }
    inst.member = joined;
    Ok(())
}

/// The subscribed topics.
#[utoipa::path(get, path = "/consumers/{group}/instances/{instance}/subscription", tag = "rest-proxy-v2",
    params(InstancePath),
    responses(
        (status = 200, description = "Topics", body = SubscribedTopics),
        InstanceNotFound,
    ))]
pub(crate) async fn subscription(at: InstanceAt) -> ProxyResult<Response> {
    let inst = at.lock().await?;
    Ok(v2_json(&SubscribedTopics {
        topics: inst.subscription.clone(),
    }))
}

/// Unsubscribes from every topic (leaving the groups).
#[utoipa::path(delete, path = "/consumers/{group}/instances/{instance}/subscription", tag = "rest-proxy-v2",
    params(InstancePath),
    responses(
        (status = 204, description = "Unsubscribed"),
        InstanceNotFound,
    ))]
pub(crate) async fn unsubscribe(at: InstanceAt) -> ProxyResult<StatusCode> {
    let mut inst = at.lock().await?;
    inst.leave_all(&at.state.kafko, at.timeout()).await;
    inst.subscription.clear();
    Ok(StatusCode::NO_CONTENT)
}
