//! Accepting under pressure, for every listener: a failing `accept` (out of descriptors,
//! above all) backs off instead of spinning, logs at most once a minute rather than once
//! per try, and frees a descriptor by closing an idle connection.

use std::io;
use std::time::{Duration, Instant};

use super::registry::Connections;

/// The first pause after a failed accept; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(5);
const MAX_PAUSE: Duration = Duration::from_millis(500);
/// The pause after closing an idle connection to free its descriptor: long enough for
/// its task to run and close the socket.
const ROOM_PAUSE: Duration = Duration::from_millis(1);

/// How often a run of failed accepts is logged: at most once in this long.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The state of a run of failed accepts.
#[derive(Debug, Default)]
pub struct Backoff {
    /// Consecutive failures (for the pause).
    failures: u32,
    /// Failures since the last log line.
    unlogged: u64,
    logged_at: Option<Instant>,
}

impl Backoff {
    /// A connection was accepted: the pause starts small again.
    pub fn succeeded(&mut self) {
        self.failures = 0;
    }

    /// `accept` failed with `e`: waits before the next try.
    pub async fn failed(&mut self, e: &io::Error, connections: &Connections) {
        if is_per_connection(e) {
            // That one connection is gone; the next accept is unaffected.
            return;
        }
        self.unlogged += 1;
        if self.logged_at.is_none_or(|at| at.elapsed() >= LOG_EVERY) {
            self.logged_at = Some(Instant::now());
            tracing::warn!(
                error = %e,
                open_connections = connections.len(),
                failed_accepts = std::mem::take(&mut self.unlogged),
                "accept failed; backing off (logged at most once a minute)"
            );
        }
        self.failures = self.failures.saturating_add(1);
        let pause = if is_out_of_descriptors(e) && connections.make_room() {
            ROOM_PAUSE
        } else {
            FIRST_PAUSE
                .saturating_mul(1 << self.failures.min(16))
                .min(MAX_PAUSE)
        };
        tokio::time::sleep(pause).await;
    }
}

/// Errors about the one connection being accepted, not the listener.
fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// `EMFILE` (this process) or `ENFILE` (the system).
fn is_out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24))
}
