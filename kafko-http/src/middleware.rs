//! Request middleware, as one tower layer ([`Envelope`]) doing in order: metrics and
//! timing, auth (a bearer token, or basic auth with the token as password), the concurrency limits (503 + `Retry-After` instead of queueing
//! without bound; long-polls under a limit of their own, so that requests which wait
//! cannot starve the ones which do not), the request timeout; plus problem+json
//! fallbacks for unknown routes and methods.
//!
//! Why a hand-written layer and not `axum::middleware::from_fn`: every request pays for
//! the middleware, and `from_fn` clones the inner service (a boxed clone) and boxes an
//! `async` block holding the request twice, per request. Here auth and the limit are
//! decided synchronously in `call`, and the only allocation is the request timeout's
//! timer, made only for a request that has to wait.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::time::Sleep;
use tower::{Layer, Service};

use crate::error::ApiError;
use crate::state::AppState;
use kafko_service::auth::authorization_matches;

/// The layer that wraps every route in an [`Envelope`].
#[derive(Clone)]
pub(crate) struct EnvelopeLayer(pub(crate) AppState);

impl<S> Layer<S> for EnvelopeLayer {
    type Service = Envelope<S>;

    fn layer(&self, inner: S) -> Envelope<S> {
        Envelope {
            inner,
            state: self.0.clone(),
        }
    }
}

/// Every request's way through: metrics (latency per route template, responses by
/// status) around auth, around the concurrency limit, around the timeout, around the route.
#[derive(Clone)]
pub(crate) struct Envelope<S> {
    inner: S,
    state: AppState,
}

impl<S> Service<Request> for Envelope<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
    S::Future: Unpin,
{
    type Response = Response;
    type Error = Infallible;
    type Future = EnvelopeFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        // `MatchedPath` and `Method` are cheap clones (a shared string, an enum): no
        // per-request allocation on the hot path.
        let route = req.extensions().get::<MatchedPath>().cloned();
        let method = req.method().clone();
        let started = Instant::now();
        self.state.metrics.request_started();
        let (stage, pool) = match admit(&self.state, &req) {
            Ok(pool) => (
                Stage::Running {
                    inner: self.inner.call(req),
                    timer: None,
                },
                Some(pool),
            ),
            Err(refusal) => (Stage::Refused(refusal.into_response()), None),
        };
        EnvelopeFuture {
            stage,
            finish: Some(Finish {
                route,
                method,
                started,
                pool,
                state: self.state.clone(),
            }),
        }
    }
}

/// What the metrics need once the response is known, and the admission to give back.
struct Finish {
    route: Option<MatchedPath>,
    method: Method,
    started: Instant,
    /// The limit the request was admitted under (`None`: refused).
    pool: Option<Pool>,
    state: AppState,
}

impl Finish {
    /// Gives the request's admission back (once).
    fn release(&mut self) {
        if let Some(pool) = self.pool.take() {
            self.state.limit(pool).release();
        }
    }
}

/// The limit a request runs under.
#[derive(Clone, Copy)]
pub(crate) enum Pool {
    /// `max_concurrent_requests`.
    General,
    /// `max_waiting_requests`: long-polls.
    Waiting,
}

/// A concurrency limit that refuses and never queues: the count of requests admitted,
/// raised with one compare-and-swap and lowered with one atomic subtraction (a tokio
/// `Semaphore`, used before, takes its waiters' lock on every release).
#[derive(Debug)]
pub(crate) struct Limit {
    admitted: AtomicUsize,
    max: usize,
}

impl Limit {
    /// A limit of `max` requests at once.
    pub(crate) fn new(max: usize) -> Self {
        Limit {
            admitted: AtomicUsize::new(0),
            max,
        }
    }

    /// Admits one more request if the limit allows it.
    fn try_admit(&self) -> bool {
        self.admitted
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .is_ok()
    }

    fn release(&self) {
        self.admitted.fetch_sub(1, Ordering::AcqRel);
    }
}

enum Stage<F> {
    Running {
        inner: F,
        /// The request timeout's timer, armed only once the request has to wait: one
        /// answered in its first poll never touches the timer wheel.
        timer: Option<Pin<Box<Sleep>>>,
    },
    Refused(Response),
    Done,
}

/// The future of an [`Envelope`]d request.
pub(crate) struct EnvelopeFuture<F> {
    stage: Stage<F>,
    finish: Option<Finish>,
}

impl<F> Future for EnvelopeFuture<F>
where
    F: Future<Output = Result<Response, Infallible>> + Unpin,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is `Unpin` (the route's future is, and the timer is boxed).
        let this = self.get_mut();
        let resp = match &mut this.stage {
            Stage::Running { inner, timer } => match Pin::new(inner).poll(cx) {
                Poll::Ready(Ok(resp)) => resp,
                Poll::Ready(Err(never)) => match never {},
                Poll::Pending => {
                    let (limit, started) = match &this.finish {
                        Some(f) => (f.state.config.request_timeout, f.started),
                        None => panic!("EnvelopeFuture polled after it completed"),
                    };
                    // The deadline counts from the request's start, as the timer would
                    // had it been armed then.
                    let timer = timer.get_or_insert_with(|| {
                        Box::pin(tokio::time::sleep_until(
                            tokio::time::Instant::from_std(started) + limit,
                        ))
                    });
                    ready!(timer.as_mut().poll(cx));
                    // Bounds the time to the response head (streams keep flowing after it).
                    ApiError::new(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "request_timeout",
                        format!("the request took longer than {} ms", limit.as_millis()),
                    )
                    .retry_after(1)
                    .into_response()
                }
            },
            Stage::Refused(resp) => std::mem::take(resp),
            Stage::Done => panic!("EnvelopeFuture polled after it completed"),
        };
        // Gives the admission back before the metrics are taken, as the response is final.
        this.stage = Stage::Done;
        if let Some(mut f) = this.finish.take() {
            f.release();
            f.state.metrics.request_finished(
                &f.method,
                f.route.as_ref().map_or("unmatched", MatchedPath::as_str),
                resp.status().as_u16(),
                f.started.elapsed(),
            );
        }
        Poll::Ready(Ok(resp))
    }
}

impl<F> Drop for EnvelopeFuture<F> {
    /// hyper drops a request's future when its client closes the connection first (a
    /// long-poll given up, a timed-out client): the request is no longer in flight.
    fn drop(&mut self) {
        if let Some(mut f) = self.finish.take() {
            // The route's future goes first, as it did when it held the admission.
            self.stage = Stage::Done;
            f.release();
            f.state.metrics.request_abandoned();
        }
    }
}

/// Requests served without a token: the probes (orchestrators do not carry secrets), the
/// console's static files (no data: the console sends the token on its API calls) and a
/// browser's visit to `/` (a redirect to the console).
fn is_public(req: &Request) -> bool {
    let path = req.uri().path();
    matches!(path, "/healthz" | "/readyz" | "/ui")
        || path.starts_with("/ui/")
        || (path == "/" && crate::v1::ui::is_browser_navigation(req.method(), req.headers()))
}

/// Auth, then the concurrency limit: a permit to run the request, or the answer to give
/// instead. 401 without `Authorization: Bearer <token>` (or `Basic` credentials whose
/// password is the token) when a token is configured; 503
/// `overloaded` when `max_concurrent_requests` (or, for a long-poll,
/// `max_waiting_requests`) are already being handled. A REST Proxy records read waits
/// too, under the same limit, and is refused in the proxy's own shape.
fn admit(state: &AppState, req: &Request) -> Result<Pool, Refusal> {
    if let Some(token) = state.config.auth_token.as_deref()
        && !is_public(req)
        && req.method() != Method::OPTIONS
    {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .map_or(&b""[..], |v| v.as_bytes());
        if !authorization_matches(token, given) {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid bearer token (or basic auth with the token as password) is required",
            )
            .into());
        }
    }
    if is_long_poll(req) {
        return if state.waiting_permits.try_admit() {
            Ok(Pool::Waiting)
        } else {
            Err(ApiError::overloaded("too many waiting long-polls; retry later").into())
        };
    }
    if crate::rest_proxy::is_waiting_read(req) {
        return if state.waiting_permits.try_admit() {
            Ok(Pool::Waiting)
        } else {
            Err(Refusal::ProxyWaiting)
        };
    }
    if state.permits.try_admit() {
        Ok(Pool::General)
    } else {
        Err(ApiError::overloaded("too many concurrent requests; retry later").into())
    }
}

/// Why a request is not admitted.
enum Refusal {
    /// The server's problem (auth, overload).
    Server(ApiError),
    /// A REST Proxy records read past the waiting limit (the proxy's error shape).
    ProxyWaiting,
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        Refusal::Server(e)
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::Server(e) => e.into_response(),
            Refusal::ProxyWaiting => crate::rest_proxy::error::too_many_waiting_reads(),
        }
    }
}

/// The routes that long-poll: a records read and a group poll. Only these wait for
/// records, so only these run under the limit of waiting requests.
const LONG_POLL_ROUTES: [(Method, &str); 3] = [
    (Method::GET, "/v1/topics/{topic}/records"),
    (Method::HEAD, "/v1/topics/{topic}/records"),
    (Method::POST, "/v1/groups/{group}/topics/{topic}/poll"),
];

/// Whether the request may wait for records: a read or a group poll (by its route, never
/// by its query alone) with a `wait_ms` above zero. Such a request spends its time
/// waiting, not working, so it runs under a limit of its own; a `wait_ms` on any other
/// route changes nothing, and the request counts against the concurrent limit.
fn is_long_poll(req: &Request) -> bool {
    let Some(route) = req.extensions().get::<MatchedPath>() else {
        return false;
    };
    LONG_POLL_ROUTES
        .iter()
        .any(|(method, path)| req.method() == method && route.as_str() == *path)
        && req.uri().query().is_some_and(|query| {
            query.split('&').any(|pair| {
                pair.strip_prefix("wait_ms=")
                    .and_then(|ms| ms.parse::<u64>().ok())
                    .is_some_and(|ms| ms > 0)
            })
        })
}
