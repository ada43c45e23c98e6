//! [`AppState`]: the log, the configuration, the metrics and the shutdown signal that
//! every handler shares. Cheap to clone: one reference count, however many fields.

use std::sync::Arc;

use kafko_core::Kafko;
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::metrics::Metrics;
use crate::middleware::{Limit, Pool};

/// Shared server state. Every request clones it several times (router, middleware,
/// extractors), so it is one `Arc`: a clone is one atomic increment, not one per field.
#[derive(Clone)]
pub struct AppState {
    shared: Arc<Shared>,
}

/// The fields behind [`AppState`] (reached through its `Deref`; not constructible outside
/// the crate).
pub struct Shared {
    pub(crate) kafko: Kafko,
    pub(crate) config: ServerConfig,
    pub(crate) metrics: Metrics,
    pub(crate) permits: Limit,
    /// The long-polls' own limit (`max_waiting_requests`).
    pub(crate) waiting_permits: Limit,
    /// The memory that record answers may hold until sent.
    pub(crate) answers: crate::answer_budget::AnswerBudget,
    /// Open connections, HTTP and Kafka, under one cap.
    pub(crate) registry: crate::connections::Registry,
    /// Flips to `true` once shutdown begins: streams and long-polls end, the accept loop stops.
    shutdown: watch::Sender<bool>,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl AppState {
    /// State around an open log.
    pub fn new(kafko: Kafko, config: ServerConfig) -> Self {
        let metrics = Metrics::new(kafko.clone());
        AppState {
            shared: Arc::new(Shared {
                kafko,
                permits: Limit::new(config.max_concurrent_requests.max(1)),
                waiting_permits: Limit::new(config.max_waiting_requests.max(1)),
                answers: crate::answer_budget::AnswerBudget::new(config.max_answer_buffer_bytes),
                registry: crate::connections::Registry::new(config.max_connections),
                config,
                metrics,
                shutdown: watch::channel(false).0,
            }),
        }
    }

    /// The limit of requests admitted under `pool`.
    pub(crate) fn limit(&self, pool: Pool) -> &Limit {
        match pool {
            Pool::General => &self.permits,
            Pool::Waiting => &self.waiting_permits,
        }
    }

    /// The log.
    pub fn kafko(&self) -> &Kafko {
        &self.kafko
    }

    /// Begins graceful shutdown (idempotent): the same path as SIGTERM.
    pub fn trigger_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// Whether shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// A receiver of the shutdown flag: `true` once shutdown has begun.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Resolves once shutdown begins.
    pub async fn shutdown_requested(&self) {
        let mut rx = self.shutdown.subscribe();
        // An Err means the sender is gone, which also means we are stopping.
        let _ = rx.wait_for(|stop| *stop).await;
    }
}
