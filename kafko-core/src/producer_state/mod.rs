//! Idempotent and transactional producers' state, per partition, kept in the log
//! (FORMAT.md, "Producer state"; TRANSACTIONS.md, "In the partitions"): the table
//! (`table`: producers, open and aborted transactions), its snapshots (`snapshot`), the
//! rebuild at open, and [`ProducerStates`], what a partition shares between its
//! appends, its writer and its readers.
//!
//! Invariants:
//! - the table is the fold of the readable log's batch headers: it changes only where a
//!   write group is published, in offset order (before the high watermark and last
//!   stable offset that cover it), at open by the rebuild, and where the log start moves
//!   (aborted transactions below it are forgotten);
//! - one producer's batches to one partition are checked and appended one at a time (its
//!   turn, held from the check until the append is published), so a check sees every
//!   earlier batch of that producer, and a retry is never written twice.

pub(crate) mod snapshot;
pub(crate) mod table;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

pub use self::table::{AbortedTransaction, ProducerInfo, ProducerRejection, UnknownProducer};
use self::table::{BatchKind, Check, ProducerBatch, ProducerTable};
use crate::error::Result;
use crate::segment::Segment;
use crate::segment::batch::{ATTR_CONTROL, ATTR_TRANSACTIONAL, Format};
use crate::storage::Storage;

/// A partition's producers: the table, and whose turn it is to append.
#[derive(Default)]
pub(crate) struct ProducerStates {
    table: Mutex<ProducerTable>,
    turns: Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>,
}

/// A producer's turn to check and append a batch on one partition; the next batch of
/// the same producer waits until it is dropped.
pub(crate) struct Turn<'a> {
    states: &'a ProducerStates,
    id: i64,
    _held: tokio::sync::OwnedMutexGuard<()>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut turns = lock(&self.states.turns);
        // Two holders: the map and this turn. More means another batch waits for it.
        if turns
            .get(&self.id)
            .is_some_and(|m| Arc::strong_count(m) <= 2)
        {
            turns.remove(&self.id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update leaves the map whole before anything can panic.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ProducerStates {
    pub(crate) fn new(table: ProducerTable) -> Self {
        ProducerStates {
            table: Mutex::new(table),
            turns: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for producer `id`'s turn on this partition.
    pub(crate) async fn turn(&self, id: i64) -> Turn<'_> {
        let mutex = lock(&self.turns).entry(id).or_default().clone();
        Turn {
            states: self,
            id,
            _held: mutex.lock_owned().await,
        }
    }

    /// Checks a batch against the table (see [`ProducerTable::check`]).
    pub(crate) fn check(
        &self,
        id: i64,
        epoch: i16,
        sequences: (i32, i32),
        unknown: UnknownProducer,
    ) -> std::result::Result<Check, ProducerRejection> {
        lock(&self.table).check(id, epoch, sequences, unknown)
    }

    /// Folds published batches in, oldest first.
    pub(crate) fn fold<'a>(&self, batches: impl Iterator<Item = &'a ProducerBatch>) {
        let mut batches = batches.peekable();
        if batches.peek().is_none() {
            return;
        }
        let mut table = lock(&self.table);
        for b in batches {
            table.fold(b);
        }
    }

    /// A copy of the table, for a snapshot.
    pub(crate) fn copy(&self) -> ProducerTable {
        lock(&self.table).clone()
    }

    /// Drops producers idle for `expiration_ms` (see [`ProducerTable::expire`]).
    pub(crate) fn expire(&self, now_ms: i64, expiration_ms: i64) -> usize {
        lock(&self.table).expire(now_ms, expiration_ms)
    }

    /// Every producer, by id.
    pub(crate) fn describe(&self) -> Vec<ProducerInfo> {
        lock(&self.table).describe()
    }

    /// The first offset of the oldest open transaction.
    pub(crate) fn first_open(&self) -> Option<u64> {
        lock(&self.table).first_open()
    }

    /// Open transactions: `(producer id, epoch, first offset)`, oldest first.
    pub(crate) fn open_transactions(&self) -> Vec<(i64, i16, u64)> {
        lock(&self.table).open_transactions()
    }

    /// The producer's epoch here, if the table knows it.
    pub(crate) fn epoch_of(&self, id: i64) -> Option<i16> {
        lock(&self.table).entries.get(&id).map(|e| e.epoch)
    }

    /// The aborted transactions whose records may lie in `from..to`.
    pub(crate) fn aborted_in(&self, from: u64, to: u64) -> Vec<AbortedTransaction> {
        lock(&self.table).aborted_in(from, to)
    }

    /// Forgets the aborted transactions wholly below `log_start`.
    pub(crate) fn drop_aborted_below(&self, log_start: u64) {
        lock(&self.table).drop_aborted_below(log_start);
    }
}

/// Whether the record at `offset` of a batch of `producer_id` belongs to one of
/// `aborted` (a read's aborted transactions).
pub(crate) fn is_aborted(aborted: &[AbortedTransaction], producer_id: i64, offset: u64) -> bool {
    aborted.iter().any(|a| {
        a.producer_id == producer_id && a.first_offset <= offset && offset <= a.last_offset
    })
}

/// The producer id of a transactional data batch, from its Kafka header (at least the
/// 61-byte header); `None` for any other batch: only such batches' records can belong
/// to an aborted transaction.
pub(crate) fn transactional_producer(header: &[u8]) -> Option<i64> {
    let attributes = u16::from_be_bytes(header.get(21..23)?.try_into().ok()?);
    if attributes & ATTR_TRANSACTIONAL == 0 || attributes & ATTR_CONTROL != 0 {
        return None;
    }
    Some(i64::from_be_bytes(header.get(43..51)?.try_into().ok()?))
}

/// A zigzag varint of `area` at `*at`, moving `*at` past it.
fn varint(area: &[u8], at: &mut usize) -> Option<i64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *area.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            #[allow(clippy::cast_possible_wrap)] // zigzag decoding, as Kafka's
            return Some(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
    }
    None
}

/// The type of a control batch's marker, from its bytes (never compressed: Kafka's
/// control batches are not): `Some(true)` COMMIT, `Some(false)` ABORT, `None` an unknown
/// type or an unreadable key.
pub(crate) fn marker_type(batch: &[u8]) -> Option<bool> {
    let attributes = u16::from_be_bytes(batch.get(21..23)?.try_into().ok()?);
    if attributes & 0x07 != 0 {
        return None;
    }
    // One record: length, attributes (1 byte), timestamp delta, offset delta, key
    // length, then the key: version (i16), type (i16).
    let area = batch.get(61..)?;
    let mut at = 0;
    varint(area, &mut at)?;
    at += 1;
    varint(area, &mut at)?;
    varint(area, &mut at)?;
    if varint(area, &mut at)? < 4 {
        return None;
    }
    let key = area.get(at..at + 4)?;
    match i16::from_be_bytes([key[2], key[3]]) {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// The producer of a batch, from its Kafka header (`bytes`, at least the 61-byte
/// header; a control batch's whole bytes, for its marker type) once it lands at
/// `base_offset`; `None` for a batch without an idempotent producer, and for a control
/// batch whose marker type is unknown.
pub(crate) fn producer_of(
    header: &[u8],
    base_offset: u64,
    last_offset_delta: u32,
    max_timestamp: i64,
) -> Option<ProducerBatch> {
    let field = |at: usize, n: usize| header.get(at..at + n);
    let id = i64::from_be_bytes(field(43, 8)?.try_into().ok()?);
    if id < 0 {
        return None;
    }
    let attributes = u16::from_be_bytes(field(21, 2)?.try_into().ok()?);
    let kind = if attributes & ATTR_CONTROL != 0 {
        BatchKind::Marker {
            commit: marker_type(header)?,
        }
    } else {
        BatchKind::Data {
            transactional: attributes & ATTR_TRANSACTIONAL != 0,
        }
    };
    let epoch = i16::from_be_bytes(field(51, 2)?.try_into().ok()?);
    let first = i32::from_be_bytes(field(53, 4)?.try_into().ok()?);
    Some(ProducerBatch {
        id,
        epoch,
        first,
        last: table::last_sequence(first, last_offset_delta),
        base_offset,
        max_timestamp,
        kind,
    })
}

/// The producer table of a partition whose log holds `segments` up to `end`: the newest
/// snapshot at or below `end`, and the batches from its offset folded in (from the first
/// segment without one).
pub(crate) fn rebuild(
    storage: &dyn Storage,
    dir: &Path,
    segments: &[Arc<Segment>],
    end: u64,
) -> Result<ProducerTable> {
    let (from, mut table) = snapshot::load_newest(storage, dir, end)?.unwrap_or_default();
    for segment in segments {
        if segment.next_offset() <= from || segment.format == Format::V1 {
            continue;
        }
        for batch in segment.batches_holding(from) {
            let batch = batch?;
            let h = &batch.header;
            if h.base_offset < from {
                continue;
            }
            if let Some(p) = producer_of(
                &batch.bytes,
                h.base_offset,
                h.last_offset_delta,
                h.max_timestamp,
            ) {
                table.fold(&p);
            }
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests;
