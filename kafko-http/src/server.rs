//! Serving: the accept loop (connection cap, backoff when out of descriptors; connections
//! closed when silent or idle by a sweep of the registry, see `kafko_service::connections`), and the one graceful
//! shutdown path shared by SIGTERM, SIGINT and `POST /v1/admin/shutdown`: stop
//! accepting, let in-flight requests finish (bounded by `shutdown_grace`), then
//! `Kafko::shutdown` (drain and fsync every partition, write the clean marker).
//! [`serve_router`] runs the same loop for any router: the benchmarks' no-op ceiling
//! serves through it, so the two cannot differ in how they accept and serve.

mod accept;
mod connection;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::router::app;
use crate::state::AppState;
use kafko_service::config::ServerConfig;
use kafko_service::metrics::ClosedBy;

use self::accept::refuse;
use self::connection::Tracked;
use kafko_service::connections::{Activity, Backoff, Registry, Timeouts};

/// How connections are accepted and served: the server's settings of the same names.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// From accept to the first complete request head (`--header-read-timeout-ms`).
    pub header_read_timeout: Duration,
    /// With nothing in flight, after the first request (`--idle-timeout-ms`).
    pub idle_timeout: Duration,
    /// Open connections at most (`--max-connections`).
    pub max_connections: usize,
    /// How long open connections may take to finish once shutdown begins
    /// (`--shutdown-grace-ms`).
    pub shutdown_grace: Duration,
}

impl From<&ServerConfig> for ServeOptions {
    fn from(cfg: &ServerConfig) -> Self {
        ServeOptions {
            header_read_timeout: cfg.header_read_timeout,
            idle_timeout: cfg.idle_timeout,
            max_connections: cfg.max_connections,
            shutdown_grace: cfg.shutdown_grace,
        }
    }
}

/// Serves HTTP until shutdown is requested; returns once every connection has closed or
/// the shutdown grace has passed. Shutting the log down is the caller's.
pub async fn serve(listener: TcpListener, state: AppState) {
    let router = app(state.clone());
    serve_app(listener, state, router).await;
}

/// Serves `router` as [`serve`] serves the API: the same accept loop, limits,
/// connection metrics and shutdown signal of `state` (for a router built with
/// [`app_with`](crate::app_with) or [`envelope`](crate::envelope)). Every listener
/// served with one `state` shares its connection cap.
pub async fn serve_app(listener: TcpListener, state: AppState, router: Router) {
    let options = ServeOptions::from(&state.config);
    let events = Events {
        shutdown: state.shutdown_signal(),
        metrics: Some(state.clone()),
    };
    accept_loop(listener, router, options, events, &state.registry).await;
}

/// Serves `router` on `listener` exactly as [`serve`] serves the API (the same accept
/// loop, connection cap, timeouts and backoff), until `shutdown` turns `true` (or its
/// sender is dropped); returns once every connection has closed or `shutdown_grace` has
/// passed. For servers measured against kafko's own.
pub async fn serve_router(
    listener: TcpListener,
    router: Router,
    options: ServeOptions,
    shutdown: watch::Receiver<bool>,
) {
    let events = Events {
        shutdown,
        metrics: None,
    };
    let registry = Registry::new(options.max_connections);
    accept_loop(listener, router, options, events, &registry).await;
}

/// What the accept loop and its connections report to: the shutdown signal, and the
/// server's connection metrics when there are any.
#[derive(Clone)]
struct Events {
    shutdown: watch::Receiver<bool>,
    metrics: Option<AppState>,
}

impl Events {
    /// Resolves once shutdown begins (or nobody can begin it any more).
    async fn shutdown_requested(&self) {
        let mut rx = self.shutdown.clone();
        // An Err means the sender is gone, which also means we are stopping.
        let _ = rx.wait_for(|stop| *stop).await;
    }

    fn opened(&self) {
        if let Some(state) = &self.metrics {
            state.metrics.connection_opened();
        }
    }

    fn ended(&self) {
        if let Some(state) = &self.metrics {
            state.metrics.connection_ended();
        }
    }

    fn closed_by(&self, why: ClosedBy) {
        if let Some(state) = &self.metrics {
            state.metrics.connection_closed_by(why);
        }
    }
}

/// Accepts until shutdown, then waits (bounded by the grace) for open connections.
async fn accept_loop(
    listener: TcpListener,
    router: Router,
    options: ServeOptions,
    events: Events,
    registry: &Registry,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper's own head timer starts only once the protocol is known, and would cut
    // keep-alive waits at the header timeout; the sweep of the connection registry
    // enforces both timeouts instead.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None);
    let limits = Timeouts {
        header: options.header_read_timeout,
        idle: options.idle_timeout,
    };
    let connections = Arc::clone(&registry.connections);
    let sweeper = {
        let connections = Arc::clone(&connections);
        AbortOnDrop(tokio::spawn(async move { connections.sweep(limits).await }))
    };
    let mut backoff = Backoff::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = events.shutdown_requested() => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => {
                backoff.succeeded();
                stream
            }
            Err(e) => {
                backoff.failed(&e, &connections).await;
                continue;
            }
        };
        let (activity, close) = Activity::new();
        let Some(ticket) = connections.admit(&activity) else {
            refuse(stream);
            events.closed_by(ClosedBy::Refused);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = Tracked::new(router.clone(), Arc::clone(&activity));
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let events = events.clone();
        events.opened();
        tokio::spawn(async move {
            connection::run(conn, activity, close, events.clone()).await;
            drop(ticket);
            events.ended();
        });
    }
    drop(listener);
    connections.shut_down_all();
    let grace = options.shutdown_grace;
    tracing::info!(
        grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
        "stopped accepting; finishing in-flight requests"
    );
    if tokio::time::timeout(grace, connections.all_closed())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish within the grace period; closing them");
    }
    drop(sweeper);
}

/// A spawned task that ends when its handle is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
