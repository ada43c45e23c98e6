//! [`GroupPoll`] and its [`Delivery`]: the second phase of a group poll. A poll leases
//! the partitions it read; the caller then reports whether the answer reached the
//! consumer. Delivered, the group's position stays past the records (and, with
//! auto-commit, the member's next poll commits them); dropped without that report, the
//! position goes back to where the poll started and the records are read again.

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use super::PartitionOffset;
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
    /// `(partition, lease id)` of every partition the answer carries records of.
    pub(super) leases: Vec<(u32, u64)>,
    /// Woken when the leases end, so polls waiting for these partitions look again.
    pub(super) activity: Arc<Notify>,
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

impl Delivery {
    /// The records reached their consumer: the group's position stays past them.
    pub fn confirm(mut self) {
        self.settle(true);
    }

    fn settle(&mut self, delivered: bool) {
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
            for &(partition, id) in &self.leases {
                // A rebalance, commit or seek since the poll replaced the lease: the
                // answer no longer decides this partition's position.
                let Some(lease) = ts.leases.get(&partition).copied().filter(|l| l.id == id) else {
                    continue;
                };
                ts.leases.remove(&partition);
                if delivered {
                    if lease.auto_commit
                        && let Some(&to) = ts.positions.get(&partition)
                    {
                        let member = self.member.clone();
                        ts.pending.insert(partition, Pending { member, offset: to });
                    }
                } else {
                    ts.positions.insert(partition, lease.start);
                }
            }
        }
        self.activity.notify_waiters();
    }
}

impl Drop for Delivery {
    fn drop(&mut self) {
        self.settle(false);
    }
}
