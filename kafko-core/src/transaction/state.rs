//! One transactional id's state, as the coordinator keeps it and the transaction log
//! stores it, and the rules its requests meet ([`TxnMeta`]'s methods): pure functions
//! from a state and a request to the next state or the error Kafka answers.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::TxnError;

/// Where a transactional id's current transaction stands (Kafka's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TxnState {
    /// An id with no transaction open (just initialized).
    Empty,
    /// A transaction is open: partitions or offsets were added to it.
    Ongoing,
    /// Commit decided and durable; markers being written.
    PrepareCommit,
    /// Abort decided and durable; markers being written.
    PrepareAbort,
    /// The last transaction committed.
    CompleteCommit,
    /// The last transaction aborted.
    CompleteAbort,
    /// The id expired and is being removed.
    Dead,
}

impl TxnState {
    /// Kafka's name of the state, as DescribeTransactions and ListTransactions give it.
    pub fn kafka_name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
        }
    }

    /// Every state, in Kafka's order.
    pub const ALL: [TxnState; 7] = [
        TxnState::Empty,
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
        TxnState::Dead,
    ];

    /// The state named `name` (Kafka's name), if any.
    pub fn from_kafka_name(name: &str) -> Option<TxnState> {
        TxnState::ALL.into_iter().find(|s| s.kafka_name() == name)
    }

    fn preparing(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
}

/// An offset a transaction commits for a group when it commits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PendingOffset {
    pub(crate) offset: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<String>,
    /// The commit's leader epoch, if it gave one (≥ 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) leader_epoch: Option<i32>,
}

/// group → topic → partition → offset.
pub(crate) type PendingOffsets = BTreeMap<String, BTreeMap<String, BTreeMap<u32, PendingOffset>>>;

/// One transactional id's state: the value of its key in the transaction log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TxnMeta {
    pub(crate) producer_id: i64,
    /// The current epoch; −1 before the first InitProducerId completed.
    pub(crate) epoch: i16,
    /// The epoch a server-side abort (a timeout) fenced, −1 if none: that producer may
    /// still abort, and re-initialize naming it.
    #[serde(default = "no_epoch")]
    pub(crate) fenced_epoch: i16,
    pub(crate) timeout_ms: i32,
    pub(crate) state: TxnState,
    /// The open transaction's partitions (empty unless Ongoing or Prepare*).
    #[serde(default)]
    pub(crate) partitions: BTreeSet<(String, u32)>,
    /// Groups whose offsets the open transaction may commit.
    #[serde(default)]
    pub(crate) groups: BTreeSet<String>,
    /// Offsets the open transaction commits when it commits.
    #[serde(default)]
    pub(crate) offsets: PendingOffsets,
    /// When the open transaction began (ms since the epoch), −1 if none is open.
    pub(crate) start_ms: i64,
    pub(crate) updated_ms: i64,
    /// The producer id and epoch the last transaction-v2 end (EndTxn v5) was asked
    /// with, −1 if none: a retry of that end names them after the epoch moved on.
    #[serde(default = "no_id", skip_serializing_if = "is_none_id")]
    pub(crate) last_producer_id: i64,
    #[serde(default = "no_epoch", skip_serializing_if = "is_none_epoch")]
    pub(crate) last_epoch: i16,
    /// While a transaction-v2 end at the epoch's limit is Prepare*, the producer id the
    /// producer moves to (at epoch 0) once it completes; −1 otherwise.
    #[serde(default = "no_id", skip_serializing_if = "is_none_id")]
    pub(crate) next_producer_id: i64,
}

fn no_epoch() -> i16 {
    -1
}

fn no_id() -> i64 {
    -1
}

fn is_none_epoch(epoch: &i16) -> bool {
    *epoch < 0
}

fn is_none_id(id: &i64) -> bool {
    *id < 0
}

/// Kafka moves a producer to a new id once its epoch would reach this.
const LAST_EPOCH: i16 = i16::MAX - 1;

impl TxnMeta {
    /// The state of a new id, before its first epoch.
    pub(crate) fn new(producer_id: i64, timeout_ms: i32, now_ms: i64) -> TxnMeta {
        TxnMeta {
            producer_id,
            epoch: -1,
            fenced_epoch: -1,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
            offsets: PendingOffsets::new(),
            start_ms: -1,
            updated_ms: now_ms,
            last_producer_id: -1,
            last_epoch: -1,
            next_producer_id: -1,
        }
    }

    /// Whether producer `producer_id` at `epoch` is the current one: a mismatched id is
    /// INVALID_PRODUCER_ID_MAPPING, an older (or newer) epoch is fenced.
    pub(crate) fn check_producer(&self, producer_id: i64, epoch: i16) -> Result<(), TxnError> {
        if producer_id != self.producer_id {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        if epoch != self.epoch {
            return Err(TxnError::ProducerFenced);
        }
        Ok(())
    }

    /// Whether the open transaction's offsets and partitions fit `max` entries.
    pub(crate) fn entries(&self) -> usize {
        let offsets: usize = self
            .offsets
            .values()
            .flat_map(|topics| topics.values())
            .map(BTreeMap::len)
            .sum();
        self.partitions.len() + offsets + self.groups.len()
    }

    /// The state once InitProducerId gave the producer a new epoch (or, at the last
    /// epoch, a new id `fresh_id` at epoch 0): Empty, nothing open. `self` must not be
    /// Ongoing or Prepare*.
    pub(crate) fn bumped(
        &self,
        fresh_id: impl FnOnce() -> i64,
        timeout_ms: i32,
        now_ms: i64,
    ) -> TxnMeta {
        let mut next = self.cleared(TxnState::Empty, now_ms);
        next.timeout_ms = timeout_ms;
        if self.epoch >= LAST_EPOCH {
            next.producer_id = fresh_id();
            next.epoch = 0;
        } else {
            next.epoch = self.epoch + 1;
        }
        next.fenced_epoch = -1;
        next.forget_last_end();
        next
    }

    /// Forgets the last transaction-v2 end: no retry of it is recognized any more.
    fn forget_last_end(&mut self) {
        self.last_producer_id = -1;
        self.last_epoch = -1;
        self.next_producer_id = -1;
    }

    /// This state with nothing open, in `state`.
    pub(crate) fn cleared(&self, state: TxnState, now_ms: i64) -> TxnMeta {
        TxnMeta {
            state,
            partitions: BTreeSet::new(),
            groups: BTreeSet::new(),
            offsets: PendingOffsets::new(),
            start_ms: -1,
            updated_ms: now_ms,
            ..self.clone()
        }
    }

    /// The state a request adding to the transaction starts from: the open one, or a
    /// new one (from Empty or Complete*). Prepare* is CONCURRENT_TRANSACTIONS.
    pub(crate) fn opened(&self, now_ms: i64) -> Result<TxnMeta, TxnError> {
        match self.state {
            TxnState::Ongoing => Ok(self.clone()),
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                let mut next = self.cleared(TxnState::Ongoing, now_ms);
                next.start_ms = now_ms;
                Ok(next)
            }
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                Err(TxnError::ConcurrentTransactions)
            }
            TxnState::Dead => Err(TxnError::InvalidProducerIdMapping),
        }
    }

    /// What EndTxn does: `Ok(Some(prepared))` to end the open transaction,
    /// `Ok(None)` when it already ended this way (a retry), else Kafka's error.
    pub(crate) fn ending(&self, commit: bool, now_ms: i64) -> Result<Option<TxnMeta>, TxnError> {
        match (self.state, commit) {
            (TxnState::Ongoing, _) => {
                let mut next = self.clone();
                next.state = if commit {
                    TxnState::PrepareCommit
                } else {
                    TxnState::PrepareAbort
                };
                next.updated_ms = now_ms;
                next.forget_last_end();
                Ok(Some(next))
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => Ok(None),
            (s, _) if s.preparing() => Err(TxnError::ConcurrentTransactions),
            _ => Err(TxnError::InvalidTxnState),
        }
    }

    /// What EndTxn v5 (transactions v2) asked by `(producer_id, epoch)` does:
    /// `Ok(Some(prepared))` to end the transaction and bump the epoch, `Ok(None)` when it
    /// is a retry of the end already made (answered with the current id and epoch),
    /// else Kafka's error. The prepared state holds the bumped epoch, which the markers
    /// carry; at the epoch's limit it is the last one of the producer id, and the
    /// completion moves to `fresh_id()` at epoch 0. An abort with no transaction open
    /// bumps the epoch too (it writes no marker).
    pub(crate) fn ending_v2(
        &self,
        (producer_id, epoch): (i64, i16),
        commit: bool,
        fresh_id: impl FnOnce() -> i64,
        now_ms: i64,
    ) -> Result<Option<TxnMeta>, TxnError> {
        let names_last_end = self.last_epoch >= 0
            && self.last_producer_id == producer_id
            && self.last_epoch == epoch;
        let committed = match self.state {
            TxnState::PrepareCommit | TxnState::CompleteCommit => Some(true),
            TxnState::PrepareAbort | TxnState::CompleteAbort => Some(false),
            _ => None,
        };
        if names_last_end && let Some(committed) = committed {
            return match (committed == commit, self.state.preparing()) {
                (false, _) => Err(TxnError::InvalidTxnState),
                (true, true) => Err(TxnError::ConcurrentTransactions),
                (true, false) => Ok(None),
            };
        }
        self.check_producer(producer_id, epoch)?;
        match (self.state, commit) {
            (TxnState::Ongoing, _)
            | (TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort, false) => {}
            // The epoch of a decided end is one the producer was never given.
            (s, _) if s.preparing() => return Err(TxnError::ProducerFenced),
            (TxnState::Dead, _) => return Err(TxnError::InvalidProducerIdMapping),
            _ => return Err(TxnError::InvalidTxnState),
        }
        let mut next = self.clone();
        next.state = if commit {
            TxnState::PrepareCommit
        } else {
            TxnState::PrepareAbort
        };
        next.last_producer_id = producer_id;
        next.last_epoch = epoch;
        next.next_producer_id = if epoch >= LAST_EPOCH { fresh_id() } else { -1 };
        next.epoch = epoch.saturating_add(1);
        next.updated_ms = now_ms;
        Ok(Some(next))
    }

    /// The state once the coordinator aborts the open transaction itself (a timeout, or
    /// a new instance initializing): Prepare-abort at the next epoch, which fences the
    /// instance that opened it.
    pub(crate) fn fenced_abort(&self, now_ms: i64) -> TxnMeta {
        let mut next = self.clone();
        next.state = TxnState::PrepareAbort;
        next.fenced_epoch = self.epoch;
        next.epoch = self.epoch.saturating_add(1).min(LAST_EPOCH);
        next.updated_ms = now_ms;
        next.forget_last_end();
        next
    }

    /// The state once a Prepare* state's markers (and, on commit, offsets) are written.
    pub(crate) fn completed(&self, now_ms: i64) -> TxnMeta {
        let state = match self.state {
            TxnState::PrepareCommit => TxnState::CompleteCommit,
            _ => TxnState::CompleteAbort,
        };
        let mut next = self.cleared(state, now_ms);
        if self.next_producer_id >= 0 {
            next.producer_id = self.next_producer_id;
            next.epoch = 0;
            next.next_producer_id = -1;
        }
        next
    }

    /// Whether the open transaction ran past its timeout at `now_ms`.
    pub(crate) fn timed_out(&self, now_ms: i64) -> bool {
        self.state == TxnState::Ongoing
            && now_ms.saturating_sub(self.start_ms) > i64::from(self.timeout_ms)
    }

    /// Whether the id, idle since its last update, expired at `now_ms`.
    pub(crate) fn expired(&self, now_ms: i64, expiration_ms: i64) -> bool {
        matches!(
            self.state,
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
        ) && now_ms.saturating_sub(self.updated_ms) >= expiration_ms
    }

    /// Whether InitProducerId naming `(producer_id, epoch)` (KIP-360: a producer that
    /// recovers from an abortable error) may bump this state: it names the current
    /// epoch, or the one a server-side abort fenced.
    pub(crate) fn check_recovering(&self, producer_id: i64, epoch: i16) -> Result<(), TxnError> {
        if producer_id != self.producer_id {
            return Err(TxnError::ProducerFenced);
        }
        if epoch == self.epoch || (epoch == self.fenced_epoch && epoch >= 0) {
            Ok(())
        } else {
            Err(TxnError::ProducerFenced)
        }
    }

    /// Whether `producer_id` at `epoch` may write to `(topic, partition)` now: the
    /// partition is in its open transaction.
    pub(crate) fn admits(&self, epoch: i16, topic: &str, partition: u32) -> Result<(), TxnError> {
        if epoch < self.epoch {
            return Err(TxnError::ProducerFenced);
        }
        let listed = self.partitions.contains(&(topic.to_owned(), partition));
        if epoch == self.epoch && self.state == TxnState::Ongoing && listed {
            Ok(())
        } else {
            Err(TxnError::InvalidTxnState)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ongoing() -> TxnMeta {
        let m = TxnMeta::new(7, 60_000, 0).bumped(|| 8, 60_000, 1);
        let mut o = m.opened(10).unwrap();
        o.partitions.insert(("t".into(), 0));
        o
    }

    #[test]
    fn a_new_id_starts_at_epoch_zero_and_the_last_epoch_moves_to_a_new_id() {
        let m = TxnMeta::new(7, 60_000, 0).bumped(|| 99, 30_000, 5);
        assert_eq!((m.producer_id, m.epoch, m.state), (7, 0, TxnState::Empty));
        assert_eq!(m.timeout_ms, 30_000);
        let mut old = m.clone();
        old.epoch = LAST_EPOCH;
        let next = old.bumped(|| 99, 30_000, 6);
        assert_eq!((next.producer_id, next.epoch), (99, 0));
    }

    #[test]
    fn requests_check_the_id_and_the_epoch() {
        let m = ongoing();
        assert!(m.check_producer(7, 0).is_ok());
        assert!(matches!(
            m.check_producer(8, 0),
            Err(TxnError::InvalidProducerIdMapping)
        ));
        assert!(matches!(
            m.check_producer(7, 1),
            Err(TxnError::ProducerFenced)
        ));
    }

    #[test]
    fn end_txn_prepares_once_and_a_retry_of_the_same_end_succeeds() {
        let m = ongoing();
        let prepared = m.ending(true, 20).unwrap().unwrap();
        assert_eq!(prepared.state, TxnState::PrepareCommit);
        assert!(matches!(
            prepared.ending(true, 21),
            Err(TxnError::ConcurrentTransactions)
        ));
        let done = prepared.completed(22);
        assert_eq!(done.state, TxnState::CompleteCommit);
        assert!(done.partitions.is_empty());
        assert_eq!(done.start_ms, -1);
        assert!(matches!(done.ending(true, 23), Ok(None)));
        assert!(matches!(
            done.ending(false, 23),
            Err(TxnError::InvalidTxnState)
        ));
        let empty = TxnMeta::new(7, 1, 0).bumped(|| 8, 1, 0);
        assert!(matches!(
            empty.ending(false, 1),
            Err(TxnError::InvalidTxnState)
        ));
    }

    #[test]
    fn a_server_side_abort_fences_the_epoch_but_lets_it_recover() {
        let m = ongoing();
        assert!(!m.timed_out(60_010));
        assert!(m.timed_out(60_011));
        let aborted = m.fenced_abort(70_000).completed(70_001);
        assert_eq!((aborted.epoch, aborted.fenced_epoch), (1, 0));
        assert!(matches!(
            aborted.check_producer(7, 0),
            Err(TxnError::ProducerFenced)
        ));
        assert!(aborted.check_recovering(7, 0).is_ok());
        assert!(aborted.check_recovering(7, 1).is_ok());
        assert!(matches!(
            aborted.check_recovering(6, 0),
            Err(TxnError::ProducerFenced)
        ));
        let again = aborted.bumped(|| 9, 1, 70_002);
        assert_eq!((again.epoch, again.fenced_epoch), (2, -1));
    }

    #[test]
    fn only_the_open_transactions_partitions_admit_its_epoch() {
        let m = ongoing();
        assert!(m.admits(0, "t", 0).is_ok());
        assert!(matches!(
            m.admits(0, "t", 1),
            Err(TxnError::InvalidTxnState)
        ));
        assert!(matches!(
            m.admits(0, "u", 0),
            Err(TxnError::InvalidTxnState)
        ));
        let bumped = m.fenced_abort(1);
        assert!(matches!(
            bumped.admits(0, "t", 0),
            Err(TxnError::ProducerFenced)
        ));
        assert!(matches!(
            bumped.admits(1, "t", 0),
            Err(TxnError::InvalidTxnState)
        ));
    }

    #[test]
    fn only_idle_ids_expire_and_the_state_round_trips_as_json() {
        let m = ongoing();
        assert!(!m.expired(i64::MAX, 1));
        let done = m.ending(false, 5).unwrap().unwrap().completed(6);
        assert!(!done.expired(10, 5));
        assert!(done.expired(11, 5));
        let mut full = m.clone();
        full.groups.insert("g".into());
        full.offsets
            .entry("g".into())
            .or_default()
            .entry("t".into())
            .or_default()
            .insert(
                3,
                PendingOffset {
                    offset: 42,
                    metadata: Some("m".into()),
                    leader_epoch: Some(7),
                },
            );
        let json = serde_json::to_vec(&full).unwrap();
        let back: TxnMeta = serde_json::from_slice(&json).unwrap();
        assert_eq!(back, full);
        assert_eq!(full.entries(), 3);
        assert_eq!(
            TxnState::from_kafka_name("PrepareAbort"),
            Some(TxnState::PrepareAbort)
        );
    }

    #[test]
    fn a_v2_end_bumps_the_epoch_and_a_retry_of_it_succeeds() {
        let m = ongoing();
        let prepared = m.ending_v2((7, 0), true, || 99, 20).unwrap().unwrap();
        assert_eq!(
            (prepared.state, prepared.epoch),
            (TxnState::PrepareCommit, 1)
        );
        assert!(matches!(
            prepared.ending_v2((7, 0), true, || 99, 21),
            Err(TxnError::ConcurrentTransactions)
        ));
        assert!(matches!(
            prepared.ending_v2((7, 1), true, || 99, 21),
            Err(TxnError::ProducerFenced)
        ));
        let done = prepared.completed(22);
        assert_eq!((done.producer_id, done.epoch), (7, 1));
        assert!(matches!(done.ending_v2((7, 0), true, || 99, 23), Ok(None)));
        assert!(matches!(
            done.ending_v2((7, 0), false, || 99, 23),
            Err(TxnError::InvalidTxnState)
        ));
        assert!(matches!(
            done.ending_v2((7, 1), true, || 99, 23),
            Err(TxnError::InvalidTxnState)
        ));
        // An abort with nothing open bumps the epoch and forgets the last end.
        let empty_abort = done.ending_v2((7, 1), false, || 99, 24).unwrap().unwrap();
        assert_eq!(empty_abort.epoch, 2);
        assert!(empty_abort.partitions.is_empty());
        let aborted = empty_abort.completed(25);
        assert!(matches!(
            aborted.ending_v2((7, 0), true, || 99, 26),
            Err(TxnError::ProducerFenced)
        ));
        assert!(matches!(
            aborted.ending_v2((7, 1), false, || 99, 26),
            Ok(None)
        ));
        // The record keeps what the retry needs, and an older reader's record reads.
        let json = serde_json::to_vec(&aborted).unwrap();
        let back: TxnMeta = serde_json::from_slice(&json).unwrap();
        assert_eq!(back, aborted);
        let plain = serde_json::to_vec(&m).unwrap();
        assert!(
            !String::from_utf8(plain.clone())
                .unwrap()
                .contains("last_epoch")
        );
        let back: TxnMeta = serde_json::from_slice(&plain).unwrap();
        assert_eq!((back.last_producer_id, back.last_epoch), (-1, -1));
    }

    #[test]
    fn a_v2_end_at_the_last_epoch_moves_to_a_new_producer_id() {
        let mut m = ongoing();
        m.epoch = LAST_EPOCH;
        let prepared = m
            .ending_v2((7, LAST_EPOCH), false, || 99, 1)
            .unwrap()
            .unwrap();
        assert_eq!((prepared.producer_id, prepared.epoch), (7, i16::MAX));
        assert_eq!(prepared.next_producer_id, 99);
        let done = prepared.completed(2);
        assert_eq!(
            (done.producer_id, done.epoch, done.next_producer_id),
            (99, 0, -1)
        );
        assert!(matches!(
            done.ending_v2((7, LAST_EPOCH), false, || 100, 3),
            Ok(None)
        ));
        assert!(matches!(
            done.ending_v2((7, 0), false, || 100, 3),
            Err(TxnError::InvalidProducerIdMapping)
        ));
        let v1 = ongoing().ending(true, 1).unwrap().unwrap().completed(2);
        assert!(matches!(
            v1.ending_v2((7, -1), true, || 100, 3),
            Err(TxnError::ProducerFenced)
        ));
    }
}
