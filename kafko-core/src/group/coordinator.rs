//! The groups' in-memory state (members, positions, answers in flight, delivered but
//! uncommitted offsets, committed offsets) over the durable [`OffsetStore`], and the
//! checks every group operation shares: expiry, authorization of the caller, and where a
//! partition starts.
//!
//! The committed offsets in memory are always the ones on disk: every change is written
//! first (under the group's write lock) and published after the write succeeded, so a
//! failed write leaves the group exactly where it was.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use super::acknowledge::{Answer, Frontier};
use super::classic::Classic;
use super::eviction::DEFAULT_IDLE_GROUP_TIMEOUT;
use super::limits::{ClassicTotals, GroupLimits};
use super::membership::Members;
use super::offsets::OffsetStore;
use super::{GroupConfig, MAX_SESSION_TIMEOUT, MemberRef, OffsetReset, PartitionOffset};
use crate::disk;
use crate::error::{GroupError, KafkoError, Result};
use crate::storage::Storage;

/// Serializes writes of one group's files; `deleted` stops writes after a delete so a
/// late commit cannot bring the directory back.
#[derive(Default)]
pub(super) struct Persist {
    pub(super) lock: Arc<tokio::sync::Mutex<()>>,
    pub(super) deleted: AtomicBool,
}

/// A poll answer in flight on one partition: the group read from `start` up to the
/// partition's position, and no other poll reads the partition until the answer is
/// delivered (the position stays) or lost (the position goes back to `start`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Lease {
    pub(super) id: u64,
    pub(super) start: u64,
    /// Whether the owner's next poll commits this answer once it is delivered.
    pub(super) auto_commit: bool,
}

#[derive(Default)]
pub(super) struct TopicState {
    /// Durable: equal to the `.offsets` file.
    pub(super) committed: BTreeMap<u32, u64>,
    /// When each committed offset was committed (wall clock, ms); durable with it.
    /// Offsets retention counts from it.
    pub(super) committed_at: BTreeMap<u32, i64>,
    /// Where the group reads next, per partition (past answers in flight).
    pub(super) positions: BTreeMap<u32, u64>,
    pub(super) leases: BTreeMap<u32, Lease>,
    /// Delivered with auto-commit and not yet committed, per partition: the next poll
    /// (or leave) of the member it was delivered to commits it.
    pub(super) pending: BTreeMap<u32, Pending>,
    /// The implicit member's answers not yet behind the frontier, by cursor
    /// (`acknowledge`).
    pub(super) answers: BTreeMap<u64, Answer>,
    /// The implicit member's frontier per partition: what its auto-commit may commit.
    pub(super) frontier: BTreeMap<u32, Frontier>,
    /// The metadata string of each partition's last commit that carried one (Kafka
    /// clients read it back). Durable: equal to the `.offsets` file.
    pub(super) metadata: BTreeMap<u32, String>,
    /// The leader epoch of each partition's last commit that carried one (≥ 0; Kafka
    /// clients read it back). Durable: equal to the `.offsets` file.
    pub(super) leader_epoch: BTreeMap<u32, i32>,
}

/// What a commit stores beside its offsets, by partition: the non-empty metadata
/// strings and the leader epochs (≥ 0) it carried.
#[derive(Default)]
pub(super) struct CommitExtras {
    pub(super) metadata: BTreeMap<u32, String>,
    pub(super) leader_epoch: BTreeMap<u32, i32>,
}

/// An offset delivered to `member` (`""`: the implicit member), to be committed by its
/// next poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Pending {
    pub(super) member: String,
    pub(super) offset: u64,
}

impl TopicState {
    /// Forgets positions and answers in flight: the group reads from its committed
    /// offsets again (after a rebalance, as an eager Kafka rebalance). Deliveries stay
    /// pending for the members that got them, except for members no longer in the group.
    pub(super) fn reset_positions(&mut self, members: &Members) {
        self.positions.clear();
        self.leases.clear();
        self.frontier.clear();
        self.pending
            .retain(|_, p| p.member.is_empty() || members.members.contains_key(&p.member));
    }

    /// What a joined member's next poll commits: its pending deliveries that are still
    /// ahead of the committed offsets (a later commit or seek by others wins). The
    /// implicit member's are its frontier (`acknowledge::committable`).
    pub(super) fn pending_of(&self, member: &str) -> Vec<PartitionOffset> {
        self.pending
            .iter()
            .filter(|(p, d)| {
                d.member == member && self.committed.get(p).is_none_or(|&c| c < d.offset)
            })
            .map(|(&partition, d)| PartitionOffset {
                partition,
                offset: d.offset,
            })
            .collect()
    }

    /// Drops the pending deliveries a commit just covered.
    pub(super) fn clear_pending(&mut self, member: &str, committed: &[PartitionOffset]) {
        for po in committed {
            if self
                .pending
                .get(&po.partition)
                .is_some_and(|d| d.member == member && d.offset == po.offset)
            {
                self.pending.remove(&po.partition);
            }
        }
    }

    /// Sets a partition's committed offset and position (an explicit commit or seek); an
    /// answer in flight on it no longer moves it.
    pub(super) fn set_committed(&mut self, partition: u32, offset: u64) {
        self.committed.insert(partition, offset);
        self.positions.insert(partition, offset);
        self.leases.remove(&partition);
        self.pending.remove(&partition);
        self.frontier.insert(
            partition,
            Frontier {
                from: offset,
                to: offset,
            },
        );
    }

    /// Forgets a partition's committed offset and read position (Kafka's OffsetDelete):
    /// the next reader starts by the group's reset policy.
    pub(super) fn forget_committed(&mut self, partition: u32) {
        self.committed.remove(&partition);
        self.committed_at.remove(&partition);
        self.metadata.remove(&partition);
        self.leader_epoch.remove(&partition);
        self.positions.remove(&partition);
        self.leases.remove(&partition);
        self.pending.remove(&partition);
        self.frontier.remove(&partition);
    }

    /// The offset a commit without offsets records: the delivered position (an answer in
    /// flight does not count).
    pub(super) fn delivered_position(&self, partition: u32) -> Option<u64> {
        match self.leases.get(&partition) {
            Some(lease) => Some(lease.start),
            None => self.positions.get(&partition).copied(),
        }
    }
}

pub(super) struct GroupState {
    pub(super) config: GroupConfig,
    /// Who reads, in which generation: one membership over all the group's topics.
    pub(super) members: Members,
    pub(super) topics: BTreeMap<String, TopicState>,
    pub(super) persist: Arc<Persist>,
    /// Whether the group has files on disk (found at open, or configured): such a group
    /// is kept until deleted. One without them, and without committed offsets, lives in
    /// memory only and is forgotten once idle (see `eviction`).
    pub(super) durable: bool,
    /// The group's last join, poll, commit or seek.
    pub(super) last_used: Instant,
    /// Woken when a Kafka-protocol rebalance moves on (members waiting in JoinGroup or
    /// SyncGroup).
    pub(super) changed: Arc<tokio::sync::Notify>,
    /// When the offsets-retention sweep last saw the group with live members (wall
    /// clock, ms; 0: not since the open). Retention counts from it too.
    pub(super) members_seen_ms: i64,
}

impl GroupState {
    /// Starts a new generation: positions and answers in flight on every topic are
    /// forgotten (as after an eager Kafka rebalance).
    pub(super) fn rebalance(&mut self) {
        self.members.rebalance();
        for ts in self.topics.values_mut() {
            ts.reset_positions(&self.members);
        }
    }

    /// Forgets a deleted topic in the members' subscriptions: members left without a
    /// topic leave, and the group rebalances if anyone read it.
    pub(super) fn forget_topic(&mut self, topic: &str) {
        let mut changed = false;
        self.members.members.retain(|_, m| {
            changed |= m.topics.remove(topic);
            !m.topics.is_empty()
        });
        if changed {
            self.rebalance();
        }
    }

    /// Expires silent server-assigned members, and rebalances if any left.
    pub(super) fn expire(&mut self, now: Instant) {
        if !self.members.expire(now).is_empty() {
            self.rebalance();
        }
    }

    pub(super) fn new(config: GroupConfig) -> Self {
        GroupState {
            config,
            members: Members::default(),
            topics: BTreeMap::new(),
            persist: Arc::new(Persist::default()),
            durable: false,
            last_used: Instant::now(),
            changed: Arc::new(tokio::sync::Notify::new()),
            members_seen_ms: 0,
        }
    }
}

pub(super) type Groups = BTreeMap<String, GroupState>;

/// A commit that changes nothing still renews its offsets' commit time once it is this
/// old (ms).
const RENEW_COMMIT_TIME_MS: i64 = 60_000;

/// The broker's groups: in-memory state over the durable [`OffsetStore`].
pub(crate) struct Coordinator {
    pub(super) store: Arc<OffsetStore>,
    /// Shared with the deliveries of poll answers in flight.
    pub(super) groups: Arc<Mutex<Groups>>,
    /// How long a group with nothing on disk outlives its last use.
    pub(super) idle_timeout: Duration,
    /// Bytes of groups created since the last eviction pass: a pass runs inline once
    /// they could exceed half of the idle groups' budget
    /// ([`GroupLimits::max_idle_group_bytes`]).
    pub(super) created_bytes: AtomicUsize,
    /// The most groups a call may create (`None`: unlimited).
    pub(super) max_groups: Option<u64>,
    /// The limits of classic groups and idle groups.
    pub(super) limits: GroupLimits,
    /// What the classic members of every group hold together.
    pub(super) totals: Arc<ClassicTotals>,
    /// Kafka's `offsets.retention.minutes` (`None`: offsets are kept until deleted).
    pub(super) offsets_retention: Option<Duration>,
}

/// Who is calling: a member in a generation, or the implicit single member.
#[derive(Clone, Copy)]
pub(super) enum Caller<'a> {
    Member(&'a MemberRef),
    Implicit,
}

impl<'a> Caller<'a> {
    pub(super) fn of(member: Option<&'a MemberRef>) -> Self {
        member.map_or(Caller::Implicit, Caller::Member)
    }

    /// The key of the caller's pending deliveries.
    pub(super) fn key(self) -> &'a str {
        match self {
            Caller::Member(m) => &m.member_id,
            Caller::Implicit => "",
        }
    }
}

pub(super) fn lock(groups: &Mutex<Groups>) -> MutexGuard<'_, Groups> {
    groups.lock().unwrap_or_else(|p| p.into_inner())
}

impl Coordinator {
    /// Loads every group's options and committed offsets.
    /// Starts the task that keeps `topic` (`__consumer_offsets`) following the groups'
    /// files (see `offsets_mirror`); it ends when `stop` changes.
    pub(crate) fn spawn_offsets_mirror(
        &self,
        topic: Arc<crate::topic::Topic>,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        super::offsets_mirror::spawn(self.store.clone(), topic, stop)
    }

    pub(crate) fn open(data_dir: &std::path::Path, storage: Arc<dyn Storage>) -> Result<Self> {
        let store = OffsetStore::new(data_dir, storage);
        let mut groups = BTreeMap::new();
        for (name, stored) in store.load_all()? {
            let mut g = GroupState::new(stored.config);
            g.durable = true;
            if let Some(members) = stored.members {
                g.members.generation = members.generation;
                g.members.classic = Classic::restore(members, Instant::now());
            }
            if let Some(consumer) = stored.consumer
                && !g.members.classic.is_active()
            {
                g.members.consumer = super::consumer_store::restore(consumer, Instant::now());
            }
            let opened_at = crate::record::now_ms();
            for (topic, stored) in stored.topics {
                // Files from before commit times were kept count from this open.
                let mut committed_at = stored.committed_at;
                for &partition in stored.offsets.keys() {
                    committed_at.entry(partition).or_insert(opened_at);
                }
                committed_at.retain(|p, _| stored.offsets.contains_key(p));
                g.topics.insert(
                    topic,
                    TopicState {
                        committed: stored.offsets,
                        committed_at,
                        metadata: stored.metadata,
                        leader_epoch: stored.leader_epoch,
                        ..Default::default()
                    },
                );
            }
            groups.insert(name, g);
        }
        Ok(Coordinator {
            store: Arc::new(store),
            groups: Arc::new(Mutex::new(groups)),
            idle_timeout: DEFAULT_IDLE_GROUP_TIMEOUT,
            created_bytes: AtomicUsize::new(0),
            max_groups: None,
            limits: GroupLimits::default(),
            totals: Arc::default(),
            offsets_retention: Some(super::DEFAULT_OFFSETS_RETENTION),
        })
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Groups> {
        lock(&self.groups)
    }

    /// Takes `group`'s write lock (its files change only under it); `GroupNotFound` if
    /// the group is gone or was deleted meanwhile.
    pub(super) async fn write_lock(&self, group: &str) -> Result<tokio::sync::OwnedMutexGuard<()>> {
        let Some(persist) = self.lock().get(group).map(|g| g.persist.clone()) else {
            return Err(group_not_found(group));
        };
        let writing = persist.lock.clone().lock_owned().await;
        if persist.deleted.load(Ordering::Acquire) {
            return Err(group_not_found(group));
        }
        Ok(writing)
    }

    /// Commits `offsets` of `group` on `topic` durably, then publishes them in memory and
    /// runs `publish` on the state under the same lock. Under the group's write lock, so
    /// commits are never lost or reordered; if the write fails nothing changes.
    pub(super) async fn commit(
        &self,
        group: &str,
        topic: &str,
        offsets: &[PartitionOffset],
        publish: impl FnOnce(&mut TopicState),
    ) -> Result<()> {
        self.commit_with_metadata(group, topic, offsets, CommitExtras::default(), publish)
            .await
    }

    /// A Kafka client's OffsetCommit of `offsets` of `topic` for `group`: the offsets,
    /// their non-empty metadata strings and their leader epochs (≥ 0), durably, then
    /// published to the group's positions.
    pub(crate) async fn commit_kafka_offsets(
        &self,
        group: &str,
        topic: &str,
        offsets: &[super::CommitOffset],
    ) -> Result<()> {
        let plain: Vec<PartitionOffset> = offsets
            .iter()
            .map(|o| PartitionOffset {
                partition: o.partition,
                offset: o.offset,
            })
            .collect();
        let extras = CommitExtras {
            metadata: offsets
                .iter()
                .filter_map(|o| {
                    let text = o.metadata.as_ref().filter(|s| !s.is_empty())?;
                    Some((o.partition, text.clone()))
                })
                .collect(),
            leader_epoch: offsets
                .iter()
                .filter_map(|o| Some((o.partition, o.leader_epoch.filter(|&e| e >= 0)?)))
                .collect(),
        };
        self.commit_with_metadata(group, topic, &plain, extras, |ts| {
            for o in offsets {
                ts.set_committed(o.partition, o.offset);
            }
        })
        .await
    }

    /// [`commit`](Self::commit) with the commit's metadata strings and leader epochs:
    /// each committed partition's string and epoch are replaced by the ones given, or
    /// cleared, as a Kafka commit replaces offset, metadata and leader epoch together.
    pub(super) async fn commit_with_metadata(
        &self,
        group: &str,
        topic: &str,
        offsets: &[PartitionOffset],
        extras: CommitExtras,
        publish: impl FnOnce(&mut TopicState),
    ) -> Result<()> {
        let _writing = self.write_lock(group).await?;
        let before = self.durable_offsets(group, topic).unwrap_or_default();
        let now = crate::record::now_ms();
        // A commit of the same offsets renews them (retention counts from it), written
        // at most once a minute so that repeated commits of a quiet partition cost
        // nothing.
        let stale = offsets.iter().any(|po| {
            before
                .committed_at
                .get(&po.partition)
                .is_none_or(|&at| now.saturating_sub(at) >= RENEW_COMMIT_TIME_MS)
        });
        let mut next = before.clone();
        for po in offsets {
            next.offsets.insert(po.partition, po.offset);
            next.metadata.remove(&po.partition);
            next.leader_epoch.remove(&po.partition);
        }
        next.metadata.extend(extras.metadata);
        next.leader_epoch.extend(extras.leader_epoch);
        if stale
            || next.offsets != before.offsets
            || next.metadata != before.metadata
            || next.leader_epoch != before.leader_epoch
        {
            for po in offsets {
                next.committed_at.insert(po.partition, now);
            }
            self.write_durable(group, topic, &next, "offset commit")
                .await?;
        }
        let mut groups = self.lock();
        let ts = groups
            .get_mut(group)
            .ok_or_else(|| group_not_found(group))?
            .topics
            .entry(topic.to_owned())
            .or_default();
        ts.committed = next.offsets;
        ts.committed_at = next.committed_at;
        ts.metadata = next.metadata;
        ts.leader_epoch = next.leader_epoch;
        publish(ts);
        Ok(())
    }

    /// A topic's committed offsets, commit times, metadata strings and leader epochs as
    /// its file holds them (memory equals the file); `None` for a group or topic without any.
    fn durable_offsets(&self, group: &str, topic: &str) -> Option<disk::StoredOffsets> {
        let groups = self.lock();
        let ts = groups.get(group)?.topics.get(topic)?;
        Some(disk::StoredOffsets {
            topic: None,
            offsets: ts.committed.clone(),
            committed_at: ts.committed_at.clone(),
            metadata: ts.metadata.clone(),
            leader_epoch: ts.leader_epoch.clone(),
        })
    }

    /// Writes a topic's committed offsets for `group` (the file goes once none is
    /// left): fsync, rename and directory fsync on the blocking pool.
    async fn write_durable(
        &self,
        group: &str,
        topic: &str,
        offsets: &disk::StoredOffsets,
        what: &'static str,
    ) -> Result<()> {
        let (store, g, t, body) = (
            self.store.clone(),
            group.to_owned(),
            topic.to_owned(),
            offsets.clone(),
        );
        crate::storage::blocking(what, move || store.write_offsets(&g, &t, &body)).await
    }

    /// Deletes the committed offsets of `group` on `topic` that `pick` chooses (it looks
    /// at the group under the write lock, so a commit landing meanwhile is seen) durably
    /// (the topic's file is rewritten, or removed once it holds none), then forgets them
    /// in memory. If the write fails nothing changes. Returns the partitions deleted.
    pub(super) async fn delete_committed_where(
        &self,
        group: &str,
        topic: &str,
        pick: impl FnOnce(&GroupState, &TopicState) -> Vec<u32>,
        what: &'static str,
    ) -> Result<Vec<u32>> {
        let _writing = self.write_lock(group).await?;
        let gone = {
            let groups = self.lock();
            let Some(g) = groups.get(group) else {
                return Ok(Vec::new());
            };
            let Some(ts) = g.topics.get(topic) else {
                return Ok(Vec::new());
            };
            pick(g, ts)
        };
        let Some(before) = self.durable_offsets(group, topic) else {
            return Ok(Vec::new());
        };
        let mut next = before.clone();
        for p in &gone {
            next.offsets.remove(p);
            next.committed_at.remove(p);
            next.metadata.remove(p);
            next.leader_epoch.remove(p);
        }
        if next.offsets != before.offsets {
            self.write_durable(group, topic, &next, what).await?;
        }
        let mut groups = self.lock();
        if let Some(ts) = groups
            .get_mut(group)
            .ok_or_else(|| group_not_found(group))?
            .topics
            .get_mut(topic)
        {
            for p in &gone {
                ts.forget_committed(*p);
            }
        }
        Ok(gone)
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
                g.forget_topic(topic);
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

/// Writes `group`'s Kafka members to `members.json` if they changed since the last
/// write and the group is stable or empty (during a rebalance the last stable
/// generation stays on disk, and the write waits for the next one). Under the group's
/// write lock, with the state taken under that lock, so the last write is always the
/// newest state. A failed write leaves the group marked for the next attempt.
pub(super) async fn persist_classic(
    store: Arc<OffsetStore>,
    groups: Arc<Mutex<Groups>>,
    group: String,
) -> Result<()> {
    persist_members(
        (store, groups, group),
        "writing group members",
        |g| {
            let m = &mut g.members;
            if !m.classic.dirty {
                return None;
            }
            let snapshot = m.classic.snapshot(m.generation).ok()?;
            m.classic.dirty = false;
            Some(snapshot)
        },
        |store, name, snapshot| store.write_members(name, snapshot.as_ref()),
        |g| g.members.classic.dirty = true,
    )
    .await
}

/// Writes one of `group`'s member files: under the group's write lock (nothing once the
/// group is deleted), `take` decides under the groups' lock what to write (`None`:
/// nothing, the state is clean) and marks it clean; `write` runs on a blocking thread;
/// a failed write marks the state dirty again (`redirty`) for the next attempt.
pub(super) async fn persist_members<T: Send + 'static>(
    (store, groups, group): (Arc<OffsetStore>, Arc<Mutex<Groups>>, String),
    what: &'static str,
    take: impl FnOnce(&mut GroupState) -> Option<Option<T>>,
    write: impl FnOnce(&OffsetStore, &str, Option<T>) -> Result<()> + Send + 'static,
    redirty: impl FnOnce(&mut GroupState),
) -> Result<()> {
    let Some(persist) = lock(&groups).get(&group).map(|g| g.persist.clone()) else {
        return Ok(());
    };
    let _writing = persist.lock.lock().await;
    if persist.deleted.load(Ordering::Acquire) {
        return Ok(());
    }
    let snapshot = {
        let mut all = lock(&groups);
        let Some(g) = all.get_mut(&group) else {
            return Ok(());
        };
        let Some(snapshot) = take(g) else {
            return Ok(());
        };
        g.durable |= snapshot.is_some();
        snapshot
    };
    let name = group.clone();
    let written = crate::storage::blocking(what, move || write(&store, &name, snapshot)).await;
    if written.is_err()
        && let Some(g) = lock(&groups).get_mut(&group)
    {
        redirty(g);
    }
    written
}

pub(super) fn group_not_found(group: &str) -> KafkoError {
    KafkoError::GroupNotFound {
        group: group.to_owned(),
    }
}

/// Checks the caller may act on this group and topic now; returns the partitions it owns
/// and its generation, and records the heartbeat.
pub(super) fn authorize(
    group: &str,
    topic: &str,
    members: &mut Members,
    caller: Caller<'_>,
    partitions: u32,
    now: Instant,
) -> Result<(Vec<u32>, u64)> {
    match caller {
        Caller::Implicit => {
            let live = members.count_on(topic)
                + members.classic.members.len()
                + members.consumer.members.len();
            if live > 0 {
                return Err(KafkoError::GroupHasMembers {
                    group: group.to_owned(),
                    topic: topic.to_owned(),
                    members: live,
                });
            }
            Ok(((0..partitions).collect(), 0))
        }
        Caller::Member(m) => {
            let generation = members.generation;
            let unknown = || KafkoError::UnknownMember {
                group: group.to_owned(),
                member: m.member_id.clone(),
            };
            let member = members.members.get_mut(&m.member_id).ok_or_else(unknown)?;
            if !member.topics.contains(topic) {
                return Err(unknown());
            }
            if m.generation != generation {
                return Err(KafkoError::StaleGeneration {
                    group: group.to_owned(),
                    current: generation,
                    given: m.generation,
                });
            }
            member.last_seen = now;
            Ok((
                members.assignment(&m.member_id, topic, partitions),
                generation,
            ))
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

pub(super) fn validate_session_timeout(timeout: Duration) -> Result<(), GroupError> {
    let min = Duration::from_millis(1);
    if timeout < min || timeout > MAX_SESSION_TIMEOUT {
        return Err(GroupError::InvalidSessionTimeout {
            timeout,
            min,
            max: MAX_SESSION_TIMEOUT,
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
