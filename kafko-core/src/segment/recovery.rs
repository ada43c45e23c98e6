//! The open-time scan of a segment (FORMAT.md, "Recovery rules"): verify every batch,
//! rebuild the sparse indexes, tell a torn tail (truncate) from corruption (refuse);
//! and telling a segment's format from its first bytes.

use std::path::Path;

use super::batch::{self, BatchHeader, Format, crc_matches};
use super::batch_v1;
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
    pub(crate) format: Format,
    /// `Some((position, reason))` when bytes after `summary.log_length` must be cut.
    pub(crate) torn_tail: Option<(u64, String)>,
}

/// The format of the segment at `base` whose file starts with `head` (up to a format 2
/// header's bytes): format 2 when its first batch says magic 2, leader epoch 0 and the
/// segment's base offset; format 1 when it says magic 1 and a base offset at or past the
/// segment's; format 2 otherwise (an empty file, or one whose first batch is torn or
/// damaged: the scan judges it by format 2's rules, which kafko writes).
pub(crate) fn detect_format(head: &[u8], base: u64) -> Format {
    let be = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&head[i..i + 8]);
        b
    };
    if head.len() >= 17
        && head[16] == batch::MAGIC
        && head[12..16] == batch::LEADER_EPOCH.to_be_bytes()
        && u64::from_be_bytes(be(0)) == base
    {
        return Format::V2;
    }
    if head.len() >= 20 && head[8] == batch_v1::MAGIC && u64::from_le_bytes(be(12)) >= base {
        return Format::V1;
    }
    Format::V2
}

/// Reads the first bytes of a segment file and tells its format ([`detect_format`]).
pub(crate) fn read_format(file: &dyn StorageFile, path: &Path, base: u64) -> Result<Format> {
    let mut head = [0u8; batch::HEADER_LEN];
    let got = read_full(file, &mut head, 0).map_err(|e| KafkoError::io("reading", path, e))?;
    Ok(detect_format(&head[..got], base))
}

/// Refuses a batch that does not start where the previous one ended (format 2, whose
/// offsets are contiguous: the rule that verifies the base offset, which the CRC does
/// not cover) or at or past it (format 1), or that lies beyond the index's 32-bit reach
/// from the segment's base.
fn check_follows(
    path: &Path,
    position: u64,
    format: Format,
    batch_base: u64,
    next_offset: u64,
    segment_base: u64,
) -> Result<()> {
    let out_of_place = match format {
        Format::V2 => batch_base != next_offset,
        Format::V1 => batch_base < next_offset,
    };
    if out_of_place || batch_base - segment_base > u64::from(u32::MAX) {
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
    let format = read_format(file, path, base_offset)?;
    let mut iter = BatchIter::new(file, 0, file_len, format);
    let mut read = ScanState {
        format,
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
                    valid_batch_after(file, position, file_len, read.next_offset, format)?
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
        format,
        torn_tail,
    })
}

/// What a scan has read so far.
#[derive(Clone)]
struct ScanState {
    format: Format,
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
            self.format,
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
    format: Format,
) -> Result<Option<u64>> {
    let start = from + 1;
    let header_len = format.header_len();
    let (magic_at, magic) = match format {
        Format::V1 => (8, batch_v1::MAGIC),
        Format::V2 => (16, batch::MAGIC),
    };
    if start + header_len as u64 > file_len {
        return Ok(None);
    }
    let mut rest = vec![0u8; usize_saturating(file_len - start)];
    let got = read_full(file, &mut rest, start)
        .map_err(|e| KafkoError::io("scanning", Path::new("segment"), e))?;
    rest.truncate(got);
    if rest.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    for i in 0..rest.len().saturating_sub(header_len - 1) {
        if rest[i + magic_at] != magic {
            continue;
        }
        let Ok(h) = BatchHeader::parse(&rest[i..], format) else {
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
