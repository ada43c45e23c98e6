//! What a partition's writer is given to do: an append's batches, a compacted segment
//! to install; and what a retention pass reports.

use crate::segment::batch::EncodedBatch;
use crate::segment::index::{SegmentSummary, SparseIndex};

/// Result of a retention pass on one partition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetentionOutcome {
    /// Segments deleted.
    pub segments_deleted: usize,
    /// Bytes freed.
    pub bytes_deleted: u64,
    /// Log start offset afterwards.
    pub log_start_offset: u64,
}

/// A compacted replacement for a run of consecutive sealed segments, prepared off the
/// writer: one cleaned file with the base offset of the first replaced segment.
pub(crate) struct SegmentSwap {
    /// Base offsets of the segments being replaced, oldest first.
    pub(crate) replaced: Vec<u64>,
    /// The cleaned log, fully written and fsynced under its `.cleaned` name.
    pub(crate) cleaned_path: std::path::PathBuf,
    /// Its summary (base offset = `replaced[0]`).
    pub(crate) summary: SegmentSummary,
    /// Its sparse indexes.
    pub(crate) index: SparseIndex,
}

/// What became of a [`SegmentSwap`] handed to the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SwapOutcome {
    /// The cleaned segment replaced the run.
    Installed,
    /// The run is no longer in the log as it was planned (retention removed part of
    /// it): the cleaned file was discarded, and the next pass plans again.
    SegmentsChanged,
}

/// The batches of one append. A send is split into batches of bounded size (so a read
/// decodes a bounded batch), and the batches of one partition of one send are appended
/// together: all of them or none of them.
pub(crate) enum Batches {
    /// The usual case: one batch, no vector.
    One(EncodedBatch),
    /// Several batches, oldest first.
    Many(Vec<EncodedBatch>),
}

impl Batches {
    /// The batches, oldest first.
    pub(crate) fn as_slice(&self) -> &[EncodedBatch] {
        match self {
            Batches::One(b) => std::slice::from_ref(b),
            Batches::Many(v) => v,
        }
    }

    /// Framed bytes of all batches.
    pub(crate) fn framed_len(&self) -> u64 {
        self.as_slice().iter().map(|b| b.framed_len() as u64).sum()
    }

    /// The newest record timestamp of the batches.
    pub(crate) fn max_timestamp(&self) -> i64 {
        self.as_slice()
            .iter()
            .map(|b| b.max_timestamp)
            .max()
            .unwrap_or(i64::MIN)
    }

    /// Offsets the batches take.
    pub(crate) fn offset_span(&self) -> u64 {
        self.as_slice()
            .iter()
            .map(|b| u64::from(b.last_offset_delta) + 1)
            .sum()
    }
}

impl IntoIterator for Batches {
    type Item = EncodedBatch;
    type IntoIter = BatchesIter;

    fn into_iter(self) -> BatchesIter {
        match self {
            Batches::One(b) => BatchesIter::One(Some(b)),
            Batches::Many(v) => BatchesIter::Many(v.into_iter()),
        }
    }
}

/// The batches of an append, by value (the writer frames each and drops it).
pub(crate) enum BatchesIter {
    One(Option<EncodedBatch>),
    Many(std::vec::IntoIter<EncodedBatch>),
}

impl Iterator for BatchesIter {
    type Item = EncodedBatch;

    fn next(&mut self) -> Option<EncodedBatch> {
        match self {
            BatchesIter::One(b) => b.take(),
            BatchesIter::Many(v) => v.next(),
        }
    }
}
