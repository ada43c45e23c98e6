//! The transaction coordinator (Kafka's transactions, KIP-98): per transactional id,
//! its producer id and epoch and its open transaction (partitions, groups, pending
//! offsets), kept durable in the transaction log (`log`) before any request is
//! answered; ending a transaction writes its markers and commits its offsets
//! (`complete`); a background task aborts transactions past their timeout and removes
//! idle ids. The rules each request meets are pure functions of the state (`state`).
//! TRANSACTIONS.md beside this crate's manifest says what is stored and why.
//!
//! Invariants:
//! - one request per transactional id at a time (its `op` lock), and its state changes
//!   in memory only after the log holds it;
//! - a partition's transactional batch is admitted ([`Kafko::verify_transaction`]) only
//!   while its producer's transaction is Ongoing with that partition, checked under the
//!   producer's turn on the partition, which the markers take too: no batch lands after
//!   its transaction's marker;
//! - every transaction a partition holds open is Ongoing here, listing that partition
//!   (the open sweep aborts any other), so every last stable offset moves on.

mod complete;
mod error;
pub(crate) mod log;
mod state;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

pub use self::error::TxnError;
pub use self::log::TRANSACTION_TOPIC;
pub use self::state::TxnState;
use self::state::{PendingOffset, TxnMeta};
use crate::broker::Kafko;
use crate::group::CommitOffset;
use crate::producer_state::ProducerRejection;
use crate::record::now_ms;
use crate::topic::Topic;

/// One partition of a transaction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxnPartition {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
}

/// A transactional id's state, as DescribeTransactions and ListTransactions show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionDescription {
    /// The transactional id.
    pub transactional_id: String,
    /// Where its current transaction stands.
    pub state: TxnState,
    /// Its producer id.
    pub producer_id: i64,
    /// Its producer epoch.
    pub producer_epoch: i16,
    /// Its transaction timeout.
    pub timeout_ms: i32,
    /// When the open transaction began (ms since the epoch), −1 if none is open.
    pub start_ms: i64,
    /// When the state last changed (ms since the epoch).
    pub last_update_ms: i64,
    /// The open transaction's partitions.
    pub partitions: Vec<TxnPartition>,
}

/// The coordinator's limits (Kafka's broker configs where Kafka has one).
#[derive(Debug, Clone, Copy)]
pub struct TransactionLimits {
    /// The longest transaction timeout a producer may ask for
    /// (`transaction.max.timeout.ms`, 15 minutes).
    pub max_timeout: Duration,
    /// How long an id with no transaction and no request is kept
    /// (`transactional.id.expiration.ms`, 7 days).
    pub id_expiration: Duration,
    /// How often transactions are checked for their timeout and ids for expiry
    /// (`transaction.abort.timed.out.transaction.cleanup.interval.ms`, 10 s).
    pub abort_check_interval: Duration,
    /// Transactional ids kept at most; a new one past it is refused.
    pub max_transactional_ids: usize,
    /// Partitions, groups and pending offsets one transaction holds at most.
    pub max_partitions_per_transaction: usize,
}

impl Default for TransactionLimits {
    fn default() -> Self {
        TransactionLimits {
            max_timeout: Duration::from_secs(15 * 60),
            id_expiration: Duration::from_secs(7 * 24 * 3600),
            abort_check_interval: Duration::from_secs(10),
            max_transactional_ids: 10_000,
            max_partitions_per_transaction: 10_000,
        }
    }
}

/// One transactional id: its state, and the lock its requests take in turn.
struct Entry {
    op: tokio::sync::Mutex<()>,
    meta: Mutex<TxnMeta>,
}

impl Entry {
    fn meta(&self) -> TxnMeta {
        lock(&self.meta).clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update replaces a whole value: a panic cannot leave one half-written.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The coordinator: every transactional id, by id and by producer id.
pub(crate) struct Transactions {
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    /// Producer id → transactional id, for the checks of produced batches.
    by_producer: Mutex<HashMap<i64, String>>,
    log: Arc<Topic>,
    limits: TransactionLimits,
    next_producer_id: AtomicI64,
}

impl Transactions {
    /// The coordinator over the transaction log `log`, holding `loaded` (the log's
    /// latest states). Producer ids are handed out from the clock (ms since the epoch,
    /// shifted left), above every id the log holds.
    pub(crate) fn new(
        log: Arc<Topic>,
        loaded: HashMap<String, TxnMeta>,
        limits: TransactionLimits,
    ) -> Transactions {
        let highest = loaded
            .values()
            .map(|m| m.producer_id.max(m.next_producer_id))
            .max()
            .unwrap_or(0);
        let by_producer = loaded
            .iter()
            .map(|(id, m)| (m.producer_id, id.clone()))
            .collect();
        let entries = loaded
            .into_iter()
            .map(|(id, meta)| {
                let entry = Entry {
                    op: tokio::sync::Mutex::new(()),
                    meta: Mutex::new(meta),
                };
                (id, Arc::new(entry))
            })
            .collect();
        Transactions {
            entries: Mutex::new(entries),
            by_producer: Mutex::new(by_producer),
            log,
            limits,
            next_producer_id: AtomicI64::new((now_ms() << 12).max(highest + 1)),
        }
    }

    /// The transaction log.
    pub(crate) fn log(&self) -> &Arc<Topic> {
        &self.log
    }

    fn entry(&self, id: &str) -> Option<Arc<Entry>> {
        lock(&self.entries).get(id).cloned()
    }

    fn entries(&self) -> Vec<(String, Arc<Entry>)> {
        lock(&self.entries)
            .iter()
            .map(|(id, e)| (id.clone(), e.clone()))
            .collect()
    }

    fn allocate(&self) -> i64 {
        self.next_producer_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Makes `next` the state of `id`, once the log holds it.
    async fn store(&self, id: &str, entry: &Entry, next: TxnMeta) -> crate::error::Result<()> {
        log::append(&self.log, id, Some(&next)).await?;
        let before = std::mem::replace(&mut *lock(&entry.meta), next.clone());
        if before.producer_id != next.producer_id {
            let mut map = lock(&self.by_producer);
            if map.get(&before.producer_id).is_some_and(|t| t == id) {
                map.remove(&before.producer_id);
            }
            map.insert(next.producer_id, id.to_owned());
        } else if before.epoch < 0 {
            lock(&self.by_producer).insert(next.producer_id, id.to_owned());
        }
        Ok(())
    }

    /// Removes `id` (expired), once the log holds its tombstone.
    async fn remove(&self, id: &str, entry: &Entry) -> crate::error::Result<()> {
        log::append(&self.log, id, None).await?;
        let meta = entry.meta();
        lock(&self.entries).remove(id);
        let mut map = lock(&self.by_producer);
        if map.get(&meta.producer_id).is_some_and(|t| t == id) {
            map.remove(&meta.producer_id);
        }
        Ok(())
    }
}

fn describe(id: &str, meta: &TxnMeta) -> TransactionDescription {
    TransactionDescription {
        transactional_id: id.to_owned(),
        state: meta.state,
        producer_id: meta.producer_id,
        producer_epoch: meta.epoch,
        timeout_ms: meta.timeout_ms,
        start_ms: meta.start_ms,
        last_update_ms: meta.updated_ms,
        partitions: meta
            .partitions
            .iter()
            .map(|(topic, partition)| TxnPartition {
                topic: topic.clone(),
                partition: *partition,
            })
            .collect(),
    }
}

impl Kafko {
    fn transactions(&self) -> Result<&Transactions, TxnError> {
        self.check_open().map_err(|_| TxnError::ShuttingDown)?;
        Ok(&self.inner.transactions)
    }

    /// A new producer id, never handed out before by this data directory's server:
    /// for idempotent and transactional producers alike.
    pub fn allocate_producer_id(&self) -> i64 {
        self.inner.transactions.allocate()
    }

    /// InitProducerId with a transactional id: the id's producer gets its next epoch
    /// (fencing every earlier instance), after its open transaction, if any, is
    /// aborted. `current` is the producer id and epoch a producer recovering from an
    /// error names (KIP-360).
    ///
    /// # Errors
    /// `InvalidTimeout` past the limit; `ProducerFenced` when `current` is not the
    /// id's producer; `ConcurrentTransactions` while a transaction's end could not be
    /// completed yet; `TooManyTransactions` for a new id past the limit; `Kafko` when
    /// the log could not be written.
    pub async fn init_transactional_producer(
        &self,
        transactional_id: &str,
        timeout_ms: i32,
        current: Option<(i64, i16)>,
    ) -> Result<(i64, i16), TxnError> {
        let txns = self.transactions()?;
        let max_ms = i32::try_from(txns.limits.max_timeout.as_millis()).unwrap_or(i32::MAX);
        if timeout_ms <= 0 || timeout_ms > max_ms {
            return Err(TxnError::InvalidTimeout { max_ms });
        }
        let entry = {
            let mut entries = lock(&txns.entries);
            match entries.get(transactional_id) {
                Some(e) => e.clone(),
                None => {
                    if entries.len() >= txns.limits.max_transactional_ids {
                        return Err(TxnError::TooManyTransactions {
                            max: txns.limits.max_transactional_ids,
                        });
                    }
                    let meta = TxnMeta::new(txns.allocate(), timeout_ms, now_ms());
                    let e = Arc::new(Entry {
                        op: tokio::sync::Mutex::new(()),
                        meta: Mutex::new(meta),
                    });
                    entries.insert(transactional_id.to_owned(), e.clone());
                    e
                }
            }
        };
        let _op = entry.op.lock().await;
        let mut meta = entry.meta();
        if let Some((producer_id, epoch)) = current {
            meta.check_recovering(producer_id, epoch)?;
        }
        match meta.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                complete::finish(self, txns, transactional_id, &entry)
                    .await
                    .map_err(|_| TxnError::ConcurrentTransactions)?;
            }
            TxnState::Ongoing => {
                let aborting = meta.fenced_abort(now_ms());
                txns.store(transactional_id, &entry, aborting).await?;
                complete::finish(self, txns, transactional_id, &entry)
                    .await
                    .map_err(|_| TxnError::ConcurrentTransactions)?;
            }
            _ => {}
        }
        meta = entry.meta();
        let next = meta.bumped(|| txns.allocate(), timeout_ms, now_ms());
        let answer = (next.producer_id, next.epoch);
        txns.store(transactional_id, &entry, next).await?;
        Ok(answer)
    }

    /// AddPartitionsToTxn: `partitions` join the producer's open transaction (opening
    /// one if none is). With `verify_only`, only checks that they already did.
    ///
    /// # Errors
    /// `InvalidProducerIdMapping` for an unknown id or another producer id,
    /// `ProducerFenced` for another epoch, `ConcurrentTransactions` while the last
    /// transaction ends, `UnknownTopicOrPartition` naming the partitions that do not
    /// exist (nothing is added), `TooManyPartitions` past the limit, `InvalidTxnState`
    /// when verifying a partition not in the transaction.
    pub async fn add_partitions_to_txn(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[TxnPartition],
        verify_only: bool,
    ) -> Result<(), TxnError> {
        let who = (transactional_id, producer_id, epoch);
        self.change_open(who, |meta| {
            if verify_only {
                for p in partitions {
                    meta.admits(epoch, &p.topic, p.partition)?;
                }
                return Ok(meta.clone());
            }
            let unknown = self.unknown(partitions.iter().cloned());
            if !unknown.is_empty() {
                return Err(TxnError::UnknownTopicOrPartition(unknown));
            }
            let mut next = meta.opened(now_ms())?;
            next.partitions
                .extend(partitions.iter().map(|p| (p.topic.clone(), p.partition)));
            Ok(next)
        })
        .await
    }

    /// AddOffsetsToTxn: the open transaction (opened if none is) may commit offsets of
    /// `group`.
    ///
    /// # Errors
    /// As [`add_partitions_to_txn`](Self::add_partitions_to_txn); `InvalidGroupId` for a
    /// name no group can have.
    pub async fn add_offsets_to_txn(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
    ) -> Result<(), TxnError> {
        let handle = self.group(group).map_err(|_| TxnError::InvalidGroupId)?;
        self.change_open((transactional_id, producer_id, epoch), |meta| {
            let mut next = meta.opened(now_ms())?;
            next.groups.insert(group.to_owned());
            handle.ensure_exists()?;
            Ok(next)
        })
        .await
    }

    /// TxnOffsetCommit: `offsets` of `topic` become `group`'s committed offsets when the
    /// open transaction commits (and are dropped if it aborts). A later commit of the
    /// same partition in the transaction replaces the earlier one.
    ///
    /// # Errors
    /// As [`add_partitions_to_txn`](Self::add_partitions_to_txn); `InvalidTxnState`
    /// when no transaction is open or `group` was not added to it.
    pub async fn txn_offset_commit(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        topic: &str,
        offsets: &[CommitOffset],
    ) -> Result<(), TxnError> {
        self.change_open((transactional_id, producer_id, epoch), |meta| {
            if meta.state != TxnState::Ongoing || !meta.groups.contains(group) {
                return Err(TxnError::InvalidTxnState);
            }
            let unknown = self.unknown(offsets.iter().map(|o| TxnPartition {
                topic: topic.to_owned(),
                partition: o.partition,
            }));
            if !unknown.is_empty() {
                return Err(TxnError::UnknownTopicOrPartition(unknown));
            }
            let mut next = meta.clone();
            let pending = next
                .offsets
                .entry(group.to_owned())
                .or_default()
                .entry(topic.to_owned())
                .or_default();
            for o in offsets {
                let offset = PendingOffset {
                    offset: o.offset,
                    metadata: o.metadata.clone(),
                    leader_epoch: o.leader_epoch.filter(|&e| e >= 0),
                };
                pending.insert(o.partition, offset);
            }
            Ok(next)
        })
        .await
    }

    /// The partitions of `partitions` that do not exist.
    fn unknown(&self, partitions: impl Iterator<Item = TxnPartition>) -> Vec<TxnPartition> {
        partitions
            .filter(|p| {
                self.lookup(&p.topic)
                    .is_none_or(|t| t.partition(p.partition).is_err())
            })
            .collect()
    }

    /// One request that changes an open (or opening) transaction: for the current
    /// producer of the transactional id, `change` makes the next state from the current
    /// one; within the bounds, and if it differs, it is stored before the answer.
    async fn change_open(
        &self,
        (transactional_id, producer_id, epoch): (&str, i64, i16),
        change: impl FnOnce(&TxnMeta) -> Result<TxnMeta, TxnError>,
    ) -> Result<(), TxnError> {
        let txns = self.transactions()?;
        let entry = txns
            .entry(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        let _op = entry.op.lock().await;
        let meta = entry.meta();
        meta.check_producer(producer_id, epoch)?;
        let mut next = change(&meta)?;
        let max = txns.limits.max_partitions_per_transaction;
        if next.entries() > max {
            return Err(TxnError::TooManyPartitions { max });
        }
        if next == meta {
            return Ok(());
        }
        next.updated_ms = now_ms();
        Ok(txns.store(transactional_id, &entry, next).await?)
    }

    /// EndTxn: commits or aborts the open transaction. The decision is durable first;
    /// then every partition of the transaction gets its marker (fsynced), a commit
    /// stores the transaction's offsets, and the end is recorded, all before the
    /// answer. A retry of an end already made succeeds.
    ///
    /// # Errors
    /// As [`add_partitions_to_txn`](Self::add_partitions_to_txn); `InvalidTxnState`
    /// when no transaction is open or the last one ended the other way;
    /// `ConcurrentTransactions` when the markers could not all be written yet (the
    /// coordinator keeps trying).
    pub async fn end_txn(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(), TxnError> {
        self.end(transactional_id, (producer_id, epoch), commit, false)
            .await
            .map(|_| ())
    }

    /// EndTxn v5 (transactions v2): ends the transaction as [`end_txn`](Self::end_txn)
    /// does, and bumps the producer's epoch: the markers carry the new epoch, and the
    /// answer is the producer id and epoch the producer goes on with (at the epoch's
    /// limit, a new producer id at epoch 0). An abort with no transaction open bumps the
    /// epoch too. A retry of an end already made (the same id, epoch and decision)
    /// answers the current id and epoch.
    ///
    /// # Errors
    /// As [`end_txn`](Self::end_txn); `ProducerFenced` for any epoch but the current
    /// one (or the one a retry names).
    pub async fn end_txn_v2(
        &self,
        transactional_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(i64, i16), TxnError> {
        self.end(transactional_id, (producer_id, epoch), commit, true)
            .await
    }

    /// EndTxn at any version (`bump`: transactions v2); the producer id and epoch
    /// after it.
    async fn end(
        &self,
        transactional_id: &str,
        (producer_id, epoch): (i64, i16),
        commit: bool,
        bump: bool,
    ) -> Result<(i64, i16), TxnError> {
        let txns = self.transactions()?;
        let entry = txns
            .entry(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        let _op = entry.op.lock().await;
        let meta = entry.meta();
        if !commit
            && meta.state == TxnState::CompleteAbort
            && meta.producer_id == producer_id
            && epoch == meta.fenced_epoch
            && epoch >= 0
        {
            // The server aborted this producer's transaction (its timeout) and fenced
            // it: its own abort then has nothing left to do.
            return Ok((meta.producer_id, meta.epoch));
        }
        let prepared = if bump {
            meta.ending_v2((producer_id, epoch), commit, || txns.allocate(), now_ms())?
        } else {
            meta.check_producer(producer_id, epoch)?;
            meta.ending(commit, now_ms())?
        };
        let Some(prepared) = prepared else {
            return Ok((meta.producer_id, meta.epoch));
        };
        if commit {
            self.sync_partitions(&prepared).await?;
        }
        txns.store(transactional_id, &entry, prepared).await?;
        complete::finish(self, txns, transactional_id, &entry)
            .await
            .map_err(|e| {
                tracing::warn!(transactional_id, error = %e, "a transaction's end could not be completed yet; retrying");
                TxnError::ConcurrentTransactions
            })?;
        let done = entry.meta();
        Ok((done.producer_id, done.epoch))
    }

    /// Fsyncs every partition of a transaction about to commit: once the decision is
    /// durable, so are its records, whatever the topics' fsync policies, and a power cut
    /// can never leave a committed transaction with records missing in one partition.
    async fn sync_partitions(&self, meta: &TxnMeta) -> crate::error::Result<()> {
        for (topic, partition) in &meta.partitions {
            let Some(t) = self.lookup(topic) else {
                continue;
            };
            if let Ok(handle) = t.partition(*partition) {
                handle.sync().await?;
            }
        }
        Ok(())
    }

    /// Whether producer `producer_id` at `epoch` may write a transactional batch to
    /// `topic`'s `partition` now: its transaction is open and lists the partition.
    ///
    /// # Errors
    /// `EpochFenced` when a newer epoch of the producer exists; `NotInTransaction`
    /// otherwise (no transaction open, the partition not added, an unknown producer).
    pub fn verify_transaction(
        &self,
        producer_id: i64,
        epoch: i16,
        topic: &str,
        partition: u32,
    ) -> Result<(), ProducerRejection> {
        let txns = &self.inner.transactions;
        let id = lock(&txns.by_producer).get(&producer_id).cloned();
        let Some(entry) = id.and_then(|id| txns.entry(&id)) else {
            return Err(ProducerRejection::NotInTransaction);
        };
        // Checked in place: every produced batch passes here, and a state may list
        // thousands of partitions.
        let meta = lock(&entry.meta);
        if meta.producer_id != producer_id {
            return Err(ProducerRejection::NotInTransaction);
        }
        match meta.admits(epoch, topic, partition) {
            Ok(()) => Ok(()),
            Err(TxnError::ProducerFenced) => Err(ProducerRejection::EpochFenced {
                epoch,
                current: meta.epoch,
            }),
            Err(_) => Err(ProducerRejection::NotInTransaction),
        }
    }

    /// The state of `transactional_id`, if the coordinator knows it.
    pub fn describe_transaction(&self, transactional_id: &str) -> Option<TransactionDescription> {
        let entry = self.inner.transactions.entry(transactional_id)?;
        let meta = entry.meta();
        (meta.epoch >= 0).then(|| describe(transactional_id, &meta))
    }

    /// Every transactional id the coordinator knows, by id.
    pub fn list_transactions(&self) -> Vec<TransactionDescription> {
        let mut out: Vec<TransactionDescription> = self
            .inner
            .transactions
            .entries()
            .iter()
            .map(|(id, e)| (id, e.meta()))
            .filter(|(_, m)| m.epoch >= 0)
            .map(|(id, m)| describe(id, &m))
            .collect();
        out.sort_by(|a, b| a.transactional_id.cmp(&b.transactional_id));
        out
    }
}

pub(crate) use complete::{open_sweep, spawn_timer};
