//! Errors: [`ApiError`], every failed request as `application/problem+json` (RFC 9457)
//! with a stable `code`, the one place where a core error becomes an HTTP status (each
//! operation's error through the union [`KafkoError`], so one table decides), and
//! [`ServerError`] for start-up failures.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use kafko_core::{
    AdminError, ErrorKind, FetchError, GroupError, KafkoError, OpenError, ProduceError,
};
use serde_json::{Map, Value, json};

use crate::dto::Problem;

/// Content type of every error body.
pub(crate) const PROBLEM_JSON: &str = "application/problem+json";

/// Start-up and serving failures of the server process.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The log could not be opened.
    #[error("opening the data directory: {0}")]
    Open(#[source] OpenError),
    /// The log's shutdown failed (it could not drain, fsync or mark the directory
    /// clean); the next open recovers as after a crash.
    #[error("shutting down the data directory: {0}")]
    Shutdown(#[source] AdminError),
    /// The listen address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Another I/O failure while serving.
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

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

impl From<KafkoError> for ApiError {
    // Long by design: the one status-and-code table, an arm per error variant.
    fn from(e: KafkoError) -> Self {
        let detail = e.to_string();
        let (status, code) = match &e {
            KafkoError::TopicNotFound { .. } => (StatusCode::NOT_FOUND, "topic_not_found"),
            KafkoError::TopicDeleted { .. } => (StatusCode::NOT_FOUND, "topic_deleted"),
            KafkoError::PartitionNotFound { .. } => (StatusCode::NOT_FOUND, "partition_not_found"),
            KafkoError::GroupNotFound { .. } => (StatusCode::NOT_FOUND, "group_not_found"),
            KafkoError::TopicAlreadyExists { .. } => (StatusCode::CONFLICT, "topic_exists"),
            KafkoError::InvalidName { .. } => (StatusCode::BAD_REQUEST, "invalid_topic_name"),
            KafkoError::InvalidConfig { .. } => (StatusCode::BAD_REQUEST, "invalid_config"),
            KafkoError::KeyRequired { .. } => (StatusCode::BAD_REQUEST, "key_required"),
            KafkoError::InvalidRequest { .. } => (StatusCode::BAD_REQUEST, "invalid_request"),
            KafkoError::RecordTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, "record_too_large")
            }
            KafkoError::OffsetOutOfRange {
                requested,
                log_start_offset,
                high_watermark,
            } => {
                return ApiError::new(
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    "offset_out_of_range",
                    detail,
                )
                .with("requested", json!(requested))
                .with("log_start_offset", json!(log_start_offset))
                .with("high_watermark", json!(high_watermark));
            }
            KafkoError::Backpressure { .. } => {
                return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "backpressure", detail)
                    .retry_after(1);
            }
            KafkoError::ShuttingDown => {
                return ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", detail)
                    .retry_after(5);
            }
            KafkoError::PartitionReadOnly { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "partition_read_only")
            }
            KafkoError::StorageFull { .. } => (StatusCode::INSUFFICIENT_STORAGE, "storage_full"),
            // A configured limit, as Kafka refuses what its policy forbids: the request
            // is valid and succeeds once a topic is deleted or the limit raised.
            KafkoError::LimitReached { resource, limit } => {
                return ApiError::new(StatusCode::CONFLICT, "limit_reached", detail)
                    .with("resource", json!(resource))
                    .with("limit", json!(limit));
            }
            KafkoError::TooManyOpenFiles { .. } => {
                (StatusCode::SERVICE_UNAVAILABLE, "too_many_open_files")
            }
            // Consumer groups. `unknown_member` is a 409 like `stale_generation`: the
            // usual cause is an expired session, and the remedy for both is to rejoin.
            KafkoError::UnknownMember { member, .. } => {
                return ApiError::new(StatusCode::CONFLICT, "unknown_member", detail)
                    .with("member_id", json!(member));
            }
            KafkoError::StaleGeneration { current, given, .. } => {
                return ApiError::new(StatusCode::CONFLICT, "stale_generation", detail)
                    .with("generation", json!(current))
                    .with("given_generation", json!(given));
            }
            KafkoError::NotAssigned { partition, .. } => {
                return ApiError::new(StatusCode::CONFLICT, "not_assigned", detail)
                    .with("partition", json!(partition));
            }
            KafkoError::GroupHasMembers { members, .. } => {
                return ApiError::new(StatusCode::CONFLICT, "group_has_members", detail)
                    .with("members", json!(members));
            }
            // A bug or a panic: logged in full below, `internal` to the client.
            KafkoError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            // Out of range like `offset_out_of_range`; the remedy is a seek.
            KafkoError::NoValidOffset { partition, .. } => {
                return ApiError::new(StatusCode::RANGE_NOT_SATISFIABLE, "no_valid_offset", detail)
                    .with("partition", json!(partition));
            }
            _ => match e.kind() {
                ErrorKind::NotFound => (StatusCode::NOT_FOUND, "not_found"),
                ErrorKind::AlreadyExists | ErrorKind::Conflict => {
                    (StatusCode::CONFLICT, "conflict")
                }
                ErrorKind::InvalidInput => (StatusCode::BAD_REQUEST, "invalid_request"),
                ErrorKind::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
                ErrorKind::OutOfRange => (StatusCode::RANGE_NOT_SATISFIABLE, "offset_out_of_range"),
                ErrorKind::Unavailable => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
                ErrorKind::StorageFull => (StatusCode::INSUFFICIENT_STORAGE, "storage_full"),
                ErrorKind::Corruption => (StatusCode::INTERNAL_SERVER_ERROR, "corruption"),
                _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
            },
        };
        if status.is_server_error() {
            return ApiError::server_side(status, code, &e);
        }
        ApiError::new(status, code, detail)
    }
}

impl ApiError {
    /// A server-side failure: logged in full (paths, OS errors), answered with a
    /// generic detail.
    fn server_side(status: StatusCode, code: &'static str, e: &KafkoError) -> Self {
        tracing::error!(error = %e, code, "request failed");
        let public = match status {
            StatusCode::INSUFFICIENT_STORAGE => "the server is out of disk space",
            StatusCode::SERVICE_UNAVAILABLE if code == "too_many_open_files" => {
                "the server is out of file descriptors; retry later"
            }
            StatusCode::SERVICE_UNAVAILABLE => "the partition is temporarily unavailable",
            _ => "internal error; see the server log",
        };
        let err = ApiError::new(status, code, public);
        if status == StatusCode::SERVICE_UNAVAILABLE {
            return err.retry_after(5);
        }
        err
    }
}

/// Each operation's error maps through the union type, so one table decides (also
/// for the REST Proxy's errors).
macro_rules! via_kafko_error {
    ($target:ty: $($op:ty),*) => {$(
        impl From<$op> for $target {
            fn from(e: $op) -> Self {
                kafko_core::KafkoError::from(e).into()
            }
        }
    )*};
}
pub(crate) use via_kafko_error;
via_kafko_error!(ApiError: OpenError, AdminError, ProduceError, FetchError, GroupError);

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

#[cfg(test)]
mod tests {
    use super::*;

    fn map(e: KafkoError) -> (u16, &'static str, Option<u32>) {
        let a = ApiError::from(e);
        (a.status.as_u16(), a.code, a.retry_after)
    }

    #[test]
    fn core_errors_map_to_statuses_and_stable_codes() {
        let t = || "t".to_owned();
        assert_eq!(
            map(KafkoError::TopicNotFound { topic: t() }),
            (404, "topic_not_found", None)
        );
        assert_eq!(
            map(KafkoError::TopicAlreadyExists { topic: t() }),
            (409, "topic_exists", None)
        );
        assert_eq!(
            map(KafkoError::InvalidName {
                name: "..".into(),
                reason: "dots"
            }),
            (400, "invalid_topic_name", None)
        );
        assert_eq!(
            map(KafkoError::RecordTooLarge { size: 2, max: 1 }),
            (413, "record_too_large", None)
        );
        assert_eq!(
            map(KafkoError::Backpressure {
                topic: t(),
                partition: 0
            }),
            (503, "backpressure", Some(1))
        );
        assert_eq!(
            map(KafkoError::ShuttingDown),
            (503, "shutting_down", Some(5))
        );
        assert_eq!(
            map(KafkoError::StorageFull {
                op: "writing",
                path: "/x".into()
            })
            .0,
            507
        );
        assert_eq!(
            map(KafkoError::TooManyOpenFiles {
                op: "creating",
                path: "/x".into()
            }),
            (503, "too_many_open_files", Some(5))
        );
        assert_eq!(
            map(KafkoError::OffsetOutOfRange {
                requested: 9,
                log_start_offset: 1,
                high_watermark: 5
            }),
            (416, "offset_out_of_range", None)
        );
    }

    #[test]
    fn group_errors_map_to_statuses_and_stable_codes() {
        let g = || "g".to_owned();
        assert_eq!(
            map(KafkoError::GroupNotFound { group: g() }),
            (404, "group_not_found", None)
        );
        assert_eq!(
            map(KafkoError::UnknownMember {
                group: g(),
                member: "m".into()
            }),
            (409, "unknown_member", None)
        );
        let stale = ApiError::from(KafkoError::StaleGeneration {
            group: g(),
            current: 3,
            given: 2,
        });
        assert_eq!(
            (stale.status.as_u16(), stale.code),
            (409, "stale_generation")
        );
        assert_eq!(stale.extra["generation"], 3);
        assert_eq!(
            map(KafkoError::NotAssigned {
                topic: "t".into(),
                partition: 1,
                member: "m".into()
            }),
            (409, "not_assigned", None)
        );
        assert_eq!(
            map(KafkoError::GroupHasMembers {
                group: g(),
                topic: "t".into(),
                members: 2
            }),
            (409, "group_has_members", None)
        );
        assert_eq!(
            map(KafkoError::NoValidOffset {
                group: g(),
                topic: "t".into(),
                partition: 0
            }),
            (416, "no_valid_offset", None)
        );
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
