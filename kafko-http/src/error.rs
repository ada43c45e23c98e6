//! Errors: [`ApiError`], every failed request as `application/problem+json` (RFC 9457)
//! with a stable `code`; `/v1`'s rendering of a [`Failure`] (the one mapping from core
//! errors, in `kafko_service::failure`) as a status, a code and its extension members.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kafko_core::{AdminError, FetchError, GroupError, KafkoError, OpenError, ProduceError};
use serde_json::{Map, Value, json};

use crate::dto::Problem;
use kafko_service::failure::{Failure, Kind};
use kafko_service::produce::ProduceFailure;

/// Content type of every error body.
pub(crate) const PROBLEM_JSON: &str = "application/problem+json";

/// A request failure, rendered as problem+json.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    pub(crate) detail: String,
    /// Extra members of the problem object (e.g. the valid offset range).
    pub(crate) extra: Map<String, Value>,
    pub(crate) retry_after: Option<u32>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            detail: detail.into(),
            extra: Map::new(),
            retry_after: None,
        }
    }

    pub(crate) fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, detail)
    }

    pub(crate) fn with(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }

    pub(crate) fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// 503 `overloaded` with `Retry-After`.
    pub(crate) fn overloaded(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", detail).retry_after(1)
    }
}

impl From<Failure> for ApiError {
    // Long by design: `/v1`'s status and code of every failure, an arm per kind.
    fn from(f: Failure) -> Self {
        use StatusCode as S;
        let (status, code, extra) = match f.kind {
            Kind::TopicNotFound { .. } => (S::NOT_FOUND, "topic_not_found", vec![]),
            Kind::TopicDeleted => (S::NOT_FOUND, "topic_deleted", vec![]),
            Kind::PartitionNotFound => (S::NOT_FOUND, "partition_not_found", vec![]),
            Kind::GroupNotFound => (S::NOT_FOUND, "group_not_found", vec![]),
            Kind::TopicExists => (S::CONFLICT, "topic_exists", vec![]),
            Kind::InvalidName => (S::BAD_REQUEST, "invalid_topic_name", vec![]),
            Kind::InvalidConfig => (S::BAD_REQUEST, "invalid_config", vec![]),
            Kind::KeyRequired => (S::BAD_REQUEST, "key_required", vec![]),
            Kind::InvalidRequest => (S::BAD_REQUEST, "invalid_request", vec![]),
            Kind::RecordTooLarge => (S::PAYLOAD_TOO_LARGE, "record_too_large", vec![]),
            Kind::TooManyRecords { max } => (
                S::PAYLOAD_TOO_LARGE,
                "too_many_records",
                vec![("max_records_per_request", json!(max))],
            ),
            Kind::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            } => (
                S::RANGE_NOT_SATISFIABLE,
                "offset_out_of_range",
                vec![
                    ("requested", json!(requested)),
                    ("log_start_offset", json!(log_start_offset)),
                    ("high_watermark", json!(high_watermark)),
                ],
            ),
            // Out of range like `offset_out_of_range`; the remedy is a seek.
            Kind::NoValidOffset { partition } => (
                S::RANGE_NOT_SATISFIABLE,
                "no_valid_offset",
                vec![("partition", json!(partition))],
            ),
            Kind::LimitReached { resource, limit } => (
                S::CONFLICT,
                "limit_reached",
                vec![("resource", json!(resource)), ("limit", json!(limit))],
            ),
            // `unknown_member` is a 409 like `stale_generation`: both mean "rejoin".
            Kind::UnknownMember { member } => (
                S::CONFLICT,
                "unknown_member",
                vec![("member_id", json!(member))],
            ),
            Kind::StaleGeneration { current, given } => (
                S::CONFLICT,
                "stale_generation",
                vec![
                    ("generation", json!(current)),
                    ("given_generation", json!(given)),
                ],
            ),
            Kind::NotAssigned { partition } => (
                S::CONFLICT,
                "not_assigned",
                vec![("partition", json!(partition))],
            ),
            Kind::GroupHasMembers { members } => (
                S::CONFLICT,
                "group_has_members",
                vec![("members", json!(members))],
            ),
            Kind::RebalanceInProgress => (S::CONFLICT, "rebalance_in_progress", vec![]),
            Kind::FencedInstanceId => (S::CONFLICT, "fenced_instance_id", vec![]),
            Kind::ProducerRejected(_) => (S::CONFLICT, "producer_rejected", vec![]),
            Kind::InconsistentGroupProtocol => (S::CONFLICT, "inconsistent_group_protocol", vec![]),
            Kind::Backpressure => (S::SERVICE_UNAVAILABLE, "backpressure", vec![]),
            Kind::ShuttingDown => (S::SERVICE_UNAVAILABLE, "shutting_down", vec![]),
            Kind::PartitionReadOnly => (S::SERVICE_UNAVAILABLE, "partition_read_only", vec![]),
            Kind::TooManyOpenFiles => (S::SERVICE_UNAVAILABLE, "too_many_open_files", vec![]),
            Kind::Unavailable => (S::SERVICE_UNAVAILABLE, "unavailable", vec![]),
            Kind::StorageFull => (S::INSUFFICIENT_STORAGE, "storage_full", vec![]),
            Kind::Corruption => (S::INTERNAL_SERVER_ERROR, "corruption", vec![]),
            Kind::Storage | Kind::Internal => (S::INTERNAL_SERVER_ERROR, "internal", vec![]),
        };
        let mut e = ApiError::new(status, code, f.detail);
        e.retry_after = f.retry_after;
        for (key, value) in extra {
            e = e.with(key, value);
        }
        e
    }
}

/// A core error answers as its [`Failure`] does.
macro_rules! via_failure {
    ($target:ty: $($op:ty),*) => {$(
        impl From<$op> for $target {
            fn from(e: $op) -> Self {
                kafko_service::failure::Failure::from(e).into()
            }
        }
    )*};
}
pub(crate) use via_failure;
via_failure!(ApiError: KafkoError, OpenError, AdminError, ProduceError, FetchError, GroupError);

impl From<ProduceFailure> for ApiError {
    fn from(e: ProduceFailure) -> Self {
        Failure::from(e).into()
    }
}

impl ApiError {
    /// A name check's failure under the code of what was named (`invalid_group_name`,
    /// `invalid_member_id`); the core reports every bad name as `InvalidName`.
    pub(crate) fn invalid_name(e: impl Into<KafkoError>, code: &'static str) -> Self {
        match e.into() {
            e @ KafkoError::InvalidName { .. } => ApiError::bad_request(code, e.to_string()),
            other => other.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let title = self.status.canonical_reason().unwrap_or("Error");
        let problem = Problem::new(
            self.status.as_u16(),
            title,
            self.code,
            self.detail,
            self.extra,
        );
        let text = serde_json::to_string(&problem).unwrap_or_default();
        let mut resp = (self.status, text).into_response();
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(s) = self.retry_after {
            h.insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

/// Result alias for handlers.
pub(crate) type ApiResult<T> = Result<T, ApiError>;

/// 404 for unknown paths.
pub(crate) async fn not_found(req: axum::extract::Request) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::NOT_FOUND,
        "not_found",
        format!("no route for {} {}", req.method(), req.uri().path()),
    )
}

/// 405 for known paths with another method.
pub(crate) async fn method_not_allowed(req: axum::extract::Request) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!("{} is not allowed on {}", req.method(), req.uri().path()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typed_extensions_of_v1_problems() {
        let stale = ApiError::from(KafkoError::StaleGeneration {
            group: "g".into(),
            current: 3,
            given: 2,
        });
        assert_eq!(stale.extra["generation"], 3);
        assert_eq!(stale.extra["given_generation"], 2);
        let range = ApiError::from(KafkoError::OffsetOutOfRange {
            requested: 9,
            log_start_offset: 1,
            high_watermark: 5,
        });
        assert_eq!(
            (
                range.extra["requested"].clone(),
                range.extra["log_start_offset"].clone(),
                range.extra["high_watermark"].clone()
            ),
            (json!(9), json!(1), json!(5))
        );
        let limit = ApiError::from(KafkoError::LimitReached {
            resource: "topics",
            limit: 2,
        });
        assert_eq!(
            (
                limit.extra["resource"].clone(),
                limit.extra["limit"].clone()
            ),
            (json!("topics"), json!(2))
        );
        let member = ApiError::from(KafkoError::UnknownMember {
            group: "g".into(),
            member: "m".into(),
        });
        assert_eq!(member.extra["member_id"], "m");
        let bad = kafko_core::naming::validate_name("..").unwrap_err();
        let a = ApiError::invalid_name(bad, "invalid_group_name");
        assert_eq!((a.status.as_u16(), a.code), (400, "invalid_group_name"));
    }

    #[test]
    fn internal_details_are_not_leaked() {
        let e = KafkoError::Corruption {
            file: "/secret/path/0.log".into(),
            position: 7,
            reason: "crc".into(),
        };
        let a = ApiError::from(e);
        assert_eq!((a.status.as_u16(), a.code), (500, "corruption"));
        assert!(!a.detail.contains("/secret"), "{}", a.detail);
        let io = KafkoError::Io {
            op: "reading",
            path: "/secret/file".into(),
            source: std::io::Error::other("boom"),
        };
        let a = ApiError::from(io);
        assert_eq!((a.status.as_u16(), a.code), (500, "internal"));
        assert!(!a.detail.contains("/secret"));
    }
}
