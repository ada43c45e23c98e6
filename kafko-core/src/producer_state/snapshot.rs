//! Producer state snapshots: `<offset>.producers`, the fold of every batch below
//! `<offset>` as a state file (FORMAT.md, "Producer state"). Written at a roll and at a
//! clean shutdown, so that an open folds only what came after; the two newest are kept.
//! A snapshot is a cache: a damaged one is skipped, never fatal. Version 2 adds each
//! producer's open transaction and the partition's aborted transactions; a version 1
//! snapshot (written before transactions) has neither.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::table::{AbortedTransaction, ProducerEntry, ProducerTable, WrittenBatch};
use crate::error::{KafkoError, Result};
use crate::naming::{parse_offset_file, segment_file};
use crate::state_file;
use crate::storage::Storage;

/// The extension of a snapshot file.
const EXTENSION: &str = "producers";
/// Snapshots kept per partition.
const KEPT: usize = 2;
/// The body version written; 1 is read too.
const VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
struct Body {
    version: u32,
    producers: Vec<Entry>,
    /// `[producer_id, first_offset, last_offset]`, by ascending last offset.
    #[serde(default)]
    aborted: Vec<(i64, u64, u64)>,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    id: i64,
    epoch: i16,
    last_timestamp: i64,
    /// `[first, last, base_offset]`, oldest first.
    batches: Vec<(i32, i32, u64)>,
    /// The first offset of its open transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    txn_first: Option<u64>,
}

fn path_of(dir: &Path, offset: u64) -> PathBuf {
    dir.join(segment_file(offset, EXTENSION))
}

/// The offsets of the snapshots in `dir`, oldest first.
fn list(storage: &dyn Storage, dir: &Path) -> Result<Vec<u64>> {
    let mut offsets: Vec<u64> = storage
        .list_dir(dir)
        .map_err(|e| KafkoError::io("listing", dir, e))?
        .iter()
        .filter_map(|p| parse_offset_file(p.file_name()?.to_str()?, EXTENSION))
        .collect();
    offsets.sort_unstable();
    Ok(offsets)
}

fn remove(storage: &dyn Storage, path: &Path) -> Result<()> {
    match storage.remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(KafkoError::io("removing", path, e))
        }
        _ => Ok(()),
    }
}

/// Writes the snapshot of `table` at `offset` (atomically, durably), then removes all
/// but the two newest.
pub(crate) fn write(
    storage: &dyn Storage,
    dir: &Path,
    offset: u64,
    table: &ProducerTable,
) -> Result<()> {
    let mut producers: Vec<Entry> = table
        .entries
        .iter()
        .map(|(&id, e)| Entry {
            id,
            epoch: e.epoch,
            last_timestamp: e.last_timestamp,
            batches: e
                .batches
                .iter()
                .map(|b| (b.first, b.last, b.base_offset))
                .collect(),
            txn_first: e.txn_first,
        })
        .collect();
    producers.sort_by_key(|e| e.id);
    let body = Body {
        version: VERSION,
        producers,
        aborted: table
            .aborted
            .iter()
            .map(|a| (a.producer_id, a.first_offset, a.last_offset))
            .collect(),
    };
    state_file::write(storage, &path_of(dir, offset), &body)?;
    let offsets = list(storage, dir)?;
    let stale = offsets.len().saturating_sub(KEPT);
    let mut removed = false;
    for &old in &offsets[..stale] {
        remove(storage, &path_of(dir, old))?;
        removed = true;
    }
    if removed {
        storage
            .sync_dir(dir)
            .map_err(|e| KafkoError::io("fsyncing", dir, e))?;
    }
    Ok(())
}

/// The newest readable snapshot at or below `end` (the log's end), with its offset.
/// Snapshots above `end` describe offsets the log no longer holds: they are removed. A
/// damaged snapshot is logged and passed over for an older one.
pub(crate) fn load_newest(
    storage: &dyn Storage,
    dir: &Path,
    end: u64,
) -> Result<Option<(u64, ProducerTable)>> {
    let offsets = list(storage, dir)?;
    let mut removed = false;
    for &offset in offsets.iter().rev() {
        let path = path_of(dir, offset);
        if offset > end {
            remove(storage, &path)?;
            removed = true;
            continue;
        }
        match read(storage, &path) {
            Ok(Some(table)) => {
                if removed {
                    storage
                        .sync_dir(dir)
                        .map_err(|e| KafkoError::io("fsyncing", dir, e))?;
                }
                return Ok(Some((offset, table)));
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "skipping a damaged producer state snapshot");
            }
        }
    }
    if removed {
        storage
            .sync_dir(dir)
            .map_err(|e| KafkoError::io("fsyncing", dir, e))?;
    }
    Ok(None)
}

fn read(storage: &dyn Storage, path: &Path) -> Result<Option<ProducerTable>> {
    let Some(body) = state_file::read::<Body>(storage, path)? else {
        return Ok(None);
    };
    if body.version != 1 && body.version != VERSION {
        return Err(KafkoError::corruption(
            path,
            state_file::BODY_OFFSET,
            format!("unknown producer state version {}", body.version),
        ));
    }
    let mut table = ProducerTable::default();
    for e in body.producers {
        let batches: VecDeque<WrittenBatch> = e
            .batches
            .iter()
            .map(|&(first, last, base_offset)| WrittenBatch {
                first,
                last,
                base_offset,
            })
            .collect();
        table.entries.insert(
            e.id,
            ProducerEntry {
                epoch: e.epoch,
                batches,
                last_timestamp: e.last_timestamp,
                txn_first: e.txn_first,
            },
        );
    }
    table.index_open();
    table.aborted = body
        .aborted
        .iter()
        .map(
            |&(producer_id, first_offset, last_offset)| AbortedTransaction {
                producer_id,
                first_offset,
                last_offset,
            },
        )
        .collect();
    Ok(Some(table))
}

#[cfg(test)]
mod tests {
    use super::super::table::{BatchKind, ProducerBatch};
    use super::*;
    use crate::storage::StdStorage;

    fn table_of(ids: &[i64]) -> ProducerTable {
        let mut t = ProducerTable::default();
        for (i, &id) in ids.iter().enumerate() {
            let offset = u64::try_from(i).unwrap();
            t.fold(&ProducerBatch {
                id,
                epoch: 2,
                first: 0,
                last: 9,
                base_offset: offset * 10,
                max_timestamp: 77,
                kind: BatchKind::Data {
                    transactional: false,
                },
            });
        }
        t
    }

    #[test]
    fn a_snapshot_round_trips_and_only_the_two_newest_stay() {
        let dir = tempfile::tempdir().unwrap();
        let s = StdStorage;
        for (offset, ids) in [(10, vec![1]), (20, vec![1, 2]), (30, vec![1, 2, 3])] {
            write(&s, dir.path(), offset, &table_of(&ids)).unwrap();
        }
        assert_eq!(list(&s, dir.path()).unwrap(), vec![20, 30]);
        let (offset, table) = load_newest(&s, dir.path(), 100).unwrap().unwrap();
        assert_eq!((offset, table), (30, table_of(&[1, 2, 3])));
    }

    #[test]
    fn snapshots_past_the_log_end_go_and_a_damaged_one_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let s = StdStorage;
        write(&s, dir.path(), 20, &table_of(&[1])).unwrap();
        write(&s, dir.path(), 30, &table_of(&[1, 2])).unwrap();
        // Past the end of a log cut back by recovery.
        let (offset, _) = load_newest(&s, dir.path(), 25).unwrap().unwrap();
        assert_eq!(offset, 20);
        assert_eq!(list(&s, dir.path()).unwrap(), vec![20]);
        write(&s, dir.path(), 25, &table_of(&[1, 2])).unwrap();
        let newest = path_of(dir.path(), 25);
        let mut bytes = std::fs::read(&newest).unwrap();
        let last = bytes.len() - 2;
        bytes[last] ^= 0xff;
        std::fs::write(&newest, bytes).unwrap();
        let (offset, table) = load_newest(&s, dir.path(), 25).unwrap().unwrap();
        assert_eq!((offset, table), (20, table_of(&[1])));
        assert!(load_newest(&s, dir.path(), 5).unwrap().is_none());
    }

    #[test]
    fn open_and_aborted_transactions_round_trip_and_a_version_1_snapshot_has_none() {
        let dir = tempfile::tempdir().unwrap();
        let s = StdStorage;
        let mut t = table_of(&[1]);
        let data = |id, base_offset| ProducerBatch {
            id,
            epoch: 0,
            first: 0,
            last: 0,
            base_offset,
            max_timestamp: 5,
            kind: BatchKind::Data {
                transactional: true,
            },
        };
        t.fold(&data(8, 10));
        t.fold(&ProducerBatch {
            first: -1,
            last: -1,
            kind: BatchKind::Marker { commit: false },
            ..data(8, 12)
        });
        t.fold(&data(9, 13));
        assert_eq!(t.first_open(), Some(13));
        write(&s, dir.path(), 20, &t).unwrap();
        let (_, read) = load_newest(&s, dir.path(), 20).unwrap().unwrap();
        assert_eq!(read, t);
        assert_eq!(read.first_open(), Some(13));
        assert_eq!(read.aborted_in(0, 20).len(), 1);

        // A snapshot written before transactions: no such members.
        #[derive(Serialize)]
        struct V1 {
            version: u32,
            producers: Vec<serde_json::Value>,
        }
        let v1 = V1 {
            version: 1,
            producers: vec![serde_json::json!({
                "id": 4, "epoch": 2, "last_timestamp": 77, "batches": [[0, 9, 0]]
            })],
        };
        state_file::write(&s, &path_of(dir.path(), 30), &v1).unwrap();
        let (offset, read) = load_newest(&s, dir.path(), 30).unwrap().unwrap();
        assert_eq!(offset, 30);
        assert_eq!(read.entries[&4].txn_first, None);
        assert_eq!(read.first_open(), None);
        assert!(read.aborted.is_empty());
    }
}
