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
//! This module is pure bookkeeping over [`tokio::time::Instant`]; the waiting calls
//! live in `classic_calls`. The generation is the group's one generation
//! ([`Members::generation`](super::membership::Members)).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::limits::ClassicTotals;
use super::pending::PendingIds;

/// Estimated heap bytes of a member beyond what its fields name (the map entry, the
/// struct, the `String` and `Vec` headers).
const MEMBER_OVERHEAD: usize = 256;
/// Estimated bytes of one protocol or one assigned topic beyond its names and payload.
const ENTRY_OVERHEAD: usize = 64;

/// One protocol a member offers in its JoinGroup: an assignor name and its metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupProtocol {
    /// Assignor name (for the "consumer" type: range, roundrobin, cooperative-sticky…).
    pub name: String,
    /// The member's subscription metadata for this assignor, opaque to the broker.
    pub metadata: Bytes,
}

/// A JoinGroup, as the Kafka front end decoded it.
#[derive(Debug, Clone)]
pub struct JoinGroupRequest {
    /// The member's id; empty on a first join.
    pub member_id: String,
    /// Static membership id, if the client sent one.
    pub group_instance_id: Option<String>,
    /// A member silent for longer is removed.
    pub session_timeout: Duration,
    /// How long a rebalance waits for members to rejoin.
    pub rebalance_timeout: Duration,
    /// "consumer" for consumers; every member must use the same.
    pub protocol_type: String,
    /// Assignors the member supports, in its order of preference.
    pub protocols: Vec<GroupProtocol>,
    /// The client's id and host, for DescribeGroups.
    pub client_id: String,
    /// The client's address.
    pub client_host: String,
    /// Whether an unknown member must first learn its id (JoinGroup v4+): the join is
    /// then answered at once with [`JoinGroupOutcome::MemberIdRequired`].
    pub require_known_member_id: bool,
}

/// One member as the leader sees it in a JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    /// Member id.
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
    /// Its metadata for the chosen protocol.
    pub metadata: Bytes,
}

/// A completed JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinGroupAnswer {
    /// The new generation.
    pub generation: u64,
    /// The group's protocol type.
    pub protocol_type: String,
    /// The chosen assignor.
    pub protocol: String,
    /// The leader's member id.
    pub leader: String,
    /// This member's id.
    pub member_id: String,
    /// Every member with its metadata: for the leader only, empty for the others.
    pub members: Vec<JoinedMember>,
}

/// What a JoinGroup got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinGroupOutcome {
    /// The member-id handshake: rejoin with this id (Kafka's MEMBER_ID_REQUIRED).
    MemberIdRequired(String),
    /// The member is in the new generation.
    Joined(JoinGroupAnswer),
}

/// The leader's assignment for one member, in a SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberAssignment {
    /// Member id.
    pub member_id: String,
    /// The assignment as the leader encoded it, handed to the member unchanged.
    pub assignment: Bytes,
    /// The topic partitions it names, when the front end could read them (for
    /// descriptions and lag only).
    pub partitions: Vec<(String, Vec<u32>)>,
}

/// A member of a classic group, for DescribeGroups and the console.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMemberDescription {
    /// Member id.
    pub member_id: String,
    /// Static membership id.
    pub group_instance_id: Option<String>,
    /// Client id.
    pub client_id: String,
    /// Client address.
    pub client_host: String,
    /// Its metadata for the chosen protocol (empty before one is chosen).
    pub metadata: Bytes,
    /// Its assignment, as the leader encoded it.
    pub assignment: Bytes,
    /// The topic partitions the assignment names, when readable.
    pub partitions: Vec<(String, Vec<u32>)>,
}

/// A classic group as DescribeGroups shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicGroupDescription {
    /// Kafka's state name: Empty, PreparingRebalance, CompletingRebalance, Stable.
    pub state: &'static str,
    /// Protocol type ("" while empty).
    pub protocol_type: String,
    /// Chosen assignor ("" until chosen).
    pub protocol: String,
    /// Members.
    pub members: Vec<ClassicMemberDescription>,
}

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
        + request.group_instance_id.as_ref().map_or(0, String::len)
        + request.client_id.len()
        + request.client_host.len()
        + protocols
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
            + self.group_instance_id.as_ref().map_or(0, String::len)
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
    StaleGeneration { current: u64 },
    RebalanceInProgress,
    Inconsistent(String),
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
        })
    }

    /// Checks `id` may act in `generation` now, and records its heartbeat.
    pub(crate) fn check(
        &mut self,
        id: &str,
        generation: u64,
        current: u64,
        now: Instant,
    ) -> Result<(), Refusal> {
        let member = self.members.get_mut(id).ok_or(Refusal::UnknownMember)?;
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
mod tests {
    use super::*;

    fn join(id: &str, protocols: &[&str]) -> JoinGroupRequest {
        JoinGroupRequest {
            member_id: id.to_owned(),
            group_instance_id: None,
            session_timeout: Duration::from_secs(10),
            rebalance_timeout: Duration::from_secs(30),
            protocol_type: "consumer".into(),
            protocols: protocols
                .iter()
                .map(|name| GroupProtocol {
                    name: (*name).to_owned(),
                    metadata: Bytes::from(format!("{id}:{name}")),
                })
                .collect(),
            client_id: "c".into(),
            client_host: "h".into(),
            require_known_member_id: true,
        }
    }

    /// A stable group of members "a" and "b" (range), and its generation.
    fn stable_pair(now: Instant) -> (Classic, u64) {
        let (mut c, mut generation) = (Classic::default(), 0);
        c.admit("a", &join("a", &["range"]), now);
        c.admit("b", &join("b", &["range"]), now);
        c.try_complete(&mut generation, false, now);
        c.assign(Vec::new());
        (c, generation)
    }

    #[test]
    fn a_lone_member_completes_at_once_and_leads() {
        let now = Instant::now();
        let (mut c, mut generation) = (Classic::default(), 0);
        assert!(c.admit("a", &join("a", &["range"]), now));
        assert!(c.try_complete(&mut generation, false, now));
        assert_eq!(generation, 1);
        let answer = c.answer("a", generation).unwrap();
        assert_eq!(answer.leader, "a");
        assert_eq!(answer.protocol, "range");
        assert_eq!(answer.members.len(), 1);
        assert_eq!(&answer.members[0].metadata[..], b"a:range");
    }

    #[test]
    fn a_second_member_waits_for_the_first_to_rejoin_and_only_the_leader_sees_members() {
        let now = Instant::now();
        let (mut c, mut generation) = (Classic::default(), 0);
        c.admit("a", &join("a", &["range", "roundrobin"]), now);
        c.try_complete(&mut generation, false, now);
        c.assign(Vec::new());
        assert!(c.admit("b", &join("b", &["roundrobin", "range"]), now));
        assert!(
            !c.try_complete(&mut generation, false, now),
            "a has not rejoined"
        );
        assert_eq!(
            c.check("a", 1, generation, now),
            Err(Refusal::RebalanceInProgress)
        );
        c.admit("a", &join("a", &["range", "roundrobin"]), now);
        assert!(c.try_complete(&mut generation, false, now));
        assert_eq!(generation, 2);
        let (a, b) = (c.answer("a", 2).unwrap(), c.answer("b", 2).unwrap());
        assert_eq!(a.members.len(), 2);
        assert!(b.members.is_empty());
        // One vote each: the leader's order breaks the tie.
        assert_eq!(a.protocol, "range");
    }

    #[test]
    fn members_that_do_not_rejoin_by_the_deadline_are_removed() {
        let now = Instant::now();
        let (mut c, mut generation) = stable_pair(now);
        c.admit("c", &join("c", &["range"]), now);
        assert!(c.try_complete(&mut generation, true, now));
        assert_eq!(c.members.keys().collect::<Vec<_>>(), vec!["c"]);
        assert_eq!(c.leader.as_deref(), Some("c"));
    }

    #[test]
    fn a_member_without_a_shared_assignor_is_inconsistent() {
        let now = Instant::now();
        let mut c = Classic::default();
        c.admit("a", &join("a", &["range"]), now);
        assert!(matches!(
            c.check_protocols(&join("b", &["sticky"])),
            Err(Refusal::Inconsistent(_))
        ));
        let mut other_type = join("b", &["range"]);
        other_type.protocol_type = "connect".into();
        assert!(matches!(
            c.check_protocols(&other_type),
            Err(Refusal::Inconsistent(_))
        ));
        assert!(c.check_protocols(&join("b", &["range"])).is_ok());
    }

    #[test]
    fn a_silent_member_expires_and_the_others_rebalance() {
        let now = Instant::now();
        let (mut c, mut generation) = stable_pair(now);
        let later = now + Duration::from_secs(11);
        c.members.get_mut("a").unwrap().last_seen = later;
        assert!(c.expire(later, &mut generation));
        assert_eq!(c.members.keys().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(c.phase.name(), "PreparingRebalance");
    }

    #[test]
    fn leaving_last_empties_the_group() {
        let now = Instant::now();
        let (mut c, mut generation) = (Classic::default(), 0);
        c.admit("a", &join("a", &["range"]), now);
        c.try_complete(&mut generation, false, now);
        assert_eq!(c.remove(&["a".into()], now, &mut generation), vec!["a"]);
        assert_eq!(c.phase, Phase::Empty);
        assert!(c.protocol_type.is_empty());
    }
}
