//! v2 metadata: `GET /topics`, `/topics/{t}`, `/topics/{t}/partitions[/{p}[/offsets]]`
//! and `/brokers`. kafko is one broker (id 0), the leader and only in-sync replica of
//! every partition.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Response;
use kafko_core::{AdminError, TopicDescription};
use serde::Serialize;

use super::v2_json;
use crate::rest_proxy::ProxyPath;
use crate::rest_proxy::api_doc::{
    V2PartitionNotFound, V2PartitionPath, V2TopicNotFound, V2TopicPath,
};
use crate::rest_proxy::error::{ProxyError, ProxyResult};
use crate::state::AppState;
use kafko_service::topic_config;

/// The one broker's id.
pub(crate) const BROKER_ID: u32 = 0;

/// A topic's description; an unknown or invalid name is 40401.
pub(crate) fn describe(state: &AppState, topic: &str) -> ProxyResult<TopicDescription> {
    state.kafko.describe_topic(topic).map_err(|e| match e {
        AdminError::TopicNotFound { .. } | AdminError::InvalidName { .. } => {
            ProxyError::topic_not_found(topic)
        }
        other => other.into(),
    })
}

/// A replica in [`PartitionMeta`].
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2Replica)]
pub(crate) struct Replica {
    broker: u32,
    leader: bool,
    in_sync: bool,
}

/// A partition: its leader and replicas.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2PartitionMeta)]
pub(crate) struct PartitionMeta {
    partition: u32,
    leader: u32,
    replicas: Vec<Replica>,
}

fn partition_meta(partition: u32) -> PartitionMeta {
    PartitionMeta {
        partition,
        leader: BROKER_ID,
        replicas: vec![Replica {
            broker: BROKER_ID,
            leader: true,
            in_sync: true,
        }],
    }
}

/// Every partition of a topic.
fn partitions_meta(d: &TopicDescription) -> Vec<PartitionMeta> {
    d.partitions
        .iter()
        .map(|p| partition_meta(p.partition))
        .collect()
}

/// A topic: name, configuration, partitions.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2TopicMeta)]
pub(crate) struct TopicMeta {
    name: String,
    #[schema(value_type = BTreeMap<String, String>)]
    configs: BTreeMap<&'static str, String>,
    partitions: Vec<PartitionMeta>,
}

/// A partition's first and next offsets.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2PartitionOffsets)]
pub(crate) struct PartitionOffsets {
    beginning_offset: u64,
    end_offset: u64,
}

/// The broker ids.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV2BrokerList)]
pub(crate) struct BrokerList {
    brokers: Vec<u32>,
}

/// Lists topic names.
#[utoipa::path(get, path = "/topics", tag = "rest-proxy-v2",
    responses((status = 200, description = "Topic names", body = Vec<String>)))]
pub(crate) async fn list_topics(State(state): State<AppState>) -> Response {
    v2_json(&state.kafko.list_topics())
}

/// A topic's configuration and partitions.
#[utoipa::path(get, path = "/topics/{topic}", tag = "rest-proxy-v2",
    params(V2TopicPath),
    responses(
        (status = 200, description = "The topic", body = TopicMeta),
        V2TopicNotFound,
    ))]
pub(crate) async fn get_topic(
    State(state): State<AppState>,
    ProxyPath(topic): ProxyPath<String>,
) -> ProxyResult<Response> {
    let d = describe(&state, &topic)?;
    Ok(v2_json(&TopicMeta {
        configs: topic_config::kafka_configs(&d.config),
        partitions: partitions_meta(&d),
        name: d.name,
    }))
}

/// A topic's partitions.
#[utoipa::path(get, path = "/topics/{topic}/partitions", tag = "rest-proxy-v2",
    params(V2TopicPath),
    responses(
        (status = 200, description = "Its partitions", body = Vec<PartitionMeta>),
        V2TopicNotFound,
    ))]
pub(crate) async fn list_partitions(
    State(state): State<AppState>,
    ProxyPath(topic): ProxyPath<String>,
) -> ProxyResult<Response> {
    let d = describe(&state, &topic)?;
    Ok(v2_json(&partitions_meta(&d)))
}

/// Checks that `partition` exists in the topic: 40401 or 40402 otherwise.
pub(crate) fn check_partition(
    state: &AppState,
    topic: &str,
    partition: u32,
) -> ProxyResult<(u64, u64)> {
    let d = describe(state, topic)?;
    d.partitions
        .iter()
        .find(|p| p.partition == partition)
        .map(|p| (p.log_start_offset, p.high_watermark))
        .ok_or_else(|| ProxyError::partition_not_found(topic, partition))
}

/// One partition.
#[utoipa::path(get, path = "/topics/{topic}/partitions/{partition}", tag = "rest-proxy-v2",
    params(V2PartitionPath),
    responses(
        (status = 200, description = "The partition", body = PartitionMeta),
        V2PartitionNotFound,
    ))]
pub(crate) async fn get_partition(
    State(state): State<AppState>,
    ProxyPath((topic, partition)): ProxyPath<(String, u32)>,
) -> ProxyResult<Response> {
    check_partition(&state, &topic, partition)?;
    Ok(v2_json(&partition_meta(partition)))
}

/// A partition's first offset and high watermark.
#[utoipa::path(get, path = "/topics/{topic}/partitions/{partition}/offsets", tag = "rest-proxy-v2",
    params(V2PartitionPath),
    responses(
        (status = 200, description = "Beginning and end offsets", body = PartitionOffsets),
        V2PartitionNotFound,
    ))]
pub(crate) async fn partition_offsets(
    State(state): State<AppState>,
    ProxyPath((topic, partition)): ProxyPath<(String, u32)>,
) -> ProxyResult<Response> {
    let (beginning_offset, end_offset) = check_partition(&state, &topic, partition)?;
    Ok(v2_json(&PartitionOffsets {
        beginning_offset,
        end_offset,
    }))
}

/// The brokers: kafko is one, id 0.
#[utoipa::path(get, path = "/brokers", tag = "rest-proxy-v2",
    responses((status = 200, description = "Broker ids", body = BrokerList)))]
pub(crate) async fn brokers() -> Response {
    v2_json(&BrokerList {
        brokers: vec![BROKER_ID],
    })
}
