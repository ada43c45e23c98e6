//! SIGINT (Ctrl-C) and SIGTERM begin the one graceful shutdown, the same path as
//! `POST /v1/admin/shutdown`.

use kafko_service::Service;

/// Triggers the graceful shutdown on SIGINT (Ctrl-C) or SIGTERM.
pub(crate) async fn shutdown_on_signals(state: Service) {
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
