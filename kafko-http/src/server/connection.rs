//! One accepted connection from accept to close: what it is doing ([`Activity`]: requests
//! in flight, when the last one ended), the service that keeps that record, and the
//! watchdog that closes the connection when no request head completes within the header
//! timeout of accept (HTTP/1 and h2c alike: hyper's own timer only starts once it knows
//! the protocol, and a silent socket never tells it), when it has sat idle with nothing
//! in flight for the idle timeout, when the connection cap evicts it, or on shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tower::Service;

use crate::metrics::ClosedBy;

use super::Events;

/// How long a connection told to close may take to say goodbye (an h2 GOAWAY, a response
/// being written) once nothing is in flight, before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What one connection is doing, shared by its service (which counts requests), its
/// watchdog, and the connection registry (which may evict it).
#[derive(Debug)]
pub(super) struct Activity {
    accepted: Instant,
    /// Requests (HTTP/1) or streams (h2) whose response has not been fully sent.
    in_flight: AtomicUsize,
    /// Whether a request head has ever arrived.
    started: AtomicBool,
    /// When the last request ended, in ms after `accepted`.
    last_done_ms: AtomicU64,
    /// Set by the registry when it closes this connection to make room.
    evicted: AtomicBool,
    evict: Notify,
}

impl Activity {
    pub(super) fn new() -> Self {
        Activity {
            accepted: Instant::now(),
            in_flight: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            last_done_ms: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            evict: Notify::new(),
        }
    }

    /// Whether no request is in flight (a silent socket, a keep-alive wait).
    pub(super) fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    /// How long nothing has been in flight (since accept, or since the last request
    /// ended); `None` while a request is in flight.
    pub(super) fn idle_for(&self) -> Option<Duration> {
        if !self.is_idle() {
            return None;
        }
        let since = Duration::from_millis(self.last_done_ms.load(Ordering::Acquire));
        Some(self.accepted.elapsed().saturating_sub(since))
    }

    /// Whether a request head has ever arrived.
    pub(super) fn has_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Asks the connection to close (idempotent); `false` if it was asked already.
    pub(super) fn evict(&self) -> bool {
        if self.evicted.swap(true, Ordering::AcqRel) {
            return false;
        }
        // `notify_one` keeps the wake-up if the watchdog is not waiting right now.
        self.evict.notify_one();
        true
    }

    #[cfg(test)]
    pub(super) fn mark_started_for_test(&self) {
        self.started.store(true, Ordering::Release);
    }

    fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    fn since_accept_ms(&self) -> u64 {
        u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// When the watchdog must look again, or why the connection must close now.
    fn next_check(&self, limits: &Timeouts) -> Result<Instant, Reason> {
        let now = Instant::now();
        if !self.has_started() {
            let deadline = self.accepted + limits.header;
            return if now >= deadline {
                Err(Reason::NoRequestHead)
            } else {
                // Looks again within the idle timeout too: a request that starts and ends
                // meanwhile makes the idle deadline the one that matters.
                Ok(deadline.min(now + limits.idle))
            };
        }
        if !self.is_idle() {
            // Busy: nothing to enforce until the last request ends; look again later.
            return Ok(now + limits.idle);
        }
        let idle_since =
            self.accepted + Duration::from_millis(self.last_done_ms.load(Ordering::Acquire));
        let deadline = idle_since + limits.idle;
        if now >= deadline {
            Err(Reason::Idle)
        } else {
            Ok(deadline)
        }
    }
}

/// The two timeouts the watchdog enforces.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeouts {
    /// From accept to the first complete request head.
    pub(super) header: Duration,
    /// With nothing in flight, after the first request.
    pub(super) idle: Duration,
}

/// Why the server closed a connection.
#[derive(Debug, Clone, Copy)]
enum Reason {
    NoRequestHead,
    Idle,
    Evicted,
    Shutdown,
}

impl Reason {
    /// The metric's reason; shutdown closes every connection and is not counted.
    fn counted(self) -> Option<ClosedBy> {
        match self {
            Reason::NoRequestHead => Some(ClosedBy::NoRequestHead),
            Reason::Idle => Some(ClosedBy::Idle),
            Reason::Evicted => Some(ClosedBy::Evicted),
            Reason::Shutdown => None,
        }
    }
}

/// One request in flight on a connection: counted from its head until its response body
/// has been sent (or dropped), so a long-poll or a stream keeps the connection busy.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn begin(activity: &Arc<Activity>) -> Self {
        activity.started.store(true, Ordering::Release);
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // The time first, then the count: a watchdog seeing the count at zero also sees
        // the time this request ended.
        let ms = self.0.since_accept_ms();
        self.0.last_done_ms.fetch_max(ms, Ordering::AcqRel);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The router as a hyper service that counts its requests into the connection's
/// [`Activity`].
#[derive(Clone)]
pub(super) struct Tracked {
    router: Router,
    activity: Arc<Activity>,
}

impl Tracked {
    pub(super) fn new(router: Router, activity: Arc<Activity>) -> Self {
        Tracked { router, activity }
    }
}

impl hyper::service::Service<Request<Incoming>> for Tracked {
    type Response = Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedFuture<<Router as Service<Request<Incoming>>>::Future>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let in_flight = InFlight::begin(&self.activity);
        // A `Router` is always ready; a clone is one reference count.
        let inner = self.router.clone().call(req);
        TrackedFuture {
            inner,
            in_flight: Some(in_flight),
        }
    }
}

/// The router's future; hands the in-flight mark on to the response body.
pub(super) struct TrackedFuture<F> {
    inner: F,
    in_flight: Option<InFlight>,
}

impl<F> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>> + Unpin,
{
    type Output = Result<Response<TrackedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Ok(resp) = ready!(Pin::new(&mut this.inner).poll(cx));
        let in_flight = this.in_flight.take();
        Poll::Ready(Ok(resp.map(|body| TrackedBody {
            inner: body,
            _in_flight: in_flight,
        })))
    }
}

/// A response body that keeps its request in flight until it is sent or dropped.
pub(super) struct TrackedBody {
    inner: Body,
    _in_flight: Option<InFlight>,
}

impl hyper::body::Body for TrackedBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A served connection, HTTP/1 or h2c as the client speaks.
pub(super) type Conn =
    auto::UpgradeableConnection<'static, TokioIo<TcpStream>, Tracked, TokioExecutor>;

/// Drives `conn` to its end, closing it for the reasons the module names.
pub(super) async fn run(conn: Conn, activity: Arc<Activity>, limits: Timeouts, events: Events) {
    let shutdown = events.shutdown_requested();
    tokio::pin!(conn);
    tokio::pin!(shutdown);
    let reason = loop {
        let wake = match activity.next_check(&limits) {
            Ok(at) => at,
            Err(reason) => break reason,
        };
        if activity.is_evicted() {
            break Reason::Evicted;
        }
        tokio::select! {
            ended = conn.as_mut() => return finished(ended),
            () = tokio::time::sleep_until(wake.into()) => {}
            () = activity.evict.notified() => break Reason::Evicted,
            () = &mut shutdown => break Reason::Shutdown,
        }
    };
    tracing::debug!(?reason, "closing connection");
    if let Some(why) = reason.counted() {
        events.closed_by(why);
    }
    conn.as_mut().graceful_shutdown();
    if matches!(reason, Reason::Shutdown) {
        // Shutdown lets in-flight requests finish; the server bounds the wait.
        finished(conn.await);
        return;
    }
    // Otherwise nothing was in flight when it was decided: a moment to say goodbye, more
    // only if a request slipped in meanwhile.
    loop {
        tokio::select! {
            ended = conn.as_mut() => return finished(ended),
            () = tokio::time::sleep(CLOSE_GRACE) => {
                if activity.is_idle() {
                    return;
                }
            }
        }
    }
}

fn finished(ended: Result<(), Box<dyn std::error::Error + Send + Sync>>) {
    if let Err(e) = ended {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}
