//! Kafka's consumer group protocol (KIP-848) as the coordinator's state machine: the
//! members, the group epoch, the target assignment and its epoch, and each member's
//! incremental reconciliation towards its target.
//!
//! - The **group epoch** moves on whenever what the assignment depends on changes: a
//!   member joins or leaves (or is removed), a subscription or the chosen assignor
//!   changes, a subscribed topic appears, goes or grows. The **target assignment** is
//!   then recomputed by the server-side assignor and takes that epoch (the
//!   **assignment epoch**).
//! - Each member moves to its target on its own heartbeats. A member whose target
//!   takes partitions away first keeps its epoch and is told its assignment without
//!   them (`UnrevokedPartitions`); once a heartbeat reports it no longer owns them, it
//!   takes the new epoch and the partitions of its target that no other member holds
//!   (still assigned, or revoked and not yet released); the others follow on later
//!   heartbeats (`UnreleasedPartitions`). So no partition is ever owned by two members.
//! - A member silent past the session timeout is removed, as is one that does not
//!   release revoked partitions within its rebalance timeout. A static member
//!   (`instance_id`) may leave for a while (epoch −2): it keeps its partitions until
//!   its session times out, and the next member joining with its instance id takes its
//!   place, epoch and partitions.
//!
//! Pure bookkeeping over [`tokio::time::Instant`]: the calls live in `consumer_calls`.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use super::assignor::{Assignment, Assignor};
use super::consumer_types::{
    ConsumerError, ConsumerGroupDescription, ConsumerHeartbeat, ConsumerHeartbeatAnswer,
    ConsumerMemberDescription, ConsumerRefusal, Topics,
};

/// The epoch of a member leaving.
pub(crate) const LEAVE_EPOCH: i32 = -1;
/// The epoch of a static member leaving for a while.
pub(crate) const STATIC_LEAVE_EPOCH: i32 = -2;
/// Most topic names (and regex matches) one member may subscribe to.
pub(crate) const MAX_SUBSCRIBED_TOPICS: usize = 10_000;

/// Where a member is in its reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum MemberState {
    /// At the assignment epoch with its whole target.
    #[default]
    Stable,
    /// Told to release partitions; keeps its epoch until it reports them released.
    UnrevokedPartitions,
    /// At the assignment epoch, waiting for partitions other members still hold.
    UnreleasedPartitions,
}

/// One member of a consumer group.
#[derive(Debug, Clone)]
pub(crate) struct ConsumerMember {
    pub(crate) instance_id: Option<String>,
    pub(crate) rack_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) rebalance_timeout: Duration,
    pub(crate) topic_names: Vec<String>,
    pub(crate) regex: Option<String>,
    /// The topics subscribed: the names and the regex's matches.
    pub(crate) subscribed: Topics,
    pub(crate) assignor: Option<String>,
    pub(crate) epoch: i32,
    pub(crate) previous_epoch: i32,
    pub(crate) state: MemberState,
    /// Partitions it owns (as far as the coordinator knows).
    pub(crate) assigned: Assignment,
    /// Partitions it was told to release and has not yet reported released.
    pub(crate) revoking: Assignment,
    pub(crate) last_seen: Instant,
    /// When it must have released `revoking`.
    pub(crate) revoke_deadline: Option<Instant>,
}

impl ConsumerMember {
    fn new(now: Instant) -> Self {
        ConsumerMember {
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            rebalance_timeout: Duration::from_secs(300),
            topic_names: Vec::new(),
            regex: None,
            subscribed: Topics::new(),
            assignor: None,
            epoch: 0,
            previous_epoch: 0,
            state: MemberState::Stable,
            assigned: Assignment::new(),
            revoking: Assignment::new(),
            last_seen: now,
            revoke_deadline: None,
        }
    }
}

/// A group's consumer-protocol members and epochs.
#[derive(Debug, Default)]
pub(crate) struct Consumer {
    pub(crate) members: BTreeMap<String, ConsumerMember>,
    /// Static members: instance id → member id.
    pub(crate) instances: BTreeMap<String, String>,
    pub(crate) group_epoch: i32,
    pub(crate) assignment_epoch: i32,
    /// Each member's target assignment at `assignment_epoch`.
    pub(crate) target: BTreeMap<String, Assignment>,
    /// The partition counts of the subscribed topics the target was computed from.
    pub(crate) metadata: BTreeMap<String, u32>,
    pub(crate) assignor: Assignor,
    /// Changed since last written to disk.
    pub(crate) dirty: bool,
}

/// What a heartbeat needs besides its request.
pub(crate) struct HeartbeatContext<'a> {
    pub(crate) now: Instant,
    /// The member's regex matches, when it subscribes by regex (resolved by the caller
    /// for the regex the request carries, else for the member's).
    pub(crate) regex_topics: Option<Topics>,
    /// Partition counts of existing topics (at least every subscribed one).
    pub(crate) partitions: &'a BTreeMap<String, u32>,
    pub(crate) heartbeat_interval: Duration,
    pub(crate) max_members: usize,
    /// A fresh member id, for a v0 join without one.
    pub(crate) new_id: &'a dyn Fn() -> String,
}

fn refuse<T>(refusal: ConsumerRefusal, message: impl Into<String>) -> Result<T, ConsumerError> {
    Err(ConsumerError::new(refusal, message))
}

fn to_assignment(list: &[(String, Vec<u32>)]) -> Assignment {
    let mut out = Assignment::new();
    for (topic, partitions) in list {
        if !partitions.is_empty() {
            out.entry(topic.clone())
                .or_default()
                .extend(partitions.iter().copied());
        }
    }
    out
}

pub(crate) fn to_list(a: &Assignment) -> Vec<(String, Vec<u32>)> {
    a.iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(t, p)| (t.clone(), p.iter().copied().collect()))
        .collect()
}

fn intersects(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .any(|(t, ps)| b.get(t).is_some_and(|qs| !ps.is_disjoint(qs)))
}

fn is_subset(a: &Assignment, b: &Assignment) -> bool {
    a.iter()
        .all(|(t, ps)| ps.is_empty() || b.get(t).is_some_and(|qs| ps.is_subset(qs)))
}

impl Consumer {
    /// Whether the group has consumer-protocol members.
    pub(crate) fn is_active(&self) -> bool {
        !self.members.is_empty()
    }

    /// Kafka's state name of the group.
    pub(crate) fn state(&self) -> &'static str {
        if self.members.is_empty() {
            "Empty"
        } else if self.group_epoch > self.assignment_epoch {
            "Assigning"
        } else if self.members.values().any(|m| {
            m.epoch != self.assignment_epoch && m.epoch != STATIC_LEAVE_EPOCH
                || m.state != MemberState::Stable
        }) {
            "Reconciling"
        } else {
            "Stable"
        }
    }

    /// The topics some member subscribes to.
    pub(crate) fn subscribed_topics(&self) -> BTreeSet<String> {
        self.members
            .values()
            .flat_map(|m| m.subscribed.iter().cloned())
            .collect()
    }

    /// Removes a member; the group epoch moves on.
    fn remove(&mut self, id: &str) {
        if let Some(m) = self.members.remove(id) {
            if let Some(instance) = &m.instance_id
                && self.instances.get(instance).is_some_and(|held| held == id)
            {
                self.instances.remove(instance);
            }
            self.target.remove(id);
            self.group_epoch += 1;
            self.dirty = true;
        }
    }

    /// Removes members silent past `session_timeout` and members that did not release
    /// revoked partitions in time. Returns whether any went.
    pub(crate) fn expire(&mut self, now: Instant, session_timeout: Duration) -> bool {
        let gone: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| {
                now.saturating_duration_since(m.last_seen) > session_timeout
                    || m.revoke_deadline.is_some_and(|d| now > d)
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            self.remove(id);
        }
        !gone.is_empty()
    }

    /// One ConsumerGroupHeartbeat.
    pub(crate) fn heartbeat(
        &mut self,
        request: &ConsumerHeartbeat,
        cx: &HeartbeatContext<'_>,
    ) -> Result<ConsumerHeartbeatAnswer, ConsumerError> {
        let answer = |id: &str, epoch: i32| ConsumerHeartbeatAnswer {
            member_id: id.to_owned(),
            member_epoch: epoch,
            heartbeat_interval: cx.heartbeat_interval,
            assignment: None,
        };
        if let Some(name) = &request.server_assignor
            && Assignor::named(name).is_none()
        {
            return refuse(
                ConsumerRefusal::UnsupportedAssignor,
                format!(
                    "ServerAssignor {name} is not supported. Supported assignors: uniform, range."
                ),
            );
        }
        let mut new = false;
        let id = match request.member_epoch {
            0 => {
                let (id, admitted) = self.join(request, cx)?;
                new = admitted;
                id
            }
            LEAVE_EPOCH => {
                self.check_known(request)?;
                self.remove(&request.member_id);
                return Ok(answer(&request.member_id, LEAVE_EPOCH));
            }
            STATIC_LEAVE_EPOCH => {
                let m = self.check_known(request)?;
                if m.instance_id.is_none() {
                    return refuse(ConsumerRefusal::InvalidRequest, "not a static member");
                }
                if let Some(m) = self.members.get_mut(&request.member_id)
                    && m.epoch != STATIC_LEAVE_EPOCH
                {
                    m.previous_epoch = m.epoch;
                    m.epoch = STATIC_LEAVE_EPOCH;
                    m.last_seen = cx.now;
                }
                self.dirty = true;
                return Ok(answer(&request.member_id, STATIC_LEAVE_EPOCH));
            }
            epoch if epoch > 0 => {
                let m = self.check_known(request)?;
                let owned = request.owned.as_deref().map(to_assignment);
                let lost_answer = epoch == m.previous_epoch
                    && owned.as_ref().is_some_and(|o| is_subset(o, &m.assigned));
                if epoch > m.epoch || epoch < m.epoch && !lost_answer {
                    return refuse(
                        ConsumerRefusal::FencedMemberEpoch,
                        format!("epoch {epoch}, the member's is {}", m.epoch),
                    );
                }
                request.member_id.clone()
            }
            _ => return refuse(ConsumerRefusal::InvalidRequest, "MemberEpoch is invalid."),
        };
        let joining = request.member_epoch == 0;
        let before = self.members.get(&id).map(|m| (m.epoch, m.assigned.clone()));
        self.update(&id, request, cx, new)?;
        let owned = request.owned.as_deref().map(to_assignment);
        self.reconcile(&id, owned.as_ref(), cx.now);
        let Some(m) = self.members.get(&id) else {
            return refuse(ConsumerRefusal::UnknownMember, "removed");
        };
        let changed = before.is_none_or(|(e, a)| e != m.epoch || a != m.assigned);
        let mut out = answer(&id, m.epoch);
        if joining || changed || request.owned.is_some() {
            out.assignment = Some(to_list(&m.assigned));
        }
        Ok(out)
    }

    /// The member a leave or heartbeat names, checking its instance id.
    fn check_known(&self, request: &ConsumerHeartbeat) -> Result<&ConsumerMember, ConsumerError> {
        let Some(m) = self.members.get(&request.member_id) else {
            return refuse(
                ConsumerRefusal::UnknownMember,
                format!("member {} is not in the group", request.member_id),
            );
        };
        if let Some(instance) = &request.instance_id
            && self.instances.get(instance) != Some(&request.member_id)
        {
            return refuse(
                ConsumerRefusal::FencedInstanceId,
                format!("instance {instance} belongs to another member"),
            );
        }
        Ok(m)
    }

    /// Admits a joining member (epoch 0); returns its id.
    fn join(
        &mut self,
        request: &ConsumerHeartbeat,
        cx: &HeartbeatContext<'_>,
    ) -> Result<(String, bool), ConsumerError> {
        let id = if request.member_id.is_empty() {
            (cx.new_id)()
        } else {
            request.member_id.clone()
        };
        if let Some(instance) = &request.instance_id
            && let Some(holder) = self.instances.get(instance).cloned()
            && holder != id
        {
            let Some(old) = self.members.get(&holder) else {
                self.instances.remove(instance);
                return self.admit(id, cx).map(|id| (id, true));
            };
            if old.epoch != STATIC_LEAVE_EPOCH {
                return refuse(
                    ConsumerRefusal::UnreleasedInstanceId,
                    format!("instance {instance} is still used by member {holder}"),
                );
            }
            // The static member comes back under a new id: it takes over its place,
            // epoch and partitions.
            if let Some(mut m) = self.members.remove(&holder) {
                m.epoch = m.previous_epoch.max(0);
                m.last_seen = cx.now;
                if let Some(t) = self.target.remove(&holder) {
                    self.target.insert(id.clone(), t);
                }
                self.members.insert(id.clone(), m);
                self.instances.insert(instance.clone(), id.clone());
                self.dirty = true;
            }
            return Ok((id, false));
        }
        if self.members.contains_key(&id) {
            return Ok((id, false));
        }
        self.admit(id, cx).map(|id| (id, true))
    }

    fn admit(&mut self, id: String, cx: &HeartbeatContext<'_>) -> Result<String, ConsumerError> {
        if self.members.len() >= cx.max_members {
            return refuse(
                ConsumerRefusal::GroupMaxSize,
                format!("the group has {} members", self.members.len()),
            );
        }
        self.members.insert(id.clone(), ConsumerMember::new(cx.now));
        self.dirty = true;
        Ok(id)
    }

    /// Applies what the heartbeat changes, moves the group epoch on if the assignment
    /// depends on it, and recomputes the target assignment if it is behind.
    fn update(
        &mut self,
        id: &str,
        request: &ConsumerHeartbeat,
        cx: &HeartbeatContext<'_>,
        new: bool,
    ) -> Result<(), ConsumerError> {
        let Some(m) = self.members.get_mut(id) else {
            return refuse(ConsumerRefusal::UnknownMember, "removed");
        };
        let mut bump = new;
        m.last_seen = cx.now;
        if m.epoch == STATIC_LEAVE_EPOCH {
            m.epoch = m.previous_epoch.max(0);
        }
        if let Some(instance) = &request.instance_id
            && m.instance_id.is_none()
        {
            m.instance_id = Some(instance.clone());
            self.instances.insert(instance.clone(), id.to_owned());
        }
        if let Some(rack) = &request.rack_id {
            m.rack_id = Some(rack.clone());
        }
        if request.member_epoch == 0 || !request.client_id.is_empty() {
            m.client_id.clone_from(&request.client_id);
            m.client_host.clone_from(&request.client_host);
        }
        if let Some(t) = request.rebalance_timeout {
            m.rebalance_timeout = t;
        }
        if let Some(sub) = &request.subscription {
            if let Some(names) = &sub.topic_names {
                m.topic_names.clone_from(names);
            }
            if let Some(regex) = &sub.regex {
                m.regex = Some(regex.clone()).filter(|r| !r.is_empty());
            }
        }
        let mut subscribed: Topics = m.topic_names.iter().cloned().collect();
        if m.regex.is_some()
            && let Some(matches) = &cx.regex_topics
        {
            subscribed.extend(matches.iter().cloned());
        } else if m.regex.is_some() {
            // Unresolved this time: keep the earlier matches.
            subscribed.extend(m.subscribed.iter().cloned());
        }
        if subscribed.len() > MAX_SUBSCRIBED_TOPICS {
            return refuse(
                ConsumerRefusal::InvalidRequest,
                format!("more than {MAX_SUBSCRIBED_TOPICS} subscribed topics"),
            );
        }
        if subscribed != m.subscribed {
            m.subscribed = subscribed;
            bump = true;
        }
        if let Some(name) = &request.server_assignor
            && m.assignor.as_deref() != Some(name)
        {
            m.assignor = Some(name.clone());
            bump = true;
        }
        let metadata: BTreeMap<String, u32> = self
            .subscribed_topics()
            .into_iter()
            .filter_map(|t| cx.partitions.get(&t).map(|&n| (t, n)))
            .collect();
        if metadata != self.metadata {
            self.metadata = metadata;
            bump = true;
        }
        if bump {
            self.group_epoch += 1;
            self.dirty = true;
        }
        self.refresh_target();
        Ok(())
    }

    /// The assignor most members ask for (the default on a tie or none).
    fn preferred_assignor(&self) -> Assignor {
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for m in self.members.values() {
            if let Some(a) = &m.assignor {
                *votes.entry(a.as_str()).or_default() += 1;
            }
        }
        let mut best = (Assignor::default(), 0);
        for a in Assignor::ALL {
            let n = votes.get(a.name()).copied().unwrap_or(0);
            if n > best.1 {
                best = (a, n);
            }
        }
        best.0
    }

    /// Recomputes the target assignment when the group epoch moved past it.
    pub(crate) fn refresh_target(&mut self) {
        if self.group_epoch <= self.assignment_epoch {
            return;
        }
        self.assignor = self.preferred_assignor();
        let subscriptions: BTreeMap<String, BTreeSet<String>> = self
            .members
            .iter()
            .map(|(id, m)| (id.clone(), m.subscribed.clone()))
            .collect();
        self.target = self
            .assignor
            .assign(&subscriptions, &self.metadata, &self.target);
        self.assignment_epoch = self.group_epoch;
        self.dirty = true;
    }

    /// The partitions members other than `id` own or have yet to release.
    fn held_by_others(&self, id: &str) -> HashSet<(String, u32)> {
        self.members
            .iter()
            .filter(|(other, _)| other.as_str() != id)
            .flat_map(|(_, m)| m.assigned.iter().chain(m.revoking.iter()))
            .flat_map(|(t, ps)| ps.iter().map(move |p| (t.clone(), *p)))
            .collect()
    }

    /// Moves member `id` towards its target, given what it reports owning (`None`:
    /// unchanged since its last heartbeat).
    pub(crate) fn reconcile(&mut self, id: &str, owned: Option<&Assignment>, now: Instant) {
        let held = self.held_by_others(id);
        let target = self.target.get(id).cloned().unwrap_or_default();
        let epoch = self.assignment_epoch;
        let Some(m) = self.members.get_mut(id) else {
            return;
        };
        let before = (m.epoch, m.state, m.assigned.clone());
        // At most: release confirmed, then one step towards the target.
        for _ in 0..3 {
            if m.state == MemberState::UnrevokedPartitions {
                if owned.is_none_or(|o| intersects(o, &m.revoking)) {
                    break;
                }
                m.revoking.clear();
                m.revoke_deadline = None;
                // Released: take what the target adds, below.
                m.state = MemberState::UnreleasedPartitions;
            }
            if m.epoch == epoch && m.state == MemberState::Stable {
                break;
            }
            let mut keep = Assignment::new();
            let mut revoke = Assignment::new();
            for (t, ps) in &m.assigned {
                for p in ps {
                    let side = if target.get(t).is_some_and(|q| q.contains(p)) {
                        &mut keep
                    } else {
                        &mut revoke
                    };
                    side.entry(t.clone()).or_default().insert(*p);
                }
            }
            if !revoke.is_empty() {
                m.assigned = keep;
                m.revoking = revoke;
                m.state = MemberState::UnrevokedPartitions;
                m.revoke_deadline = Some(now + m.rebalance_timeout);
                continue;
            }
            let mut unreleased = false;
            for (t, ps) in &target {
                for p in ps {
                    if held.contains(&(t.clone(), *p)) {
                        unreleased |= !keep.get(t).is_some_and(|k| k.contains(p));
                    } else {
                        keep.entry(t.clone()).or_default().insert(*p);
                    }
                }
            }
            m.assigned = keep;
            if m.epoch != epoch {
                m.previous_epoch = m.epoch;
                m.epoch = epoch;
            }
            m.state = if unreleased {
                MemberState::UnreleasedPartitions
            } else {
                MemberState::Stable
            };
            break;
        }
        if before != (m.epoch, m.state, m.assigned.clone()) {
            self.dirty = true;
        }
    }

    /// The group as ConsumerGroupDescribe tells it.
    pub(crate) fn describe(&self) -> ConsumerGroupDescription {
        ConsumerGroupDescription {
            state: self.state(),
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: self.assignor.name(),
            members: self
                .members
                .iter()
                .map(|(id, m)| ConsumerMemberDescription {
                    member_id: id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.epoch,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    subscribed_topic_names: m.topic_names.clone(),
                    subscribed_topic_regex: m.regex.clone(),
                    assignment: to_list(&m.assigned),
                    target_assignment: self.target.get(id).map(to_list).unwrap_or_default(),
                })
                .collect(),
        }
    }

    /// Checks an OffsetCommit (`fetch`: an OffsetFetch) from `member_id` at `epoch`:
    /// a commit with no member (epoch < 0) is taken only while the group is empty.
    pub(crate) fn check_offsets_call(
        &self,
        member_id: &str,
        epoch: i32,
        fetch: bool,
    ) -> Result<(), ConsumerError> {
        if epoch < 0 && (fetch || self.members.is_empty()) {
            return Ok(());
        }
        let Some(m) = self.members.get(member_id) else {
            return refuse(
                ConsumerRefusal::UnknownMember,
                format!("member {member_id} is not in the group"),
            );
        };
        if epoch > m.epoch {
            return refuse(
                ConsumerRefusal::FencedMemberEpoch,
                "epoch ahead of the member's",
            );
        }
        if epoch < m.epoch {
            return refuse(
                ConsumerRefusal::StaleMemberEpoch,
                "epoch behind the member's",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "consumer_tests.rs"]
mod tests;
