//! The path parameters and error responses that many REST Proxy routes share, named once
//! for their `#[utoipa::path]` annotations. These types only describe the document; the
//! handlers extract their paths as tuples.

// The params structs are never built: they exist for their `IntoParams` impls.
#![allow(dead_code)]

use utoipa::{IntoParams, IntoResponses};

use super::error::ErrorBody;

/// `/consumers/{group}/instances/{instance}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct InstancePath {
    /// Consumer group
    group: String,
    /// Instance id
    instance: String,
}

/// v2's `/topics/{topic}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct V2TopicPath {
    /// Topic name
    topic: String,
}

/// v2's `/topics/{topic}/partitions/{partition}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct V2PartitionPath {
    /// Topic name
    topic: String,
    /// Partition
    partition: u32,
}

/// `/v3/clusters/{cluster}/topics/{topic}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct V3TopicPath {
    /// Cluster id
    cluster: String,
    /// Topic name
    topic: String,
}

/// `/v3/clusters/{cluster}/topics/{topic}/partitions/{partition}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct V3PartitionPath {
    /// Cluster id
    cluster: String,
    /// Topic name
    topic: String,
    /// Partition id
    partition: u32,
}

/// A v2 body that is not JSON.
#[derive(IntoResponses)]
#[response(status = 400, description = "Body is not JSON")]
pub(crate) struct V2NotJson(ErrorBody);

/// A v2 body that is not JSON, or JSON of the wrong shape.
#[derive(IntoResponses)]
pub(crate) enum V2BadBody {
    #[response(status = 400, description = "Body is not JSON")]
    NotJson(ErrorBody),
    #[response(status = 422, description = "Body of the wrong shape")]
    WrongShape(ErrorBody),
}

/// What a v2 produce refuses whole: a body or record too large, a media type that is
/// not binary or json v2, a retriable failure of the log.
#[derive(IntoResponses)]
pub(crate) enum V2ProduceRefusals {
    #[response(
        status = 413,
        description = "Body too large (413), a record past --max-record-bytes (42207), or more records than --max-records-per-request (41301); nothing stored"
    )]
    TooLarge(ErrorBody),
    #[response(status = 415, description = "Not a binary or json v2 media type")]
    MediaType(ErrorBody),
    #[response(
        status = 503,
        description = "error_code 50003: retriable (a partition's write queue is full, or the server is stopping); nothing stored"
    )]
    Retriable(ErrorBody),
}

/// An unknown, deleted or expired consumer instance.
#[derive(IntoResponses)]
#[response(status = 404, description = "error_code 40403")]
pub(crate) struct InstanceNotFound(ErrorBody);

/// A seek to a partition the instance does not own.
#[derive(IntoResponses)]
#[response(
    status = 409,
    description = "error_code 40903: a partition the instance does not own"
)]
pub(crate) struct NotOwned(ErrorBody);

/// v2's unknown topic.
#[derive(IntoResponses)]
#[response(status = 404, description = "error_code 40401: unknown topic")]
pub(crate) struct V2TopicNotFound(ErrorBody);

/// v2's unknown topic or partition.
#[derive(IntoResponses)]
#[response(
    status = 404,
    description = "error_code 40401 (topic) or 40402 (partition)"
)]
pub(crate) struct V2PartitionNotFound(ErrorBody);

/// v3's unknown cluster.
#[derive(IntoResponses)]
#[response(status = 404, description = "Unknown cluster id")]
pub(crate) struct ClusterNotFound(ErrorBody);

/// v3's unknown cluster or topic.
#[derive(IntoResponses)]
#[response(status = 404, description = "Unknown cluster (404) or topic (40403)")]
pub(crate) struct V3TopicNotFound(ErrorBody);

/// v3's unknown cluster, topic or partition.
#[derive(IntoResponses)]
#[response(
    status = 404,
    description = "Unknown cluster (404), topic (40403) or partition (40402)"
)]
pub(crate) struct V3PartitionNotFound(ErrorBody);

/// `/v3/clusters/{cluster}`.
#[derive(IntoParams)]
#[into_params(parameter_in = Path)]
pub(crate) struct ClusterPath {
    /// Cluster id
    cluster: String,
}
