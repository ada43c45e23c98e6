//! How long groups that hold nothing on disk live: forgotten once idle, and bounded
//! under a flood of new names, and the limit on how many groups there are.
//!
//! A group that was never configured and has no committed offset is in-memory positions
//! only; forgetting it is what a restart does to it. It is forgotten once unused for the
//! idle timeout (by the broker's maintenance task), and, while such groups hold more
//! than [`GroupLimits::max_idle_group_bytes`] by estimate, the least recently used go
//! sooner. The estimate counts what a group costs, its name and state included, so a
//! flood of names that each hold nothing (a JoinGroup's member-id handshake) is bounded
//! too. A group an operation holds, with an answer in flight or a live member, is never
//! forgotten.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::coordinator::{Coordinator, GroupState, Groups};
use super::limits::GroupLimits;
use crate::error::{KafkoError, Result};

/// Estimated bytes of a group beyond its name and entries: its state, the shared
/// `Persist` and `Notify`, the map entry holding it.
const GROUP_OVERHEAD: usize = 1024;
/// Estimated bytes of one in-memory entry (a position, lease, delivery or member).
const ENTRY_BYTES: usize = 96;

impl GroupState {
    /// Holds nothing that is on disk: no files, no committed offset.
    fn is_ephemeral(&self) -> bool {
        !self.durable && self.topics.values().all(|ts| ts.committed.is_empty())
    }

    /// May be forgotten now: no operation holds it, no answer is in flight, and no
    /// member's session is live.
    fn is_unused(&self, now: Instant) -> bool {
        Arc::strong_count(&self.persist) == 1
            && !self.members.classic.is_active()
            && !self.members.consumer.is_active()
            && self.members.members.values().all(|m| m.expired(now))
            && self.topics.values().all(|ts| ts.leases.is_empty())
    }

    /// Estimated bytes it holds in memory: the group itself, its name, its entries
    /// (positions, leases, pending deliveries, members), its topics' names, and its
    /// classic members and pending member ids.
    pub(super) fn bytes(&self, name: &str) -> usize {
        let topics: usize = self
            .topics
            .iter()
            .map(|(topic, ts)| {
                let entries = ts.positions.len()
                    + ts.leases.len()
                    + ts.pending.len()
                    + ts.answers.len()
                    + ts.frontier.len();
                topic.len() + ENTRY_BYTES * (entries + 1)
            })
            .sum();
        GROUP_OVERHEAD
            + name.len()
            + topics
            + ENTRY_BYTES * self.members.members.len()
            + self.members.classic.held
            + self.members.classic.pending_ids.bytes()
    }
}

/// How long a group without files, committed offsets or live members is kept after its
/// last use, unless [`KafkoOptions::idle_group_timeout`](crate::KafkoOptions::idle_group_timeout) says otherwise.
pub(crate) const DEFAULT_IDLE_GROUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Forgets the groups that hold nothing on disk and are unused since `timeout`; then,
/// while such groups hold more than `budget` bytes, the least recently used unused ones
/// down to half of it. Returns how many groups it forgot.
pub(super) fn evict_idle(
    groups: &mut Groups,
    now: Instant,
    timeout: Duration,
    budget: usize,
) -> usize {
    let before = groups.len();
    groups.retain(|_, g| {
        !(g.is_ephemeral()
            && now.saturating_duration_since(g.last_used) > timeout
            && g.is_unused(now))
    });
    let held: usize = groups
        .iter()
        .filter(|(_, g)| g.is_ephemeral())
        .map(|(name, g)| g.bytes(name))
        .sum();
    if held > budget {
        let mut oldest: Vec<(Instant, String, usize)> = groups
            .iter()
            .filter(|(_, g)| g.is_ephemeral() && g.is_unused(now))
            .map(|(name, g)| (g.last_used, name.clone(), g.bytes(name)))
            .collect();
        oldest.sort_unstable();
        let mut held = held;
        for (_, name, bytes) in oldest {
            if held <= budget / 2 {
                break;
            }
            groups.remove(&name);
            held -= bytes;
        }
    }
    before - groups.len()
}

impl Coordinator {
    /// Limits the groups that calls create to `max` (the groups on disk all load).
    pub(crate) fn with_max_groups(mut self, max: Option<u64>) -> Self {
        self.max_groups = max;
        self
    }

    /// Makes room for one more group: at the limit, forgets the idle groups that hold
    /// nothing on disk first, and refuses if that was not enough (`LimitReached`).
    pub(super) fn make_room(&self, groups: &mut Groups) -> Result<()> {
        if self.check_room(groups).is_err() {
            let budget = self.limits.max_idle_group_bytes;
            evict_idle(groups, Instant::now(), self.idle_timeout, budget);
        }
        self.check_room(groups)
    }

    /// Refuses to create one more group past the limit: `LimitReached`.
    fn check_room(&self, groups: &Groups) -> Result<()> {
        match self.max_groups {
            Some(limit) if groups.len() as u64 >= limit => Err(KafkoError::LimitReached {
                resource: "groups",
                limit,
            }),
            _ => Ok(()),
        }
    }

    /// Sets how long a group with nothing on disk outlives its last use.
    pub(crate) fn set_idle_timeout(&mut self, timeout: Duration) {
        self.idle_timeout = timeout;
    }

    /// Forgets idle groups that hold nothing on disk (see [`evict_idle`]); run by the
    /// broker's maintenance task. Returns how many it forgot.
    pub(crate) fn evict_idle(&self) -> usize {
        self.created_bytes.store(0, Ordering::Relaxed);
        let budget = self.limits.max_idle_group_bytes;
        evict_idle(&mut self.lock(), Instant::now(), self.idle_timeout, budget)
    }

    /// Sets the limits of classic and idle groups.
    pub(crate) fn set_limits(&mut self, limits: GroupLimits) {
        self.limits = limits;
    }

    /// Counts the bytes of a group just created (named `name`, holding `entries`), and
    /// runs an eviction pass on `groups` (already locked) when the groups created since
    /// the last pass could hold half of the idle groups' budget: a flood of new names is
    /// bounded between two ticks of the maintenance task too, at an amortized constant
    /// cost per new group (a pass frees half the budget).
    pub(super) fn count_created(&self, groups: &mut Groups, name: &str, entries: usize) {
        let bytes = GROUP_OVERHEAD + name.len() + ENTRY_BYTES * entries;
        let total = self.created_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        let budget = self.limits.max_idle_group_bytes;
        if total > budget / 2 {
            self.created_bytes.store(0, Ordering::Relaxed);
            evict_idle(groups, Instant::now(), self.idle_timeout, budget);
        }
    }
}
