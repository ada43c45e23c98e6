//! Serving: the accept loop (connection cap, backoff when out of descriptors; each
//! connection closed when silent or idle, see `connection`), and the one graceful
//! shutdown path shared by SIGTERM, SIGINT and `POST /v1/admin/shutdown`: stop
//! accepting, let in-flight requests finish (bounded by `shutdown_grace`), then
//! `Kafko::shutdown` (drain and fsync every partition, write the clean marker).

mod accept;
mod connection;
mod connections;

use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use crate::error::ServerError;
use crate::metrics::ClosedBy;
use crate::router::app;
use crate::state::AppState;

use self::accept::{Backoff, refuse};
use self::connection::{Activity, Timeouts, Tracked};
use self::connections::Connections;

pub use self::connections::default_max_connections;

/// Serves until shutdown is requested, then shuts the log down. Returns once the log is
/// closed; the error is the log's shutdown failure, if any.
pub async fn serve(listener: TcpListener, state: AppState) -> Result<(), ServerError> {
    let router = app(state.clone());
    let cfg = &state.config;
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper's own head timer starts only once the protocol is known, and would cut
    // keep-alive waits at the header timeout; the connection watchdog does both instead.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None);
    let limits = Timeouts {
        header: cfg.header_read_timeout,
        idle: cfg.idle_timeout,
    };
    let connections = Connections::new(cfg.max_connections);
    let mut backoff = Backoff::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = state.shutdown_requested() => break,
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
        let activity = Arc::new(Activity::new());
        let Some(ticket) = connections.admit(&activity) else {
            refuse(stream);
            state.metrics.connection_closed_by(ClosedBy::Refused);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = Tracked::new(router.clone(), Arc::clone(&activity));
        let conn = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let state = state.clone();
        state.metrics.connection_opened();
        tokio::spawn(async move {
            connection::run(conn, activity, limits, state.clone()).await;
            drop(ticket);
            state.metrics.connection_ended();
        });
    }
    drop(listener);
    let grace = state.config.shutdown_grace;
    tracing::info!(
        grace_ms = grace.as_millis() as u64,
        "stopped accepting; finishing in-flight requests"
    );
    if tokio::time::timeout(grace, connections.all_closed())
        .await
        .is_err()
    {
        tracing::warn!("in-flight requests did not finish within the grace period; closing them");
    }
    state
        .kafko
        .shutdown()
        .await
        .map_err(ServerError::Shutdown)?;
    tracing::info!("log shut down cleanly");
    Ok(())
}

/// Triggers the graceful shutdown on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_on_signals(state: AppState) {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => tracing::info!("SIGINT received"),
        () = term => tracing::info!("SIGTERM received"),
        () = state.shutdown_requested() => return,
    }
    state.trigger_shutdown();
}
