//! Installing a compacted segment: the writer swaps it in for the run of sealed segments
//! it replaces, in the crash-safe order of FORMAT.md ("Compaction").

use std::path::Path;
use std::sync::Arc;

use super::Writer;
use crate::error::{KafkoError, Result};
use crate::naming::segment_file;
use crate::partition::command::SegmentSwap;
use crate::segment::Segment;

impl Writer {
    /// Installs a compacted segment in place of a run of sealed ones (crash-safe order:
    /// `.cleaned` → `.swap` (commit point) → delete old → `.swap` → `.log`).
    /// Waits for a pending seal first: it may cover a segment this replaces (a failed
    /// seal poisons the partition, refused just below).
    pub(super) async fn install_swap(&mut self, swap: SegmentSwap) -> Result<()> {
        let _ = self.finish_seal().await;
        if let Some(reason) = self.poisoned.as_ref().or(self.swap_unfinished.as_ref()) {
            let _ = self.storage.remove_file(&swap.cleaned_path);
            return Err(self.read_only_error(reason));
        }
        let segments = self.log.segments();
        let Some(first) = segments
            .iter()
            .position(|s| Some(&s.base_offset) == swap.replaced.first())
        else {
            let _ = self.storage.remove_file(&swap.cleaned_path);
            return Err(KafkoError::InvalidRequest {
                reason: "segments changed during compaction".into(),
            });
        };
        let end = first + swap.replaced.len();
        let still_same = end < segments.len()
            && segments[first..end]
                .iter()
                .map(|s| s.base_offset)
                .eq(swap.replaced.iter().copied());
        if !still_same {
            let _ = self.storage.remove_file(&swap.cleaned_path);
            return Err(KafkoError::InvalidRequest {
                reason: "segments changed during compaction".into(),
            });
        }
        // The cleaned segment must cover exactly the replaced range: recovery of an
        // interrupted swap deletes `[base, next_offset)` of the `.swap` file.
        let range_end = segments[end - 1].next_offset();
        if swap.summary.base_offset != segments[first].base_offset
            || swap.summary.next_offset != range_end
        {
            let _ = self.storage.remove_file(&swap.cleaned_path);
            return Err(KafkoError::corruption(
                &swap.cleaned_path,
                0,
                format!(
                    "cleaned segment spans {}..{}, replaced segments span {}..{range_end}",
                    swap.summary.base_offset, swap.summary.next_offset, segments[first].base_offset
                ),
            ));
        }
        let dir = self.log.dir.clone();
        fn io<'a>(op: &'static str, p: &'a Path) -> impl FnOnce(std::io::Error) -> KafkoError + 'a {
            move |e| KafkoError::io(op, p.to_path_buf(), e)
        }
        let base = swap.summary.base_offset;
        let swap_path = dir.join(segment_file(base, "swap"));
        let log_path = dir.join(segment_file(base, "log"));
        self.storage
            .rename(&swap.cleaned_path, &swap_path)
            .map_err(io("renaming", &swap_path))?;
        // Past the commit point the swap can only go forward, and if a step fails only
        // recovery (FORMAT.md rule 6) can finish it. Until a restart the partition takes
        // no further swaps: a later swap of an overlapping range would leave this
        // `.swap` behind, and the next open would resurrect it as a segment overlapping
        // its neighbour (refused as corruption). Writes and reads are unaffected.
        let committed = (|| {
            self.storage
                .sync_dir(&dir)
                .map_err(io("syncing directory", &dir))?;
            for seg in &segments[first..end] {
                seg.remove_files(&*self.storage)?;
            }
            self.storage
                .sync_dir(&dir)
                .map_err(io("syncing directory", &dir))?;
            self.storage
                .rename(&swap_path, &log_path)
                .map_err(io("renaming", &log_path))?;
            self.storage
                .sync_dir(&dir)
                .map_err(io("syncing directory", &dir))?;
            let file = self
                .storage
                .open(&log_path)
                .map_err(io("opening", &log_path))?;
            let cleaned = Arc::new(Segment::new(base, log_path, file, swap.summary, swap.index));
            cleaned.write_indexes(&*self.storage)?;
            Ok(cleaned)
        })();
        let cleaned = match committed {
            Ok(c) => c,
            Err(e) => {
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
        Ok(())
    }
}
