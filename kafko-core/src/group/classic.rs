//! Kafka's classic group protocol, as the coordinator's state machine: the broker is a
//! barrier (JoinGroup waits until every known member has rejoined, or the rebalance
//! timeout passes) and a relay (the leader receives every member's protocol metadata
//! and sends back, through SyncGroup, each member's assignment, which the broker hands
//! out unchanged: assignors and their payloads are opaque here).
//!
//! Phases, as Kafka names them:
//! - `Empty`: no member.
//! - `PreparingRebalance`: a join, leave or expiry started a rebalance; members rejoin
//!   until all have or the deadline passes (then the silent ones are removed).
//! - `CompletingRebalance`: the generation moved on and a leader was picked; members
//!   wait for the leader's SyncGroup.
//! - `Stable`: every member has its assignment; heartbeats keep sessions alive.
//!
//! Static members (KIP-345) carry a `group.instance.id`. One that joins again with no
//! member id takes over its earlier member id's place: a stable group keeps every
//! assignment and the generation, with no rebalance, and the earlier id is fenced
//! (FENCED_INSTANCE_ID) from then on.
//!
//! A stable group (and an emptied one) is marked `dirty` for the coordinator to write
//! it to `members.json`, so a restart finds every member, the generation, the leader
//! and the assignments where they were, and no group rebalances because of it.
//!
//! This module is pure bookkeeping over [`tokio::time::Instant`]; the waiting calls
//! live in `classic_calls`. The generation is the group's one generation
//! ([`Members::generation`](super::membership::Members)).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

pub use super::classic_types::{
    ClassicGroupDescription, ClassicMemberDescription, ClassicMemberId, GroupProtocol,
    JoinGroupAnswer, JoinGroupOutcome, JoinGroupRequest, JoinedMember, LeaveOutcome,
    MemberAssignment,
};
use super::limits::ClassicTotals;
use super::pending::PendingIds;
use crate::disk::{StoredClassic, StoredClassicMember};

/// Estimated heap bytes of a member beyond what its fields name (the map entry, the
/// struct, the `String` and `Vec` headers).
const MEMBER_OVERHEAD: usize = 256;
/// Estimated bytes of one protocol or one assigned topic beyond its names and payload.
const ENTRY_OVERHEAD: usize = 64;

/// Where a classic group is in its rebalance cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Phase {
    #[default]
    Empty,
    Preparing {
        deadline: Instant,
    },
    Completing,
    Stable,
}

impl Phase {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Phase::Empty => "Empty",
            Phase::Preparing { .. } => "PreparingRebalance",
            Phase::Completing => "CompletingRebalance",
            Phase::Stable => "Stable",
        }
    }
}

/// One member of a classic group.
#[derive(Debug, Clone)]
pub(crate) struct ClassicMember {
    pub(crate) group_instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) session_timeout: Duration,
    pub(crate) rebalance_timeout: Duration,
    pub(crate) last_seen: Instant,
    pub(crate) protocols: Vec<GroupProtocol>,
    /// Rejoined in the rebalance in progress.
    pub(crate) joined: bool,
    pub(crate) assignment: Bytes,
    pub(crate) partitions: Vec<(String, Vec<u32>)>,
    /// Estimated bytes it holds ([`ClassicMember::footprint`]), kept up to date.
    pub(crate) bytes: usize,
}

/// Estimated bytes a member admitted by `request` under `id` holds before it has an
/// assignment: what the group's limits on bytes count.
pub(crate) fn join_bytes(id: &str, request: &JoinGroupRequest) -> usize {
    let protocols: usize = request
        .protocols
        .iter()
        .map(|p| p.name.len() + p.metadata.len() + ENTRY_OVERHEAD)
        .sum();
    MEMBER_OVERHEAD
        + id.len()
        + static_bytes(id, request.group_instance_id.as_deref())
        + request.client_id.len()
        + request.client_host.len()
        + protocols
}

/// Estimated bytes of a member's instance id: held in the member and again, with the
/// member id, in the group's instance map (`Classic::instances`).
fn static_bytes(id: &str, instance: Option<&str>) -> usize {
    instance.map_or(0, |i| 2 * i.len() + id.len() + ENTRY_OVERHEAD)
}

/// Estimated bytes of an assignment and the partitions read from it.
pub(crate) fn assignment_bytes(assignment: &Bytes, partitions: &[(String, Vec<u32>)]) -> usize {
    let read: usize = partitions
        .iter()
        .map(|(t, p)| t.len() + 4 * p.len() + ENTRY_OVERHEAD)
        .sum();
    assignment.len() + read
}

impl ClassicMember {
    /// Recomputes [`bytes`](Self::bytes) from the member's fields.
    fn footprint(&mut self, id: &str) {
        let protocols: usize = self
            .protocols
            .iter()
            .map(|p| p.name.len() + p.metadata.len() + ENTRY_OVERHEAD)
            .sum();
        self.bytes = MEMBER_OVERHEAD
            + id.len()
            + static_bytes(id, self.group_instance_id.as_deref())
            + self.client_id.len()
            + self.client_host.len()
            + protocols
            + assignment_bytes(&self.assignment, &self.partitions);
    }

    fn expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last_seen) > self.session_timeout
    }

    fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }
}

/// A group's classic-protocol members and phase.
#[derive(Debug, Default)]
pub(crate) struct Classic {
    pub(crate) members: BTreeMap<String, ClassicMember>,
    /// Ids handed out by the member-id handshake and not joined yet.
    pub(crate) pending_ids: PendingIds,
    pub(crate) phase: Phase,
    pub(crate) protocol_type: String,
    pub(crate) protocol: String,
    pub(crate) leader: Option<String>,
    /// Static members: `group.instance.id` → member id.
    pub(crate) instances: HashMap<String, String>,
    /// Changed since last written to `members.json` (the coordinator writes it once the
    /// group is stable or empty).
    pub(crate) dirty: bool,
    /// Bytes the members hold (the sum of theirs), as counted in `totals`.
    pub(crate) held: usize,
    /// Pending ids as counted in `totals`.
    counted_pending: usize,
    /// The server-wide totals this group's share is counted in, once it has one.
    totals: Option<Arc<ClassicTotals>>,
}

impl Drop for Classic {
    fn drop(&mut self) {
        if let Some(t) = &self.totals {
            ClassicTotals::shift(&t.bytes, self.held, 0);
            ClassicTotals::shift(&t.pending, self.counted_pending, 0);
        }
    }
}

/// Why a classic call cannot go on; the caller turns it into the group's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    UnknownMember,
    StaleGeneration {
        current: u64,
    },
    RebalanceInProgress,
    Inconsistent(String),
    /// The instance id belongs to another member id now.
    Fenced {
        instance: String,
    },
}

impl Classic {
    /// Whether the group has classic members (or a rebalance for them is under way).
    pub(crate) fn is_active(&self) -> bool {
        !self.members.is_empty()
    }

    /// Counts this group's share in the server-wide `totals` from now on.
    pub(crate) fn count_in(&mut self, totals: &Arc<ClassicTotals>) {
        if self.totals.is_none() {
            ClassicTotals::shift(&totals.bytes, 0, self.held);
            ClassicTotals::shift(&totals.pending, 0, self.counted_pending);
            self.totals = Some(totals.clone());
        }
    }

    /// Brings `held` and the server-wide totals up to date after members or pending ids
    /// changed: one pass over the members.
    pub(crate) fn settle(&mut self) {
        let held: usize = self.members.values().map(|m| m.bytes).sum();
        let pending = self.pending_ids.len();
        let members = &self.members;
        self.instances.retain(|instance, id| {
            members
                .get(id)
                .is_some_and(|m| m.group_instance_id.as_deref() == Some(instance.as_str()))
        });
        if let Some(t) = &self.totals {
            ClassicTotals::shift(&t.bytes, self.held, held);
            ClassicTotals::shift(&t.pending, self.counted_pending, pending);
        }
        (self.held, self.counted_pending) = (held, pending);
    }

    /// Checks `request` fits the group's protocol type and shares an assignor with
    /// every other member.
    pub(crate) fn check_protocols(&self, request: &JoinGroupRequest) -> Result<(), Refusal> {
        if request.protocols.is_empty() {
            return Err(Refusal::Inconsistent("the join names no protocol".into()));
        }
        let others =
            self.members.len() - usize::from(self.members.contains_key(&request.member_id));
        if others == 0 {
            return Ok(());
        }
        if self.protocol_type != request.protocol_type {
            return Err(Refusal::Inconsistent(format!(
                "protocol type '{}' differs from the group's '{}'",
                request.protocol_type, self.protocol_type
            )));
        }
        // One pass over the other members' protocols (each names a protocol once): a
        // protocol of the request is shared when every other member names it.
        let mut support: HashMap<&str, usize> = request
            .protocols
            .iter()
            .map(|p| (p.name.as_str(), 0))
            .collect();
        for (id, m) in &self.members {
            if *id == request.member_id {
                continue;
            }
            for q in &m.protocols {
                if let Some(n) = support.get_mut(q.name.as_str()) {
                    *n += 1;
                }
            }
        }
        if !support.values().any(|&n| n == others) {
            return Err(Refusal::Inconsistent(
                "no assignor is supported by every member".into(),
            ));
        }
        Ok(())
    }

    /// Starts a rebalance (or extends nothing if one runs): every member must rejoin
    /// before the deadline, the longest rebalance timeout of the members from now.
    pub(crate) fn prepare(&mut self, now: Instant) {
        if matches!(self.phase, Phase::Preparing { .. }) {
            return;
        }
        let wait = self
            .members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or_default();
        for m in self.members.values_mut() {
            m.joined = false;
        }
        self.phase = Phase::Preparing {
            deadline: now + wait,
        };
    }

    /// Completes the rebalance when every member has rejoined, or, with `force` (the
    /// deadline passed), removes those that did not. Moves `generation` on, picks the
    /// protocol and the leader, and restarts the sessions at `now`. Returns whether it
    /// completed.
    pub(crate) fn try_complete(&mut self, generation: &mut u64, force: bool, now: Instant) -> bool {
        if !matches!(self.phase, Phase::Preparing { .. }) {
            return false;
        }
        if !force && self.members.values().any(|m| !m.joined) {
            return false;
        }
        self.members.retain(|_, m| m.joined);
        *generation += 1;
        // Each session starts again from the completed join, as in Kafka (a member that
        // waited out a long rebalance is not expired the moment it ends).
        for (id, m) in &mut self.members {
            m.last_seen = now;
            m.assignment = Bytes::new();
            m.partitions.clear();
            m.footprint(id);
        }
        self.settle();
        if self.members.is_empty() {
            self.phase = Phase::Empty;
            self.leader = None;
            self.protocol.clear();
            self.protocol_type.clear();
            self.dirty = true;
            return true;
        }
        if self
            .leader
            .as_ref()
            .is_none_or(|l| !self.members.contains_key(l))
        {
            self.leader = self.members.keys().next().cloned();
        }
        self.protocol = self.choose_protocol();
        self.phase = Phase::Completing;
        true
    }

    /// The assignor every member supports that most members prefer (each member votes
    /// for its first supported choice); ties go to the leader's order.
    fn choose_protocol(&self) -> String {
        let Some(leader) = self.leader.as_ref().and_then(|l| self.members.get(l)) else {
            return String::new();
        };
        // Each member names a protocol once: a name every member names is a candidate.
        let mut support: HashMap<&str, usize> = HashMap::new();
        for m in self.members.values() {
            for p in &m.protocols {
                *support.entry(p.name.as_str()).or_default() += 1;
            }
        }
        let everyone = self.members.len();
        let candidates: Vec<&str> = leader
            .protocols
            .iter()
            .map(|p| p.name.as_str())
            .filter(|name| support.get(name) == Some(&everyone))
            .collect();
        let candidate_set: HashSet<&str> = candidates.iter().copied().collect();
        let mut votes: HashMap<&str, usize> = HashMap::new();
        for m in self.members.values() {
            if let Some(first) = m
                .protocols
                .iter()
                .find(|p| candidate_set.contains(p.name.as_str()))
            {
                *votes.entry(first.name.as_str()).or_default() += 1;
            }
        }
        let best = votes.values().copied().max().unwrap_or(0);
        candidates
            .into_iter()
            .find(|c| votes.get(c).copied().unwrap_or(0) == best)
            .unwrap_or_default()
            .to_owned()
    }

    /// Removes members whose session expired (not those waiting in a rebalance, whose
    /// join keeps them alive) and starts a rebalance if any went. Returns whether any
    /// went.
    pub(crate) fn expire(&mut self, now: Instant, generation: &mut u64) -> bool {
        let preparing = matches!(self.phase, Phase::Preparing { .. });
        let before = self.members.len();
        self.members
            .retain(|_, m| (preparing && m.joined) || !m.expired(now));
        self.pending_ids.expire(now);
        if self.members.len() == before {
            self.settle();
            return false;
        }
        self.settle();
        if self.members.is_empty() {
            self.phase = Phase::Preparing { deadline: now };
            self.try_complete(generation, true, now);
        } else if preparing {
            self.try_complete(generation, false, now);
        } else {
            self.prepare(now);
        }
        true
    }

    /// Admits `request` as a member (new, or known by its id), marks it rejoined, and
    /// starts a rebalance when Kafka would: a new member, changed protocols, the
    /// leader's join, or any join outside `Stable`. Returns whether it must wait for
    /// the rebalance (false: answer with the current generation at once).
    pub(crate) fn admit(&mut self, id: &str, request: &JoinGroupRequest, now: Instant) -> bool {
        self.pending_ids.remove(id);
        let known = self
            .members
            .get(id)
            .map(|m| m.protocols == request.protocols);
        let is_leader = self.leader.as_deref() == Some(id);
        let member = ClassicMember {
            group_instance_id: request.group_instance_id.clone(),
            client_id: request.client_id.clone(),
            client_host: request.client_host.clone(),
            session_timeout: request.session_timeout,
            rebalance_timeout: request.rebalance_timeout,
            last_seen: now,
            protocols: request.protocols.clone(),
            joined: true,
            assignment: Bytes::new(),
            partitions: Vec::new(),
            bytes: join_bytes(id, request),
        };
        if self.members.is_empty() {
            self.protocol_type = request.protocol_type.clone();
        }
        let quiet = known == Some(true) && !is_leader && self.phase == Phase::Stable;
        match self.members.get_mut(id) {
            Some(m) if quiet => {
                m.last_seen = now;
                m.session_timeout = request.session_timeout;
                self.settle();
                return false;
            }
            Some(m) => {
                let (assignment, partitions) = (m.assignment.clone(), m.partitions.clone());
                *m = ClassicMember {
                    assignment,
                    partitions,
                    ..member
                };
                m.footprint(id);
            }
            None => {
                self.members.insert(id.to_owned(), member);
            }
        }
        if let Some(instance) = &request.group_instance_id {
            self.instances.insert(instance.clone(), id.to_owned());
        }
        self.settle();
        self.prepare(now);
        if let Some(m) = self.members.get_mut(id) {
            m.joined = true;
        }
        true
    }

    /// The JoinGroup answer for `id` in the current generation.
    pub(crate) fn answer(&self, id: &str, generation: u64) -> Option<JoinGroupAnswer> {
        self.members.get(id)?;
        let leader = self.leader.clone().unwrap_or_default();
        let members = if leader == id {
            self.members
                .iter()
                .map(|(member_id, m)| JoinedMember {
                    member_id: member_id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    metadata: m.metadata_for(&self.protocol),
                })
                .collect()
        } else {
            Vec::new()
        };
        Some(JoinGroupAnswer {
            generation,
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            leader,
            member_id: id.to_owned(),
            members,
            skip_assignment: false,
        })
    }

    /// A static member's join with no member id, whose instance id belongs to member
    /// `old`: the member takes `new` as its id and keeps its place and assignment (the
    /// leadership too). In a stable group whose chosen assignor stays the same, that is
    /// all (returns true: answer at once, same generation); otherwise the member joins
    /// the rebalance under way, or starts one (returns false: wait).
    pub(crate) fn replace_static(
        &mut self,
        old: &str,
        new: &str,
        request: &JoinGroupRequest,
        now: Instant,
    ) -> bool {
        let Some(mut member) = self.members.remove(old) else {
            return false;
        };
        member.group_instance_id = request.group_instance_id.clone();
        member.client_id = request.client_id.clone();
        member.client_host = request.client_host.clone();
        member.session_timeout = request.session_timeout;
        member.rebalance_timeout = request.rebalance_timeout;
        member.protocols = request.protocols.clone();
        member.last_seen = now;
        member.joined = true;
        member.footprint(new);
        self.members.insert(new.to_owned(), member);
        if let Some(instance) = &request.group_instance_id {
            self.instances.insert(instance.clone(), new.to_owned());
        }
        if self.leader.as_deref() == Some(old) {
            self.leader = Some(new.to_owned());
        }
        self.settle();
        self.dirty = true;
        match self.phase {
            Phase::Stable if self.choose_protocol() == self.protocol => true,
            Phase::Preparing { .. } => false,
            _ => {
                // After the leader's SyncGroup could have named the old id, or with
                // another assignor: everyone rejoins.
                self.prepare(now);
                if let Some(m) = self.members.get_mut(new) {
                    m.joined = true;
                }
                false
            }
        }
    }

    /// Who holds `instance` now, if anyone.
    pub(crate) fn instance_holder(&self, instance: &str) -> Option<&String> {
        self.instances.get(instance)
    }

    /// Checks that a call naming `who` comes from the member its instance id (if any)
    /// belongs to, as Kafka checks: an unknown instance is an unknown member, an instance
    /// held by another member id is fenced.
    pub(crate) fn check_instance(&self, who: ClassicMemberId<'_>) -> Result<(), Refusal> {
        let Some(instance) = who.group_instance_id else {
            return Ok(());
        };
        match self.instances.get(instance) {
            None => Err(Refusal::UnknownMember),
            Some(holder) if holder != who.member_id => Err(Refusal::Fenced {
                instance: instance.to_owned(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Checks `who` may act in `generation` now, and records its heartbeat.
    pub(crate) fn check(
        &mut self,
        who: ClassicMemberId<'_>,
        generation: u64,
        current: u64,
        now: Instant,
    ) -> Result<(), Refusal> {
        self.check_instance(who)?;
        let member = self
            .members
            .get_mut(who.member_id)
            .ok_or(Refusal::UnknownMember)?;
        member.last_seen = now;
        if matches!(self.phase, Phase::Preparing { .. }) {
            return Err(Refusal::RebalanceInProgress);
        }
        if generation != current {
            return Err(Refusal::StaleGeneration { current });
        }
        Ok(())
    }

    /// Stores the leader's assignments and makes the group stable.
    pub(crate) fn assign(&mut self, assignments: Vec<MemberAssignment>) {
        for a in assignments {
            if let Some(m) = self.members.get_mut(&a.member_id) {
                m.assignment = a.assignment;
                m.partitions = a.partitions;
                m.footprint(&a.member_id);
            }
        }
        self.settle();
        self.phase = Phase::Stable;
        self.dirty = true;
    }

    /// Whether the group changed since its last write and is in a state worth writing
    /// (stable or empty; during a rebalance the last stable generation stays on disk).
    pub(crate) fn needs_write(&self) -> bool {
        self.dirty && matches!(self.phase, Phase::Stable | Phase::Empty)
    }

    /// What `members.json` keeps of a stable group (`Some`), or `None` for an empty one
    /// (the file goes). A group in a rebalance has nothing new to keep: `Err(())`.
    pub(crate) fn snapshot(&self, generation: u64) -> Result<Option<StoredClassic>, ()> {
        match self.phase {
            Phase::Empty => Ok(None),
            Phase::Stable => Ok(Some(StoredClassic {
                generation,
                protocol_type: self.protocol_type.clone(),
                protocol: self.protocol.clone(),
                leader: self.leader.clone().unwrap_or_default(),
                members: self
                    .members
                    .iter()
                    .map(|(id, m)| StoredClassicMember {
                        member_id: id.clone(),
                        group_instance_id: m.group_instance_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.client_host.clone(),
                        session_timeout: m.session_timeout,
                        rebalance_timeout: m.rebalance_timeout,
                        protocols: m
                            .protocols
                            .iter()
                            .map(|p| (p.name.clone(), p.metadata.clone()))
                            .collect(),
                        assignment: m.assignment.clone(),
                        partitions: m.partitions.clone(),
                    })
                    .collect(),
            })),
            Phase::Preparing { .. } | Phase::Completing => Err(()),
        }
    }

    /// A stable group as `members.json` kept it, every session starting at `now` (as
    /// Kafka's coordinator does when it loads a group): members that come back in time
    /// carry on in their generation with their assignments.
    pub(crate) fn restore(stored: StoredClassic, now: Instant) -> Classic {
        let mut c = Classic::default();
        for s in stored.members {
            let mut m = ClassicMember {
                group_instance_id: s.group_instance_id,
                client_id: s.client_id,
                client_host: s.client_host,
                session_timeout: s.session_timeout,
                rebalance_timeout: s.rebalance_timeout,
                last_seen: now,
                protocols: s
                    .protocols
                    .into_iter()
                    .map(|(name, metadata)| GroupProtocol { name, metadata })
                    .collect(),
                joined: false,
                assignment: s.assignment,
                partitions: s.partitions,
                bytes: 0,
            };
            m.footprint(&s.member_id);
            if let Some(instance) = &m.group_instance_id {
                c.instances.insert(instance.clone(), s.member_id.clone());
            }
            c.members.insert(s.member_id, m);
        }
        if c.members.is_empty() {
            return c;
        }
        c.protocol_type = stored.protocol_type;
        c.protocol = stored.protocol;
        c.leader = Some(stored.leader).filter(|l| c.members.contains_key(l));
        if c.leader.is_none() {
            c.leader = c.members.keys().next().cloned();
        }
        c.phase = Phase::Stable;
        c.settle();
        c
    }

    /// Removes members; the others must rejoin. Returns the ids that were members.
    pub(crate) fn remove(
        &mut self,
        ids: &[String],
        now: Instant,
        generation: &mut u64,
    ) -> Vec<String> {
        let gone: Vec<String> = ids
            .iter()
            .filter(|id| self.members.remove(*id).is_some())
            .cloned()
            .collect();
        if gone.is_empty() {
            return gone;
        }
        self.settle();
        if self.members.is_empty() {
            self.phase = Phase::Preparing { deadline: now };
            self.try_complete(generation, true, now);
        } else if matches!(self.phase, Phase::Preparing { .. }) {
            self.try_complete(generation, false, now);
        } else {
            self.prepare(now);
        }
        gone
    }

    /// The group for DescribeGroups.
    pub(crate) fn describe(&self) -> ClassicGroupDescription {
        ClassicGroupDescription {
            state: self.phase.name(),
            protocol_type: self.protocol_type.clone(),
            protocol: self.protocol.clone(),
            members: self
                .members
                .iter()
                .map(|(id, m)| ClassicMemberDescription {
                    member_id: id.clone(),
                    group_instance_id: m.group_instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: m.metadata_for(&self.protocol),
                    assignment: m.assignment.clone(),
                    partitions: m.partitions.clone(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
#[path = "classic_tests.rs"]
mod tests;
