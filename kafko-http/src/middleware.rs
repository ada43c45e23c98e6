//! Request middleware, as one tower layer ([`Envelope`]) doing in order: metrics and
//! timing, bearer auth, the concurrency limits (503 + `Retry-After` instead of queueing
//! without bound; long-polls under a limit of their own, so that requests which wait
//! cannot starve the ones which do not), the request timeout; plus problem+json
//! fallbacks for unknown routes and methods.
//!
//! Why a hand-written layer and not `axum::middleware::from_fn`: every request pays for
//! the middleware, and `from_fn` clones the inner service (a boxed clone) and boxes an
//! `async` block holding the request twice, per request. Here auth and the limit are
//! decided synchronously in `call`, and the only allocation is the timed inner future.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::time::Timeout;
use tower::{Layer, Service};

use crate::error::ApiError;
use crate::state::AppState;

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
        let finish = Finish {
            route: req.extensions().get::<MatchedPath>().cloned(),
            method: req.method().clone(),
            started: Instant::now(),
            state: self.state.clone(),
        };
        self.state.metrics.request_started();
        let stage = match admit(&self.state, &req) {
            Ok((permit, pool)) => {
                // Held as a guard that owns its state, so the future is `'static`.
                permit.forget();
                let limit = self.state.config.request_timeout;
                Stage::Running {
                    // Boxed: a timer entry is not `Unpin`, and boxing it keeps the future
                    // movable without pin projection.
                    inner: Box::pin(tokio::time::timeout(limit, self.inner.call(req))),
                    limit,
                    _permit: PermitGuard(self.state.clone(), pool),
                }
            }
            Err(refusal) => Stage::Refused(refusal.into_response()),
        };
        EnvelopeFuture {
            stage,
            finish: Some(finish),
        }
    }
}

/// What the metrics need once the response is known.
struct Finish {
    route: Option<MatchedPath>,
    method: Method,
    started: Instant,
    state: AppState,
}

/// The limit a request runs under.
#[derive(Clone, Copy)]
enum Pool {
    /// `max_concurrent_requests`.
    General,
    /// `max_waiting_requests`: long-polls.
    Waiting,
}

/// One concurrency permit of `Pool`, returned on drop.
struct PermitGuard(AppState, Pool);

impl Drop for PermitGuard {
    fn drop(&mut self) {
        match self.1 {
            Pool::General => self.0.permits.add_permits(1),
            Pool::Waiting => self.0.waiting_permits.add_permits(1),
        }
    }
}

enum Stage<F> {
    Running {
        inner: Pin<Box<Timeout<F>>>,
        limit: Duration,
        _permit: PermitGuard,
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
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is `Unpin` (the timed future is boxed).
        let this = self.get_mut();
        let resp = match &mut this.stage {
            Stage::Running { inner, limit, .. } => match ready!(inner.as_mut().poll(cx)) {
                Ok(Ok(resp)) => resp,
                Ok(Err(never)) => match never {},
                // Bounds the time to the response head (streams keep flowing after it).
                Err(_) => ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "request_timeout",
                    format!("the request took longer than {} ms", limit.as_millis()),
                )
                .retry_after(1)
                .into_response(),
            },
            Stage::Refused(resp) => std::mem::take(resp),
            Stage::Done => panic!("EnvelopeFuture polled after it completed"),
        };
        // Releases the permit before the metrics are taken, as the response is final.
        this.stage = Stage::Done;
        if let Some(f) = this.finish.take() {
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
        if let Some(f) = self.finish.take() {
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
        || (path == "/" && crate::routes::ui::is_browser_navigation(req.method(), req.headers()))
}

/// Auth, then the concurrency limit: a permit to run the request, or the answer to give
/// instead. 401 without `Authorization: Bearer <token>` when a token is configured; 503
/// `overloaded` when `max_concurrent_requests` (or, for a long-poll,
/// `max_waiting_requests`) are already being handled. A REST Proxy records read waits
/// too, under the same limit, and is refused in the proxy's own shape.
fn admit<'a>(
    state: &'a AppState,
    req: &Request,
) -> Result<(tokio::sync::SemaphorePermit<'a>, Pool), Refusal> {
    if let Some(token) = state.config.auth_token.as_deref()
        && !is_public(req)
        && req.method() != Method::OPTIONS
    {
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !constant_time_eq(given.as_bytes(), token.as_bytes()) {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid bearer token is required",
            )
            .into());
        }
    }
    if is_long_poll(req) {
        return state
            .waiting_permits
            .try_acquire()
            .map(|p| (p, Pool::Waiting))
            .map_err(|_| ApiError::overloaded("too many waiting long-polls; retry later").into());
    }
    if crate::rest_proxy::is_waiting_read(req) {
        return state
            .waiting_permits
            .try_acquire()
            .map(|p| (p, Pool::Waiting))
            .map_err(|_| Refusal::ProxyWaiting);
    }
    state
        .permits
        .try_acquire()
        .map(|p| (p, Pool::General))
        .map_err(|_| ApiError::overloaded("too many concurrent requests; retry later").into())
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
