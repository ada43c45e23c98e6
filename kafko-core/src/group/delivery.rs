//! [`GroupPoll`] and its [`Delivery`]: the second phase of a group poll. A poll leases
//! the partitions it read; the caller then reports whether the answer reached the
//! consumer. Delivered, the group's position stays past the records (and, with
//! auto-commit, the member's next poll commits them); dropped without that report, the
//! position goes back to where the poll started and the records are read again. An
//! answer only handed to a connection is *sent*, which counts for the position but not
//! for auto-commit until acknowledged (`acknowledge`).

use std::sync::{Arc, Mutex};

use crate::activity::Activity;

use super::PartitionOffset;
use super::acknowledge::{Answer, remember};
use super::coordinator::{Groups, Pending, lock};
use crate::record::Record;

/// Records returned by a group poll, not yet delivered.
///
/// The group counts them as read only once [`delivered`](Self::delivered) (or
/// [`Delivery::confirm`]) is called; dropping the poll instead puts them back, so the
/// group's next poll returns them again (at-least-once).
#[must_use = "dropping a GroupPoll puts its records back: call `delivered()` once the consumer has them"]
#[derive(Debug)]
pub struct GroupPoll {
    pub(super) records: Vec<Record>,
    pub(super) generation: u64,
    pub(super) positions: Vec<PartitionOffset>,
    pub(super) committed: Vec<PartitionOffset>,
    pub(super) delivery: Delivery,
}

impl GroupPoll {
    /// The records, in offset order per partition.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Generation the poll ran in (0 for the implicit member of a group without members).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The caller's positions once these records are delivered: the next offset of each
    /// partition it owns, ascending by partition.
    pub fn positions(&self) -> &[PartitionOffset] {
        &self.positions
    }

    /// What this poll committed before reading: the offsets the member's previous,
    /// delivered poll returned (auto-commit), ascending by partition.
    pub fn committed(&self) -> &[PartitionOffset] {
        &self.committed
    }

    /// This answer's cursor, when it carries records: the caller's next poll passes it
    /// as [`GroupPollOptions::acknowledged`](super::GroupPollOptions::acknowledged) to
    /// show the answer arrived.
    pub fn cursor(&self) -> Option<u64> {
        (!self.delivery.leases.is_empty()).then_some(self.delivery.id)
    }

    /// Marks the records delivered and returns them.
    pub fn delivered(self) -> Vec<Record> {
        let (records, delivery) = self.into_parts();
        delivery.confirm();
        records
    }

    /// Splits the records from their [`Delivery`], to confirm it later (for example once
    /// an answer carrying them has been sent).
    pub fn into_parts(self) -> (Vec<Record>, Delivery) {
        (self.records, self.delivery)
    }
}

/// The pending outcome of a group poll: [`confirm`](Self::confirm) it once the records
/// reached their consumer; dropping it unconfirmed returns them to the group.
#[must_use = "dropping a Delivery unconfirmed puts its records back"]
pub struct Delivery {
    pub(super) groups: Arc<Mutex<Groups>>,
    pub(super) group: String,
    pub(super) topic: String,
    /// Who the records go to (`""`: the implicit member).
    pub(super) member: String,
    /// The answer's cursor (its poll's lease id).
    pub(super) id: u64,
    /// The cursor the poll carried.
    pub(super) after: Option<u64>,
    /// `(partition, lease id)` of every partition the answer carries records of.
    pub(super) leases: Vec<(u32, u64)>,
    /// Woken when the leases end, so polls waiting for these partitions look again.
    pub(super) activity: Arc<Activity>,
    pub(super) settled: bool,
}

impl std::fmt::Debug for Delivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delivery")
            .field("group", &self.group)
            .field("topic", &self.topic)
            .field("leases", &self.leases)
            .field("settled", &self.settled)
            .finish_non_exhaustive()
    }
}

/// What became of an answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The consumer has the records (in process).
    Received,
    /// Handed to a connection: the consumer may still not have them.
    Sent,
    /// Never sent in full.
    Lost,
}

impl Delivery {
    /// The records reached their consumer: the group's position stays past them, and
    /// with auto-commit the caller's next poll commits them.
    pub fn confirm(mut self) {
        self.settle(Outcome::Received);
    }

    /// The answer was handed in full to a connection, which does not show that the
    /// consumer read it. The group's position stays past the records. A joined
    /// member's next poll commits them (a member is one consumer, as in Kafka); the
    /// implicit member's auto-commit commits them only once a poll carries this
    /// answer's cursor ([`GroupPoll::cursor`]) or a later one of the same chain. A poll
    /// carrying the cursor this answer's own poll carried shows the answer never
    /// arrived: its records are read again, unless something read past them meanwhile.
    pub fn sent(mut self) {
        self.settle(Outcome::Sent);
    }

    fn settle(&mut self, outcome: Outcome) {
        if self.settled {
            return;
        }
        self.settled = true;
        if self.leases.is_empty() {
            return;
        }
        {
            let mut groups = lock(&self.groups);
            let Some(ts) = groups
                .get_mut(&self.group)
                .and_then(|g| g.topics.get_mut(&self.topic))
            else {
                return;
            };
            let mut parts = Vec::with_capacity(self.leases.len());
            for &(partition, id) in &self.leases {
                // A rebalance, commit or seek since the poll replaced the lease: the
                // answer no longer decides this partition's position.
                let Some(lease) = ts.leases.get(&partition).copied().filter(|l| l.id == id) else {
                    continue;
                };
                ts.leases.remove(&partition);
                if outcome == Outcome::Lost {
                    ts.positions.insert(partition, lease.start);
                    continue;
                }
                let Some(&to) = ts.positions.get(&partition) else {
                    continue;
                };
                parts.push((partition, lease.start, to));
                if lease.auto_commit && !self.member.is_empty() {
                    let member = self.member.clone();
                    ts.pending.insert(partition, Pending { member, offset: to });
                }
            }
            if self.member.is_empty() && !parts.is_empty() {
                let answer = Answer {
                    after: self.after,
                    parts,
                    acknowledged: outcome == Outcome::Received,
                };
                remember(ts, self.id, answer);
            }
        }
        self.activity.signal();
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.settle(Outcome::Lost);
    }
}
