//! Loading a partition directory at open: finish or discard interrupted compaction
//! swaps, refuse a log whose first segment starts above its log start (deleted segments),
//! drop segments below the log start checkpoint, load or rebuild indexes, scan the
//! active segment unless the last shutdown was clean, end the log at a sealed segment
//! that lost its unsynced tail before its seal completed, and refuse damage to anything
//! the recovery point (or an index file) proves was durable (FORMAT.md, "Recovery").

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::activity::Activity;

use super::writer::{LOG_START_FILE, RECOVERY_POINT_FILE};
use super::{PartitionLog, PartitionPlace};
use crate::error::{KafkoError, Result};
use crate::naming::{parse_segment_file, segment_file};
use crate::producer_state;
use crate::segment::files::FileCache;
use crate::segment::index::{SegmentSummary, SparseIndex};
use crate::segment::recovery::{read_format, scan};
use crate::segment::{Segment, remove_index_files, remove_segment_files};
use crate::state_file;
use crate::storage::Storage;

/// Opens the partition in `dir`; `clean` says the last shutdown wrote its marker.
pub(crate) fn open_partition(
    (storage, files): (&Arc<dyn Storage>, &Arc<FileCache>),
    dir: PathBuf,
    topic: Arc<str>,
    partition: u32,
    clean: bool,
    activity: Arc<Activity>,
) -> Result<(Arc<PartitionLog>, Arc<Segment>)> {
    let s = &**storage;
    s.create_dir_all(&dir)
        .map_err(|e| KafkoError::io("creating", &dir, e))?;
    finish_interrupted_swaps(s, &dir)?;
    let mut bases = list_segments(s, &dir)?;
    let checkpoint: Option<u64> = state_file::read(s, &dir.join(LOG_START_FILE))?;
    // Every offset below it was fsynced: written after each seal and at clean shutdown.
    let recovery_point: Option<u64> = state_file::read(s, &dir.join(RECOVERY_POINT_FILE))?;
    // A log starts at offset 0 until retention saves a higher start, which it does
    // before it deletes a file.
    let log_start = checkpoint.unwrap_or(0);
    if let Some(&first) = bases.first().filter(|&&first| first > log_start) {
        // A crash cannot leave the log starting above its saved start: a first segment
        // (or more) was deleted.
        let path = dir.join(segment_file(log_start, "log"));
        return Err(missing_head(&dir, &path, log_start, first));
    }
    // A retention pass that crashed after the checkpoint leaves segments wholly below it.
    while bases.len() >= 2 && bases[1] <= log_start {
        let stale = bases.remove(0);
        remove_segment_files(s, &dir, stale)?;
        tracing::info!(%topic, partition, base = stale, "removed segment below the log start offset");
    }
    let (segments, log_start) = if bases.is_empty() {
        if let Some(durable) = recovery_point.filter(|&rp| rp > log_start) {
            let path = dir.join(segment_file(log_start, "log"));
            return Err(lost_offsets(&dir, &path, 0, log_start, durable));
        }
        (
            vec![Arc::new(Segment::create(s, &dir, log_start)?)],
            log_start,
        )
    } else {
        let segments = load_chain(
            (s, files),
            &dir,
            &bases,
            clean,
            recovery_point,
            (&topic, partition),
        )?;
        // The first segment starts at or below the log start (checked above).
        (segments, log_start)
    };
    let active = segments[segments.len() - 1].clone();
    let hw = active.next_offset();
    if let Some(durable) = recovery_point.filter(|&rp| rp > hw) {
        return Err(lost_offsets(
            &dir,
            &active.log_path,
            active.len(),
            hw,
            durable,
        ));
    }
    let place = PartitionPlace {
        topic,
        partition,
        dir,
        storage: storage.clone(),
        files: files.clone(),
        activity,
    };
    let producers = producer_state::rebuild(s, &place.dir, &segments, hw)?;
    let log = Arc::new(PartitionLog::new(
        place,
        segments,
        log_start.min(hw),
        hw,
        producers,
    ));
    Ok((log, active))
}

/// Loads the segments of `bases` in order into a gap-free chain: drops the empty file of
/// a failed roll, ends the log where a sealed segment lost its unsynced tail (dropping
/// the later segments), refuses any other gap as corruption, and rewrites the index
/// files that a scan rebuilt for the segments that stay sealed.
fn load_chain(
    (s, files): (&dyn Storage, &Arc<FileCache>),
    dir: &Path,
    bases: &[u64],
    clean: bool,
    recovery_point: Option<u64>,
    (topic, partition): (&Arc<str>, u32),
) -> Result<Vec<Arc<Segment>>> {
    let mut segments: Vec<Arc<Segment>> = Vec::with_capacity(bases.len());
    // Sealed segments whose indexes were rebuilt by a scan: their index files are
    // rewritten once it is known which segment ends up active.
    let mut rescanned = Vec::new();
    // Whether the previous segment may have lost an unsynced tail (see `Loaded`).
    let mut prev_unsealed = false;
    let last = bases.len() - 1;
    for (i, &base) in bases.iter().enumerate() {
        let known = Known {
            next_base: bases.get(i + 1).copied(),
            clean,
            recovery_point,
        };
        let loaded = load_segment(s, dir, base, known, (topic, partition))?;
        let joins = match segments.last() {
            Some(prev) => joins(prev, &loaded.seg, prev_unsealed)?,
            None => Joins::Follows,
        };
        match joins {
            Joins::Follows => {}
            Joins::FailedRoll => {
                // A roll that failed after creating its file: the writer kept appending
                // to the previous segment, past this one's base. It holds nothing.
                tracing::warn!(%topic, partition, path = %loaded.seg.log_path.display(), "removing the empty segment of a failed roll");
                drop(loaded);
                drop_segments(s, dir, &[base])?;
                continue;
            }
            Joins::AfterLostTail => {
                // The previous segment lost its unsynced tail at a batch boundary
                // (FORMAT.md, recovery rule 7): the log ends there.
                let prev = &segments[segments.len() - 1];
                tracing::warn!(%topic, partition, path = %prev.log_path.display(), dropped_segments = bases.len() - i, "a sealed segment lost its tail; dropping the segments after it");
                drop(loaded);
                drop_segments(s, dir, &bases[i..])?;
                break;
            }
        }
        if loaded.scanned {
            rescanned.push(segments.len());
        }
        segments.push(Arc::new(loaded.seg));
        if let [.., sealed, _] = &segments[..] {
            // Followed by another segment, so sealed: its descriptor joins the cache
            // (which keeps the open descriptors bounded while thousands load).
            sealed.release_file(files);
        }
        prev_unsealed = loaded.unsealed;
        if loaded.torn && i != last {
            // The power went before this segment's seal (fsync) completed and its tail
            // was lost: every later segment would follow a gap. The log ends here, and
            // this segment takes writes again (FORMAT.md, recovery rule 7).
            tracing::warn!(%topic, partition, path = %segments[segments.len() - 1].log_path.display(), dropped_segments = last - i, "a sealed segment lost its tail; dropping the segments after it");
            drop_segments(s, dir, &bases[i + 1..])?;
            break;
        }
    }
    write_rebuilt_indexes(s, &segments, &rescanned, (topic, partition));
    Ok(segments)
}

/// How a loaded segment joins the chain after `prev`.
enum Joins {
    /// It starts where `prev` ends.
    Follows,
    /// It is the empty file of a roll that failed: `prev` went on past its base.
    FailedRoll,
    /// It follows a gap left by `prev`, a sealed segment that may have lost its unsynced
    /// tail (see `Loaded`).
    AfterLostTail,
}

/// How `seg` joins the chain after `prev`; any other gap is corruption.
fn joins(prev: &Segment, seg: &Segment, prev_unsealed: bool) -> Result<Joins> {
    let end = prev.next_offset();
    if seg.base_offset < end && seg.len() == 0 {
        Ok(Joins::FailedRoll)
    } else if seg.base_offset == end {
        Ok(Joins::Follows)
    } else if seg.base_offset > end && prev_unsealed {
        Ok(Joins::AfterLostTail)
    } else {
        Err(KafkoError::corruption(
            &seg.log_path,
            0,
            format!(
                "segment starts at {} but the previous one ends at {end}",
                seg.base_offset
            ),
        ))
    }
}

/// Writes the index files a scan rebuilt (`rescanned` holds positions in `segments`) for
/// the segments that stay sealed; the active one's are written when it is sealed.
fn write_rebuilt_indexes(
    s: &dyn Storage,
    segments: &[Arc<Segment>],
    rescanned: &[usize],
    (topic, partition): (&str, u32),
) {
    for &at in rescanned {
        if at + 1 < segments.len()
            && let Err(e) = segments[at].write_indexes(s)
        {
            // On a full disk the rebuilt index serves from memory; the next open
            // rebuilds it again.
            tracing::warn!(%topic, partition, path = %segments[at].log_path.display(), error = %e, "could not write a rebuilt index; keeping it in memory");
        }
    }
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
            // One already gone (renamed or removed since the listing) is what we want.
            match s.remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(KafkoError::io("removing", &path, e));
                }
                _ => {}
            }
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

/// The error for a log that ends below its recovery point: acknowledged, fsynced offsets
/// are gone (a deleted or emptied segment). Logged as an ERROR with the range.
fn lost_offsets(dir: &Path, file: &Path, position: u64, end: u64, durable: u64) -> KafkoError {
    let checkpoint = dir.join(RECOVERY_POINT_FILE);
    tracing::error!(path = %file.display(), first_lost = end, last_lost = durable - 1, "the log lost offsets that were durable");
    KafkoError::corruption(
        file,
        position,
        format!(
            "the log ends at offset {end}, but offsets below {durable} were fsynced ({}): offsets {end}..{durable} are missing; restore the segment files, or remove that file to accept the loss",
            checkpoint.display()
        ),
    )
}

/// The error for a log whose first segment starts at `first`, above its log start
/// `log_start` (the saved one, else 0): its first segments were deleted, which neither a
/// crash nor retention does. Logged as an ERROR with the range.
fn missing_head(dir: &Path, file: &Path, log_start: u64, first: u64) -> KafkoError {
    let checkpoint = dir.join(LOG_START_FILE);
    tracing::error!(path = %file.display(), first_lost = log_start, last_lost = first - 1, "the log lost its first offsets");
    KafkoError::corruption(
        file,
        0,
        format!(
            "the log starts at offset {first}, but its log start is {log_start} ({}, 0 when absent): offsets {log_start}..{first} are missing; restore the segment files, or, to accept the loss, write {first} into that file (FORMAT.md, \"State files\")",
            checkpoint.display()
        ),
    )
}

/// What is known about a segment before it is loaded.
struct Known {
    /// The next segment's base offset; `None` for the active (last) segment.
    next_base: Option<u64>,
    /// Whether the last shutdown was clean.
    clean: bool,
    /// Every offset below it was fsynced (the partition's recovery point).
    recovery_point: Option<u64>,
}

impl Known {
    fn is_active(&self) -> bool {
        self.next_base.is_none()
    }
}

/// Deletes the segments with these base offsets, then makes that durable.
fn drop_segments(s: &dyn Storage, dir: &Path, bases: &[u64]) -> Result<()> {
    for &base in bases {
        remove_segment_files(s, dir, base)?;
    }
    s.sync_dir(dir)
        .map_err(|e| KafkoError::io("syncing directory", dir, e))
}

/// Loads the segment at `base`: from its index files when they can be trusted, else
/// by a scan of its log that cuts a torn tail, unless the tear lies in bytes that were
/// durable once.
fn load_segment(
    s: &dyn Storage,
    dir: &Path,
    base: u64,
    known: Known,
    (topic, partition): (&str, u32),
) -> Result<Loaded> {
    let log_path = dir.join(segment_file(base, "log"));
    let file = s
        .open(&log_path)
        .map_err(|e| KafkoError::io("opening", &log_path, e))?;
    let len = file
        .len()
        .map_err(|e| KafkoError::io("reading length of", &log_path, e))?;
    let proof = match read_indexes(s, &log_path, base, len, &known) {
        Indexes::Valid(index, summary) => {
            let format = read_format(&*file, &log_path, base)?;
            return Ok(Loaded {
                seg: Segment::new(base, log_path, format, file, summary, index),
                scanned: false,
                torn: false,
                unsealed: false,
            });
        }
        Indexes::Rebuild(proof) => proof,
    };
    if proof.consulted {
        tracing::warn!(%topic, partition, path = %log_path.display(), "index missing or invalid; rebuilding from the log");
    }
    if let Some(durable) = proof.durable_length
        && !known.is_active()
        && durable > len
    {
        return Err(KafkoError::corruption(
            &log_path,
            len,
            format!("sealed segment is {len} bytes long, but its index records {durable}"),
        ));
    }
    let scanned = scan(&*file, &log_path, base)?;
    if let Some((position, reason)) = &scanned.torn_tail {
        if proof.tear_was_durable(&known, *position, scanned.summary.next_offset) {
            return Err(KafkoError::corruption(
                &log_path,
                *position,
                format!("segment damaged below what was durable: {reason}"),
            ));
        }
        tracing::warn!(%topic, partition, path = %log_path.display(), position, reason, dropped_bytes = len - position, "truncating torn tail");
        file.truncate(*position)
            .map_err(|e| KafkoError::io("truncating", &log_path, e))?;
        file.sync_data()
            .map_err(|e| KafkoError::io("fsyncing", &log_path, e))?;
    }
    let torn = scanned.torn_tail.is_some();
    let seg = Segment::new(
        base,
        log_path,
        scanned.format,
        file,
        scanned.summary,
        scanned.index,
    );
    Ok(Loaded {
        unsealed: proof.may_have_lost_tail(&known, seg.len()),
        seg,
        scanned: true,
        torn,
    })
}

/// A segment's index files, as read at open.
enum Indexes {
    /// They can be trusted and match the log: the segment loads from them.
    Valid(SparseIndex, SegmentSummary),
    /// The log must be scanned; what they (and the recovery point) prove about it.
    Rebuild(Durability),
}

/// What is proven durable about a segment that is scanned.
struct Durability {
    /// Whether its index files were read (and were missing or invalid).
    consulted: bool,
    /// The log length an index file records: those bytes were fsynced before it was
    /// written.
    durable_length: Option<u64>,
    /// Whether this sealed segment is known to have been durable whole: the recovery
    /// point is past it, or an index file was written when it already ended where the
    /// next segment begins (a stale index, written while it was active, ends earlier).
    whole: bool,
}

/// Reads the index files of the segment at `log_path` (`len` bytes) where they can be
/// trusted: a sealed segment's are written only after its log was fsynced; the active
/// one only has trustworthy indexes after a clean shutdown.
fn read_indexes(s: &dyn Storage, log_path: &Path, base: u64, len: u64, known: &Known) -> Indexes {
    let mut proof = Durability {
        consulted: false,
        durable_length: None,
        whole: known
            .next_base
            .is_some_and(|next| known.recovery_point.is_some_and(|rp| rp >= next)),
    };
    if !known.is_active() || known.clean {
        let offsets = s
            .read(&log_path.with_extension("index"))
            .unwrap_or_default();
        let times = s
            .read(&log_path.with_extension("timeindex"))
            .unwrap_or_default();
        if let Some((index, summary)) = SparseIndex::decode(&offsets, &times, base, len) {
            return Indexes::Valid(index, summary);
        }
        let covered = SparseIndex::covered(&offsets, base);
        proof.consulted = true;
        proof.durable_length = covered.map(|c| c.log_length);
        proof.whole |= covered.is_some_and(|c| Some(c.next_offset) == known.next_base);
    }
    Indexes::Rebuild(proof)
}

impl Durability {
    /// Whether a tear at `position` (the scan ending at offset `scanned_end`) lies in bytes
    /// that were durable once: every seal completed before a clean shutdown, the recovery
    /// point or an index file proves the segment was fsynced past it, or offsets after it
    /// were. That is damage, not a power cut, and what follows it was acknowledged. (An
    /// index covering less than the tear is stale: written when this segment was the
    /// active one at a clean shutdown, before it grew.)
    fn tear_was_durable(&self, known: &Known, position: u64, scanned_end: u64) -> bool {
        let below_recovery_point = known.recovery_point.is_some_and(|rp| scanned_end < rp);
        let sealed_proof = known.clean
            || self.whole
            || self
                .durable_length
                .is_some_and(|durable| durable > position);
        (!known.is_active() && sealed_proof) || below_recovery_point
    }

    /// Whether the scanned segment, now `len` bytes long, may have lost an unsynced tail
    /// (see `Loaded`).
    fn may_have_lost_tail(&self, known: &Known, len: u64) -> bool {
        !known.is_active()
            && !known.clean
            && !self.whole
            && self.durable_length.is_none_or(|d| d < len)
    }
}
