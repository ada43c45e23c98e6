//! Loading a partition directory at open: finish or discard interrupted compaction
//! swaps, drop segments below the log start checkpoint, load or rebuild indexes, scan the
//! active segment unless the last shutdown was clean, and end the log at a sealed segment
//! that lost its unsynced tail before its seal completed (FORMAT.md, "Recovery").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::Notify;

use super::writer::LOG_START_FILE;
use super::{PartitionLog, PartitionPlace};
use crate::error::{KafkoError, Result};
use crate::naming::{parse_segment_file, segment_file};
use crate::segment::index::SparseIndex;
use crate::segment::recovery::scan;
use crate::segment::{Segment, remove_index_files, remove_segment_files};
use crate::state_file;
use crate::storage::Storage;

/// Opens the partition in `dir`; `clean` says the last shutdown wrote its marker.
pub(crate) fn open_partition(
    storage: &Arc<dyn Storage>,
    dir: PathBuf,
    topic: Arc<str>,
    partition: u32,
    clean: bool,
    activity: Arc<Notify>,
) -> Result<(Arc<PartitionLog>, Arc<Segment>)> {
    let s = &**storage;
    s.create_dir_all(&dir)
        .map_err(|e| KafkoError::io("creating", &dir, e))?;
    finish_interrupted_swaps(s, &dir)?;
    let mut bases = list_segments(s, &dir)?;
    let checkpoint: Option<u64> = state_file::read(s, &dir.join(LOG_START_FILE))?;
    let mut log_start = checkpoint.unwrap_or_else(|| bases.first().copied().unwrap_or(0));
    // A retention pass that crashed after the checkpoint leaves segments wholly below it.
    while bases.len() >= 2 && bases[1] <= log_start {
        let stale = bases.remove(0);
        remove_segment_files(s, &dir, stale)?;
        tracing::info!(%topic, partition, base = stale, "removed segment below the log start offset");
    }
    if bases.is_empty() {
        let seg = Arc::new(Segment::create(s, &dir, log_start)?);
        let place = PartitionPlace {
            topic,
            partition,
            dir,
            storage: storage.clone(),
            activity,
        };
        let log = Arc::new(PartitionLog::new(
            place,
            vec![seg.clone()],
            log_start,
            log_start,
        ));
        return Ok((log, seg));
    }
    log_start = log_start.max(bases[0]);
    let mut segments: Vec<Arc<Segment>> = Vec::with_capacity(bases.len());
    // Sealed segments whose indexes were rebuilt by a scan: their index files are
    // rewritten once it is known which segment ends up active.
    let mut rescanned = Vec::new();
    // Whether the previous segment may have lost an unsynced tail (see `Loaded`).
    let mut prev_unsealed = false;
    let last = bases.len() - 1;
    for (i, &base) in bases.iter().enumerate() {
        let Loaded {
            seg,
            scanned,
            torn,
            unsealed,
        } = load_segment(s, &dir, base, i == last, clean, &topic, partition)?;
        if let Some(prev) = segments.last() {
            if seg.base_offset < prev.next_offset() && seg.len() == 0 {
                // A roll that failed after creating its file: the writer kept appending
                // to the previous segment, past this one's base. It holds nothing.
                tracing::warn!(%topic, partition, path = %seg.log_path.display(), "removing the empty segment of a failed roll");
                drop(seg);
                remove_segment_files(s, &dir, base)?;
                s.sync_dir(&dir)
                    .map_err(|e| KafkoError::io("syncing directory", &dir, e))?;
                continue;
            }
            if seg.base_offset != prev.next_offset() {
                if seg.base_offset > prev.next_offset() && prev_unsealed {
                    // The previous segment lost its unsynced tail at a batch boundary
                    // (FORMAT.md, recovery rule 7): the log ends there.
                    tracing::warn!(%topic, partition, path = %prev.log_path.display(), dropped_segments = bases.len() - i, "a sealed segment lost its tail; dropping the segments after it");
                    drop(seg);
                    drop_segments(s, &dir, &bases[i..])?;
                    break;
                }
                return Err(KafkoError::corruption(
                    &seg.log_path,
                    0,
                    format!(
                        "segment starts at {} but the previous one ends at {}",
                        seg.base_offset,
                        prev.next_offset()
                    ),
                ));
            }
        }
        if scanned {
            rescanned.push(segments.len());
        }
        segments.push(Arc::new(seg));
        prev_unsealed = unsealed;
        if torn && i != last {
            // The power went before this segment's seal (fsync) completed and its tail
            // was lost: every later segment would follow a gap. The log ends here, and
            // this segment takes writes again (FORMAT.md, recovery rule 7).
            tracing::warn!(%topic, partition, path = %segments[segments.len() - 1].log_path.display(), dropped_segments = last - i, "a sealed segment lost its tail; dropping the segments after it");
            drop_segments(s, &dir, &bases[i + 1..])?;
            break;
        }
    }
    for &at in &rescanned {
        if at + 1 < segments.len() {
            segments[at].write_indexes(s)?;
        }
    }
    let active = segments[segments.len() - 1].clone();
    let hw = active.next_offset();
    let log_start = log_start.min(hw);
    let place = PartitionPlace {
        topic,
        partition,
        dir,
        storage: storage.clone(),
        activity,
    };
    let log = Arc::new(PartitionLog::new(place, segments, log_start, hw));
    Ok((log, active))
}

fn list_segments(s: &dyn Storage, dir: &Path) -> Result<Vec<u64>> {
    let mut bases = Vec::new();
    for path in s
        .list_dir(dir)
        .map_err(|e| KafkoError::io("listing", dir, e))?
    {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(".tmp") || name.ends_with(".cleaned") {
            // Leftovers of an interrupted state-file replace or compaction: never live data.
            s.remove_file(&path)
                .map_err(|e| KafkoError::io("removing", &path, e))?;
            continue;
        }
        if let Some(base) = parse_segment_file(name) {
            bases.push(base);
        }
    }
    bases.sort_unstable();
    Ok(bases)
}

/// A `.swap` file is a compacted segment whose swap passed its commit point: complete it.
fn finish_interrupted_swaps(s: &dyn Storage, dir: &Path) -> Result<()> {
    for path in s
        .list_dir(dir)
        .map_err(|e| KafkoError::io("listing", dir, e))?
    {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let Some(base) = name
            .strip_suffix(".swap")
            .and_then(|stem| parse_segment_file(&format!("{stem}.log")))
        else {
            continue;
        };
        let file = s
            .open(&path)
            .map_err(|e| KafkoError::io("opening", &path, e))?;
        let scanned = scan(&*file, &path, base)?;
        drop(file);
        for other in list_segments(s, dir)? {
            if other >= base && other < scanned.summary.next_offset.max(base + 1) {
                remove_segment_files(s, dir, other)?;
            }
        }
        // The replaced segment at `base` may be gone already while its index files are
        // not (the swap was cut between the two): they describe the old log.
        remove_index_files(s, dir, base)?;
        s.sync_dir(dir)
            .map_err(|e| KafkoError::io("syncing directory", dir, e))?;
        let log_path = dir.join(segment_file(base, "log"));
        s.rename(&path, &log_path)
            .map_err(|e| KafkoError::io("renaming", &path, e))?;
        s.sync_dir(dir)
            .map_err(|e| KafkoError::io("syncing directory", dir, e))?;
        tracing::info!(path = %log_path.display(), "completed an interrupted compaction swap");
    }
    Ok(())
}

/// A segment as loaded: `scanned` when its indexes were rebuilt from the log, `torn` when
/// that scan cut a torn tail, `unsealed` when it may have lost an unsynced tail (a sealed
/// segment scanned after an unclean shutdown with no index file proving it whole).
struct Loaded {
    seg: Segment,
    scanned: bool,
    torn: bool,
    unsealed: bool,
}

/// Deletes the segments with these base offsets (recovery rule 7), then makes it durable.
fn drop_segments(s: &dyn Storage, dir: &Path, bases: &[u64]) -> Result<()> {
    for &base in bases {
        remove_segment_files(s, dir, base)?;
    }
    s.sync_dir(dir)
        .map_err(|e| KafkoError::io("syncing directory", dir, e))
}

fn load_segment(
    s: &dyn Storage,
    dir: &Path,
    base: u64,
    is_active: bool,
    clean: bool,
    topic: &str,
    partition: u32,
) -> Result<Loaded> {
    let log_path = dir.join(segment_file(base, "log"));
    let file = s
        .open(&log_path)
        .map_err(|e| KafkoError::io("opening", &log_path, e))?;
    let len = file
        .len()
        .map_err(|e| KafkoError::io("reading length of", &log_path, e))?;
    // A sealed segment's index files are written only after its log was fsynced; the
    // active one only has trustworthy indexes after a clean shutdown.
    let mut durable_length = None;
    if !is_active || clean {
        let offsets = s
            .read(&log_path.with_extension("index"))
            .unwrap_or_default();
        let times = s
            .read(&log_path.with_extension("timeindex"))
            .unwrap_or_default();
        if let Some((index, summary)) = SparseIndex::decode(&offsets, &times, base, len) {
            return Ok(Loaded {
                seg: Segment::new(base, log_path, file, summary, index),
                scanned: false,
                torn: false,
                unsealed: false,
            });
        }
        durable_length = SparseIndex::covered_length(&offsets, base);
        tracing::warn!(%topic, partition, path = %log_path.display(), "index missing or invalid; rebuilding from the log");
    }
    if let Some(durable) = durable_length
        && !is_active
        && durable > len
    {
        return Err(KafkoError::corruption(
            &log_path,
            len,
            format!("sealed segment is {len} bytes long, but its index records {durable}"),
        ));
    }
    let scanned = scan(&*file, &log_path, base)?;
    if let Some((position, reason)) = &scanned.torn_tail
        && !is_active
        && (clean || durable_length.is_some_and(|durable| durable > *position))
    {
        // The tear lies in bytes that were durable once: every seal completed before a
        // clean shutdown, and an index file records the length fsynced before it was
        // written. That is damage, not a power cut, and later segments follow it. (An
        // index covering less than the tear is stale: written when this segment was the
        // active one at a clean shutdown, before it grew.)
        return Err(KafkoError::corruption(
            &log_path,
            *position,
            format!("sealed segment damaged: {reason}"),
        ));
    }
    if let Some((position, reason)) = &scanned.torn_tail {
        tracing::warn!(%topic, partition, path = %log_path.display(), position, reason, dropped_bytes = len - position, "truncating torn tail");
        file.truncate(*position)
            .map_err(|e| KafkoError::io("truncating", &log_path, e))?;
        file.sync_data()
            .map_err(|e| KafkoError::io("fsyncing", &log_path, e))?;
    }
    let torn = scanned.torn_tail.is_some();
    let seg = Segment::new(base, log_path, file, scanned.summary, scanned.index);
    Ok(Loaded {
        unsealed: !is_active && !clean && durable_length.is_none_or(|d| d < seg.len()),
        seg,
        scanned: true,
        torn,
    })
}
