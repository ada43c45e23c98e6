//! Offsets retention, as Kafka's `offsets.retention.minutes`: a group with no live
//! member loses each committed offset once both the offset's last commit and the last
//! time the group had a live member are older than the retention. While a group has
//! members (Kafka clients or kafko's own), its offsets stay. The maintenance task runs
//! the sweep; a removal is written under the group's write lock like a commit, so it is
//! durable before memory forgets the offset, and a commit that lands meanwhile wins
//! (`Coordinator::delete_committed_where`, which OffsetDelete uses too).

use std::time::Duration;

use tokio::time::Instant;

use super::coordinator::{Coordinator, GroupState, TopicState, persist_classic};
use crate::error::{KafkoError, Result};

impl GroupState {
    /// Expires silent members of both kinds; whether any member is still live.
    fn live_members(&mut self, now: Instant) -> bool {
        self.expire(now);
        let m = &mut self.members;
        if m.classic.expire(now, &mut m.generation) {
            self.changed.notify_waiters();
        }
        m.classic.is_active() || m.consumer.is_active() || !m.members.is_empty()
    }
}

impl TopicState {
    /// The partitions whose offsets expired at `now_ms`.
    fn expired(&self, now_ms: i64, members_seen_ms: i64, retention_ms: i64) -> Vec<u32> {
        self.committed
            .keys()
            .copied()
            .filter(|p| {
                let at = self.committed_at.get(p).copied().unwrap_or(now_ms);
                now_ms.saturating_sub(at.max(members_seen_ms)) >= retention_ms
            })
            .collect()
    }
}

impl Coordinator {
    /// Sets how long offsets outlive their commit in a group without members (`None`:
    /// forever).
    pub(crate) fn set_offsets_retention(&mut self, retention: Option<Duration>) {
        self.offsets_retention = retention;
    }

    /// The offsets retention in force.
    pub(crate) fn offsets_retention(&self) -> Option<Duration> {
        self.offsets_retention
    }

    /// Removes every committed offset that expired at `now_ms`; returns how many went.
    pub(crate) async fn expire_offsets(&self, now_ms: i64) -> Result<usize> {
        let Some(retention) = self.offsets_retention else {
            return Ok(0);
        };
        let retention_ms = i64::try_from(retention.as_millis()).unwrap_or(i64::MAX);
        let due: Vec<(String, String)> = {
            let now = Instant::now();
            let mut groups = self.lock();
            let mut due = Vec::new();
            for (name, g) in groups.iter_mut() {
                let live = g.live_members(now);
                if g.members.classic.needs_write() {
                    self.persist_in_background(name);
                }
                if live {
                    g.members_seen_ms = now_ms;
                    continue;
                }
                for (topic, ts) in &g.topics {
                    if ts.leases.is_empty()
                        && !ts
                            .expired(now_ms, g.members_seen_ms, retention_ms)
                            .is_empty()
                    {
                        due.push((name.clone(), topic.clone()));
                    }
                }
            }
            due
        };
        let mut expired = 0;
        for (group, topic) in due {
            // Looked at again under the write lock: a commit since wins.
            let gone = self
                .delete_committed_where(
                    &group,
                    &topic,
                    |g, ts| {
                        if ts.leases.is_empty() {
                            ts.expired(now_ms, g.members_seen_ms, retention_ms)
                        } else {
                            Vec::new()
                        }
                    },
                    "expiring group offsets",
                )
                .await;
            match gone {
                Ok(gone) if !gone.is_empty() => {
                    tracing::info!(group, topic, partitions = ?gone, "committed offsets expired");
                    expired += gone.len();
                }
                Ok(_) => {}
                // Deleted meanwhile: nothing left to expire.
                Err(KafkoError::GroupNotFound { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(expired)
    }

    /// Writes a group's Kafka members in the background (see `persist_classic`).
    pub(super) fn persist_in_background(&self, group: &str) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (store, groups, group) = (self.store.clone(), self.groups.clone(), group.to_owned());
        runtime.spawn(async move {
            if let Err(e) = persist_classic(store, groups, group.clone()).await {
                tracing::warn!(group, error = %e, "writing the group's members failed");
            }
        });
    }
}
