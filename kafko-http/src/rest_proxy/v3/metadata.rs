//! v3 metadata and administration: `GET /v3/clusters[/{id}]`, topics (list, get,
//! create, delete), partitions (list, get) and a partition's earliest and latest offsets.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use kafko_core::{AdminError, TopicDescription};
use serde::{Deserialize, Serialize};

use super::{InCluster, ListMeta, Related, ResourceMeta, Urls, check_cluster};
use crate::rest_proxy::api_doc::{
    ClusterNotFound, ClusterPath, V3PartitionNotFound, V3PartitionPath, V3TopicNotFound,
    V3TopicPath,
};
use crate::rest_proxy::content_type::V3_JSON;
use crate::rest_proxy::error::{
    CONSUMER_INSTANCE_NOT_FOUND, ErrorBody, PARTITION_NOT_FOUND, ProxyError, ProxyResult,
    V3_BAD_TOPIC,
};
use crate::rest_proxy::v2::json_as;
use crate::rest_proxy::v2::metadata::BROKER_ID;
use crate::rest_proxy::{ProxyBody, ProxyPath, parse_body};
use crate::state::AppState;
use kafko_service::topics::{self, CreateError, NewTopic};

fn ok<T: Serialize>(value: &T) -> Response {
    json_as(StatusCode::OK, V3_JSON, value)
}

/// v3's unknown topic: 404 with error_code 40403, as Kafka's "unknown topic or partition".
pub(crate) fn topic_not_found(topic: &str) -> ProxyError {
    ProxyError::new(
        StatusCode::NOT_FOUND,
        CONSUMER_INSTANCE_NOT_FOUND,
        format!("This server does not host this topic-partition: '{topic}'."),
    )
    .v3()
}

/// The topic's description, or v3's 404.
pub(crate) fn describe(state: &AppState, topic: &str) -> ProxyResult<TopicDescription> {
    state.kafko.describe_topic(topic).map_err(|e| match e {
        AdminError::TopicNotFound { .. } | AdminError::InvalidName { .. } => topic_not_found(topic),
        other => ProxyError::from(other).v3(),
    })
}

/// The cluster.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3ClusterData)]
pub(crate) struct ClusterData {
    kind: &'static str,
    metadata: ResourceMeta,
    cluster_id: String,
    controller: Related,
    acls: Related,
    brokers: Related,
    broker_configs: Related,
    consumer_groups: Related,
    topics: Related,
    partition_reassignments: Related,
}

/// The list of clusters (one).
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3ClusterList)]
pub(crate) struct ClusterList {
    kind: &'static str,
    metadata: ListMeta,
    data: Vec<ClusterData>,
}

fn cluster(urls: &Urls) -> ClusterData {
    ClusterData {
        kind: "KafkaCluster",
        metadata: urls.meta("", ""),
        cluster_id: urls.id().to_owned(),
        controller: urls.related(&format!("/brokers/{BROKER_ID}")),
        acls: urls.related("/acls"),
        brokers: urls.related("/brokers"),
        broker_configs: urls.related("/broker-configs"),
        consumer_groups: urls.related("/consumer-groups"),
        topics: urls.related("/topics"),
        partition_reassignments: urls.related("/topics/-/partitions/-/reassignment"),
    }
}

/// Lists the clusters: kafko is one.
#[utoipa::path(get, path = "/v3/clusters", tag = "rest-proxy-v3",
    responses((status = 200, description = "The one cluster", body = ClusterList)))]
pub(crate) async fn list_clusters(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> ProxyResult<Response> {
    let urls = Urls::new(&state, &headers, &uri)?;
    Ok(ok(&ClusterList {
        kind: "KafkaClusterList",
        metadata: urls.list_root(),
        data: vec![cluster(&urls)],
    }))
}

/// The cluster.
#[utoipa::path(get, path = "/v3/clusters/{cluster}", tag = "rest-proxy-v3",
    params(("cluster" = String, Path, description = "Cluster id (--cluster-id)")),
    responses(
        (status = 200, description = "The cluster", body = ClusterData),
        ClusterNotFound,
    ))]
pub(crate) async fn get_cluster(at: InCluster<String>) -> Response {
    ok(&cluster(&at.urls))
}

/// A topic.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3TopicData)]
pub(crate) struct TopicData {
    kind: &'static str,
    metadata: ResourceMeta,
    cluster_id: String,
    topic_name: String,
    is_internal: bool,
    replication_factor: u32,
    partitions_count: u32,
    partitions: Related,
    configs: Related,
    partition_reassignments: Related,
    authorized_operations: Vec<String>,
}

/// Topics.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3TopicList)]
pub(crate) struct TopicList {
    kind: &'static str,
    metadata: ListMeta,
    data: Vec<TopicData>,
}

fn topic_data(urls: &Urls, name: &str, partitions: u32) -> TopicData {
    let at = format!("/topics/{name}");
    TopicData {
        kind: "KafkaTopic",
        metadata: urls.meta(&at, &format!("/topic={name}")),
        cluster_id: urls.id().to_owned(),
        topic_name: name.to_owned(),
        is_internal: false,
        replication_factor: 1,
        partitions_count: partitions,
        partitions: urls.related(&format!("{at}/partitions")),
        configs: urls.related(&format!("{at}/configs")),
        partition_reassignments: urls.related(&format!("{at}/partitions/-/reassignment")),
        authorized_operations: Vec::new(),
    }
}

/// Lists topics.
#[utoipa::path(get, path = "/v3/clusters/{cluster}/topics", tag = "rest-proxy-v3",
    params(ClusterPath),
    responses(
        (status = 200, description = "Topics", body = TopicList),
        ClusterNotFound,
    ))]
pub(crate) async fn list_topics(at: InCluster<String>) -> Response {
    let (state, urls) = (&at.state, &at.urls);
    let data = state
        .kafko
        .list_topics()
        .into_iter()
        .filter_map(|t| {
            // A topic deleted between the listing and here is left out.
            let n = state.kafko.topic(&t).ok()?.partitions();
            Some(topic_data(urls, &t, n))
        })
        .collect();
    ok(&TopicList {
        kind: "KafkaTopicList",
        metadata: urls.list("/topics"),
        data,
    })
}

/// One topic.
#[utoipa::path(get, path = "/v3/clusters/{cluster}/topics/{topic}", tag = "rest-proxy-v3",
    params(V3TopicPath),
    responses(
        (status = 200, description = "The topic", body = TopicData),
        V3TopicNotFound,
    ))]
pub(crate) async fn get_topic(at: InCluster<(String, String)>) -> ProxyResult<Response> {
    let (_, topic) = at.path;
    let (state, urls) = (&at.state, &at.urls);
    let d = describe(state, &topic)?;
    Ok(ok(&topic_data(urls, &d.name, d.config.partitions)))
}

/// One topic setting of a creation.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV3ConfigEntry)]
pub(crate) struct ConfigEntry {
    name: String,
    value: Option<String>,
}

/// A topic creation.
#[derive(Deserialize, utoipa::ToSchema)]
#[schema(as = ProxyV3CreateTopicRequest)]
pub(crate) struct CreateTopicRequest {
    topic_name: String,
    #[serde(default)]
    #[schema(minimum = 1, maximum = 1024)]
    partitions_count: Option<u32>,
    /// 1 (or -1: the default); kafko is one broker.
    #[serde(default)]
    #[schema(minimum = -1, maximum = 1)]
    replication_factor: Option<i32>,
    #[serde(default, deserialize_with = "crate::rest_proxy::objects")]
    configs: Vec<ConfigEntry>,
    #[serde(default)]
    validate_only: bool,
}

fn bad_topic(message: impl Into<String>) -> ProxyError {
    ProxyError::new(StatusCode::BAD_REQUEST, V3_BAD_TOPIC, message).v3()
}

/// Creates a topic.
#[utoipa::path(post, path = "/v3/clusters/{cluster}/topics", tag = "rest-proxy-v3",
    params(ClusterPath),
    request_body(content = CreateTopicRequest),
    responses(
        (status = 201, description = "Created", body = TopicData),
        (status = 400, description = "error_code 40002: exists, invalid name, replication factor or setting; 400: bad JSON", body = ErrorBody),
        ClusterNotFound,
        (status = 422, description = "Body of the wrong shape", body = ErrorBody),
    ))]
pub(crate) async fn create_topic(
    State(state): State<AppState>,
    ProxyPath(cluster_id): ProxyPath<String>,
    headers: HeaderMap,
    uri: Uri,
    ProxyBody(body): ProxyBody,
) -> ProxyResult<Response> {
    check_cluster(&state, &cluster_id)?;
    let req: CreateTopicRequest = parse_body(&body).map_err(ProxyError::v3)?;
    match req.replication_factor {
        None | Some(-1..=1) => {}
        Some(n) => {
            return Err(bad_topic(format!(
                "Replication factor: {n} larger than available brokers: 1."
            )));
        }
    }
    let urls = Urls::new(&state, &headers, &uri)?;
    let new = NewTopic {
        name: &req.topic_name,
        partitions: req.partitions_count,
        configs: req
            .configs
            .iter()
            .map(|c| (c.name.as_str(), c.value.as_deref())),
        validate_only: req.validate_only,
    };
    let created = match topics::create(&state.kafko, &state.config.auto_create, new).await {
        Ok(created) => created,
        Err(CreateError::InvalidConfig(m) | CreateError::InvalidPartitions(m)) => {
            return Err(bad_topic(m));
        }
        Err(CreateError::InvalidName(m)) => {
            return Err(bad_topic(format!("Invalid topic name: {m}")));
        }
        Err(CreateError::AlreadyExists) => {
            return Err(bad_topic(format!(
                "Topic '{}' already exists.",
                req.topic_name
            )));
        }
        Err(CreateError::Failed(e)) => return Err(ProxyError::from(e).v3()),
    };
    Ok(json_as(
        StatusCode::CREATED,
        V3_JSON,
        &topic_data(&urls, &req.topic_name, created.config.partitions),
    ))
}

/// Deletes a topic and its data.
#[utoipa::path(delete, path = "/v3/clusters/{cluster}/topics/{topic}", tag = "rest-proxy-v3",
    params(V3TopicPath),
    responses(
        (status = 204, description = "Deleted"),
        V3TopicNotFound,
    ))]
pub(crate) async fn delete_topic(at: InCluster<(String, String)>) -> ProxyResult<StatusCode> {
    let (_, topic) = at.path;
    let state = &at.state;
    match state.kafko.delete_topic(&topic).await {
        Ok(()) => {
            state.metrics.forget_topic(&topic);
            Ok(StatusCode::NO_CONTENT)
        }
        Err(AdminError::TopicNotFound { .. } | AdminError::InvalidName { .. }) => {
            Err(topic_not_found(&topic))
        }
        Err(e) => Err(ProxyError::from(e).v3()),
    }
}

/// A partition.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3PartitionData)]
pub(crate) struct PartitionData {
    kind: &'static str,
    metadata: ResourceMeta,
    cluster_id: String,
    topic_name: String,
    partition_id: u32,
    leader: Related,
    replicas: Related,
    reassignment: Related,
}

/// Partitions.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3PartitionList)]
pub(crate) struct PartitionList {
    kind: &'static str,
    metadata: ListMeta,
    data: Vec<PartitionData>,
}

fn partition_data(urls: &Urls, topic: &str, p: u32) -> PartitionData {
    let at = format!("/topics/{topic}/partitions/{p}");
    PartitionData {
        kind: "KafkaPartition",
        metadata: urls.meta(&at, &format!("/topic={topic}/partition={p}")),
        cluster_id: urls.id().to_owned(),
        topic_name: topic.to_owned(),
        partition_id: p,
        leader: urls.related(&format!("{at}/replicas/{BROKER_ID}")),
        replicas: urls.related(&format!("{at}/replicas")),
        reassignment: urls.related(&format!("{at}/reassignment")),
    }
}

/// Lists a topic's partitions.
#[utoipa::path(get, path = "/v3/clusters/{cluster}/topics/{topic}/partitions", tag = "rest-proxy-v3",
    params(V3TopicPath),
    responses(
        (status = 200, description = "Partitions", body = PartitionList),
        V3TopicNotFound,
    ))]
pub(crate) async fn list_partitions(at: InCluster<(String, String)>) -> ProxyResult<Response> {
    let (_, topic) = at.path;
    let (state, urls) = (&at.state, &at.urls);
    let d = describe(state, &topic)?;
    Ok(ok(&PartitionList {
        kind: "KafkaPartitionList",
        metadata: urls.list(&format!("/topics/{topic}/partitions")),
        data: d
            .partitions
            .iter()
            .map(|p| partition_data(urls, &topic, p.partition))
            .collect(),
    }))
}

fn find_partition(d: &TopicDescription, p: u32) -> ProxyResult<&kafko_core::PartitionInfo> {
    d.partitions
        .iter()
        .find(|i| i.partition == p)
        .ok_or_else(|| {
            ProxyError::new(
                StatusCode::NOT_FOUND,
                PARTITION_NOT_FOUND,
                "Partition not found.",
            )
            .v3()
        })
}

/// One partition.
#[utoipa::path(get, path = "/v3/clusters/{cluster}/topics/{topic}/partitions/{partition}", tag = "rest-proxy-v3",
    params(V3PartitionPath),
    responses(
        (status = 200, description = "The partition", body = PartitionData),
        V3PartitionNotFound,
    ))]
pub(crate) async fn get_partition(at: InCluster<(String, String, u32)>) -> ProxyResult<Response> {
    let (_, topic, partition) = at.path;
    let (state, urls) = (&at.state, &at.urls);
    let d = describe(state, &topic)?;
    find_partition(&d, partition)?;
    Ok(ok(&partition_data(urls, &topic, partition)))
}

/// A partition's earliest and latest offsets.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = ProxyV3PartitionWithOffsets)]
pub(crate) struct PartitionWithOffsets {
    kind: &'static str,
    metadata: ResourceMeta,
    cluster_id: String,
    topic_name: String,
    partition_id: u32,
    earliest_offset: u64,
    latest_offset: u64,
}

/// A partition's earliest offset and high watermark.
#[utoipa::path(get, path = "/v3/clusters/{cluster}/topics/{topic}/partitions/{partition}/offset", tag = "rest-proxy-v3",
    params(V3PartitionPath),
    responses(
        (status = 200, description = "Offsets", body = PartitionWithOffsets),
        V3PartitionNotFound,
    ))]
pub(crate) async fn partition_offset(
    at: InCluster<(String, String, u32)>,
) -> ProxyResult<Response> {
    let (_, topic, partition) = at.path;
    let (state, urls) = (&at.state, &at.urls);
    let d = describe(state, &topic)?;
    let p = find_partition(&d, partition)?;
    let offset = format!("/topics/{topic}/partitions/{partition}/offset");
    Ok(ok(&PartitionWithOffsets {
        kind: "KafkaPartitionWithOffsets",
        metadata: urls.meta(
            &offset,
            &format!("/topic={topic}/partition={partition}/offset_type=earliest_and_latest"),
        ),
        cluster_id: urls.id().to_owned(),
        topic_name: topic.clone(),
        partition_id: partition,
        earliest_offset: p.log_start_offset,
        latest_offset: p.high_watermark,
    }))
}
