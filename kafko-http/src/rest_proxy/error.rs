//! The REST Proxy's error body, `{"error_code":N,"message":"…"}`, and its codes: the
//! HTTP status times 100 plus a detail digit for the proxy's own codes (40401 unknown
//! topic, 40403 unknown consumer instance…), the bare status for generic failures.
//! Also the proxy's rendering of a [`Failure`] (the one mapping from core errors, in
//! `service::failure`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kafko_core::KafkoError;
use serde::Serialize;

use super::content_type::{V2_JSON, V3_JSON};
use crate::error::ApiError;
use kafko_service::failure::{Failure, Kind};
use kafko_service::produce::ProduceFailure;

/// Unknown topic.
pub(crate) const TOPIC_NOT_FOUND: u32 = 40401;
/// Unknown partition.
pub(crate) const PARTITION_NOT_FOUND: u32 = 40402;
/// Unknown (or expired) consumer instance; also v3's "this server does not host this
/// topic-partition".
pub(crate) const CONSUMER_INSTANCE_NOT_FOUND: u32 = 40403;
/// The `Accept`ed embedded format is not the consumer instance's.
pub(crate) const CONSUMER_FORMAT_MISMATCH: u32 = 40601;
/// Subscribing an instance that has a manual assignment (and the reverse).
pub(crate) const CONSUMER_ALREADY_SUBSCRIBED: u32 = 40901;
/// An instance of that name already exists in the group.
pub(crate) const CONSUMER_ALREADY_EXISTS: u32 = 40902;
/// An operation on a partition the instance does not own.
pub(crate) const ILLEGAL_STATE: u32 = 40903;
/// A schema-based format (Avro, Protobuf, JSON Schema): no schema registry here.
pub(crate) const INVALID_SCHEMA: u32 = 42205;
/// Conversion of stored bytes to JSON failed.
pub(crate) const JSON_CONVERSION: u32 = 42203;
/// Invalid consumer configuration.
pub(crate) const INVALID_CONSUMER_CONFIG: u32 = 42204;
/// The payload cannot be used (bad base64, missing records…).
pub(crate) const INVALID_PAYLOAD: u32 = 42206;
/// A record could not be serialized (e.g. larger than the limit).
pub(crate) const SERIALIZATION: u32 = 42207;
/// A request holding more records than `--max-records-per-request`.
pub(crate) const TOO_MANY_RECORDS: u32 = 41301;
/// A failure of the log itself.
pub(crate) const KAFKA_ERROR: u32 = 50002;
/// A failure worth retrying (backpressure, shutting down).
pub(crate) const KAFKA_RETRIABLE: u32 = 50003;
/// v3: the topic to create exists, or its settings are refused.
pub(crate) const V3_BAD_TOPIC: u32 = 40002;

/// Which API version answers: the error's content type follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    V2,
    V3,
}

/// A failed REST Proxy request.
#[derive(Debug)]
pub(crate) struct ProxyError {
    pub(crate) status: StatusCode,
    pub(crate) error_code: u32,
    pub(crate) message: String,
    api: Api,
}

/// The wire form of [`ProxyError`] (also a failed v3 produce receipt).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = ProxyErrorBody)]
pub(crate) struct ErrorBody {
    /// The proxy's error code (e.g. 40401), or an HTTP status.
    pub(crate) error_code: u32,
    /// What went wrong.
    pub(crate) message: String,
}

pub(crate) type ProxyResult<T> = Result<T, ProxyError>;

impl ProxyError {
    pub(crate) fn new(status: StatusCode, error_code: u32, message: impl Into<String>) -> Self {
        ProxyError {
            status,
            error_code,
            message: message.into(),
            api: Api::V2,
        }
    }

    /// The same error, answered by v3 (`application/json`).
    pub(crate) fn v3(mut self) -> Self {
        self.api = Api::V3;
        self
    }

    pub(crate) fn topic_not_found(topic: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            TOPIC_NOT_FOUND,
            format!("Topic '{topic}' not found."),
        )
    }

    pub(crate) fn partition_not_found(topic: &str, partition: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            PARTITION_NOT_FOUND,
            format!("Partition {partition} of topic '{topic}' not found."),
        )
    }

    pub(crate) fn instance_not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            CONSUMER_INSTANCE_NOT_FOUND,
            "Consumer instance not found.",
        )
    }

    /// An operation on a partition the instance neither owns nor was assigned.
    pub(crate) fn not_assigned(topic: &str, partition: u32) -> Self {
        Self::new(
            StatusCode::CONFLICT,
            ILLEGAL_STATE,
            format!("Illegal state: No current assignment for partition {topic}-{partition}"),
        )
    }

    /// Subscribing an instance that has a manual assignment, or the reverse.
    pub(crate) fn subscribed_or_assigned() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            CONSUMER_ALREADY_SUBSCRIBED,
            "Subscriptions to topics, partitions, and patterns are mutually exclusive.",
        )
    }

    pub(crate) fn unprocessable(error_code: u32, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, error_code, message)
    }

    /// A generic failure whose code is its HTTP status (unsupported media type, bad JSON…).
    pub(crate) fn plain(status: StatusCode, message: impl Into<String>) -> Self {
        Self::new(status, u32::from(status.as_u16()), message)
    }

    pub(crate) fn body(&self) -> ErrorBody {
        ErrorBody {
            error_code: self.error_code,
            message: self.message.clone(),
        }
    }
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let media = match self.api {
            Api::V2 => V2_JSON,
            Api::V3 => V3_JSON,
        };
        let body = serde_json::to_vec(&self.body()).unwrap_or_default();
        (
            self.status,
            [(header::CONTENT_TYPE, HeaderValue::from_static(media))],
            body,
        )
            .into_response()
    }
}

/// The refusal of a records read while the server's `max_waiting_requests` reads are
/// already waiting: 429, code 429 (as the proxy refuses requests over its limits), with
/// `Retry-After` as `/v1`'s long-polls get.
pub(crate) fn too_many_waiting_reads() -> Response {
    let mut resp = ProxyError::plain(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many waiting records reads; retry later.",
    )
    .into_response();
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    resp
}

/// Rejections of the shared extractors (body size, body timeout, encoding) keep their
/// status; the code is the status.
impl From<ApiError> for ProxyError {
    fn from(e: ApiError) -> Self {
        ProxyError::plain(e.status, e.detail)
    }
}

crate::error::via_failure!(
    ProxyError: KafkoError,
    kafko_core::AdminError,
    kafko_core::ProduceError,
    kafko_core::FetchError,
    kafko_core::GroupError
);

impl From<Failure> for ProxyError {
    // Long by design: the proxy's status and code of every failure, an arm per kind.
    fn from(f: Failure) -> Self {
        use StatusCode as S;
        let message = f.detail;
        match f.kind {
            Kind::TopicNotFound { topic } => Self::topic_not_found(&topic),
            Kind::TopicDeleted => Self::new(S::NOT_FOUND, TOPIC_NOT_FOUND, message),
            Kind::PartitionNotFound => Self::new(S::NOT_FOUND, PARTITION_NOT_FOUND, message),
            // A REST Proxy group lives as its consumer instances.
            Kind::GroupNotFound | Kind::UnknownMember { .. } => {
                Self::new(S::NOT_FOUND, CONSUMER_INSTANCE_NOT_FOUND, message)
            }
            Kind::TopicExists => Self::new(S::BAD_REQUEST, V3_BAD_TOPIC, message),
            Kind::InvalidName | Kind::InvalidConfig | Kind::InvalidRequest | Kind::KeyRequired => {
                Self::unprocessable(INVALID_PAYLOAD, message)
            }
            Kind::RecordTooLarge => Self::new(S::PAYLOAD_TOO_LARGE, SERIALIZATION, message),
            Kind::TooManyRecords { .. } => {
                Self::new(S::PAYLOAD_TOO_LARGE, TOO_MANY_RECORDS, message)
            }
            Kind::NotAssigned { .. }
            | Kind::GroupHasMembers { .. }
            | Kind::LimitReached { .. }
            | Kind::StaleGeneration { .. }
            | Kind::RebalanceInProgress
            | Kind::FencedInstanceId
            | Kind::ProducerRejected(_)
            | Kind::InconsistentGroupProtocol
            | Kind::OffsetOutOfRange { .. }
            | Kind::NoValidOffset { .. } => Self::new(S::CONFLICT, ILLEGAL_STATE, message),
            Kind::Backpressure
            | Kind::ShuttingDown
            | Kind::PartitionReadOnly
            | Kind::TooManyOpenFiles
            | Kind::Unavailable => Self::new(S::SERVICE_UNAVAILABLE, KAFKA_RETRIABLE, message),
            Kind::StorageFull => Self::new(S::INSUFFICIENT_STORAGE, KAFKA_ERROR, message),
            Kind::Corruption | Kind::Storage | Kind::Internal => {
                Self::new(S::INTERNAL_SERVER_ERROR, KAFKA_ERROR, message)
            }
        }
    }
}

impl From<ProduceFailure> for ProxyError {
    fn from(e: ProduceFailure) -> Self {
        Failure::from(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every core failure's status and error_code: `crate::error`'s table test, which
    // checks both front ends.

    #[test]
    fn a_server_side_failure_answers_a_generic_message() {
        let e = KafkoError::Internal(kafko_core::InternalError::TaskPanicked {
            task: "group offsets",
            message: "secret panic text at /data/groups".into(),
        });
        let p = ProxyError::from(e);
        assert_eq!((p.status.as_u16(), p.error_code), (500, KAFKA_ERROR));
        assert_eq!(p.message, "internal error; see the server log");
    }
}
