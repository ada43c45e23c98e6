//! An instance's subscription (`…/subscription`): the topics it follows, and the group
//! memberships it holds on them.

use axum::http::StatusCode;
use axum::response::Response;
use kafko_core::KafkoError;
use serde::{Deserialize, Serialize};

use super::InstanceAt;
use super::lifecycle::bad_config;
use crate::rest_proxy::api_doc::{InstanceNotFound, InstancePath, V2NotJson};
use crate::rest_proxy::error::{ErrorBody, ProxyError, ProxyResult};
use crate::rest_proxy::v2::instances::Instance;
use crate::rest_proxy::v2::v2_json;
use crate::rest_proxy::{ProxyBody, parse_body};
use crate::state::AppState;

/// A subscription request: the topics to follow (at least one).
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
        (status = 422, description = "error_code 42204 (topic_pattern, no topics) or 422", body = ErrorBody),
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
    let timeout = at.timeout();
    let dropped: Vec<String> = inst
        .members
        .keys()
        .filter(|t| !sub.topics.contains(t))
        .cloned()
        .collect();
    for topic in dropped {
        inst.groups(&state.kafko, timeout).leave(&topic).await?;
        inst.members.remove(&topic);
    }
    // A topic named twice is followed once; the first mention keeps its place.
    let mut topics: Vec<String> = Vec::with_capacity(sub.topics.len());
    for topic in sub.topics {
        if !topics.contains(&topic) {
            topics.push(topic);
        }
    }
    inst.subscription = topics;
    join_subscribed(state, &mut inst)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Joins the group on every subscribed topic that exists and is not joined yet.
pub(super) fn join_subscribed(state: &AppState, inst: &mut Instance) -> ProxyResult<()> {
    let timeout = state.rest_proxy.timeout();
    for topic in inst.subscription.clone() {
        if inst.members.contains_key(&topic) {
            continue;
        }
        match inst.groups(&state.kafko, timeout).join(&topic) {
            Ok(m) => {
                inst.members.insert(topic, m);
            }
            // Kafka waits for a subscribed topic to appear; so do we (joined on a later read).
            Err(KafkoError::TopicNotFound { .. } | KafkoError::InvalidName { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
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
