//! One accepted connection from accept to close: what it is doing ([`Activity`]: requests
//! in flight, when the last one ended), the service that keeps that record, and the task
//! that serves it until it ends or is asked to close ([`run`]). Whoever decides that a
//! connection must close — the sweep of the registry (no request head within the header
//! timeout of accept, HTTP/1 and h2c alike, as hyper's own timer only starts once it
//! knows the protocol; idle with nothing in flight for the idle timeout), the connection
//! cap evicting it, or shutdown — sends the reason on the connection's one close signal.
//!
//! Why one signal and no timer in the connection's task: that task is woken for every
//! read and write of every request, and each wake-up polls whatever it selects on. A
//! oneshot receiver costs an atomic load there; a timer, an eviction `Notify` and a
//! shutdown `watch` each cost more (a `Notify` takes a lock), on the hottest path.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tower::Service;

use crate::metrics::ClosedBy;

use super::Events;

/// How long a connection told to close may take to say goodbye (an h2 GOAWAY, a response
/// being written) once nothing is in flight, before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What one connection is doing, shared by its service (which counts requests), its task,
/// and the connection registry (which sweeps and may evict it).
#[derive(Debug)]
pub(super) struct Activity {
    accepted: Instant,
    /// Requests (HTTP/1) or streams (h2) whose response has not been fully sent.
    in_flight: AtomicUsize,
    /// Whether a request head has ever arrived.
    started: AtomicBool,
    /// When the last request ended, in ms after `accepted`.
    last_done_ms: AtomicU64,
    /// The close signal's sending side, taken by the first who asks the connection to
    /// close (so a connection is closed for one reason, once).
    closer: Mutex<Option<oneshot::Sender<Reason>>>,
}

/// The connection task's side of its close signal.
pub(super) type CloseSignal = oneshot::Receiver<Reason>;

impl Activity {
    /// A connection accepted now, and the signal its task waits on.
    pub(super) fn new() -> (Arc<Self>, CloseSignal) {
        let (closer, signal) = oneshot::channel();
        let activity = Activity {
            accepted: Instant::now(),
            in_flight: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            last_done_ms: AtomicU64::new(0),
            closer: Mutex::new(Some(closer)),
        };
        (Arc::new(activity), signal)
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

    /// Asks the connection to close to make room; `false` if it was asked to close already.
    pub(super) fn evict(&self) -> bool {
        self.close(Reason::Evicted)
    }

    /// Asks the connection to close because the server shuts down.
    pub(super) fn shut_down(&self) {
        self.close(Reason::Shutdown);
    }

    /// Closes the connection if it broke a timeout; `true` if it did.
    pub(super) fn close_if_overdue(&self, limits: &Timeouts) -> bool {
        self.overdue(limits)
            .is_some_and(|reason| self.close(reason))
    }

    #[cfg(test)]
    pub(super) fn mark_started_for_test(&self) {
        self.started.store(true, Ordering::Release);
    }

    /// Sends `reason` on the close signal; `false` if it was sent already.
    fn close(&self, reason: Reason) -> bool {
        let closer = self
            .closer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match closer {
            Some(closer) => {
                // The task may have ended on its own meanwhile: nothing left to close.
                let _ = closer.send(reason);
                true
            }
            None => false,
        }
    }

    fn since_accept_ms(&self) -> u64 {
        u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Which timeout the connection has broken, if any.
    fn overdue(&self, limits: &Timeouts) -> Option<Reason> {
        if !self.has_started() {
            return (self.accepted.elapsed() >= limits.header).then_some(Reason::NoRequestHead);
        }
        self.idle_for()
            .is_some_and(|idle| idle >= limits.idle)
            .then_some(Reason::Idle)
    }
}

/// The two timeouts the registry's sweep enforces.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timeouts {
    /// From accept to the first complete request head.
    pub(super) header: Duration,
    /// With nothing in flight, after the first request.
    pub(super) idle: Duration,
}

impl Timeouts {
    /// How often the registry is swept: an eighth of the shorter timeout (so a timeout is
    /// enforced at most an eighth late), between 10 ms and 1 s.
    pub(super) fn sweep_every(&self) -> Duration {
        (self.header.min(self.idle) / 8).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// Why the server closed a connection.
#[derive(Debug, Clone, Copy)]
pub(super) enum Reason {
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
pub(super) struct InFlight(Arc<Activity>);

impl InFlight {
    pub(super) fn begin(activity: &Arc<Activity>) -> Self {
        activity.started.store(true, Ordering::Release);
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // The time first, then the count: a sweep seeing the count at zero also sees
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

/// Serves `conn` until it ends, or until `close` says why it must close.
pub(super) async fn run(conn: Conn, activity: Arc<Activity>, close: CloseSignal, events: Events) {
    tokio::pin!(conn);
    let reason = tokio::select! {
        // The connection first: it is what wakes this task for nearly every request.
        biased;
        ended = conn.as_mut() => return finished(ended),
        // The sender lives in `activity`, held here: it cannot be dropped unsent.
        reason = close => reason.unwrap_or(Reason::Shutdown),
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
