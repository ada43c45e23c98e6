//! Ending transactions: writing a decided transaction's markers and committing its
//! offsets ([`finish`]), the open-time sweep that finishes what a crash interrupted and
//! aborts what no transaction explains, and the timer that aborts transactions past
//! their timeout, finishes ends that failed and removes expired ids.

use std::sync::{Arc, Weak};

use super::state::{TxnMeta, TxnState};
use super::{Entry, Transactions};
use crate::broker::{Inner, Kafko};
use crate::error::{KafkoError, Result};
use crate::group::CommitOffset;
use crate::produced::Marker;
use crate::record::now_ms;

/// The coordinator epoch markers carry: one node is always the same coordinator.
const COORDINATOR_EPOCH: i32 = 0;

/// Writes the markers of `id`'s decided (Prepare*) transaction to each of its partitions,
/// on commit stores its offsets, then records the end. Every step may run again after a
/// failure or a crash: a marker for a transaction a partition does not hold open, and an
/// offset committed twice, change nothing.
pub(super) async fn finish(
    kafko: &Kafko,
    txns: &Transactions,
    id: &str,
    entry: &Entry,
) -> Result<()> {
    let meta = entry.meta();
    let commit = match meta.state {
        TxnState::PrepareCommit => true,
        TxnState::PrepareAbort => false,
        _ => return Ok(()),
    };
    for (topic, partition) in &meta.partitions {
        // A topic deleted since holds nothing to mark.
        let Some(t) = kafko.lookup(topic) else {
            continue;
        };
        let marker = Marker {
            producer_id: meta.producer_id,
            epoch: meta.epoch,
            commit,
            coordinator_epoch: COORDINATOR_EPOCH,
        };
        match t.append_marker(*partition, marker).await {
            Ok(_) => {}
            Err(KafkoError::TopicDeleted { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    if commit {
        commit_offsets(kafko, &meta).await?;
    }
    txns.store(id, entry, meta.completed(now_ms())).await
}

/// Stores a committing transaction's offsets as its groups' committed offsets.
async fn commit_offsets(kafko: &Kafko, meta: &TxnMeta) -> Result<()> {
    for (group, topics) in &meta.offsets {
        for (topic, partitions) in topics {
            if kafko.lookup(topic).is_none() {
                continue;
            }
            let offsets: Vec<CommitOffset> = partitions
                .iter()
                .map(|(&partition, o)| CommitOffset {
                    partition,
                    offset: o.offset,
                    metadata: o.metadata.clone(),
                    leader_epoch: o.leader_epoch,
                })
                .collect();
            // Created again if it went idle and was forgotten since it joined.
            if let Ok(handle) = kafko.group(group) {
                handle.ensure_exists()?;
            }
            kafko
                .inner
                .groups
                .commit_kafka_offsets(group, topic, &offsets)
                .await?;
        }
    }
    Ok(())
}

/// At open, before the first request: finishes every decided transaction, then aborts
/// each transaction a partition holds open that the coordinator does not list as open
/// on that partition (its producer's state was lost, or it began after its end was
/// decided), so no partition's last stable offset stays stuck.
///
/// # Errors
/// A marker or state that could not be written: the open fails, nothing is lost.
pub(crate) async fn open_sweep(kafko: &Kafko) -> Result<()> {
    let txns = &kafko.inner.transactions;
    for (id, entry) in txns.entries() {
        if matches!(
            entry.meta().state,
            TxnState::PrepareCommit | TxnState::PrepareAbort
        ) {
            let _op = entry.op.lock().await;
            finish(kafko, txns, &id, &entry).await?;
        }
    }
    for topic in kafko.all_topics() {
        for handle in &topic.partitions {
            let partition = handle.log.partition;
            for (producer_id, epoch, first) in handle.log.open_transactions() {
                let meta = super::lock(&txns.by_producer)
                    .get(&producer_id)
                    .cloned()
                    .and_then(|id| txns.entry(&id))
                    .map(|e| e.meta())
                    .filter(|m| m.producer_id == producer_id);
                let listed = meta.as_ref().is_some_and(|m| {
                    m.state == TxnState::Ongoing
                        && m.partitions.contains(&(topic.name.to_string(), partition))
                });
                if listed {
                    continue;
                }
                let epoch = meta.map_or(epoch, |m| m.epoch.max(epoch));
                tracing::warn!(
                    topic = %topic.name, partition, producer_id, first_offset = first,
                    "aborting a transaction the partition holds open and no transactional id does"
                );
                let marker = Marker {
                    producer_id,
                    epoch,
                    commit: false,
                    coordinator_epoch: COORDINATOR_EPOCH,
                };
                topic.append_marker(partition, marker).await?;
            }
        }
    }
    Ok(())
}

/// One pass of the timer: aborts transactions past their timeout (fencing their
/// producer's epoch), finishes ends that failed before, removes expired ids.
async fn tick(kafko: &Kafko) {
    let txns = &kafko.inner.transactions;
    let expiration_ms = i64::try_from(txns.limits.id_expiration.as_millis()).unwrap_or(i64::MAX);
    for (id, entry) in txns.entries() {
        let now = now_ms();
        let meta = entry.meta();
        let due = meta.timed_out(now)
            || matches!(meta.state, TxnState::PrepareCommit | TxnState::PrepareAbort)
            || meta.expired(now, expiration_ms);
        if !due {
            continue;
        }
        let _op = entry.op.lock().await;
        let meta = entry.meta();
        let now = now_ms();
        let done = if meta.timed_out(now) {
            tracing::info!(transactional_id = %id, timeout_ms = meta.timeout_ms, "aborting a transaction past its timeout");
            match txns.store(&id, &entry, meta.fenced_abort(now)).await {
                Ok(()) => finish(kafko, txns, &id, &entry).await,
                Err(e) => Err(e),
            }
        } else if matches!(meta.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            finish(kafko, txns, &id, &entry).await
        } else if meta.expired(now, expiration_ms) {
            tracing::debug!(transactional_id = %id, "transactional id expired");
            txns.remove(&id, &entry).await
        } else {
            Ok(())
        };
        if let Err(e) = done {
            tracing::warn!(transactional_id = %id, error = %e, "transaction maintenance failed; retrying at the next check");
        }
    }
}

/// Starts the timer (every `abort_check_interval`); it ends when the directory closes.
pub(crate) fn spawn_timer(kafko: &Kafko) {
    let weak: Weak<Inner> = Arc::downgrade(&kafko.inner);
    let mut stop = kafko.inner.stop.subscribe();
    let every = kafko.inner.transactions.limits.abort_check_interval;
    let task = tokio::spawn(async move {
        let mut timer = tokio::time::interval(every);
        timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        timer.tick().await;
        loop {
            tokio::select! {
                _ = timer.tick() => {}
                _ = stop.changed() => return,
            }
            let Some(inner) = weak.upgrade() else { return };
            tick(&Kafko { inner }).await;
        }
    });
    kafko
        .inner
        .background
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(task);
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::tick;
    use crate::transaction::{TransactionLimits, TxnState};
    use crate::{Kafko, KafkoOptions};

    async fn open(dir: &std::path::Path) -> Kafko {
        let limits = TransactionLimits {
            id_expiration: Duration::from_millis(1),
            // The test runs the passes itself.
            abort_check_interval: Duration::from_secs(3600),
            ..TransactionLimits::default()
        };
        KafkoOptions::new(dir)
            .transactions(limits)
            .open()
            .await
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_pass_removes_idle_ids_durably_and_keeps_open_ones() {
        let dir = tempfile::tempdir().unwrap();
        let k = open(dir.path()).await;
        let (pid, epoch) = k
            .init_transactional_producer("open", 60_000, None)
            .await
            .unwrap();
        k.add_offsets_to_txn("open", pid, epoch, "g").await.unwrap();
        k.init_transactional_producer("idle", 60_000, None)
            .await
            .unwrap();
        let stored = k.describe_transaction("idle").unwrap().last_update_ms;
        // The expiration is 1 ms: the pass runs once the clock moved past it.
        while crate::record::now_ms() <= stored + 1 {
            tokio::task::yield_now().await;
        }
        tick(&k).await;
        assert!(k.describe_transaction("idle").is_none());
        assert_eq!(
            k.describe_transaction("open").unwrap().state,
            TxnState::Ongoing
        );
        k.shutdown().await.unwrap();
        let k = open(dir.path()).await;
        assert!(k.describe_transaction("idle").is_none());
        assert!(k.describe_transaction("open").is_some());
        k.shutdown().await.unwrap();
    }
}
