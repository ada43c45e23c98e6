//! The limits of Kafka's classic group protocol ([`GroupLimits`]), named after Kafka's
//! broker settings where Kafka has one, and the server-wide totals they are checked
//! against (`ClassicTotals`): what members and member-id handshakes of every group hold
//! together.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Limits on the classic groups of Kafka clients: their sessions, sizes and what their
/// members may make the server hold. Past one, a JoinGroup is refused with the Kafka
/// error a client acts on (`INVALID_SESSION_TIMEOUT`, `GROUP_MAX_SIZE_REACHED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupLimits {
    /// Shortest session timeout a join may ask (Kafka's `group.min.session.timeout.ms`;
    /// 1 ms here, where Kafka has 6 s: test suites use short sessions).
    pub min_session_timeout: Duration,
    /// Longest session timeout a join may ask (Kafka's `group.max.session.timeout.ms`,
    /// 30 min). A longer rebalance timeout is cut to it, so no join waits longer.
    pub max_session_timeout: Duration,
    /// Members of one group, handshakes in progress included (Kafka's `group.max.size`,
    /// which Kafka leaves unbounded for classic groups).
    pub max_size: usize,
    /// Protocols (assignors) one join may offer.
    pub max_protocols: usize,
    /// Bytes of one member's join (its protocols' names and metadata, its ids) and of
    /// the assignment its leader hands it.
    pub max_member_bytes: usize,
    /// Bytes all members of one group hold together.
    pub max_group_bytes: usize,
    /// Bytes the members of every group hold together.
    pub max_total_bytes: usize,
    /// Member ids handed out by the handshake and not joined yet, over every group; past
    /// it a join is admitted without the handshake (as JoinGroup v3 and older are).
    pub max_pending_member_ids: usize,
    /// Longest metadata string an offset commit may carry (Kafka's
    /// `offset.metadata.max.bytes`, 4 KiB).
    pub offset_metadata_max_bytes: usize,
    /// Bytes that groups holding nothing on disk may take together (positions, handshakes
    /// in progress, the groups themselves); past it the least recently used unused ones
    /// are forgotten before their idle timeout.
    pub max_idle_group_bytes: usize,
    /// How long a member of a consumer group (KIP-848) may be silent before it is
    /// removed (Kafka's `group.consumer.session.timeout.ms`, 45 s).
    pub consumer_session_timeout: Duration,
    /// How often consumer group members heartbeat (Kafka's
    /// `group.consumer.heartbeat.interval.ms`, 5 s).
    pub consumer_heartbeat_interval: Duration,
}

impl Default for GroupLimits {
    fn default() -> Self {
        GroupLimits {
            min_session_timeout: Duration::from_millis(1),
            max_session_timeout: Duration::from_secs(30 * 60),
            max_size: 1000,
            max_protocols: 32,
            max_member_bytes: 1024 * 1024,
            max_group_bytes: 16 * 1024 * 1024,
            max_total_bytes: 256 * 1024 * 1024,
            max_pending_member_ids: 100_000,
            offset_metadata_max_bytes: 4096,
            max_idle_group_bytes: 64 * 1024 * 1024,
            consumer_session_timeout: Duration::from_secs(45),
            consumer_heartbeat_interval: Duration::from_secs(5),
        }
    }
}

/// What the classic members of every group hold together; each group's share is added
/// when it changes and taken back when the group goes.
#[derive(Debug, Default)]
pub(crate) struct ClassicTotals {
    /// Bytes of members (see [`GroupLimits::max_total_bytes`]).
    pub(crate) bytes: AtomicUsize,
    /// Member ids handed out by the handshake and not joined yet.
    pub(crate) pending: AtomicUsize,
}

impl ClassicTotals {
    /// Moves a total from `before` to `after` (a group's share changed).
    pub(crate) fn shift(total: &AtomicUsize, before: usize, after: usize) {
        if after >= before {
            total.fetch_add(after - before, Ordering::Relaxed);
        } else {
            let gone = before - after;
            // Never below zero, even if a share was counted twice by mistake.
            let _ = total.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_sub(gone))
            });
        }
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Relaxed)
    }
}
