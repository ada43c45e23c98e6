//! [`Positions`]: where each record of a send goes (its partition and timestamp, in the
//! order added), kept as runs of equal values, and how each record's offset is worked
//! out once the partitions have answered.

use crate::convert::usize_saturating;
use crate::record::RecordMetadata;

use super::PartitionAppend;

/// Each record's partition and timestamp, in the order added, as runs of equal values:
/// the keyless records of one send share one partition, and records without a timestamp
/// share the append time, so the usual send costs two runs, not two entries per record,
/// and a send of one run each allocates nothing.
#[derive(Debug, Default)]
pub(super) struct Positions {
    partitions: Runs<u32>,
    timestamps: Runs<i64>,
    len: u64,
}

impl Positions {
    pub(super) fn push(&mut self, partition: u32, timestamp: i64) {
        self.partitions.push(partition);
        self.timestamps.push(timestamp);
        self.len += 1;
    }

    /// Records added.
    pub(super) fn len(&self) -> u64 {
        self.len
    }

    /// Each record's metadata, or, for a record of a partition missing from `appended`
    /// (which must be sorted by partition), its partition as the error.
    pub(super) fn walk<'a>(
        &'a self,
        appended: &'a [PartitionAppend],
    ) -> impl Iterator<Item = Result<RecordMetadata, u32>> + 'a {
        let mut placed = Placed::new(appended.len());
        self.partitions
            .expand()
            .zip(self.timestamps.expand())
            .map(move |(partition, timestamp)| {
                let at = appended
                    .binary_search_by_key(&partition, |p| p.partition)
                    .map_err(|_| partition)?;
                let offset = appended[at].base_offset + placed.next(at);
                Ok(RecordMetadata {
                    partition,
                    offset,
                    timestamp,
                })
            })
    }
}

/// Records already placed, per entry of the appended partitions: one counter inline for
/// the usual send to one partition.
enum Placed {
    One(u64),
    Many(Vec<u64>),
}

impl Placed {
    fn new(partitions: usize) -> Self {
        match partitions {
            0 | 1 => Placed::One(0),
            n => Placed::Many(vec![0; n]),
        }
    }

    /// The index within its partition of the next record of entry `at`.
    fn next(&mut self, at: usize) -> u64 {
        let count = match self {
            Placed::One(count) => count,
            Placed::Many(counts) => &mut counts[at],
        };
        *count += 1;
        *count - 1
    }
}

/// A sequence as runs of equal values; the last run is kept inline.
#[derive(Debug)]
struct Runs<T> {
    earlier: Vec<(T, u64)>,
    last: Option<(T, u64)>,
}

impl<T> Default for Runs<T> {
    fn default() -> Self {
        Runs {
            earlier: Vec::new(),
            last: None,
        }
    }
}

impl<T: Copy + PartialEq> Runs<T> {
    fn push(&mut self, value: T) {
        match &mut self.last {
            Some((v, n)) if *v == value => *n += 1,
            last => {
                if let Some(run) = last.replace((value, 1)) {
                    self.earlier.push(run);
                }
            }
        }
    }

    fn expand(&self) -> impl Iterator<Item = T> + '_ {
        self.earlier
            .iter()
            .chain(&self.last)
            .flat_map(|&(v, n)| std::iter::repeat_n(v, usize_saturating(n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_expand_to_what_was_pushed() {
        let mut runs = Runs::default();
        let pushed = [3, 3, 1, 1, 1, 3, 2];
        for v in pushed {
            runs.push(v);
        }
        assert_eq!(runs.expand().collect::<Vec<_>>(), pushed);
        assert_eq!(runs.earlier.len(), 3, "four runs, the last inline");
    }

    #[test]
    fn walk_numbers_each_partition_from_its_base_offset() {
        let mut positions = Positions::default();
        for (partition, timestamp) in [(1, 10), (0, 10), (1, 11), (2, 11)] {
            positions.push(partition, timestamp);
        }
        let appended = [
            PartitionAppend {
                partition: 0,
                base_offset: 7,
                record_count: 1,
                log_start: 0,
            },
            PartitionAppend {
                partition: 1,
                base_offset: 40,
                record_count: 2,
                log_start: 0,
            },
        ];
        let walked: Vec<_> = positions
            .walk(&appended)
            .map(|r| r.map(|m| (m.partition, m.offset, m.timestamp)))
            .collect();
        assert_eq!(
            walked,
            [Ok((1, 40, 10)), Ok((0, 7, 10)), Ok((1, 41, 11)), Err(2)]
        );
    }
}
