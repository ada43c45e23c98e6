//! JSON answers: serialized by serde into one buffer sized by the caller's estimate, which
//! the response body then takes without a copy; and the pool that large answers' buffers
//! go back to once sent. Every answer that carries records renders through here: the
//! fetch, the group poll and the REST Proxy's records read.
//!
//! Why a pool: a fetch answer is hundreds of kilobytes. A fresh buffer of that size per
//! request is one glibc either maps (`mmap`, then `munmap` when freed) or takes from the
//! top of a heap that it trims again (`madvise`) once freed — either way every request
//! writes into fresh zeroed pages, a page fault per 4 KiB, and the unmapping interrupts
//! the other threads. Which of the two happens depends on glibc's sliding thresholds, so
//! a small change in sizes moved a 1,000-record fetch from heap to page faults (85 per
//! request) and cost it 20 % of its throughput. Reused buffers are already mapped.

use std::sync::{Mutex, PoisonError};

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde::Serialize;

use crate::error::ApiError;

/// `value` as an `application/json` answer with `status`. `estimate` is the expected size
/// in bytes: a buffer that has to grow copies what it holds each time.
pub(crate) fn answer(status: StatusCode, value: &impl Serialize, estimate: usize) -> Response {
    match to_bytes(value, estimate) {
        Ok(json) => with_type(status, json),
        Err(e) => serialize_failed(&e).into_response(),
    }
}

/// `json`, already serialized, as an `application/json` answer with `status`.
pub(crate) fn answer_bytes(status: StatusCode, json: Bytes) -> Response {
    with_type(status, json)
}

/// `value` serialized for a body of about `estimate` bytes: an answer of 64 KiB or more
/// is written into a pooled buffer, which goes back to the pool once the body is dropped.
///
/// # Errors
/// Only a bug: every answer type serializes.
pub(crate) fn to_bytes(value: &impl Serialize, estimate: usize) -> serde_json::Result<Bytes> {
    let mut buf = buffer(estimate);
    serde_json::to_writer(&mut buf, value)?;
    Ok(into_bytes(buf))
}

/// The 500 for an answer that did not serialize (a bug), logged.
pub(crate) fn serialize_failed(e: &serde_json::Error) -> ApiError {
    tracing::error!(error = %e, "an answer did not serialize");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "internal error; see the server log",
    )
}

/// An answer's buffer as a body.
fn into_bytes(json: Vec<u8>) -> Bytes {
    if json.capacity() >= POOLED_FROM {
        // Back to the pool once the body has been sent.
        Bytes::from_owner(Pooled(json))
    } else {
        // Not shrunk first: `Bytes` takes a `Vec` with spare room through a small shared
        // header, where a shrinking `realloc` takes the allocator's arena lock.
        Bytes::from(json)
    }
}

fn with_type(status: StatusCode, json: Bytes) -> Response {
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        json,
    )
        .into_response()
}

/// Room to presize for an answer of `records` records of about `bytes` payload bytes:
/// their text (base64 is a third longer), then each record's member names and numbers.
pub(crate) fn records_estimate(records: usize, bytes: usize) -> usize {
    bytes + bytes / 3 + records * 112 + 160
}

/// Buffers at least this large come from the pool and go back to it.
const POOLED_FROM: usize = 64 * 1024;
/// Buffers the pool keeps at most, and the largest it keeps: at most 32 MiB held idle.
const POOL_SLOTS: usize = 8;
const POOLED_UP_TO: usize = 4 * 1024 * 1024;

/// Idle answer buffers, empty, each of `POOLED_FROM..=POOLED_UP_TO` bytes of capacity.
static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// An empty buffer with room for about `estimate` bytes: from the pool when it is large.
fn buffer(estimate: usize) -> Vec<u8> {
    if estimate < POOLED_FROM {
        return Vec::with_capacity(estimate);
    }
    let pooled = POOL.lock().unwrap_or_else(PoisonError::into_inner).pop();
    let mut buf = pooled.unwrap_or_default();
    buf.reserve(estimate);
    buf
}

/// A large answer's buffer, returned to the pool when the body drops it.
struct Pooled(Vec<u8>);

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.0);
        if !(POOLED_FROM..=POOLED_UP_TO).contains(&buf.capacity()) {
            return;
        }
        buf.clear();
        let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
        if pool.len() < POOL_SLOTS {
            pool.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(resp: Response) -> Bytes {
        axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_answer_is_serdes_json_whatever_the_estimate() {
        let value =
            serde_json::json!({"partitions": [{"partition": 3, "base_offset": 70}], "s": "é\"\n"});
        // Small answers only: the pooled path is the next test's, which counts on the pool.
        for estimate in [0, 1, 10, 10_000] {
            let resp = answer(StatusCode::CREATED, &value, estimate);
            assert_eq!(resp.status(), StatusCode::CREATED);
            assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
            assert_eq!(body_of(resp).await, serde_json::to_vec(&value).unwrap());
        }
    }

    #[tokio::test]
    async fn a_large_answers_buffer_is_reused_once_sent_and_never_shared_while_in_use() {
        let big = |c: char| serde_json::json!({ "s": c.to_string().repeat(POOLED_FROM * 2) });
        let first = answer(StatusCode::OK, &big('a'), POOLED_FROM * 3);
        // In use: a second large answer gets another buffer, and neither changes.
        let second = answer(StatusCode::OK, &big('b'), POOLED_FROM * 3);
        let (first, second) = (body_of(first).await, body_of(second).await);
        assert_eq!(first, serde_json::to_vec(&big('a')).unwrap());
        assert_eq!(second, serde_json::to_vec(&big('b')).unwrap());
        let pointers = [first.as_ptr(), second.as_ptr()];
        drop((first, second));
        // Sent and dropped: the next large answer writes into one of them.
        let third = body_of(answer(StatusCode::OK, &big('c'), POOLED_FROM * 3)).await;
        assert_eq!(third, serde_json::to_vec(&big('c')).unwrap());
        assert!(
            pointers.contains(&third.as_ptr()),
            "a pooled buffer was reused"
        );
    }
}
