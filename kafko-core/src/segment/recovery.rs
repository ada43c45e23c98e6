//! The open-time scan of a segment (FORMAT.md, "Recovery rules"): verify every batch,
//! rebuild the sparse indexes, tell a torn tail (truncate) from corruption (refuse).

use std::path::Path;

use super::batch::{BatchHeader, HEADER_LEN, crc_matches};
use super::index::{self, SegmentSummary, SparseIndex};
use super::reader::{BatchFault, BatchIter, FramedBatch, read_full};
use crate::convert::usize_saturating;
use crate::error::{KafkoError, Result};
use crate::storage::StorageFile;

/// Result of scanning one segment.
#[derive(Debug)]
pub(crate) struct Scanned {
    pub(crate) summary: SegmentSummary,
    pub(crate) index: SparseIndex,
    /// `Some((position, reason))` when bytes after `summary.log_length` must be cut.
    pub(crate) torn_tail: Option<(u64, String)>,
}

/// Refuses a batch that does not start at or past the offset the previous one ended at,
/// or that lies beyond the index's 32-bit reach from the segment's base.
fn check_follows(
    path: &Path,
    position: u64,
    batch_base: u64,
    next_offset: u64,
    segment_base: u64,
) -> Result<()> {
    if batch_base < next_offset || batch_base - segment_base > u64::from(u32::MAX) {
        return Err(KafkoError::corruption(
            path,
            position,
            format!("batch base offset {batch_base} does not follow {next_offset}"),
        ));
    }
    Ok(())
}

/// Scans a whole segment file. Errors with `Corruption` when a bad batch is followed by a
/// valid one, since cutting there would silently drop acknowledged records.
pub(crate) fn scan(file: &dyn StorageFile, path: &Path, base_offset: u64) -> Result<Scanned> {
    let file_len = file
        .len()
        .map_err(|e| KafkoError::io("reading length of", path, e))?;
    let mut iter = BatchIter::new(file, 0, file_len);
    let mut read = ScanState {
        index: SparseIndex::default(),
        next_offset: base_offset,
        max_timestamp: i64::MIN,
    };
    let mut torn_tail = None;
    // Where the append whose batches are being read began, while more of them follow.
    let mut open_append: Option<AppendStart> = None;
    while let Some(item) = iter.next_batch() {
        match item {
            Ok(batch) => {
                if !batch.header.continued {
                    open_append = None;
                } else if open_append.is_none() {
                    open_append = Some(AppendStart {
                        position: batch.position,
                        before: read.clone(),
                    });
                }
                read.observe(path, &batch, base_offset)?;
            }
            Err(BatchFault::Io(e)) => {
                return Err(KafkoError::io("scanning", path, std::io::Error::other(e)));
            }
            Err(fault) => {
                let position = iter.position();
                if let Some(valid_at) =
                    valid_batch_after(file, position, file_len, read.next_offset)?
                {
                    return Err(KafkoError::corruption(
                        path,
                        position,
                        format!("{fault:?} followed by a valid batch at byte {valid_at}"),
                    ));
                }
                torn_tail = Some((position, format!("{fault:?}")));
                break;
            }
        }
    }
    // The log ends inside an append of several batches: it was never acknowledged
    // (the writer answers once the whole append is written), and it goes whole.
    if let Some(start) = open_append {
        let ends_at = torn_tail.as_ref().map_or(file_len, |(p, _)| *p);
        torn_tail = Some((
            start.position,
            format!("an append of several batches ends at byte {ends_at} without its last batch"),
        ));
        read = start.before;
    }
    Ok(Scanned {
        summary: SegmentSummary {
            base_offset,
            log_length: torn_tail.as_ref().map_or(file_len, |(p, _)| *p),
            next_offset: read.next_offset,
            max_timestamp: read.max_timestamp,
        },
        index: read.index,
        torn_tail,
    })
}

/// What a scan has read so far.
#[derive(Clone)]
struct ScanState {
    index: SparseIndex,
    next_offset: u64,
    max_timestamp: i64,
}

impl ScanState {
    /// Takes in the next valid batch, which must follow the ones before it.
    fn observe(&mut self, path: &Path, batch: &FramedBatch, segment_base: u64) -> Result<()> {
        let h = &batch.header;
        check_follows(
            path,
            batch.position,
            h.base_offset,
            self.next_offset,
            segment_base,
        )?;
        self.index.observe(
            index::narrow(h.base_offset - segment_base),
            index::narrow(batch.position),
            h.framed_len() as u64,
            h.max_timestamp,
        );
        self.next_offset = h.next_offset();
        self.max_timestamp = self.max_timestamp.max(h.max_timestamp);
        Ok(())
    }
}

/// Where an append of several batches began, and what the scan had read before it.
struct AppendStart {
    position: u64,
    before: ScanState,
}

/// Looks for any CRC-valid batch starting after `from` whose offsets could follow
/// `min_offset`. Only runs on the failure path, so a byte-by-byte search is affordable.
fn valid_batch_after(
    file: &dyn StorageFile,
    from: u64,
    file_len: u64,
    min_offset: u64,
) -> Result<Option<u64>> {
    let start = from + 1;
    if start + HEADER_LEN as u64 > file_len {
        return Ok(None);
    }
    let mut rest = vec![0u8; usize_saturating(file_len - start)];
    let got = read_full(file, &mut rest, start)
        .map_err(|e| KafkoError::io("scanning", Path::new("segment"), e))?;
    rest.truncate(got);
    if rest.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    for i in 0..rest.len().saturating_sub(HEADER_LEN - 1) {
        if rest[i + 8] != super::batch::MAGIC {
            continue;
        }
        let Ok(h) = BatchHeader::parse(&rest[i..]) else {
            continue;
        };
        if h.base_offset < min_offset || i + h.framed_len() > rest.len() {
            continue;
        }
        if crc_matches(&h, &rest[i..i + h.framed_len()]) {
            return Ok(Some(start + i as u64));
        }
    }
    Ok(None)
}
