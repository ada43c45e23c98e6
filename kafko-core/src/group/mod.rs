//! Consumer groups: server-kept cursors with Kafka's semantics, per group *and topic*.
//!
//! - **Offsets.** A group has a committed offset (the next offset to read) per
//!   partition, persisted in `<data>/groups/<group>/<topic>.offsets` before a commit
//!   returns (`offsets`), and an in-memory *position* that polls advance. Without a
//!   position a poll starts at the committed offset; without either, or when the offset
//!   left the log (retention), at the group's [`OffsetReset`] policy.
//! - **Members.** Members join and leave explicitly; every join, poll and commit is a
//!   heartbeat, and a member silent for longer than its session timeout is removed by
//!   the next operation on the group. Each change starts a new *generation* and
//!   reassigns the partitions with the range assignor (`membership`); positions fall
//!   back to the committed offsets, as after an eager Kafka rebalance. A poll or commit
//!   carrying an older generation fails with [`KafkoError::StaleGeneration`]; the member
//!   rejoins (same id) to learn its new assignment.
//! - **The implicit member.** Calls without a member (`member: None`, and
//!   [`Kafko::group_poll`]) act as one member owning every partition, for clients that
//!   do not coordinate (the HTTP API's simple path). They are refused with
//!   [`KafkoError::GroupHasMembers`] while explicit members are live.
//!
//! Polls read without holding any lock and apply their new positions only if nobody
//! moved them meanwhile (else they retry), so concurrent polls never hand out a record
//! twice and a long poll never blocks other members.

mod membership;
mod offsets;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::broker::Kafko;
use crate::consumer::SeekTo;
use crate::error::{KafkoError, Result};
use crate::naming::validate_name;
use crate::partition::record_bytes;
use crate::record::Record;
use crate::storage::Storage;
use crate::topic::Topic;
use membership::{Member, Members, new_member_id};
use offsets::OffsetStore;

/// Longest accepted session timeout.
pub const MAX_SESSION_TIMEOUT: Duration = Duration::from_secs(3600);

/// Where a group starts when it has no valid offset for a partition (none committed, or
/// the committed one is outside the log, e.g. removed by retention): Kafka's
/// `auto.offset.reset`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OffsetReset {
    /// The log start offset (oldest record still stored).
    #[default]
    Earliest,
    /// The high watermark (only records produced from now on).
    Latest,
    /// Fail the poll with [`KafkoError::NoValidOffset`].
    Error,
}

/// Options of a group, persisted in `group.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroupConfig {
    /// Reset policy for partitions without a valid offset.
    pub offset_reset: OffsetReset,
}

/// A member's identity in one generation, carried by its polls and commits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MemberRef {
    /// Id returned by [`Kafko::join_group`].
    pub member_id: String,
    /// Generation of the member's current assignment.
    pub generation: u64,
}

/// A member's place in its group after joining.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Membership {
    /// Group name.
    pub group: String,
    /// Topic name.
    pub topic: String,
    /// The member's id (generated unless the caller chose one).
    pub member_id: String,
    /// Current generation; pass it back with every poll and commit.
    pub generation: u64,
    /// Partitions this member owns, ascending.
    pub assignment: Vec<u32>,
}

impl Membership {
    /// The reference to poll and commit with.
    pub fn member_ref(&self) -> MemberRef {
        MemberRef {
            member_id: self.member_id.clone(),
            generation: self.generation,
        }
    }
}

/// How a group poll reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupPollOptions {
    /// Most records returned.
    pub max_records: usize,
    /// Most bytes of keys, values and headers returned (at least one record is).
    pub max_bytes: usize,
    /// How long to wait for records when none are available (0 = return at once).
    pub wait: Duration,
    /// Commit the new positions durably before returning (at-most-once delivery).
    pub auto_commit: bool,
}

impl Default for GroupPollOptions {
    fn default() -> Self {
        GroupPollOptions {
            max_records: 500,
            max_bytes: 1024 * 1024,
            wait: Duration::ZERO,
            auto_commit: false,
        }
    }
}

/// An offset of one partition (a commit, or a position after a seek).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionOffset {
    /// Partition.
    pub partition: u32,
    /// Next offset to read.
    pub offset: u64,
}

/// Records returned by a group poll.
#[derive(Debug, Clone, Default)]
pub struct GroupRecords {
    /// Records of the caller's partitions, in offset order per partition.
    pub records: Vec<Record>,
    /// Generation the poll ran in (0 for the implicit member of a group without members).
    pub generation: u64,
    /// The caller's positions after the poll: the next offset of each partition it read.
    pub positions: Vec<PartitionOffset>,
    /// Whether the positions were committed (`auto_commit`).
    pub committed: bool,
}

/// One member in [`GroupTopicDescription`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupMemberDescription {
    /// Member id.
    pub member_id: String,
    /// Partitions it owns.
    pub assignment: Vec<u32>,
    /// Its session timeout in milliseconds.
    pub session_timeout_ms: u64,
    /// Milliseconds since its last join, poll or commit.
    pub idle_ms: u64,
}

/// One partition in [`GroupTopicDescription`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupPartitionDescription {
    /// Partition.
    pub partition: u32,
    /// Owning member, if any.
    pub owner: Option<String>,
    /// Committed offset, if any.
    pub committed: Option<u64>,
    /// In-memory position, when it is ahead of (or differs from) the committed offset.
    pub position: Option<u64>,
    /// First offset still in the partition.
    pub log_start_offset: u64,
    /// One past the last offset of the partition.
    pub high_watermark: u64,
    /// `high_watermark − committed`, when an offset is committed.
    pub lag: Option<u64>,
}

/// A group on one topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupTopicDescription {
    /// Topic name.
    pub topic: String,
    /// Current generation (0 until the first member joins).
    pub generation: u64,
    /// Live members, by id.
    pub members: Vec<GroupMemberDescription>,
    /// Every partition of the topic (empty when the topic no longer exists).
    pub partitions: Vec<GroupPartitionDescription>,
    /// Sum of the partitions' lag.
    pub total_lag: u64,
}

/// Everything about a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupDescription {
    /// Group name.
    pub group: String,
    /// Its options.
    pub config: GroupConfig,
    /// One entry per topic the group has used, by name.
    pub topics: Vec<GroupTopicDescription>,
}

/// A line of [`Kafko::list_groups`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupListing {
    /// Group name.
    pub group: String,
    /// Topics it has offsets or members on.
    pub topics: Vec<String>,
    /// Live members over all its topics.
    pub members: usize,
}

/// Serializes writes of one group's files; `deleted` stops writes after a delete so a
/// late commit cannot bring the directory back.
#[derive(Default)]
struct Persist {
    lock: tokio::sync::Mutex<()>,
    deleted: AtomicBool,
}

#[derive(Default)]
struct TopicState {
    committed: BTreeMap<u32, u64>,
    positions: BTreeMap<u32, u64>,
    members: Members,
    /// Bumped on every change of `committed`; `persisted` is the version on disk.
    version: u64,
    persisted: u64,
}

struct GroupState {
    config: GroupConfig,
    topics: BTreeMap<String, TopicState>,
    persist: Arc<Persist>,
}

impl GroupState {
    fn new(config: GroupConfig) -> Self {
        GroupState {
            config,
            topics: BTreeMap::new(),
            persist: Arc::new(Persist::default()),
        }
    }
}

/// The broker's groups: in-memory state over the durable [`OffsetStore`].
pub(crate) struct Coordinator {
    store: Arc<OffsetStore>,
    groups: Mutex<BTreeMap<String, GroupState>>,
}

/// Who is calling: a member in a generation, or the implicit single member.
#[derive(Clone, Copy)]
enum Caller<'a> {
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

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, GroupState>> {
        self.groups.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the committed offsets of `group` on `topic` if they changed since the last
    /// write; returns once a write covering every earlier change is durable.
    async fn persist(&self, group: &str, topic: &str) -> Result<()> {
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
                self.store.remove_offsets(&group, topic)?;
            }
        }
        Ok(())
    }
}

fn group_not_found(group: &str) -> KafkoError {
    KafkoError::GroupNotFound {
        group: group.to_owned(),
    }
}

/// Expires silent members and rebalances if any left.
fn expire(ts: &mut TopicState, partitions: u32, now: Instant) {
    if !ts.members.expire(now).is_empty() {
        ts.members.rebalance(partitions);
        ts.positions.clear();
    }
}

/// Checks the caller may act on this group and topic now; returns the partitions it owns
/// and its generation, and records the heartbeat.
fn authorize(
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
fn start_position(
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

fn validate_session_timeout(timeout: Duration) -> Result<()> {
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

impl Kafko {
    fn groups(&self) -> &Coordinator {
        &self.inner.groups
    }

    /// Validates names and resolves the topic; the group is created in memory if new.
    fn group_topic(&self, group: &str, topic: &str) -> Result<Arc<Topic>> {
        validate_name(group)?;
        validate_name(topic)?;
        let t = self.topic(topic)?;
        let mut groups = self.groups().lock();
        groups
            .entry(group.to_owned())
            .or_insert_with(|| GroupState::new(GroupConfig::default()))
            .topics
            .entry(topic.to_owned())
            .or_default();
        Ok(t)
    }

    /// Runs `f` on the group's state for `topic` after expiring silent members.
    fn with_topic_state<T>(
        &self,
        group: &str,
        topic: &str,
        partitions: u32,
        f: impl FnOnce(&GroupConfig, &mut TopicState) -> Result<T>,
    ) -> Result<T> {
        let mut groups = self.groups().lock();
        let g = groups
            .get_mut(group)
            .ok_or_else(|| group_not_found(group))?;
        let ts = g.topics.entry(topic.to_owned()).or_default();
        expire(ts, partitions, Instant::now());
        f(&g.config, ts)
    }

    /// Sets a group's options (creating the group), durably.
    pub async fn set_group_config(&self, group: &str, config: GroupConfig) -> Result<()> {
        validate_name(group)?;
        self.check_not_closing()?;
        let persist = {
            let mut groups = self.groups().lock();
            let g = groups
                .entry(group.to_owned())
                .or_insert_with(|| GroupState::new(GroupConfig::default()));
            g.persist.clone()
        };
        let _writing = persist.lock.lock().await;
        let (store, name, c) = (
            self.groups().store.clone(),
            group.to_owned(),
            config.clone(),
        );
        tokio::task::spawn_blocking(move || store.write_config(&name, &c))
            .await
            .map_err(|e| KafkoError::InvalidRequest {
                reason: format!("group config task failed: {e}"),
            })??;
        if let Some(g) = self.groups().lock().get_mut(group) {
            g.config = config;
        }
        Ok(())
    }

    fn check_not_closing(&self) -> Result<()> {
        if self.is_shutting_down() {
            return Err(KafkoError::ShuttingDown);
        }
        Ok(())
    }

    /// Joins `group` on `topic` (creating the group). Without `member_id` a new id is
    /// generated; joining again with a live member's id is a heartbeat that returns its
    /// current assignment without a rebalance. A new member starts a new generation.
    pub async fn join_group(
        &self,
        group: &str,
        topic: &str,
        member_id: Option<&str>,
        session_timeout: Duration,
    ) -> Result<Membership> {
        validate_session_timeout(session_timeout)?;
        if let Some(id) = member_id {
            validate_name(id)?;
        }
        let t = self.group_topic(group, topic)?;
        let n = t.partitions.len() as u32;
        self.with_topic_state(group, topic, n, |_, ts| {
            let now = Instant::now();
            let id = member_id.map_or_else(new_member_id, str::to_owned);
            if let Some(m) = ts.members.members.get_mut(&id) {
                m.last_seen = now;
                m.session_timeout = session_timeout;
            } else {
                ts.members.members.insert(
                    id.clone(),
                    Member {
                        session_timeout,
                        last_seen: now,
                        assignment: Vec::new(),
                    },
                );
                ts.members.rebalance(n);
                ts.positions.clear();
                tracing::info!(group, topic, member = %id, generation = ts.members.generation, "member joined");
            }
            let assignment = ts
                .members
                .members
                .get(&id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default();
            Ok(Membership {
                group: group.to_owned(),
                topic: topic.to_owned(),
                member_id: id,
                generation: ts.members.generation,
                assignment,
            })
        })
    }

    /// Removes a member; its partitions move to the others (a new generation).
    pub async fn leave_group(&self, group: &str, topic: &str, member_id: &str) -> Result<()> {
        let t = self.group_topic(group, topic)?;
        let n = t.partitions.len() as u32;
        self.with_topic_state(group, topic, n, |_, ts| {
            if ts.members.members.remove(member_id).is_none() {
                return Err(KafkoError::UnknownMember {
                    group: group.to_owned(),
                    member: member_id.to_owned(),
                });
            }
            ts.members.rebalance(n);
            ts.positions.clear();
            tracing::info!(
                group,
                topic,
                member = member_id,
                generation = ts.members.generation,
                "member left"
            );
            Ok(())
        })
    }

    /// Polls as a member: records of its partitions from the group's positions. Fails
    /// with `StaleGeneration` after a rebalance (rejoin to learn the new assignment).
    pub async fn poll_group_member(
        &self,
        group: &str,
        topic: &str,
        member: &MemberRef,
        options: &GroupPollOptions,
    ) -> Result<GroupRecords> {
        self.poll_as(group, topic, Caller::Member(member), options)
            .await
    }

    /// Polls as the group's implicit single member, which owns every partition. Refused
    /// with `GroupHasMembers` while explicit members are live.
    pub async fn group_poll(
        &self,
        group: &str,
        topic: &str,
        options: &GroupPollOptions,
    ) -> Result<GroupRecords> {
        self.poll_as(group, topic, Caller::Implicit, options).await
    }

    async fn poll_as(
        &self,
        group: &str,
        topic: &str,
        caller: Caller<'_>,
        options: &GroupPollOptions,
    ) -> Result<GroupRecords> {
        let t = self.group_topic(group, topic)?;
        let n = t.partitions.len() as u32;
        let deadline = Instant::now() + options.wait;
        let max_records = options.max_records.max(1);
        loop {
            let activity = t.activity.clone();
            let notified = activity.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let (starts, generation) = self.with_topic_state(group, topic, n, |config, ts| {
                let (owned, generation) = authorize(group, topic, ts, caller, n, Instant::now())?;
                let mut starts = Vec::with_capacity(owned.len());
                for p in owned {
                    let log = &t.partition(p)?.log;
                    let (start, hw) = (log.log_start(), log.high_watermark());
                    starts.push((p, start_position(group, topic, config, ts, p, start, hw)?));
                }
                Ok((starts, generation))
            })?;
            // Read without any lock held.
            let mut records = Vec::new();
            let mut bytes = 0usize;
            let mut next = Vec::with_capacity(starts.len());
            // Start at a rotating partition so one busy partition cannot starve the rest.
            let rotate = if starts.is_empty() {
                0
            } else {
                (crate::record::now_ms() as usize) % starts.len()
            };
            for i in 0..starts.len() {
                let (p, start) = starts[(rotate + i) % starts.len()];
                if records.len() >= max_records || bytes >= options.max_bytes {
                    break;
                }
                let fetched = t.partition(p)?.log.read(
                    start,
                    max_records - records.len(),
                    options.max_bytes - bytes,
                )?;
                bytes += fetched.records.iter().map(record_bytes).sum::<usize>();
                records.extend(fetched.records);
                if fetched.next_offset != start {
                    next.push((p, start, fetched.next_offset));
                }
            }
            if next.is_empty() && Instant::now() < deadline {
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    continue; // One last look after the deadline, then return empty.
                }
                continue;
            }
            // Apply the positions only if nobody moved them while we read.
            let applied = self.with_topic_state(group, topic, n, |_, ts| {
                let (_, now_generation) = authorize(group, topic, ts, caller, n, Instant::now())?;
                let moved = now_generation != generation
                    || next
                        .iter()
                        .any(|&(p, start, _)| ts.positions.get(&p).is_some_and(|&o| o != start));
                if moved {
                    return Ok(false);
                }
                for &(p, _, to) in &next {
                    ts.positions.insert(p, to);
                    if options.auto_commit {
                        ts.committed.insert(p, to);
                    }
                }
                if options.auto_commit && !next.is_empty() {
                    ts.version += 1;
                }
                Ok(true)
            })?;
            if !applied {
                continue;
            }
            if options.auto_commit && !next.is_empty() {
                self.groups().persist(group, topic).await?;
            }
            let mut positions: Vec<PartitionOffset> = starts
                .iter()
                .map(|&(p, start)| PartitionOffset {
                    partition: p,
                    offset: next.iter().find(|n| n.0 == p).map_or(start, |n| n.2),
                })
                .collect();
            positions.sort_by_key(|p| p.partition);
            return Ok(GroupRecords {
                records,
                generation,
                positions,
                committed: options.auto_commit,
            });
        }
    }

    /// Commits offsets durably. `offsets: None` commits the caller's current positions.
    /// A member may only commit partitions it owns, in its current generation.
    pub async fn commit_group_offsets(
        &self,
        group: &str,
        topic: &str,
        member: Option<&MemberRef>,
        offsets: Option<&[PartitionOffset]>,
    ) -> Result<Vec<PartitionOffset>> {
        let t = self.group_topic(group, topic)?;
        let n = t.partitions.len() as u32;
        let caller = member.map_or(Caller::Implicit, Caller::Member);
        let committed = self.with_topic_state(group, topic, n, |_, ts| {
            let (owned, _) = authorize(group, topic, ts, caller, n, Instant::now())?;
            let wanted: Vec<PartitionOffset> = match offsets {
                Some(list) => list.to_vec(),
                None => owned
                    .iter()
                    .filter_map(|p| {
                        ts.positions.get(p).map(|&o| PartitionOffset {
                            partition: *p,
                            offset: o,
                        })
                    })
                    .collect(),
            };
            for po in &wanted {
                let log = &t.partition(po.partition)?.log;
                if !owned.contains(&po.partition) {
                    return Err(not_assigned(topic, po.partition, member));
                }
                if po.offset > log.high_watermark() {
                    return Err(KafkoError::OffsetOutOfRange {
                        requested: po.offset,
                        log_start_offset: log.log_start(),
                        high_watermark: log.high_watermark(),
                    });
                }
            }
            for po in &wanted {
                ts.committed.insert(po.partition, po.offset);
                ts.positions.insert(po.partition, po.offset);
            }
            if !wanted.is_empty() {
                ts.version += 1;
            }
            Ok(wanted)
        })?;
        self.groups().persist(group, topic).await?;
        Ok(committed)
    }

    /// Moves the group (one partition, or every partition the caller owns) to `to`, and
    /// commits the result durably so the next poll of any member starts there.
    pub async fn seek_group(
        &self,
        group: &str,
        topic: &str,
        member: Option<&MemberRef>,
        partition: Option<u32>,
        to: SeekTo,
    ) -> Result<Vec<PartitionOffset>> {
        let t = self.group_topic(group, topic)?;
        let n = t.partitions.len() as u32;
        let caller = member.map_or(Caller::Implicit, Caller::Member);
        // Resolve the target offsets first: a timestamp lookup reads segments.
        let owned = self.with_topic_state(group, topic, n, |_, ts| {
            authorize(group, topic, ts, caller, n, Instant::now()).map(|(o, _)| o)
        })?;
        let targets: Vec<u32> = match partition {
            Some(p) => {
                t.partition(p)?;
                if !owned.contains(&p) {
                    return Err(not_assigned(topic, p, member));
                }
                vec![p]
            }
            None => owned,
        };
        let mut offsets = Vec::with_capacity(targets.len());
        for p in targets {
            let log = &t.partition(p)?.log;
            let (start, hw) = (log.log_start(), log.high_watermark());
            let offset = match to {
                SeekTo::Earliest => start,
                SeekTo::Latest => hw,
                SeekTo::Offset(o) if (start..=hw).contains(&o) => o,
                SeekTo::Offset(o) => {
                    return Err(KafkoError::OffsetOutOfRange {
                        requested: o,
                        log_start_offset: start,
                        high_watermark: hw,
                    });
                }
                SeekTo::Timestamp(ts) => log.offset_for_timestamp(ts)?.unwrap_or(hw),
            };
            offsets.push(PartitionOffset {
                partition: p,
                offset,
            });
        }
        self.commit_group_offsets(group, topic, member, Some(&offsets))
            .await
    }

    /// Members, assignment, committed offsets, high watermarks and lag of a group.
    pub fn describe_group(&self, group: &str) -> Result<GroupDescription> {
        validate_name(group)?;
        let topics: HashMap<String, Arc<Topic>> = self
            .all_topics()
            .into_iter()
            .map(|t| (t.name.to_string(), t))
            .collect();
        let mut groups = self.groups().lock();
        let g = groups
            .get_mut(group)
            .ok_or_else(|| group_not_found(group))?;
        let now = Instant::now();
        let mut out = GroupDescription {
            group: group.to_owned(),
            config: g.config.clone(),
            topics: Vec::new(),
        };
        for (name, ts) in g.topics.iter_mut() {
            let topic = topics.get(name);
            if let Some(t) = topic {
                expire(ts, t.partitions.len() as u32, now);
            }
            let members = ts
                .members
                .members
                .iter()
                .map(|(id, m)| GroupMemberDescription {
                    member_id: id.clone(),
                    assignment: m.assignment.clone(),
                    session_timeout_ms: m.session_timeout.as_millis() as u64,
                    idle_ms: now.saturating_duration_since(m.last_seen).as_millis() as u64,
                })
                .collect();
            let partitions: Vec<GroupPartitionDescription> = topic
                .map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| {
                            let n = p.log.partition;
                            let committed = ts.committed.get(&n).copied();
                            let hw = p.log.high_watermark();
                            GroupPartitionDescription {
                                partition: n,
                                owner: ts.members.owner(n).map(str::to_owned),
                                committed,
                                position: ts
                                    .positions
                                    .get(&n)
                                    .copied()
                                    .filter(|&o| Some(o) != committed),
                                log_start_offset: p.log.log_start(),
                                high_watermark: hw,
                                lag: committed.map(|c| hw.saturating_sub(c)),
                            }
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.topics.push(GroupTopicDescription {
                topic: name.clone(),
                generation: ts.members.generation,
                members,
                total_lag: partitions.iter().filter_map(|p| p.lag).sum(),
                partitions,
            });
        }
        Ok(out)
    }

    /// Every group, by name.
    pub fn list_groups(&self) -> Vec<GroupListing> {
        self.groups()
            .lock()
            .iter()
            .map(|(name, g)| GroupListing {
                group: name.clone(),
                topics: g.topics.keys().cloned().collect(),
                members: g.topics.values().map(|t| t.members.members.len()).sum(),
            })
            .collect()
    }

    /// Deletes a group and its committed offsets. Refused while it has live members.
    pub async fn delete_group(&self, group: &str) -> Result<()> {
        validate_name(group)?;
        self.check_not_closing()?;
        let persist = {
            let mut groups = self.groups().lock();
            let g = groups
                .get_mut(group)
                .ok_or_else(|| group_not_found(group))?;
            let now = Instant::now();
            for ts in g.topics.values_mut() {
                // Expired members do not keep a group alive.
                let _ = ts.members.expire(now);
            }
            if let Some((topic, ts)) = g
                .topics
                .iter()
                .find(|(_, ts)| !ts.members.members.is_empty())
            {
                return Err(KafkoError::GroupHasMembers {
                    group: group.to_owned(),
                    topic: topic.clone(),
                    members: ts.members.members.len(),
                });
            }
            g.persist.clone()
        };
        let _writing = persist.lock.lock().await;
        persist.deleted.store(true, Ordering::Release);
        self.groups().lock().remove(group);
        let (store, name) = (self.groups().store.clone(), group.to_owned());
        tokio::task::spawn_blocking(move || store.remove_group(&name))
            .await
            .map_err(|e| KafkoError::InvalidRequest {
                reason: format!("group delete task failed: {e}"),
            })??;
        tracing::info!(group, "deleted group");
        Ok(())
    }
}

fn not_assigned(topic: &str, partition: u32, member: Option<&MemberRef>) -> KafkoError {
    KafkoError::NotAssigned {
        topic: topic.to_owned(),
        partition,
        member: member.map_or_else(String::new, |m| m.member_id.clone()),
    }
}
