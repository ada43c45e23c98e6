//! The groups' in-memory state (members, positions, committed offsets, versions) over
//! the durable [`OffsetStore`], and the checks every group operation shares:
//! expiry, authorization of the caller, and where a partition starts.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::membership::Members;
use super::offsets::OffsetStore;
use super::{GroupConfig, MAX_SESSION_TIMEOUT, MemberRef, OffsetReset};
use crate::error::{KafkoError, Result};
use crate::storage::Storage;

/// Serializes writes of one group's files; `deleted` stops writes after a delete so a
/// late commit cannot bring the directory back.
#[derive(Default)]
pub(super) struct Persist {
    pub(super) lock: tokio::sync::Mutex<()>,
    pub(super) deleted: AtomicBool,
}

#[derive(Default)]
pub(super) struct TopicState {
    pub(super) committed: BTreeMap<u32, u64>,
    pub(super) positions: BTreeMap<u32, u64>,
    pub(super) members: Members,
    /// Bumped on every change of `committed`; `persisted` is the version on disk.
    pub(super) version: u64,
    pub(super) persisted: u64,
}

pub(super) struct GroupState {
    pub(super) config: GroupConfig,
    pub(super) topics: BTreeMap<String, TopicState>,
    pub(super) persist: Arc<Persist>,
}

impl GroupState {
    pub(super) fn new(config: GroupConfig) -> Self {
        GroupState {
            config,
            topics: BTreeMap::new(),
            persist: Arc::new(Persist::default()),
        }
    }
}

/// The broker's groups: in-memory state over the durable [`OffsetStore`].
pub(crate) struct Coordinator {
    pub(super) store: Arc<OffsetStore>,
    groups: Mutex<BTreeMap<String, GroupState>>,
}

/// Who is calling: a member in a generation, or the implicit single member.
#[derive(Clone, Copy)]
pub(super) enum Caller<'a> {
    Member(&'a MemberRef),
    Implicit,
}

impl Coordinator {
    /// Loads every group's options and committed offsets.
    pub(crate) fn open(data_dir: &std::path::Path, storage: Arc<dyn Storage>) -> Result<Self> {
        let store = OffsetStore::new(data_dir, storage);
        let mut groups = BTreeMap::new();
        for (name, stored) in store.load_all()? {
            let mut g = GroupState::new(stored.config);
            for (topic, committed) in stored.topics {
                g.topics.insert(
                    topic,
                    TopicState {
                        committed,
                        ..Default::default()
                    },
                );
            }
            groups.insert(name, g);
        }
        Ok(Coordinator {
            store: Arc::new(store),
            groups: Mutex::new(groups),
        })
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, GroupState>> {
        self.groups.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the committed offsets of `group` on `topic` if they changed since the last
    /// write; returns once a write covering every earlier change is durable.
    pub(super) async fn persist(&self, group: &str, topic: &str) -> Result<()> {
        let Some(persist) = self.lock().get(group).map(|g| g.persist.clone()) else {
            return Err(group_not_found(group));
        };
        let _writing = persist.lock.lock().await;
        if persist.deleted.load(Ordering::Acquire) {
            return Err(group_not_found(group));
        }
        let snapshot = {
            let groups = self.lock();
            let Some(ts) = groups.get(group).and_then(|g| g.topics.get(topic)) else {
                // The topic was deleted meanwhile: nothing left to persist.
                return Ok(());
            };
            if ts.version == ts.persisted {
                return Ok(());
            }
            (ts.committed.clone(), ts.version)
        };
        let (store, g, t) = (self.store.clone(), group.to_owned(), topic.to_owned());
        let (offsets, version) = snapshot;
        // fsync + rename + fsync dir: keep it off the async workers.
        tokio::task::spawn_blocking(move || store.write_offsets(&g, &t, &offsets))
            .await
            .map_err(|e| KafkoError::InvalidRequest {
                reason: format!("offset commit task failed: {e}"),
            })??;
        if let Some(ts) = self
            .lock()
            .get_mut(group)
            .and_then(|g| g.topics.get_mut(topic))
        {
            ts.persisted = ts.persisted.max(version);
        }
        Ok(())
    }

    /// Persists every change not yet on disk (shutdown).
    pub(crate) async fn flush(&self) -> Result<()> {
        let pending: Vec<(String, String)> = self
            .lock()
            .iter()
            .flat_map(|(g, state)| {
                state
                    .topics
                    .iter()
                    .filter(|(_, ts)| ts.version != ts.persisted)
                    .map(move |(t, _)| (g.clone(), t.clone()))
            })
            .collect();
        for (g, t) in pending {
            self.persist(&g, &t).await?;
        }
        Ok(())
    }

    /// Forgets every group's offsets and members on a deleted topic.
    pub(crate) async fn drop_topic(&self, topic: &str) -> Result<()> {
        let groups: Vec<(String, Arc<Persist>)> = self
            .lock()
            .iter()
            .filter(|(_, g)| g.topics.contains_key(topic))
            .map(|(name, g)| (name.clone(), g.persist.clone()))
            .collect();
        for (group, persist) in groups {
            let _writing = persist.lock.lock().await;
            if let Some(g) = self.lock().get_mut(&group) {
                g.topics.remove(topic);
            }
            if !persist.deleted.load(Ordering::Acquire) {
                let store = self.store.clone();
                let topic = topic.to_owned();
                crate::storage::blocking("removing group offsets", move || {
                    store.remove_offsets(&group, &topic)
                })
                .await?;
            }
        }
        Ok(())
    }
}

pub(super) fn group_not_found(group: &str) -> KafkoError {
    KafkoError::GroupNotFound {
        group: group.to_owned(),
    }
}

/// Expires silent members and rebalances if any left.
pub(super) fn expire(ts: &mut TopicState, partitions: u32, now: Instant) {
    if !ts.members.expire(now).is_empty() {
        ts.members.rebalance(partitions);
        ts.positions.clear();
    }
}

/// Checks the caller may act on this group and topic now; returns the partitions it owns
/// and its generation, and records the heartbeat.
pub(super) fn authorize(
    group: &str,
    topic: &str,
    ts: &mut TopicState,
    caller: Caller<'_>,
    partitions: u32,
    now: Instant,
) -> Result<(Vec<u32>, u64)> {
    match caller {
        Caller::Implicit => {
            if !ts.members.members.is_empty() {
                return Err(KafkoError::GroupHasMembers {
                    group: group.to_owned(),
                    topic: topic.to_owned(),
                    members: ts.members.members.len(),
                });
            }
            Ok(((0..partitions).collect(), 0))
        }
        Caller::Member(m) => {
            let generation = ts.members.generation;
            let Some(member) = ts.members.members.get_mut(&m.member_id) else {
                return Err(KafkoError::UnknownMember {
                    group: group.to_owned(),
                    member: m.member_id.clone(),
                });
            };
            if m.generation != generation {
                return Err(KafkoError::StaleGeneration {
                    group: group.to_owned(),
                    current: generation,
                    given: m.generation,
                });
            }
            member.last_seen = now;
            Ok((member.assignment.clone(), generation))
        }
    }
}

/// Where the group reads `partition` next.
pub(super) fn start_position(
    group: &str,
    topic: &str,
    config: &GroupConfig,
    ts: &TopicState,
    partition: u32,
    log_start: u64,
    high_watermark: u64,
) -> Result<u64> {
    let known = ts
        .positions
        .get(&partition)
        .or_else(|| ts.committed.get(&partition))
        .copied();
    match known {
        Some(o) if (log_start..=high_watermark).contains(&o) => Ok(o),
        _ => match config.offset_reset {
            OffsetReset::Earliest => Ok(log_start),
            OffsetReset::Latest => Ok(high_watermark),
            OffsetReset::Error => Err(KafkoError::NoValidOffset {
                group: group.to_owned(),
                topic: topic.to_owned(),
                partition,
            }),
        },
    }
}

pub(super) fn validate_session_timeout(timeout: Duration) -> Result<()> {
    if timeout.is_zero() || timeout > MAX_SESSION_TIMEOUT {
        return Err(KafkoError::InvalidRequest {
            reason: format!(
                "session timeout must be between 1 ms and {} s, got {} ms",
                MAX_SESSION_TIMEOUT.as_secs(),
                timeout.as_millis()
            ),
        });
    }
    Ok(())
}
pub(super) fn not_assigned(topic: &str, partition: u32, member: Option<&MemberRef>) -> KafkoError {
    KafkoError::NotAssigned {
        topic: topic.to_owned(),
        partition,
        member: member.map_or_else(String::new, |m| m.member_id.clone()),
    }
}
