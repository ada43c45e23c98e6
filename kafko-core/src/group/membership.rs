//! Members of one group on one topic: join, leave, session expiry, generations and the
//! range assignor. Pure bookkeeping over [`tokio::time::Instant`] (so tests can pause
//! time); no I/O, no locks of its own.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use crate::convert::u32_saturating;

/// One live member.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// Removed once this long passes without a join, poll or commit.
    pub(crate) session_timeout: Duration,
    pub(crate) last_seen: Instant,
    /// Partitions this member owns in the current generation, ascending.
    pub(crate) assignment: Vec<u32>,
}

/// The members of a group on a topic, and the generation of their assignment.
#[derive(Debug, Default)]
pub(crate) struct Members {
    /// Sorted by id, which is also the range assignor's order.
    pub(crate) members: BTreeMap<String, Member>,
    /// Incremented on every rebalance (join, leave, expiry).
    pub(crate) generation: u64,
}

/// Makes member ids unique within this process (with the time, across restarts).
static NEXT_MEMBER: AtomicU64 = AtomicU64::new(1);

/// A fresh member id.
pub(crate) fn new_member_id() -> String {
    let n = NEXT_MEMBER.fetch_add(1, Ordering::Relaxed);
    format!("member-{:x}-{n}", crate::record::now_ms())
}

impl Members {
    /// Removes members whose session expired; returns whether any was removed (the caller
    /// then rebalances).
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<String> {
        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| now.saturating_duration_since(m.last_seen) > m.session_timeout)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            self.members.remove(id);
        }
        expired
    }

    /// Starts a new generation and assigns `partitions` over the members by range:
    /// sorted member ids, contiguous ranges, the first `n % m` members one partition more.
    pub(crate) fn rebalance(&mut self, partitions: u32) {
        self.generation += 1;
        let m = u32_saturating(self.members.len());
        if m == 0 {
            return;
        }
        let (per, extra) = (partitions / m, partitions % m);
        let mut next = 0;
        for (i, member) in self.members.values_mut().enumerate() {
            let count = per + u32::from(u32_saturating(i) < extra);
            member.assignment = (next..next + count).collect();
            next += count;
        }
    }

    /// The member owning `partition`, if any.
    pub(crate) fn owner(&self, partition: u32) -> Option<&str> {
        self.members
            .iter()
            .find(|(_, m)| m.assignment.contains(&partition))
            .map(|(id, _)| id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(timeout_ms: u64, at: Instant) -> Member {
        Member {
            session_timeout: Duration::from_millis(timeout_ms),
            last_seen: at,
            assignment: Vec::new(),
        }
    }

    #[test]
    fn range_assignor_covers_every_partition_exactly_once() {
        let now = Instant::now();
        for members in 1..6u32 {
            for partitions in 0..12u32 {
                let mut g = Members::default();
                for i in 0..members {
                    g.members.insert(format!("m{i}"), member(1000, now));
                }
                g.rebalance(partitions);
                let mut all: Vec<u32> = g
                    .members
                    .values()
                    .flat_map(|m| m.assignment.clone())
                    .collect();
                all.sort_unstable();
                assert_eq!(all, (0..partitions).collect::<Vec<_>>());
                let sizes: Vec<usize> = g.members.values().map(|m| m.assignment.len()).collect();
                let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                assert!(hi.unwrap() - lo.unwrap() <= 1, "unbalanced {sizes:?}");
            }
        }
    }

    #[test]
    fn only_members_past_their_session_timeout_expire() {
        let t0 = Instant::now();
        let mut g = Members::default();
        g.members.insert("a".into(), member(100, t0));
        g.members.insert("b".into(), member(1000, t0));
        assert!(g.expire(t0 + Duration::from_millis(100)).is_empty());
        assert_eq!(
            g.expire(t0 + Duration::from_millis(101)),
            vec!["a".to_string()]
        );
        assert!(g.members.contains_key("b"));
    }
}
