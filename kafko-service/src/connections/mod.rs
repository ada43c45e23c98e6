//! The open connections of every listener, HTTP and Kafka: one registry under one cap
//! (`--max-connections`) and the same header-read and idle timeouts, what each
//! connection is doing, and how a listener backs off when `accept` fails. Below the
//! transport (`server/`) and the Kafka listener, which both register their connections
//! here.

mod activity;
mod backoff;
mod registry;

use std::sync::Arc;

pub use activity::{Activity, CloseSignal, InFlight, Reason, Timeouts};
pub use backoff::Backoff;
pub use registry::Connections;

/// The open connections of every protocol the server speaks (HTTP, and the Kafka
/// listener's), under one cap (`--max-connections`) and the same timeouts: at the cap
/// a newcomer closes the oldest idle connection, whichever protocol it speaks.
#[derive(Clone)]
pub struct Registry {
    /// The open connections of every listener.
    pub connections: Arc<Connections>,
}

impl Registry {
    /// An empty registry of at most `cap` connections.
    pub fn new(cap: usize) -> Self {
        Registry {
            connections: Connections::new(cap),
        }
    }

    /// Registers a connection served outside the HTTP accept loop; `None` when the cap
    /// is reached and every open connection is busy (close the newcomer).
    pub fn admit(&self) -> Option<Admitted> {
        let (activity, close) = Activity::new();
        let ticket = self.connections.admit(&activity)?;
        Some(Admitted {
            _ticket: ticket,
            activity,
            close: Some(close),
        })
    }

    /// Waits after a failed `accept` of a listener beside the HTTP one, as the HTTP
    /// accept loop does: backing off, logging at most once a minute, and closing an idle
    /// connection to free its descriptor.
    pub async fn accept_failed(&self, backoff: &mut AcceptBackoff, e: &std::io::Error) {
        backoff.0.failed(e, &self.connections).await;
    }
}

/// A listener's run of failed accepts (see [`Registry::accept_failed`]).
#[derive(Debug, Default)]
pub struct AcceptBackoff(Backoff);

impl AcceptBackoff {
    /// A connection was accepted: the pause starts small again.
    pub fn succeeded(&mut self) {
        self.0.succeeded();
    }
}

/// A connection's place in the [`Registry`]: what it is doing, and the signal that the
/// server wants it closed (a timeout, room for a newcomer, shutdown). Unregistered on
/// drop.
pub struct Admitted {
    _ticket: registry::Ticket,
    activity: Arc<Activity>,
    close: Option<activity::CloseSignal>,
}

/// A request in flight on an [`Admitted`] connection, until dropped: such a connection
/// is neither idle nor evicted.
pub struct Busy(#[allow(dead_code)] activity::InFlight);

impl Admitted {
    /// Marks a request in flight until the guard is dropped.
    pub fn busy(&self) -> Busy {
        Busy(activity::InFlight::begin(&self.activity))
    }

    /// Marks the connection authenticated: from now on no newcomer closes it to make
    /// room (an unauthenticated flood cannot push out a client that logged in).
    pub fn authenticated(&self) {
        self.activity.authenticate();
    }

    /// Resolves once the server asks the connection to close (at once after it did).
    pub async fn close_requested(&mut self) {
        if let Some(signal) = self.close.as_mut() {
            let _ = signal.await;
            self.close = None;
        }
    }
}
