//! One accepted HTTP connection from accept to close: the service that counts its
//! requests into its [`Activity`] (kept in `kafko_service::connections`), and the task that
//! serves it until it ends or is asked to close ([`run`]). Whoever decides that a
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
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpStream;
use tower::Service;

use super::Events;
use kafko_service::connections::{Activity, CloseSignal, InFlight, Reason};

/// How long a connection told to close may take to say goodbye (an h2 GOAWAY, a response
/// being written) once nothing is in flight, before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

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
