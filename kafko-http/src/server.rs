//! Serving: the accept loop (hyper with a header-read timeout), and the one graceful
//! shutdown path shared by SIGTERM, SIGINT and `POST /v1/admin/shutdown`: stop
//! accepting, let in-flight requests finish (bounded by `shutdown_grace`), then
//! `Kafko::shutdown` (drain and fsync every partition, write the clean marker).

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use crate::error::ServerError;
use crate::router::app;
use crate::state::AppState;

/// Serves until shutdown is requested, then shuts the log down. Returns once the log is
/// closed; the error is the log's shutdown failure, if any.
pub async fn serve(listener: TcpListener, state: AppState) -> Result<(), ServerError> {
    let router = app(state.clone());
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(state.config.header_read_timeout);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = state.shutdown_requested() => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
        let conn = graceful.watch(conn.into_owned());
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    let grace = state.config.shutdown_grace;
    tracing::info!(
        grace_ms = grace.as_millis() as u64,
        "stopped accepting; finishing in-flight requests"
    );
    if tokio::time::timeout(grace, graceful.shutdown())
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
