//! The group operations on [`Kafko`]: join, leave, poll (as a member or as the implicit
//! single member), commit, seek, describe, list and delete.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::coordinator::{
    Caller, Coordinator, GroupState, TopicState, authorize, expire, group_not_found, not_assigned,
    start_position, validate_session_timeout,
};
use super::membership::{Member, new_member_id};
use super::{
    GroupConfig, GroupDescription, GroupListing, GroupMemberDescription, GroupPartitionDescription,
    GroupPollOptions, GroupRecords, GroupTopicDescription, MemberRef, Membership, PartitionOffset,
};
use crate::broker::Kafko;
use crate::consumer::SeekTo;
use crate::error::{KafkoError, Result};
use crate::naming::validate_name;
use crate::partition::record_bytes;
use crate::topic::Topic;

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
