//! What one connection is doing ([`Activity`]: requests in flight, when the last one
//! ended, its one close signal), the timeouts the registry enforces, and why a connection
//! was closed: shared by every listener's connections, HTTP and Kafka alike.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::metrics::ClosedBy;

/// What one connection is doing, shared by its service (which counts requests), its task,
/// and the connection registry (which sweeps and may evict it).
#[derive(Debug)]
pub struct Activity {
    accepted: Instant,
    /// Requests (HTTP/1) or streams (h2) whose response has not been fully sent.
    in_flight: AtomicUsize,
    /// Whether a request head has ever arrived.
    started: AtomicBool,
    /// Whether the client proved who it is (SASL): a newcomer, who has not, never
    /// closes such a connection to make room.
    authenticated: AtomicBool,
    /// When the last request ended, in ms after `accepted`.
    last_done_ms: AtomicU64,
    /// The close signal's sending side, taken by the first who asks the connection to
    /// close (so a connection is closed for one reason, once).
    closer: Mutex<Option<oneshot::Sender<Reason>>>,
}

/// The connection task's side of its close signal.
pub type CloseSignal = oneshot::Receiver<Reason>;

impl Activity {
    /// A connection accepted now, and the signal its task waits on.
    pub fn new() -> (Arc<Self>, CloseSignal) {
        let (closer, signal) = oneshot::channel();
        let activity = Activity {
            accepted: Instant::now(),
            in_flight: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            authenticated: AtomicBool::new(false),
            last_done_ms: AtomicU64::new(0),
            closer: Mutex::new(Some(closer)),
        };
        (Arc::new(activity), signal)
    }

    /// Whether no request is in flight (a silent socket, a keep-alive wait).
    pub fn is_idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    /// How long nothing has been in flight (since accept, or since the last request
    /// ended); `None` while a request is in flight.
    pub fn idle_for(&self) -> Option<Duration> {
        if !self.is_idle() {
            return None;
        }
        let since = Duration::from_millis(self.last_done_ms.load(Ordering::Acquire));
        Some(self.accepted.elapsed().saturating_sub(since))
    }

    /// Whether a request head has ever arrived.
    pub fn has_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    /// Marks the connection authenticated: no newcomer evicts it (its timeouts still hold).
    pub fn authenticate(&self) {
        self.authenticated.store(true, Ordering::Release);
    }

    /// Whether the client authenticated (see [`authenticate`](Self::authenticate)).
    pub fn is_authenticated(&self) -> bool {
        self.authenticated.load(Ordering::Acquire)
    }

    /// Asks the connection to close to make room; `false` if it was asked to close already.
    pub fn evict(&self) -> bool {
        self.close(Reason::Evicted)
    }

    /// Asks the connection to close because the server shuts down.
    pub fn shut_down(&self) {
        self.close(Reason::Shutdown);
    }

    /// Closes the connection if it broke a timeout; `true` if it did.
    pub fn close_if_overdue(&self, limits: &Timeouts) -> bool {
        self.overdue(limits)
            .is_some_and(|reason| self.close(reason))
    }

    #[cfg(test)]
    pub(crate) fn mark_started_for_test(&self) {
        self.started.store(true, Ordering::Release);
    }

    /// Sends `reason` on the close signal; `false` if it was sent already.
    fn close(&self, reason: Reason) -> bool {
        let closer = self
            .closer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match closer {
            Some(closer) => {
                // The task may have ended on its own meanwhile: nothing left to close.
                let _ = closer.send(reason);
                true
            }
            None => false,
        }
    }

    fn since_accept_ms(&self) -> u64 {
        u64::try_from(self.accepted.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Which timeout the connection has broken, if any.
    fn overdue(&self, limits: &Timeouts) -> Option<Reason> {
        if !self.has_started() {
            return (self.accepted.elapsed() >= limits.header).then_some(Reason::NoRequestHead);
        }
        self.idle_for()
            .is_some_and(|idle| idle >= limits.idle)
            .then_some(Reason::Idle)
    }
}

/// The two timeouts the registry's sweep enforces.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// From accept to the first complete request head.
    pub header: Duration,
    /// With nothing in flight, after the first request.
    pub idle: Duration,
}

impl Timeouts {
    /// How often the registry is swept: an eighth of the shorter timeout (so a timeout is
    /// enforced at most an eighth late), between 10 ms and 1 s.
    pub fn sweep_every(&self) -> Duration {
        (self.header.min(self.idle) / 8).clamp(Duration::from_millis(10), Duration::from_secs(1))
    }
}

/// Why the server closed a connection.
#[derive(Debug, Clone, Copy)]
pub enum Reason {
    /// No complete request head within the header-read timeout.
    NoRequestHead,
    /// Nothing in flight for the idle timeout.
    Idle,
    /// Closed to make room for a newcomer at the connection cap.
    Evicted,
    /// The server is shutting down.
    Shutdown,
}

impl Reason {
    /// The metric's reason; shutdown closes every connection and is not counted.
    pub fn counted(self) -> Option<ClosedBy> {
        match self {
            Reason::NoRequestHead => Some(ClosedBy::NoRequestHead),
            Reason::Idle => Some(ClosedBy::Idle),
            Reason::Evicted => Some(ClosedBy::Evicted),
            Reason::Shutdown => None,
        }
    }
}

/// One request in flight on a connection: counted from its head until its response body
/// has been sent (or dropped), so a long-poll or a stream keeps the connection busy.
pub struct InFlight(Arc<Activity>);

impl InFlight {
    /// Counts a request on `activity` as in flight until the guard drops.
    pub fn begin(activity: &Arc<Activity>) -> Self {
        activity.started.store(true, Ordering::Release);
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        // The time first, then the count: a sweep seeing the count at zero also sees
        // the time this request ended.
        let ms = self.0.since_accept_ms();
        self.0.last_done_ms.fetch_max(ms, Ordering::AcqRel);
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}
