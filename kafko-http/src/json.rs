//! JSON answers: serialized by serde into one buffer sized by the caller's estimate, which
//! the response body then takes without a copy.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;

use crate::error::ApiError;

/// `value` as an `application/json` answer with `status`. `estimate` is the expected size
/// in bytes: a buffer that has to grow copies what it holds each time.
pub(crate) fn answer(status: StatusCode, value: &impl Serialize, estimate: usize) -> Response {
    let mut buf = Vec::with_capacity(estimate);
    if let Err(e) = serde_json::to_writer(&mut buf, value) {
        // Only a bug can get here: every answer type serializes.
        tracing::error!(error = %e, "an answer did not serialize");
        return ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error; see the server log",
        )
        .into_response();
    }
    raw_answer(status, buf)
}

/// `json`, already serialized, as an `application/json` answer with `status`.
pub(crate) fn raw_answer(status: StatusCode, mut json: Vec<u8>) -> Response {
    // `Bytes` takes a `Vec` with spare room through a shared header allocated besides;
    // shrunk to its length first, it takes it as it is.
    json.shrink_to_fit();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        Bytes::from(json),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_answer_is_serdes_json_whatever_the_estimate() {
        let value =
            serde_json::json!({"partitions": [{"partition": 3, "base_offset": 70}], "s": "é\"\n"});
        for estimate in [0, 1, 10, 10_000] {
            let resp = answer(StatusCode::CREATED, &value, estimate);
            assert_eq!(resp.status(), StatusCode::CREATED);
            assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
            let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
                .await
                .unwrap();
            assert_eq!(body, serde_json::to_vec(&value).unwrap());
        }
    }
}
