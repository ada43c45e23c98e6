//! The members a group assigns partitions to itself: join, leave, session expiry, the
//! group's generation and the range assignor. One generation per group, over every topic
//! its members read; each member subscribes to a set of topics, and each topic's
//! partitions are split by range among the members subscribed to it (Kafka's range
//! assignor). Assignments are computed from the subscriptions when asked, so a topic's
//! partition count is read from the topic, never copied here. Pure bookkeeping over
//! [`tokio::time::Instant`] (so tests can pause time); no I/O, no locks of its own.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::classic::Classic;
use crate::convert::u32_saturating;

/// One live member.
#[derive(Debug, Clone)]
pub(crate) struct Member {
    /// Removed once this long passes without a join, poll, commit or heartbeat.
    pub(crate) session_timeout: Duration,
    pub(crate) last_seen: Instant,
    /// The topics it reads.
    pub(crate) topics: BTreeSet<String>,
}

impl Member {
    pub(crate) fn new(session_timeout: Duration, now: Instant) -> Self {
        Member {
            session_timeout,
            last_seen: now,
            topics: BTreeSet::new(),
        }
    }

    pub(crate) fn expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_seen) > self.session_timeout
    }
}

/// The server-assigned members of a group, and the group's generation.
#[derive(Debug, Default)]
pub(crate) struct Members {
    /// Sorted by id, which is also the range assignor's order.
    pub(crate) members: BTreeMap<String, Member>,
    /// The group's generation: incremented on every rebalance (a member joins, changes
    /// its topics, leaves or expires), whichever protocol the group speaks.
    pub(crate) generation: u64,
    /// The members that speak Kafka's classic protocol (a group has these or the
    /// server-assigned ones, never both).
    pub(crate) classic: Classic,
    /// The members that speak Kafka's consumer protocol (KIP-848); a group has these
    /// or the others, never both.
    pub(crate) consumer: super::consumer::Consumer,
}

/// Makes member ids unique within this process (with the time, across restarts).
static NEXT_MEMBER: AtomicU64 = AtomicU64::new(1);

/// A fresh member id.
pub(crate) fn new_member_id() -> String {
    let n = NEXT_MEMBER.fetch_add(1, Ordering::Relaxed);
    format!("member-{:x}-{n}", crate::record::now_ms())
}

impl Members {
    /// Removes members whose session expired; returns their ids (the caller then
    /// rebalances).
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<String> {
        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.expired(now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            self.members.remove(id);
        }
        expired
    }

    /// Starts a new generation: every member's assignment is recomputed from the
    /// subscriptions.
    pub(crate) fn rebalance(&mut self) {
        self.generation += 1;
    }

    /// The members subscribed to `topic`, in assignor order.
    fn on_topic<'a>(&'a self, topic: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.members
            .iter()
            .filter(move |(_, m)| m.topics.contains(topic))
            .map(|(id, _)| id.as_str())
    }

    /// How many members read `topic`.
    pub(crate) fn count_on(&self, topic: &str) -> usize {
        self.on_topic(topic).count()
    }

    /// The partitions of `topic` (which has `partitions`) that `member` owns, by range:
    /// the subscribed members in id order take contiguous ranges, the first
    /// `partitions % members` one partition more. Empty when it does not read `topic`.
    pub(crate) fn assignment(&self, member: &str, topic: &str, partitions: u32) -> Vec<u32> {
        let Some(index) = self.on_topic(topic).position(|id| id == member) else {
            return Vec::new();
        };
        let m = u32_saturating(self.count_on(topic));
        let i = u32_saturating(index);
        let (per, extra) = (partitions / m, partitions % m);
        let start = i * per + i.min(extra);
        let count = per + u32::from(i < extra);
        (start..start + count).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(timeout_ms: u64, at: Instant, topics: &[&str]) -> Member {
        Member {
            session_timeout: Duration::from_millis(timeout_ms),
            last_seen: at,
            topics: topics.iter().map(|t| (*t).to_owned()).collect(),
        }
    }

    #[test]
    fn range_assignor_covers_every_partition_of_every_topic_exactly_once() {
        let now = Instant::now();
        for members in 1..6u32 {
            for partitions in 0..12u32 {
                let mut g = Members::default();
                for i in 0..members {
                    // Every member reads "a"; every other one also reads "b".
                    let topics: &[&str] = if i % 2 == 0 { &["a", "b"] } else { &["a"] };
                    g.members.insert(format!("m{i}"), member(1000, now, topics));
                }
                for topic in ["a", "b"] {
                    let mut all: Vec<u32> = g
                        .members
                        .keys()
                        .flat_map(|id| g.assignment(id, topic, partitions))
                        .collect();
                    all.sort_unstable();
                    assert_eq!(all, (0..partitions).collect::<Vec<_>>(), "{topic}");
                    let sizes: Vec<usize> = g
                        .on_topic(topic)
                        .map(|id| g.assignment(id, topic, partitions).len())
                        .collect();
                    let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                    assert!(hi.unwrap() - lo.unwrap() <= 1, "unbalanced {sizes:?}");
                }
                for (id, m) in &g.members {
                    if !m.topics.contains("b") {
                        assert!(g.assignment(id, "b", partitions).is_empty());
                    }
                }
            }
        }
    }

    #[test]
    fn each_member_takes_a_contiguous_range_in_id_order() {
        let now = Instant::now();
        let mut g = Members::default();
        g.members.insert("a".into(), member(1000, now, &["t"]));
        g.members.insert("b".into(), member(1000, now, &["t"]));
        assert_eq!(g.assignment("a", "t", 3), vec![0, 1]);
        assert_eq!(g.assignment("b", "t", 3), vec![2]);
        assert!(g.assignment("a", "u", 3).is_empty());
    }

    #[test]
    fn only_members_past_their_session_timeout_expire() {
        let t0 = Instant::now();
        let mut g = Members::default();
        g.members.insert("a".into(), member(100, t0, &["t"]));
        g.members.insert("b".into(), member(1000, t0, &["t"]));
        assert!(g.expire(t0 + Duration::from_millis(100)).is_empty());
        assert_eq!(
            g.expire(t0 + Duration::from_millis(101)),
            vec!["a".to_string()]
        );
        assert!(g.members.contains_key("b"));
    }
}
