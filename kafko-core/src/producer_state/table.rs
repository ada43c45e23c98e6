//! One partition's idempotent producers, as Kafka keeps them: per producer id, its
//! epoch, its last five batches' sequences and base offsets, its last batch's newest
//! timestamp and the first offset of its open transaction; and the partition's aborted
//! transactions. The table is a fold of batch headers in offset order (FORMAT.md,
//! "Producer state"; TRANSACTIONS.md, "In the partitions"); [`ProducerTable::check`]
//! holds the rules a producer's new batch meets.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

/// Batches remembered per producer for retries: Kafka's `max.in.flight` for an
/// idempotent producer is at most 5.
pub(crate) const REMEMBERED: usize = 5;
/// Producers one partition keeps at most; past it the one whose last batch is oldest
/// goes first. Far above what issued ids reach; it bounds memory against any caller.
pub(crate) const MAX_PRODUCERS: usize = 100_000;

/// A written batch's sequences and where it landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct WrittenBatch {
    pub(crate) first: i32,
    pub(crate) last: i32,
    pub(crate) base_offset: u64,
}

/// What the table keeps of one producer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProducerEntry {
    pub(crate) epoch: i16,
    /// The last batches of this epoch, oldest first; empty when a transaction marker
    /// started a new epoch (the next batch then starts at sequence 0).
    pub(crate) batches: VecDeque<WrittenBatch>,
    /// The newest timestamp of its last batch (expiry counts from it, as in Kafka).
    pub(crate) last_timestamp: i64,
    /// The first offset of its open transaction in this partition.
    pub(crate) txn_first: Option<u64>,
}

/// What a producer's batch is, for the fold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchKind {
    /// Records; `transactional` when the batch carries the transactional bit.
    Data {
        /// Whether the batch belongs to a transaction.
        transactional: bool,
    },
    /// A control batch ending the producer's transaction.
    Marker {
        /// COMMIT (else ABORT).
        commit: bool,
    },
}

/// A producer's batch as its header says: what the fold takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProducerBatch {
    pub(crate) id: i64,
    pub(crate) epoch: i16,
    pub(crate) first: i32,
    pub(crate) last: i32,
    pub(crate) base_offset: u64,
    pub(crate) max_timestamp: i64,
    pub(crate) kind: BatchKind,
}

/// An aborted transaction of one producer in a partition: its records lie between
/// `first_offset` and `last_offset` (its ABORT marker's offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTransaction {
    /// The producer that wrote it.
    pub producer_id: i64,
    /// The offset of its first batch in the partition.
    pub first_offset: u64,
    /// The offset of its ABORT marker.
    pub last_offset: u64,
}

/// The last sequence of a batch of `records_minus_one + 1` records from `first`:
/// sequences wrap from `i32::MAX` to 0, as Kafka's do.
pub(crate) fn last_sequence(first: i32, last_offset_delta: u32) -> i32 {
    let last = (i64::from(first) + i64::from(last_offset_delta)) % (i64::from(i32::MAX) + 1);
    i32::try_from(last).unwrap_or(0)
}

/// The sequence after `last`.
fn next_sequence(last: i32) -> i32 {
    if last == i32::MAX { 0 } else { last + 1 }
}

/// Whether a producer the table does not know may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownProducer {
    /// It may, with any sequence: Kafka's rule for a producer with no state (new, or
    /// expired).
    #[default]
    Accept,
    /// It is refused (`ProducerRejection::UnknownProducer`): the caller knows the id was
    /// not handed out by it, and the producer must ask for a new one.
    Refuse,
}

/// Why an idempotent producer's batch was refused. Nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProducerRejection {
    /// The batch's epoch is older than the producer's (Kafka's INVALID_PRODUCER_EPOCH):
    /// a newer instance of the producer took over.
    #[error("producer epoch {epoch} is older than the current epoch {current}")]
    EpochFenced {
        /// The batch's epoch.
        epoch: i16,
        /// The producer's epoch on this partition.
        current: i16,
    },
    /// The batch's first sequence does not follow the last batch written (Kafka's
    /// OUT_OF_ORDER_SEQUENCE_NUMBER): batches between were lost.
    #[error("sequence {first} where {expected} was expected")]
    OutOfOrder {
        /// The batch's first sequence.
        first: i32,
        /// The sequence that would have followed.
        expected: i32,
    },
    /// The producer has no state here and may not start one (Kafka's
    /// UNKNOWN_PRODUCER_ID): it must ask for a new id.
    #[error("unknown producer id")]
    UnknownProducer,
    /// The producer at this epoch has no ongoing transaction holding the partition
    /// (Kafka's INVALID_TXN_STATE): a transactional batch is refused.
    #[error("no ongoing transaction of this producer holds the partition")]
    NotInTransaction,
}

/// What to do with an idempotent producer's batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Write it.
    Write,
    /// A retry of a batch already written at this base offset: answer that, write
    /// nothing.
    Duplicate(u64),
}

/// A producer's state as DescribeProducers shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerInfo {
    /// The producer id.
    pub producer_id: i64,
    /// Its epoch on the partition.
    pub epoch: i16,
    /// The last sequence it wrote.
    pub last_sequence: i32,
    /// The newest timestamp of its last batch.
    pub last_timestamp: i64,
    /// The first offset of its open transaction here, if one is open.
    pub current_txn_start_offset: Option<u64>,
}

/// One partition's producers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ProducerTable {
    pub(crate) entries: HashMap<i64, ProducerEntry>,
    /// Open transactions: first offset → producer id (first offsets are batch base
    /// offsets, so unique). The smallest bounds the last stable offset.
    pub(crate) open: BTreeMap<u64, i64>,
    /// Aborted transactions, by ascending last offset (markers fold in offset order).
    pub(crate) aborted: VecDeque<AbortedTransaction>,
}

impl ProducerTable {
    /// Folds one batch in: the producer's epoch and last batches become what the batch
    /// says; a transactional batch opens the producer's transaction if none is open; a
    /// marker closes it (an ABORT adding it to the aborted list) and sets the epoch.
    pub(crate) fn fold(&mut self, batch: &ProducerBatch) {
        if !self.entries.contains_key(&batch.id) && self.entries.len() >= MAX_PRODUCERS {
            self.evict_oldest();
        }
        let entry = self
            .entries
            .entry(batch.id)
            .or_insert_with(|| ProducerEntry {
                epoch: batch.epoch,
                batches: VecDeque::with_capacity(1),
                last_timestamp: batch.max_timestamp,
                txn_first: None,
            });
        if entry.epoch != batch.epoch {
            entry.epoch = batch.epoch;
            entry.batches.clear();
        }
        entry.last_timestamp = batch.max_timestamp;
        match batch.kind {
            BatchKind::Marker { commit } => {
                if let Some(first) = entry.txn_first.take() {
                    self.open.remove(&first);
                    if !commit {
                        self.aborted.push_back(AbortedTransaction {
                            producer_id: batch.id,
                            first_offset: first,
                            last_offset: batch.base_offset,
                        });
                    }
                }
            }
            BatchKind::Data { transactional } => {
                if entry.batches.len() == REMEMBERED {
                    entry.batches.pop_front();
                }
                entry.batches.push_back(WrittenBatch {
                    first: batch.first,
                    last: batch.last,
                    base_offset: batch.base_offset,
                });
                if transactional && entry.txn_first.is_none() {
                    entry.txn_first = Some(batch.base_offset);
                    self.open.insert(batch.base_offset, batch.id);
                }
            }
        }
    }

    /// The first offset of the oldest open transaction: the last stable offset, when
    /// one is open.
    pub(crate) fn first_open(&self) -> Option<u64> {
        self.open.keys().next().copied()
    }

    /// Open transactions: `(producer id, epoch, first offset)`, oldest first.
    pub(crate) fn open_transactions(&self) -> Vec<(i64, i16, u64)> {
        self.open
            .iter()
            .map(|(&first, &id)| (id, self.entries.get(&id).map_or(-1, |e| e.epoch), first))
            .collect()
    }

    /// The aborted transactions whose records may lie in `from..to`: last offset at or
    /// after `from`, first offset before `to`.
    pub(crate) fn aborted_in(&self, from: u64, to: u64) -> Vec<AbortedTransaction> {
        let start = self.aborted.partition_point(|a| a.last_offset < from);
        self.aborted
            .range(start..)
            .filter(|a| a.first_offset < to)
            .copied()
            .collect()
    }

    /// Forgets the aborted transactions wholly below `log_start`.
    pub(crate) fn drop_aborted_below(&mut self, log_start: u64) {
        while self
            .aborted
            .front()
            .is_some_and(|a| a.last_offset < log_start)
        {
            self.aborted.pop_front();
        }
    }

    /// Rebuilds the open-transaction index from the entries (after a snapshot load).
    pub(crate) fn index_open(&mut self) {
        self.open = self
            .entries
            .iter()
            .filter_map(|(&id, e)| Some((e.txn_first?, id)))
            .collect();
    }

    /// Forgets the producer whose last batch is oldest, among those with no open
    /// transaction (those are never forgotten).
    fn evict_oldest(&mut self) {
        let oldest = self
            .entries
            .iter()
            .filter(|(_, e)| e.txn_first.is_none())
            .min_by_key(|(_, e)| e.last_timestamp)
            .map(|(id, _)| *id);
        if let Some(id) = oldest {
            self.entries.remove(&id);
        }
    }

    /// Checks a batch of producer `id` at `epoch` with sequences `first..=last`.
    pub(crate) fn check(
        &self,
        id: i64,
        epoch: i16,
        (first, last): (i32, i32),
        unknown: UnknownProducer,
    ) -> Result<Check, ProducerRejection> {
        let Some(entry) = self.entries.get(&id) else {
            return match unknown {
                UnknownProducer::Accept => Ok(Check::Write),
                UnknownProducer::Refuse => Err(ProducerRejection::UnknownProducer),
            };
        };
        if epoch < entry.epoch {
            return Err(ProducerRejection::EpochFenced {
                epoch,
                current: entry.epoch,
            });
        }
        if epoch > entry.epoch {
            // A new epoch starts its sequences again.
            return match first {
                0 => Ok(Check::Write),
                _ => Err(ProducerRejection::OutOfOrder { first, expected: 0 }),
            };
        }
        if let Some(written) = entry
            .batches
            .iter()
            .find(|b| b.first == first && b.last == last)
        {
            return Ok(Check::Duplicate(written.base_offset));
        }
        let expected = entry.batches.back().map_or(0, |b| next_sequence(b.last));
        if first == expected {
            Ok(Check::Write)
        } else {
            Err(ProducerRejection::OutOfOrder { first, expected })
        }
    }

    /// Drops the producers whose last timestamp is `expiration_ms` or more before
    /// `now_ms` and that have no open transaction; how many went.
    pub(crate) fn expire(&mut self, now_ms: i64, expiration_ms: i64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| {
            e.txn_first.is_some() || now_ms.saturating_sub(e.last_timestamp) < expiration_ms
        });
        before - self.entries.len()
    }

    /// Every producer, by id.
    pub(crate) fn describe(&self) -> Vec<ProducerInfo> {
        let mut out: Vec<ProducerInfo> = self
            .entries
            .iter()
            .map(|(&producer_id, e)| ProducerInfo {
                producer_id,
                epoch: e.epoch,
                last_sequence: e.batches.back().map_or(-1, |b| b.last),
                last_timestamp: e.last_timestamp,
                current_txn_start_offset: e.txn_first,
            })
            .collect();
        out.sort_by_key(|p| p.producer_id);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(id: i64, epoch: i16, first: i32, last: i32, base_offset: u64) -> ProducerBatch {
        ProducerBatch {
            id,
            epoch,
            first,
            last,
            base_offset,
            max_timestamp: 1_000 + i64::try_from(base_offset).unwrap(),
            kind: BatchKind::Data {
                transactional: false,
            },
        }
    }

    #[test]
    fn the_next_sequence_is_written_a_retry_is_a_duplicate_and_a_gap_is_refused() {
        let mut t = ProducerTable::default();
        t.fold(&batch(7, 0, 0, 4, 100));
        assert_eq!(
            t.check(7, 0, (5, 9), UnknownProducer::Refuse),
            Ok(Check::Write)
        );
        assert_eq!(
            t.check(7, 0, (0, 4), UnknownProducer::Refuse),
            Ok(Check::Duplicate(100))
        );
        assert_eq!(
            t.check(7, 0, (6, 9), UnknownProducer::Refuse),
            Err(ProducerRejection::OutOfOrder {
                first: 6,
                expected: 5
            })
        );
        // Only the last five batches are remembered.
        for i in 1..=5u64 {
            let first = i32::try_from(i * 5).unwrap();
            t.fold(&batch(7, 0, first, first + 4, 100 + i * 5));
        }
        assert!(matches!(
            t.check(7, 0, (0, 4), UnknownProducer::Refuse),
            Err(ProducerRejection::OutOfOrder { .. })
        ));
        assert_eq!(
            t.check(7, 0, (5, 9), UnknownProducer::Refuse),
            Ok(Check::Duplicate(105))
        );
    }

    #[test]
    fn epochs_fence_older_ones_and_a_new_epoch_starts_at_zero() {
        let mut t = ProducerTable::default();
        t.fold(&batch(7, 3, 0, 0, 0));
        assert_eq!(
            t.check(7, 2, (1, 1), UnknownProducer::Accept),
            Err(ProducerRejection::EpochFenced {
                epoch: 2,
                current: 3
            })
        );
        assert_eq!(
            t.check(7, 4, (0, 0), UnknownProducer::Accept),
            Ok(Check::Write)
        );
        assert_eq!(
            t.check(7, 4, (1, 1), UnknownProducer::Accept),
            Err(ProducerRejection::OutOfOrder {
                first: 1,
                expected: 0
            })
        );
        t.fold(&batch(7, 4, 0, 0, 1));
        assert_eq!(t.entries[&7].batches.len(), 1);
    }

    #[test]
    fn an_unknown_producer_is_accepted_or_refused_as_the_caller_says() {
        let t = ProducerTable::default();
        assert_eq!(
            t.check(1, 0, (42, 42), UnknownProducer::Accept),
            Ok(Check::Write)
        );
        assert_eq!(
            t.check(1, 0, (0, 0), UnknownProducer::Refuse),
            Err(ProducerRejection::UnknownProducer)
        );
    }

    #[test]
    fn sequences_wrap_at_i32_max() {
        assert_eq!(last_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(last_sequence(0, 0), 0);
        let mut t = ProducerTable::default();
        t.fold(&batch(1, 0, i32::MAX - 1, i32::MAX, 0));
        assert_eq!(
            t.check(1, 0, (0, 3), UnknownProducer::Refuse),
            Ok(Check::Write)
        );
    }

    #[test]
    fn idle_producers_expire_one_by_one_and_busy_ones_stay() {
        let mut t = ProducerTable::default();
        t.fold(&batch(1, 0, 0, 0, 0)); // last timestamp 1000
        t.fold(&batch(2, 0, 0, 0, 500)); // 1500
        assert_eq!(t.expire(2_000, 1_000), 1);
        assert_eq!(t.describe().len(), 1);
        assert_eq!(t.describe()[0].producer_id, 2);
    }

    #[test]
    fn a_full_table_evicts_the_producer_idle_longest() {
        let mut t = ProducerTable::default();
        for id in 0..i64::try_from(MAX_PRODUCERS).unwrap() {
            t.entries.insert(
                id,
                ProducerEntry {
                    epoch: 0,
                    batches: VecDeque::from([WrittenBatch {
                        first: 0,
                        last: 0,
                        base_offset: 0,
                    }]),
                    last_timestamp: 10 + id,
                    txn_first: None,
                },
            );
        }
        t.fold(&batch(1 << 40, 0, 0, 0, 0));
        assert_eq!(t.entries.len(), MAX_PRODUCERS);
        assert!(!t.entries.contains_key(&0));
        assert!(t.entries.contains_key(&(1 << 40)));
    }

    fn txn(id: i64, epoch: i16, first: i32, last: i32, base_offset: u64) -> ProducerBatch {
        ProducerBatch {
            kind: BatchKind::Data {
                transactional: true,
            },
            ..batch(id, epoch, first, last, base_offset)
        }
    }

    fn marker(id: i64, epoch: i16, commit: bool, offset: u64) -> ProducerBatch {
        ProducerBatch {
            kind: BatchKind::Marker { commit },
            ..batch(id, epoch, -1, -1, offset)
        }
    }

    #[test]
    fn a_transaction_opens_at_its_first_batch_and_its_marker_closes_it() {
        let mut t = ProducerTable::default();
        t.fold(&batch(1, 0, 0, 4, 0)); // not transactional: opens nothing
        assert_eq!(t.first_open(), None);
        t.fold(&txn(2, 0, 0, 1, 5));
        t.fold(&txn(3, 0, 0, 1, 7));
        t.fold(&txn(2, 0, 2, 3, 9)); // already open: stays at 5
        assert_eq!(t.first_open(), Some(5));
        assert_eq!(t.open_transactions(), vec![(2, 0, 5), (3, 0, 7)]);
        t.fold(&marker(2, 0, true, 11)); // COMMIT: closed, not aborted
        assert_eq!(t.first_open(), Some(7));
        assert!(t.aborted.is_empty());
        t.fold(&marker(3, 0, false, 12)); // ABORT: closed, aborted
        assert_eq!(t.first_open(), None);
        let abort = AbortedTransaction {
            producer_id: 3,
            first_offset: 7,
            last_offset: 12,
        };
        assert_eq!(t.aborted, VecDeque::from([abort]));
        // The next transaction of the same producer opens afresh.
        t.fold(&txn(3, 0, 2, 2, 13));
        assert_eq!(t.first_open(), Some(13));
        // A marker carries no sequences: the last batch still answers a retry.
        assert_eq!(
            t.check(2, 0, (2, 3), UnknownProducer::Refuse),
            Ok(Check::Duplicate(9))
        );
        assert_eq!(t.describe()[1].current_txn_start_offset, None);
        assert_eq!(t.describe()[2].current_txn_start_offset, Some(13));
    }

    #[test]
    fn a_marker_of_a_new_epoch_starts_the_producer_at_sequence_zero() {
        let mut t = ProducerTable::default();
        t.fold(&txn(2, 0, 0, 9, 0));
        // The coordinator aborts with a bumped epoch (a timed-out transaction).
        t.fold(&marker(2, 1, false, 10));
        assert_eq!(t.entries[&2].epoch, 1);
        assert!(t.entries[&2].batches.is_empty());
        assert_eq!(
            t.check(2, 0, (10, 10), UnknownProducer::Refuse),
            Err(ProducerRejection::EpochFenced {
                epoch: 0,
                current: 1
            })
        );
        assert_eq!(
            t.check(2, 1, (10, 10), UnknownProducer::Refuse),
            Err(ProducerRejection::OutOfOrder {
                first: 10,
                expected: 0
            })
        );
        assert_eq!(
            t.check(2, 1, (0, 0), UnknownProducer::Refuse),
            Ok(Check::Write)
        );
        assert_eq!(t.describe()[0].last_sequence, -1);
    }

    #[test]
    fn producers_with_an_open_transaction_never_expire_nor_are_evicted() {
        let mut t = ProducerTable::default();
        t.fold(&txn(1, 0, 0, 0, 0)); // last timestamp 1000, open
        t.fold(&batch(2, 0, 0, 0, 1)); // 1001
        assert_eq!(t.expire(10_000, 1_000), 1);
        assert!(t.entries.contains_key(&1));
        t.fold(&marker(1, 0, true, 2)); // 1002, closed
        assert_eq!(t.expire(10_000, 1_000), 1);
        assert!(t.entries.is_empty());
        // A full table passes over the open transaction's producer, oldest as it is.
        t.fold(&txn(7, 0, 0, 0, 0));
        for id in 100..i64::try_from(MAX_PRODUCERS).unwrap() + 99 {
            t.entries.insert(
                id,
                ProducerEntry {
                    epoch: 0,
                    batches: VecDeque::new(),
                    last_timestamp: 5_000 + id,
                    txn_first: None,
                },
            );
        }
        t.fold(&batch(1 << 40, 0, 0, 0, 0));
        assert!(t.entries.contains_key(&7));
        assert!(!t.entries.contains_key(&100));
    }

    #[test]
    fn aborted_transactions_are_found_by_range_and_dropped_below_the_log_start() {
        let mut t = ProducerTable::default();
        for (id, first, last) in [(1, 0, 10), (2, 5, 20), (1, 30, 40)] {
            t.fold(&txn(id, 0, 0, 0, first));
            t.fold(&marker(id, 0, false, last));
        }
        let ids = |v: Vec<AbortedTransaction>| v.iter().map(|a| a.first_offset).collect::<Vec<_>>();
        assert_eq!(ids(t.aborted_in(0, 100)), vec![0, 5, 30]);
        assert_eq!(ids(t.aborted_in(11, 30)), vec![5]);
        assert_eq!(ids(t.aborted_in(21, 31)), vec![30]);
        assert_eq!(ids(t.aborted_in(41, 100)), Vec::<u64>::new());
        t.drop_aborted_below(11);
        assert_eq!(ids(t.aborted_in(0, 100)), vec![5, 30]);
        t.drop_aborted_below(41);
        assert!(t.aborted.is_empty());
    }
}
