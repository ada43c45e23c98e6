//! The open connections: how many may be open at once, and who makes room past that.
//!
//! Every connection holds a file descriptor, and so do the log's segments. With no cap, a
//! flood of sockets that never send a byte uses up the descriptors, and then nothing,
//! not even a health probe, can connect. So connections are capped (by default at the
//! descriptor limit minus a headroom for the log). At the cap, a new connection closes
//! the oldest one with no request in flight (a silent socket first, else an idle
//! keep-alive one) and takes its place; only when every open connection is busy is the
//! newcomer refused.
//!
//! The registry is also where the connection timeouts are enforced: one sweep over it,
//! every [`Timeouts::sweep_every`], closes the connections that broke one, so that no
//! connection needs a timer of its own.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use super::activity::{Activity, Timeouts};

/// The registry of open connections.
pub struct Connections {
    cap: usize,
    next_id: AtomicU64,
    /// By accept order (ids only grow), so the first match is the oldest.
    open: Mutex<BTreeMap<u64, Arc<Activity>>>,
    emptied: Notify,
}

/// A connection's place in the registry, given back on drop.
pub struct Ticket {
    id: u64,
    connections: Arc<Connections>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut open = self.connections.lock();
        open.remove(&self.id);
        if open.is_empty() {
            self.connections.emptied.notify_waiters();
        }
    }
}

impl Connections {
    /// An empty registry of at most `cap` connections.
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Connections {
            cap: cap.max(1),
            next_id: AtomicU64::new(0),
            open: Mutex::new(BTreeMap::new()),
            emptied: Notify::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Activity>>> {
        // The map stays consistent whatever panicked while holding it.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a new connection, closing an idle one first at the cap; `None` when the
    /// cap is reached and every open connection is busy.
    pub fn admit(self: &Arc<Self>, activity: &Arc<Activity>) -> Option<Ticket> {
        let mut open = self.lock();
        if open.len() >= self.cap && !evict_oldest_idle(&mut open) {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        open.insert(id, Arc::clone(activity));
        Some(Ticket {
            id,
            connections: Arc::clone(self),
        })
    }

    /// Closes the oldest idle connection to free its descriptor (when `accept` has run
    /// out of them); `false` if every connection is busy.
    pub fn make_room(&self) -> bool {
        evict_oldest_idle(&mut self.lock())
    }

    /// Closes every connection that broke a timeout, every [`Timeouts::sweep_every`],
    /// for as long as the returned future runs.
    pub async fn sweep(&self, limits: Timeouts) {
        let mut ticks = tokio::time::interval(limits.sweep_every());
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            for activity in self.lock().values() {
                activity.close_if_overdue(&limits);
            }
        }
    }

    /// Asks every open connection to close (shutdown): each finishes what it has in
    /// flight first.
    pub fn shut_down_all(&self) {
        for activity in self.lock().values() {
            activity.shut_down();
        }
    }

    /// Connections open now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no connection is open.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Resolves once no connection is open.
    pub async fn all_closed(&self) {
        loop {
            let emptied = self.emptied.notified();
            tokio::pin!(emptied);
            emptied.as_mut().enable();
            if self.lock().is_empty() {
                return;
            }
            emptied.await;
        }
    }
}

/// How long a connection must have had nothing in flight before it may be evicted: a
/// connection accepted a moment ago may hold a request not read yet.
const EVICTABLE_AFTER: Duration = Duration::from_millis(100);

/// Evicts (and unregisters) the oldest connection that never sent a request, else the
/// oldest one with nothing in flight, idle for at least [`EVICTABLE_AFTER`]; never an
/// authenticated one (the newcomer has not authenticated). `false` if there is none.
fn evict_oldest_idle(open: &mut BTreeMap<u64, Arc<Activity>>) -> bool {
    let mut idle_keep_alive = None;
    let mut silent = None;
    for (id, activity) in open.iter() {
        if activity.is_authenticated()
            || activity
                .idle_for()
                .is_none_or(|idle| idle < EVICTABLE_AFTER)
        {
            continue;
        }
        if !activity.has_started() {
            silent = Some(*id);
            break;
        }
        idle_keep_alive.get_or_insert(*id);
    }
    let Some(id) = silent.or(idle_keep_alive) else {
        return false;
    };
    if let Some(activity) = open.remove(&id) {
        activity.evict();
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_evicts_a_silent_connection_before_an_idle_keep_alive_one() {
        let registry = Connections::new(2);
        let (keep_alive, _keep_alive_signal) = Activity::new();
        keep_alive.mark_started_for_test();
        let (silent, _silent_signal) = Activity::new();
        let _a = registry.admit(&keep_alive).unwrap();
        let _b = registry.admit(&silent).unwrap();
        let (newcomer, _newcomer_signal) = Activity::new();
        assert!(
            registry.admit(&newcomer).is_none(),
            "connections accepted a moment ago are not evicted"
        );
        std::thread::sleep(EVICTABLE_AFTER);
        let _c = registry.admit(&newcomer).unwrap();
        assert!(!silent.evict(), "the silent connection was evicted first");
        assert!(keep_alive.evict(), "the keep-alive connection stays");
        assert_eq!(registry.len(), 2);
    }

    #[test]
    fn an_authenticated_idle_connection_is_never_evicted_for_a_newcomer() {
        let registry = Connections::new(1);
        let (authenticated, _signal) = Activity::new();
        authenticated.mark_started_for_test();
        authenticated.authenticate();
        let _a = registry.admit(&authenticated).unwrap();
        std::thread::sleep(EVICTABLE_AFTER);
        let (newcomer, _newcomer_signal) = Activity::new();
        assert!(registry.admit(&newcomer).is_none());
        assert!(!registry.make_room());
        assert!(authenticated.evict(), "still open");
    }
}
