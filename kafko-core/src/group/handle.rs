//! [`GroupHandle`]: one consumer group by name — join, leave, the two-phase poll,
//! commit, seek, describe, configure and delete — and [`Kafko::group`] /
//! [`Kafko::list_groups`].
//!
//! A group exists once a join, poll, commit, seek or configure created it; leave,
//! describe and delete never create one (they fail with `GroupNotFound`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::time::Instant;

use super::acknowledge::{acknowledge, committable};
use super::coordinator::{
    Caller, Coordinator, GroupState, Lease, TopicState, authorize, group_not_found, not_assigned,
};
use super::delivery::{Delivery, GroupPoll};
use super::lease::{Kept, Read, Start, keep_leases, lease_partitions, read_leased};
use super::membership::Members;
use super::{
    GroupConfig, GroupDescription, GroupListing, GroupMemberDescription, GroupPartitionDescription,
    GroupPollOptions, GroupTopicDescription, MemberRef, PartitionOffset,
};
use crate::activity::ActivityWatch;
use crate::broker::Kafko;
use crate::consumer::SeekTo;
use crate::convert::{millis, usize_saturating};
use crate::error::{GroupError, KafkoError, Result};
use crate::handle::TopicHandle;
use crate::naming::validate_group_name;
use crate::topic::Topic;

/// Tells apart the leases of different polls.
static NEXT_LEASE: AtomicU64 = AtomicU64::new(1);

/// One consumer group. Get it with [`Kafko::group`]; cheap to clone. Groups keep a
/// cursor per topic; members (or the implicit single member, `member: None`) poll,
/// commit and seek on a topic given as a [`TopicHandle`].
///
/// **Delivery rule (at-least-once).** A poll leases the records it returns: they count
/// as read only once the caller confirms them ([`GroupPoll::delivered`]); a poll dropped
/// unconfirmed puts them back. A confirmed poll with `auto_commit` is committed by the
/// same member's next poll (before it reads), by [`commit`](Self::commit), or by the
/// member's [`leave_topic`](Self::leave_topic) — never before, so a consumer that stops between
/// polls gets those records again.
#[derive(Clone)]
pub struct GroupHandle {
    pub(super) kafko: Kafko,
    pub(super) name: Arc<str>,
}

impl std::fmt::Debug for GroupHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupHandle")
            .field("name", &&*self.name)
            .finish_non_exhaustive()
    }
}

/// Which entries a call created, so a failed call can remove them again.
#[derive(Clone, Copy, Default)]
pub(super) struct Created {
    pub(super) group: bool,
    pub(super) topic: bool,
}

impl Kafko {
    /// A handle on the group `name` (validated, not created: a join, poll, commit, seek
    /// or configure creates it).
    ///
    /// # Errors
    /// [`GroupError::InvalidName`].
    pub fn group(&self, name: &str) -> Result<GroupHandle, GroupError> {
        validate_group_name(name)?;
        Ok(GroupHandle {
            kafko: self.clone(),
            name: name.into(),
        })
    }

    /// The limits of Kafka clients' consumer groups the log was opened with.
    pub fn group_limits(&self) -> super::GroupLimits {
        self.inner.groups.limits
    }

    /// How long a group with no live member keeps a committed offset (`None`: until
    /// deleted); see [`KafkoOptions::offsets_retention`](crate::KafkoOptions::offsets_retention).
    pub fn offsets_retention(&self) -> Option<std::time::Duration> {
        self.inner.groups.offsets_retention()
    }

    /// Runs offsets retention now (the maintenance task runs it every retention check
    /// interval): removes, durably, every committed offset of a group without live
    /// members whose commit, and the group's last member, are older than the retention.
    /// Returns how many offsets went.
    ///
    /// # Errors
    /// The storage failure of a removal (that group and topic keep their offsets).
    pub async fn expire_group_offsets(&self) -> Result<usize, GroupError> {
        let now = crate::record::now_ms();
        Ok(self.inner.groups.expire_offsets(now).await?)
    }

    /// Every group, by name.
    pub fn list_groups(&self) -> Vec<GroupListing> {
        self.inner
            .groups
            .lock()
            .iter()
            .map(|(name, g)| {
                let (classic, consumer) = (&g.members.classic, &g.members.consumer);
                let modern = consumer.is_active()
                    || consumer.group_epoch > 0
                        && !classic.is_active()
                        && g.members.members.is_empty();
                GroupListing {
                    group: name.clone(),
                    topics: g.topics.keys().cloned().collect(),
                    members: g.members.members.len()
                        + classic.members.len()
                        + consumer.members.len(),
                    protocol_type: if modern {
                        "consumer".to_owned()
                    } else {
                        classic.protocol_type.clone()
                    },
                    state: if modern {
                        consumer.state()
                    } else {
                        classic.phase.name()
                    },
                    consumer_protocol: modern,
                }
            })
            .collect()
    }
}

impl GroupHandle {
    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn coordinator(&self) -> &Coordinator {
        &self.kafko.inner.groups
    }

    pub(super) fn check_not_closing(&self) -> Result<()> {
        if self.kafko.is_shutting_down() {
            return Err(KafkoError::ShuttingDown);
        }
        Ok(())
    }

    /// Runs `f` on the group's state for `topic` after expiring silent members,
    /// creating the group and topic entries first when `create` (and removing them
    /// again if `f` fails). Without `create` a missing group is `GroupNotFound`, and a
    /// topic the group never used is seen as an empty state that is not kept.
    pub(super) fn with_state<T>(
        &self,
        topic: &Topic,
        create: bool,
        f: impl FnOnce(&GroupConfig, &mut Members, &mut TopicState) -> Result<T>,
    ) -> Result<(T, Created)> {
        topic.check_live()?;
        let name = &*self.name;
        let mut groups = self.coordinator().lock();
        let mut created = Created::default();
        if !groups.contains_key(name) {
            if !create {
                return Err(group_not_found(name));
            }
            self.coordinator().make_room(&mut groups)?;
            self.coordinator().count_created(
                &mut groups,
                name,
                usize_saturating(u64::from(topic.partition_count())),
            );
            groups.insert(name.to_owned(), GroupState::new(GroupConfig::default()));
            created.group = true;
        }
        let g = groups.get_mut(name).ok_or_else(|| group_not_found(name))?;
        let now = Instant::now();
        g.last_used = now;
        g.expire(now);
        if !create && !g.topics.contains_key(&*topic.name) {
            // The group never used this topic: answer from an empty state, keep none.
            return f(&g.config, &mut g.members, &mut TopicState::default()).map(|v| (v, created));
        }
        created.topic = !g.topics.contains_key(&*topic.name);
        let ts = g.topics.entry(topic.name.to_string()).or_default();
        let out = f(&g.config, &mut g.members, ts);
        drop(groups);
        match out {
            Ok(v) => Ok((v, created)),
            Err(e) => {
                self.undo(created, &topic.name);
                Err(e)
            }
        }
    }

    /// Removes entries a failed call created, if they are still untouched.
    pub(super) fn undo(&self, created: Created, topic: &str) {
        let mut groups = self.coordinator().lock();
        let Some(g) = groups.get_mut(&*self.name) else {
            return;
        };
        if created.topic
            && g.topics
                .get(topic)
                .is_some_and(|ts| ts.committed.is_empty() && ts.positions.is_empty())
        {
            g.topics.remove(topic);
        }
        if created.group
            && g.topics.is_empty()
            && g.members.members.is_empty()
            && !g.members.classic.is_active()
        {
            groups.remove(&*self.name);
        }
    }

    /// Sets the group's options (creating the group), durably.
    ///
    /// # Errors
    /// `ShuttingDown`, or a storage failure writing them (the old options stay).
    pub async fn configure(&self, config: GroupConfig) -> Result<(), GroupError> {
        self.check_not_closing()?;
        let name = &*self.name;
        let persist = {
            let mut groups = self.coordinator().lock();
            if !groups.contains_key(name) {
                self.coordinator().make_room(&mut groups)?;
            }
            groups
                .entry(name.to_owned())
                .or_insert_with(|| GroupState::new(GroupConfig::default()))
                .persist
                .clone()
        };
        let _writing = persist.lock.lock().await;
        let (store, group, c) = (
            self.coordinator().store.clone(),
            name.to_owned(),
            config.clone(),
        );
        crate::storage::blocking("group config", move || store.write_config(&group, &c)).await?;
        if let Some(g) = self.coordinator().lock().get_mut(name) {
            g.config = config;
            g.durable = true;
        }
        Ok(())
    }

    /// Polls the group's next records on `topic`, as a member (`Some`) or as the
    /// implicit single member that owns every partition (`None`, refused with
    /// `GroupHasMembers` while members are joined). With `options.auto_commit` it first
    /// commits what the caller's previous delivered poll returned. Waits up to
    /// `options.wait` when nothing is available. See [`GroupHandle`] for the delivery
    /// rule.
    ///
    /// # Errors
    /// A member not in the group's current generation (`UnknownMember`,
    /// `StaleGeneration`), `GroupHasMembers` for the implicit member, `NoValidOffset`
    /// (reset policy `error`), `TopicDeleted`, `ShuttingDown`, or a storage failure
    /// (reading, or the auto-commit's write): the group is then where it was.
    pub async fn poll(
        &self,
        topic: &TopicHandle,
        member: Option<&MemberRef>,
        options: &GroupPollOptions,
    ) -> Result<GroupPoll, GroupError> {
        let deadline = Instant::now() + options.wait;
        let mut watch = ActivityWatch::new([topic.activity()]);
        let mut committed = Vec::new();
        loop {
            let mut got = self.try_poll(topic, member, options).await?;
            committed.append(&mut got.committed);
            if !got.records.is_empty() || Instant::now() >= deadline {
                committed.sort_by_key(|p| p.partition);
                got.committed = committed;
                return Ok(got);
            }
            let _ = tokio::time::timeout_at(deadline, watch.signalled()).await;
        }
    }

    /// One poll attempt: commit the caller's delivered records (auto-commit), lease the
    /// partitions it owns that are free, read them without any lock held, keep the
    /// leases of partitions that returned records.
    async fn try_poll(
        &self,
        topic: &TopicHandle,
        member: Option<&MemberRef>,
        options: &GroupPollOptions,
    ) -> Result<GroupPoll> {
        self.check_not_closing()?;
        let t = topic.inner();
        let caller = Caller::of(member);
        let (committed, created) = self.commit_delivered(t, caller, options).await?;
        let id = NEXT_LEASE.fetch_add(1, Ordering::Relaxed);
        let (starts, generation) = self.lease_owned(t, caller, id, options.auto_commit, created)?;
        let read = read_leased(t, &starts, options);
        let kept = self.settle(t, read, &starts, id);
        if kept.released {
            t.activity.signal();
        }
        let mut positions = kept.positions;
        positions.sort_by_key(|p| p.partition);
        Ok(GroupPoll {
            records: kept.records?,
            generation,
            positions,
            committed,
            delivery: self.delivery(t, caller, kept.leases, id, options.acknowledged),
        })
    }

    /// A poll's first step: checks the caller may poll (creating the group and topic
    /// entries), applies what its cursor acknowledges, then, with auto-commit, durably
    /// commits what its previous delivered poll returned. Returns what it committed and
    /// which entries it created.
    async fn commit_delivered(
        &self,
        t: &Topic,
        caller: Caller<'_>,
        options: &GroupPollOptions,
    ) -> Result<(Vec<PartitionOffset>, Created)> {
        let group = &*self.name;
        let n = t.partition_count();
        let ((to_commit, moved_back), created) = self.with_state(t, true, |_, members, ts| {
            authorize(group, &t.name, members, caller, n, Instant::now())?;
            let moved_back = match (caller, options.acknowledged) {
                (Caller::Implicit, Some(cursor)) => acknowledge(ts, cursor),
                _ => false,
            };
            let to_commit = match caller {
                _ if !options.auto_commit => Vec::new(),
                Caller::Member(m) => ts.pending_of(&m.member_id),
                Caller::Implicit => committable(ts),
            };
            Ok((to_commit, moved_back))
        })?;
        if moved_back {
            t.activity.signal();
        }
        if !to_commit.is_empty() {
            self.coordinator()
                .commit(group, &t.name, &to_commit, |ts| {
                    ts.clear_pending(caller.key(), &to_commit);
                })
                .await?;
        }
        Ok((to_commit, created))
    }

    /// Leases (as lease `id`) every partition the caller owns that has records past its
    /// start and no lease yet; returns each owned partition's start and whether this
    /// poll leased it, and the caller's generation. On failure, removes the entries the
    /// poll `created`.
    fn lease_owned(
        &self,
        t: &Topic,
        caller: Caller<'_>,
        id: u64,
        auto_commit: bool,
        created: Created,
    ) -> Result<(Vec<Start>, u64)> {
        let group = &*self.name;
        let n = t.partition_count();
        let leased = self.with_state(t, true, |config, members, ts| {
            let (owned, generation) =
                authorize(group, &t.name, members, caller, n, Instant::now())?;
            let lease = Lease {
                id,
                start: 0,
                auto_commit,
            };
            let starts = lease_partitions(group, t, config, ts, owned, lease)?;
            Ok((starts, generation))
        });
        match leased {
            Ok((leased, _)) => Ok(leased),
            Err(e) => {
                self.undo(created, &t.name);
                Err(e)
            }
        }
    }

    /// Settles a poll's leases after its read, under the groups' lock (see
    /// [`keep_leases`]).
    fn settle(&self, t: &Topic, read: Result<Vec<Read>>, starts: &[Start], id: u64) -> Kept {
        let mut groups = self.coordinator().lock();
        let ts = groups
            .get_mut(&*self.name)
            .and_then(|g| g.topics.get_mut(&*t.name));
        keep_leases(ts, read, starts, id)
    }

    /// The handle that confirms (or, dropped, puts back) a poll's `leases`; `id` is the
    /// answer's cursor, `after` the cursor the poll carried.
    fn delivery(
        &self,
        t: &Topic,
        caller: Caller<'_>,
        leases: Vec<(u32, u64)>,
        id: u64,
        after: Option<u64>,
    ) -> Delivery {
        Delivery {
            groups: self.coordinator().groups.clone(),
            group: self.name.to_string(),
            topic: t.name.to_string(),
            member: caller.key().to_owned(),
            id,
            after,
            leases,
            activity: t.activity.clone(),
            settled: false,
        }
    }

    /// Commits offsets durably (creating the group). `offsets: None` commits the
    /// caller's delivered positions. A member may only commit partitions it owns, in its
    /// current generation. If the write fails, nothing changes.
    ///
    /// # Errors
    /// `UnknownMember`, `StaleGeneration`, `GroupHasMembers` (implicit member),
    /// `NotAssigned`, `PartitionNotFound`, `OffsetOutOfRange` (past the high watermark),
    /// `TopicDeleted`, `ShuttingDown`, or the write's storage failure.
    pub async fn commit(
        &self,
        topic: &TopicHandle,
        member: Option<&MemberRef>,
        offsets: Option<&[PartitionOffset]>,
    ) -> Result<Vec<PartitionOffset>, GroupError> {
        self.check_not_closing()?;
        let t = topic.inner();
        let n = t.partition_count();
        let group = &*self.name;
        let caller = Caller::of(member);
        let (wanted, created) = self.with_state(t, true, |_, members, ts| {
            let (owned, _) = authorize(group, &t.name, members, caller, n, Instant::now())?;
            let wanted: Vec<PartitionOffset> = match offsets {
                Some(list) => list.to_vec(),
                None => owned
                    .iter()
                    .filter_map(|&p| {
                        ts.delivered_position(p).map(|offset| PartitionOffset {
                            partition: p,
                            offset,
                        })
                    })
                    .collect(),
            };
            for po in &wanted {
                let log = &t.partition(po.partition)?.log;
                if !owned.contains(&po.partition) {
                    return Err(not_assigned(&t.name, po.partition, member));
                }
                if po.offset > log.high_watermark() {
                    return Err(KafkoError::OffsetOutOfRange {
                        requested: po.offset,
                        log_start_offset: log.log_start(),
                        high_watermark: log.high_watermark(),
                    });
                }
            }
            Ok(wanted)
        })?;
        let published = self
            .coordinator()
            .commit(group, &t.name, &wanted, |ts| {
                for po in &wanted {
                    ts.set_committed(po.partition, po.offset);
                }
            })
            .await;
        if let Err(e) = published {
            self.undo(created, &t.name);
            return Err(e.into());
        }
        Ok(wanted)
    }

    /// Moves the group (one partition, or every partition the caller owns) to `to`, and
    /// commits the result durably so the next poll of any member starts there.
    ///
    /// # Errors
    /// As [`commit`](Self::commit); `OffsetOutOfRange` for an offset outside the log,
    /// and a storage failure reading the time index for [`SeekTo::Timestamp`].
    pub async fn seek(
        &self,
        topic: &TopicHandle,
        member: Option<&MemberRef>,
        partition: Option<u32>,
        to: SeekTo,
    ) -> Result<Vec<PartitionOffset>, GroupError> {
        let t = topic.inner();
        let n = t.partition_count();
        let group = &*self.name;
        let caller = Caller::of(member);
        // Resolve the target offsets first: a timestamp lookup reads segments.
        let (owned, created) = self.with_state(t, true, |_, members, _| {
            authorize(group, &t.name, members, caller, n, Instant::now()).map(|(o, _)| o)
        })?;
        let targets = match partition {
            Some(p) if t.partition(p).is_ok() && !owned.contains(&p) => {
                Err(not_assigned(&t.name, p, member))
            }
            Some(p) => t.partition(p).map(|_| vec![p]),
            None => Ok(owned),
        };
        let offsets = targets.and_then(|targets| {
            targets
                .into_iter()
                .map(|p| {
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
                    Ok(PartitionOffset {
                        partition: p,
                        offset,
                    })
                })
                .collect::<Result<Vec<_>>>()
        });
        match offsets {
            Ok(offsets) => self.commit(topic, member, Some(&offsets)).await,
            Err(e) => {
                self.undo(created, &t.name);
                Err(e.into())
            }
        }
    }

    /// Members, assignment, committed offsets, high watermarks and lag of the group.
    ///
    /// # Errors
    /// [`GroupError::GroupNotFound`].
    pub fn describe(&self) -> Result<GroupDescription, GroupError> {
        let group = &*self.name;
        let topics: HashMap<String, Arc<Topic>> = self
            .kafko
            .all_topics()
            .into_iter()
            .map(|t| (t.name.to_string(), t))
            .collect();
        let mut groups = self.coordinator().lock();
        let g = groups
            .get_mut(group)
            .ok_or_else(|| group_not_found(group))?;
        let now = Instant::now();
        g.expire(now);
        let classic = &mut g.members.classic;
        classic.expire(now, &mut g.members.generation);
        let mut out = GroupDescription {
            group: group.to_owned(),
            config: g.config.clone(),
            generation: g.members.generation,
            topics: Vec::new(),
            classic: g
                .members
                .classic
                .is_active()
                .then(|| g.members.classic.describe()),
        };
        for (name, ts) in &g.topics {
            let topic = topics.get(name);
            out.topics
                .push(describe_topic(name, ts, &g.members, topic, now));
        }
        Ok(out)
    }

    /// Deletes the group and its committed offsets. Refused while it has live members.
    ///
    /// # Errors
    /// [`GroupError::GroupNotFound`], [`GroupError::GroupHasMembers`], `ShuttingDown`,
    /// or a storage failure removing its files.
    pub async fn delete(&self) -> Result<(), GroupError> {
        self.check_not_closing()?;
        let group = &*self.name;
        let persist = {
            let mut groups = self.coordinator().lock();
            let g = groups
                .get_mut(group)
                .ok_or_else(|| group_not_found(group))?;
            // Expired members do not keep a group alive.
            let now = Instant::now();
            g.expire(now);
            g.members.classic.expire(now, &mut g.members.generation);
            let live = g.members.members.len()
                + g.members.classic.members.len()
                + g.members.consumer.members.len();
            if live > 0 {
                let topic = g
                    .members
                    .members
                    .values()
                    .flat_map(|m| m.topics.iter())
                    .next();
                return Err(GroupError::GroupHasMembers {
                    group: group.to_owned(),
                    topic: topic.cloned().unwrap_or_default(),
                    members: live,
                });
            }
            g.persist.clone()
        };
        let _writing = persist.lock.lock().await;
        persist.deleted.store(true, Ordering::Release);
        self.coordinator().lock().remove(group);
        let (store, name) = (self.coordinator().store.clone(), group.to_owned());
        crate::storage::blocking("group delete", move || store.remove_group(&name)).await?;
        tracing::info!(group, "deleted group");
        Ok(())
    }
}

fn describe_topic(
    name: &str,
    ts: &TopicState,
    members: &Members,
    topic: Option<&Arc<Topic>>,
    now: Instant,
) -> GroupTopicDescription {
    let partitions_of = topic.map_or(0, |t| t.partition_count());
    let described = members
        .members
        .iter()
        .filter(|(_, m)| m.topics.contains(name))
        .map(|(id, m)| GroupMemberDescription {
            member_id: id.clone(),
            assignment: members.assignment(id, name, partitions_of),
            session_timeout_ms: millis(m.session_timeout),
            idle_ms: millis(now.saturating_duration_since(m.last_seen)),
        });
    let classic = members.classic.members.iter().filter_map(|(id, m)| {
        let owned = m.partitions.iter().find(|(t, _)| t == name)?;
        Some(GroupMemberDescription {
            member_id: id.clone(),
            assignment: owned.1.clone(),
            session_timeout_ms: millis(m.session_timeout),
            idle_ms: millis(now.saturating_duration_since(m.last_seen)),
        })
    });
    let members_described: Vec<GroupMemberDescription> = described.chain(classic).collect();
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
                        owner: members_described
                            .iter()
                            .find(|m| m.assignment.contains(&n))
                            .map(|m| m.member_id.clone()),
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
    GroupTopicDescription {
        topic: name.to_owned(),
        generation: members.generation,
        members: members_described,
        total_lag: partitions.iter().filter_map(|p| p.lag).sum(),
        partitions,
    }
}
