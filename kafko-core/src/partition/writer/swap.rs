//! Installing a compacted segment: the writer swaps it in for the run of sealed segments
//! it replaces, in the crash-safe order of FORMAT.md ("Compaction"). The file work runs
//! on the blocking pool; the writer only checks the run and publishes the result.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::Writer;
use crate::error::{KafkoError, Result};
use crate::naming::segment_file;
use crate::partition::command::{SegmentSwap, SwapOutcome};
use crate::segment::Segment;
use crate::segment::batch::Format;
use crate::storage::{Storage, blocking};

/// How installing the files failed: before the commit point (nothing changed), or past
/// it (only recovery can finish the swap).
enum SwapFailure {
    NotCommitted(KafkoError),
    Committed(KafkoError),
}

impl Writer {
    /// Installs a compacted segment in place of a run of sealed ones (crash-safe order:
    /// `.cleaned` → `.swap` (commit point) → delete old → `.swap` → `.log`).
    /// Waits for a pending seal first: it may cover a segment this replaces (a failed
    /// seal poisons the partition, refused just below).
    pub(crate) async fn install_swap(&mut self, swap: SegmentSwap) -> Result<SwapOutcome> {
        let _ = self.finish_seal().await;
        if let Some(reason) = self.poison.get().or(self.swap_unfinished.as_deref()) {
            let err = self.read_only_error(reason);
            self.discard_cleaned(swap.cleaned_path).await;
            return Err(err);
        }
        let segments = self.log.segments();
        let first = segments
            .iter()
            .position(|s| Some(&s.base_offset) == swap.replaced.first());
        let still_same = first.is_some_and(|first| {
            let end = first + swap.replaced.len();
            end < segments.len()
                && segments[first..end]
                    .iter()
                    .map(|s| s.base_offset)
                    .eq(swap.replaced.iter().copied())
        });
        let Some(first) = first.filter(|_| still_same) else {
            self.discard_cleaned(swap.cleaned_path).await;
            return Ok(SwapOutcome::SegmentsChanged);
        };
        let end = first + swap.replaced.len();
        // The cleaned segment must cover exactly the replaced range: recovery of an
        // interrupted swap deletes `[base, next_offset)` of the `.swap` file.
        let range_end = segments[end - 1].next_offset();
        if swap.summary.base_offset != segments[first].base_offset
            || swap.summary.next_offset != range_end
        {
            let err = KafkoError::corruption(
                &swap.cleaned_path,
                0,
                format!(
                    "cleaned segment spans {}..{}, replaced segments span {}..{range_end}",
                    swap.summary.base_offset, swap.summary.next_offset, segments[first].base_offset
                ),
            );
            self.discard_cleaned(swap.cleaned_path).await;
            return Err(err);
        }
        let storage = self.storage.clone();
        let dir = self.log.dir.clone();
        let replaced: Vec<Arc<Segment>> = segments[first..end].to_vec();
        let files = self.log.files.clone();
        let installed = blocking("installing a compacted segment", move || {
            Ok(install_files(&*storage, &dir, swap, &replaced)
                .inspect(|cleaned| cleaned.release_file(&files)))
        })
        .await
        .unwrap_or_else(|panicked| Err(SwapFailure::Committed(panicked)));
        let cleaned = match installed {
            Ok(c) => c,
            Err(SwapFailure::NotCommitted(e)) => return Err(e),
            Err(SwapFailure::Committed(e)) => {
                // Past the commit point the swap can only go forward, and only recovery
                // (FORMAT.md rule 6) can finish it. Until a restart the partition takes no
                // further swaps: a later swap of an overlapping range would leave this
                // `.swap` behind, and the next open would resurrect it as a segment
                // overlapping its neighbour (refused as corruption). Writes and reads are
                // unaffected.
                let reason = format!("a compaction swap failed past its commit point: {e}");
                tracing::error!(topic = %self.log.topic, partition = self.log.partition, %reason, "compaction stops until a restart");
                self.swap_unfinished = Some(reason);
                return Err(e);
            }
        };
        let mut next: Vec<_> = segments[..first].to_vec();
        next.push(cleaned);
        next.extend(segments[end..].iter().cloned());
        self.log.set_segments(next);
        Ok(SwapOutcome::Installed)
    }

    /// Removes a cleaned segment that will not be installed (best effort: the next open
    /// removes `.cleaned` leftovers anyway).
    async fn discard_cleaned(&self, path: PathBuf) {
        let storage = self.storage.clone();
        let _ = blocking("discarding a cleaned segment", move || {
            let _ = storage.remove_file(&path);
            Ok(())
        })
        .await;
    }
}

/// The file steps of a swap, in their crash-safe order.
fn install_files(
    s: &dyn Storage,
    dir: &Path,
    swap: SegmentSwap,
    replaced: &[Arc<Segment>],
) -> std::result::Result<Arc<Segment>, SwapFailure> {
    fn io<'a>(op: &'static str, p: &'a Path) -> impl FnOnce(std::io::Error) -> KafkoError + 'a {
        move |e| KafkoError::io(op, p.to_path_buf(), e)
    }
    let base = swap.summary.base_offset;
    let swap_path = dir.join(segment_file(base, "swap"));
    let log_path = dir.join(segment_file(base, "log"));
    s.rename(&swap.cleaned_path, &swap_path)
        .map_err(io("renaming", &swap_path))
        .map_err(SwapFailure::NotCommitted)?;
    let committed = || -> Result<Arc<Segment>> {
        s.sync_dir(dir).map_err(io("syncing directory", dir))?;
        for seg in replaced {
            seg.remove_files(s)?;
        }
        s.sync_dir(dir).map_err(io("syncing directory", dir))?;
        s.rename(&swap_path, &log_path)
            .map_err(io("renaming", &log_path))?;
        s.sync_dir(dir).map_err(io("syncing directory", dir))?;
        let file = s.open(&log_path).map_err(io("opening", &log_path))?;
        let cleaned = Arc::new(Segment::new(
            base,
            log_path.clone(),
            Format::V2,
            file,
            swap.summary,
            swap.index,
        ));
        cleaned.write_indexes(s)?;
        Ok(cleaned)
    };
    committed().map_err(SwapFailure::Committed)
}
