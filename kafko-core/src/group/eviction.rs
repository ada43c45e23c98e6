//! How long groups that hold nothing on disk live: forgotten once idle, and bounded
//! under a flood of new names, and the limit on how many groups there are.
//!
//! A group that was never configured and has no committed offset is in-memory positions
//! only; forgetting it is what a restart does to it. It is forgotten once unused for the
//! idle timeout (by the broker's maintenance task), and, while such groups hold more
//! than [`MAX_EPHEMERAL_ENTRIES`] entries, the least recently used go sooner. A group an
//! operation holds, with an answer in flight or a live member, is never forgotten.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::coordinator::{Coordinator, GroupState, Groups};
use crate::error::{KafkoError, Result};

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
            && self.members.members.values().all(|m| m.expired(now))
            && self.topics.values().all(|ts| ts.leases.is_empty())
    }

    /// In-memory entries it holds (positions, leases, pending deliveries, members).
    fn entries(&self) -> usize {
        self.topics
            .values()
            .map(|ts| {
                ts.positions.len()
                    + ts.leases.len()
                    + ts.pending.len()
                    + ts.answers.len()
                    + ts.frontier.len()
            })
            .sum::<usize>()
            .saturating_add(self.members.members.len())
            .max(1)
    }
}

/// Most in-memory entries (positions, leases, pending deliveries) that groups without
/// anything on disk may hold together: past it, the least recently used of them are
/// forgotten before their idle timeout, so a flood of new group names cannot grow memory
/// without bound (about 64 bytes an entry: some 64 MiB).
pub(crate) const MAX_EPHEMERAL_ENTRIES: usize = 1 << 20;

/// How long a group without files, committed offsets or live members is kept after its
/// last use, unless [`KafkoOptions::idle_group_timeout`](crate::KafkoOptions::idle_group_timeout) says otherwise.
pub(crate) const DEFAULT_IDLE_GROUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Forgets the groups that hold nothing on disk and are unused since `timeout`; then,
/// while such groups hold more than [`MAX_EPHEMERAL_ENTRIES`], the least recently used
/// unused ones down to half of it. Returns how many groups it forgot.
pub(super) fn evict_idle(groups: &mut Groups, now: Instant, timeout: Duration) -> usize {
    let before = groups.len();
    groups.retain(|_, g| {
        !(g.is_ephemeral()
            && now.saturating_duration_since(g.last_used) > timeout
            && g.is_unused(now))
    });
    let held: usize = groups
        .values()
        .filter(|g| g.is_ephemeral())
        .map(GroupState::entries)
        .sum();
    if held > MAX_EPHEMERAL_ENTRIES {
        let mut oldest: Vec<(Instant, String, usize)> = groups
            .iter()
            .filter(|(_, g)| g.is_ephemeral() && g.is_unused(now))
            .map(|(name, g)| (g.last_used, name.clone(), g.entries()))
            .collect();
        oldest.sort_unstable();
        let mut held = held;
        for (_, name, entries) in oldest {
            if held <= MAX_EPHEMERAL_ENTRIES / 2 {
                break;
            }
            groups.remove(&name);
            held -= entries;
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
            evict_idle(groups, Instant::now(), self.idle_timeout);
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
        self.created_entries.store(0, Ordering::Relaxed);
        evict_idle(&mut self.lock(), Instant::now(), self.idle_timeout)
    }

    /// Counts `entries` for a group just created, and runs an eviction pass on `groups`
    /// (already locked) when the groups created since the last pass could hold half of
    /// [`MAX_EPHEMERAL_ENTRIES`]: a flood of new names is bounded between two ticks of
    /// the maintenance task too, at an amortized constant cost per new group.
    pub(super) fn count_created(&self, groups: &mut Groups, entries: usize) {
        let total = self.created_entries.fetch_add(entries, Ordering::Relaxed) + entries;
        if total > MAX_EPHEMERAL_ENTRIES / 2 {
            self.created_entries.store(0, Ordering::Relaxed);
            evict_idle(groups, Instant::now(), self.idle_timeout);
        }
    }
}
