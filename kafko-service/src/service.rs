//! [`Service`]: the log, the configuration, the metrics, the answer budget, the
//! connection registry and the shutdown signal that every front end shares. Cheap to
//! clone: one reference count, however many fields.

use std::sync::Arc;

use kafko_core::Kafko;
use tokio::sync::watch;

use crate::answer_budget::AnswerBudget;
use crate::config::ServerConfig;
use crate::connections::Registry;
use crate::metrics::Metrics;

/// What every front end of one server shares. Requests clone it often (router,
/// middleware, extractors, connection tasks), so it is one `Arc`: a clone is one atomic
/// increment, not one per field.
#[derive(Clone)]
pub struct Service {
    shared: Arc<Shared>,
}

/// The fields behind [`Service`] (reached through its `Deref`; built only by
/// [`Service::new`]).
pub struct Shared {
    /// The log.
    pub kafko: Kafko,
    /// The server's settings.
    pub config: ServerConfig,
    /// The counters `/metrics` shows.
    pub metrics: Metrics,
    /// The memory that record answers may hold until sent.
    pub answers: AnswerBudget,
    /// Open connections, HTTP and Kafka, under one cap.
    pub registry: Registry,
    /// Flips to `true` once shutdown begins: streams and long-polls end, the accept
    /// loops stop.
    shutdown: watch::Sender<bool>,
}

impl std::ops::Deref for Service {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

impl Service {
    /// The service around an open log.
    pub fn new(kafko: Kafko, config: ServerConfig) -> Self {
        let metrics = Metrics::new(kafko.clone());
        Service {
            shared: Arc::new(Shared {
                kafko,
                answers: AnswerBudget::new(config.max_answer_buffer_bytes),
                registry: Registry::new(config.max_connections),
                config,
                metrics,
                shutdown: watch::channel(false).0,
            }),
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
