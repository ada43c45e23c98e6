//! Streaming reads: NDJSON (one record object per line) and Server-Sent Events (event
//! `record`, `id: partition:offset:topic_id`, resumable with `Last-Event-ID`). Without
//! `follow` a stream ends at the high watermark seen when it started; with `follow=true`
//! it tails the partition until the client leaves, the server shuts down or the topic is
//! deleted. An error after the head was sent (`topic_deleted` among them) becomes a final
//! `{"error":…}` line or an `event: error`, and ends the stream.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::http::header;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};

use crate::body_format::Format;
use crate::dto::RecordOut;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use kafko_service::metrics::FrontEnd;
use kafko_service::wait::Waiter;

use super::fetch::ReadSpec;
use super::{payload_bytes, to_out};

/// How long one wait for new records lasts before the loop re-checks.
const FOLLOW_WAIT: Duration = Duration::from_secs(15);

/// A read position moving through one partition.
struct Cursor {
    state: AppState,
    read: ReadSpec,
    next: u64,
    /// Where a non-following stream stops.
    end: Option<u64>,
    sent: usize,
    formats: (Format, Format),
    done: bool,
}

impl Cursor {
    fn new(state: AppState, read: ReadSpec, formats: (Format, Format)) -> Self {
        let end = if read.follow {
            None
        } else {
            read.reader.offsets().ok().map(|o| o.high_watermark)
        };
        Cursor {
            next: read.start,
            state,
            read,
            end,
            sent: 0,
            formats,
            done: false,
        }
    }

    /// The next non-empty batch of rendered records; `None` when the stream is over.
    async fn next_batch(&mut self) -> Option<ApiResult<Vec<RecordOut>>> {
        loop {
            if self.done || self.end.is_some_and(|end| self.next >= end) {
                return None;
            }
            let left = self
                .read
                .total
                .map_or(usize::MAX, |t| t.saturating_sub(self.sent));
            if left == 0 {
                return None;
            }
            let max = self.read.max_records.min(left);
            let reader = &self.read.reader;
            let fetched = if self.read.follow {
                // Counted as a waiting read while it waits, like any long-poll.
                let deadline = tokio::time::Instant::now() + FOLLOW_WAIT;
                let mut waiter = Waiter::new(&self.state, FrontEnd::V1, deadline);
                let (bytes, isolation) = (self.read.max_bytes, self.read.isolation);
                let read = reader.read_wait_with(self.next, max, bytes, FOLLOW_WAIT, isolation);
                match waiter.until(read).await {
                    Some(fetched) => fetched,
                    None if self.state.is_shutting_down() => return None,
                    // The wait's own end: nothing new yet; follow on.
                    None => continue,
                }
            } else {
                if self.state.is_shutting_down() {
                    return None;
                }
                reader.read_with(self.next, max, self.read.max_bytes, self.read.isolation)
            };
            let fetched = match fetched {
                Ok(f) => f,
                Err(e) => return self.fail(e.into()),
            };
            self.next = fetched.next_offset;
            let records: Vec<_> = fetched
                .records
                .into_iter()
                .filter(|r| self.end.is_none_or(|end| r.offset < end))
                .collect();
            if !records.is_empty() {
                let (vf, kf) = self.formats;
                let out = match records.iter().map(|r| to_out(r, vf, kf)).collect() {
                    Ok(out) => out,
                    Err(e) => return self.fail(e),
                };
                self.sent += records.len();
                let bytes = records.iter().map(payload_bytes).sum();
                let topic = self.read.reader.topic();
                self.state.metrics.consumed(topic, records.len(), bytes);
                return Some(Ok(out));
            }
            if !self.read.follow {
                return None;
            }
        }
    }

    fn fail(&mut self, e: ApiError) -> Option<ApiResult<Vec<RecordOut>>> {
        self.done = true;
        Some(Err(e))
    }
}

fn batches(cursor: Cursor) -> impl Stream<Item = ApiResult<Vec<RecordOut>>> + Send {
    stream::unfold(cursor, |mut c| async move {
        c.next_batch().await.map(|b| (b, c))
    })
}

fn problem_json(e: &ApiError) -> String {
    serde_json::json!({
        "type": format!("urn:kafko:problem:{}", e.code),
        "status": e.status.as_u16(),
        "code": e.code,
        "detail": e.detail,
    })
    .to_string()
}

/// An NDJSON response.
pub(crate) fn ndjson(state: AppState, read: ReadSpec, formats: (Format, Format)) -> Response {
    let lines = batches(Cursor::new(state, read, formats)).map(|batch| {
        let mut buf = Vec::new();
        match batch {
            Ok(records) => {
                for r in records {
                    if serde_json::to_writer(&mut buf, &r).is_ok() {
                        buf.push(b'\n');
                    }
                }
            }
            Err(e) => {
                buf.extend_from_slice(format!("{{\"error\":{}}}\n", problem_json(&e)).as_bytes());
            }
        }
        Ok::<_, Infallible>(Bytes::from(buf))
    });
    (
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(lines),
    )
        .into_response()
}

/// A Server-Sent Events response.
pub(crate) fn sse(state: AppState, read: ReadSpec, formats: (Format, Format)) -> Response {
    let topic_id = read.reader.topic_id();
    let events = batches(Cursor::new(state, read, formats)).flat_map(move |batch| {
        let events: Vec<Event> = match batch {
            Ok(records) => records
                .iter()
                .map(|r| {
                    Event::default()
                        .event("record")
                        .id(format!("{}:{}:{topic_id}", r.partition, r.offset))
                        .data(serde_json::to_string(r).unwrap_or_default())
                })
                .collect(),
            Err(e) => vec![Event::default().event("error").data(problem_json(&e))],
        };
        stream::iter(events.into_iter().map(Ok::<_, Infallible>))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
