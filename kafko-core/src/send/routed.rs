//! [`Routed`]: a send's records per partition, each partition's as closed batches and the
//! one being filled. The first partition is kept inline: most sends go to one partition,
//! and those allocate no map.

use std::collections::BTreeMap;

use crate::partition::command::Batches;
use crate::segment::batch::{BatchEncoder, EncodedBatch};

/// One partition's records of a send: closed batches and the one being filled.
pub(super) struct PartitionBatches {
    pub(super) closed: Vec<EncodedBatch>,
    pub(super) open: BatchEncoder,
    pub(super) records: u64,
}

impl PartitionBatches {
    fn new(estimate: usize) -> Self {
        PartitionBatches {
            closed: Vec::new(),
            open: BatchEncoder::with_capacity(estimate),
            records: 0,
        }
    }

    /// Closes the open batch (`finish` closes one batch) and hands all of them on.
    pub(super) fn into_batches<E>(
        self,
        finish: impl FnOnce(BatchEncoder) -> Result<EncodedBatch, E>,
    ) -> Result<Batches, E> {
        let last = finish(self.open)?;
        Ok(if self.closed.is_empty() {
            Batches::One(last)
        } else {
            let mut all = self.closed;
            all.push(last);
            Batches::Many(all)
        })
    }
}

/// The partitions a send's records were routed to.
#[derive(Default)]
pub(super) struct Routed {
    /// The partition of the send's first record.
    first: Option<(u32, PartitionBatches)>,
    /// Any other partitions.
    rest: BTreeMap<u32, PartitionBatches>,
}

impl Routed {
    /// `partition`'s records; its first batch gets room for `estimate` bytes.
    pub(super) fn entry(&mut self, partition: u32, estimate: usize) -> &mut PartitionBatches {
        let new = || PartitionBatches::new(estimate);
        let (first, batches) = self.first.get_or_insert_with(|| (partition, new()));
        if *first == partition {
            batches
        } else {
            self.rest.entry(partition).or_insert_with(new)
        }
    }

    /// Partitions routed to.
    pub(super) fn len(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }

    /// The one partition of a send to one partition; otherwise `self` back.
    pub(super) fn into_single(self) -> Result<(u32, PartitionBatches), Self> {
        match self.first {
            Some(single) if self.rest.is_empty() => Ok(single),
            first => Err(Routed {
                first,
                rest: self.rest,
            }),
        }
    }

    /// Every partition, in ascending order.
    pub(super) fn into_sorted(self) -> impl Iterator<Item = (u32, PartitionBatches)> {
        let mut all = self.rest;
        if let Some((partition, batches)) = self.first {
            all.insert(partition, batches);
        }
        all.into_iter()
    }
}
