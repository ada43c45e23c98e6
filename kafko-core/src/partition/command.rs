//! Messages to a partition's writer task, each with the `oneshot` that carries its reply.

use std::sync::Arc;

use tokio::sync::oneshot;

use crate::config::TopicConfig;
use crate::error::Result;
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
    /// Batches from a list, which must not be empty.
    pub(crate) fn from_vec(mut batches: Vec<EncodedBatch>) -> Self {
        match batches.len() {
            1 => Batches::One(batches.remove(0)),
            _ => Batches::Many(batches),
        }
    }

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

/// What the writer can be asked to do.
pub(crate) enum Command {
    /// Append batches at consecutive offsets, in one write: all of them or none; the
    /// reply carries the first one's base offset.
    Append {
        batches: Batches,
        /// fsync before acknowledging, whatever the policy.
        sync: bool,
        reply: oneshot::Sender<Result<u64>>,
    },
    /// fsync everything written so far.
    Sync { reply: oneshot::Sender<Result<()>> },
    /// Delete segments beyond the retention limits.
    Retention {
        now_ms: i64,
        reply: oneshot::Sender<Result<RetentionOutcome>>,
    },
    /// Install compacted segments. Boxed: every command moves through the writer's
    /// inbox at the size of the largest variant, and appends are nearly all of them.
    Swap {
        swap: Box<SegmentSwap>,
        reply: oneshot::Sender<Result<()>>,
    },
    /// Use a new configuration for subsequent work.
    UpdateConfig { config: Arc<TopicConfig> },
    /// Drain, fsync, write indexes, stop.
    Shutdown { reply: oneshot::Sender<Result<()>> },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command crosses the inbox at the size of the largest variant, and appends are
    /// nearly all of the traffic: no other variant may be larger than an append. (The swap
    /// variant, unboxed, made every command 160 bytes instead of 88.)
    #[test]
    fn no_command_is_larger_than_an_append() {
        let append = size_of::<Batches>() + size_of::<oneshot::Sender<Result<u64>>>() + 8;
        assert!(
            size_of::<Command>() <= append,
            "Command is {} bytes, an append needs {append}",
            size_of::<Command>()
        );
    }
}
