//! The lease algorithm of a group poll: which owned partitions a poll takes, reading
//! them without any lock held, and what it keeps afterwards.
//!
//! A poll leases every partition it owns that has records past its start and no lease
//! yet (so concurrent polls never hand out a record twice), reads the leased ones with
//! the groups' lock released, then settles: a partition that returned records keeps its
//! lease until the answer is delivered or lost ([`Delivery`](super::Delivery)); one that
//! returned none releases it; a failed read puts every lease back where it started.

use super::acknowledge::start_frontier;
use super::coordinator::{Lease, TopicState, start_position};
use super::{GroupConfig, GroupPollOptions, PartitionOffset};
use crate::convert::usize_saturating;
use crate::error::Result;
use crate::partition::record_bytes;
use crate::record::Record;
use crate::topic::Topic;

/// Where one owned partition starts in a poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Start {
    pub(super) partition: u32,
    /// The partition's position when the poll looked (a lease's start when another poll
    /// holds it).
    pub(super) offset: u64,
    /// Whether this poll holds the partition's lease (it has records to read).
    pub(super) leased: bool,
}

/// What a poll read from one partition it leased.
#[derive(Debug)]
pub(super) struct Fetched {
    pub(super) records: Vec<Record>,
    /// The offset after the last record read.
    pub(super) next: u64,
}

/// One owned partition after the read: its start and, when this poll read it, what it got.
#[derive(Debug)]
pub(super) struct Read {
    pub(super) start: Start,
    pub(super) fetched: Option<Fetched>,
}

/// What a poll keeps after reading: the records of the partitions whose leases it still
/// holds, those leases, the caller's positions, and whether it released any lease.
pub(super) struct Kept {
    pub(super) records: Result<Vec<Record>>,
    /// `(partition, lease id)` of the leases the answer holds.
    pub(super) leases: Vec<(u32, u64)>,
    pub(super) positions: Vec<PartitionOffset>,
    pub(super) released: bool,
}

/// Leases each partition of `owned` that has no lease and has records past its start
/// position (`template` gives the lease's id and auto-commit, its start is the
/// partition's), moving the position there; returns every owned partition's [`Start`]
/// (a partition leased by another poll reports that lease's start).
pub(super) fn lease_partitions(
    group: &str,
    t: &Topic,
    config: &GroupConfig,
    ts: &mut TopicState,
    owned: Vec<u32>,
    template: Lease,
) -> Result<Vec<Start>> {
    let mut starts = Vec::with_capacity(owned.len());
    for partition in owned {
        if let Some(lease) = ts.leases.get(&partition) {
            starts.push(Start {
                partition,
                offset: lease.start,
                leased: false,
            });
            continue;
        }
        let log = &t.partition(partition)?.log;
        let hw = log.high_watermark();
        let start = start_position(group, &t.name, config, ts, partition, log.log_start(), hw)?;
        // Group polls read committed: nothing to lease at or past the last stable offset.
        let leased = start < log.last_stable_offset();
        if leased {
            ts.leases.insert(partition, Lease { start, ..template });
        }
        // Kept even when there is nothing to read yet: an offset reset happens once, when
        // the partition is first read, and the position then moves through every record
        // (with `latest`, re-resolving on each poll would skip what arrived in between).
        if ts.positions.insert(partition, start).is_none() {
            start_frontier(ts, partition, start);
        }
        starts.push(Start {
            partition,
            offset: start,
            leased,
        });
    }
    Ok(starts)
}

/// Reads each leased partition from its start, rotating the first partition so one busy
/// partition cannot starve the rest.
pub(super) fn read_leased(
    t: &Topic,
    starts: &[Start],
    options: &GroupPollOptions,
) -> Result<Vec<Read>> {
    let max_records = options.max_records.max(1);
    let (mut count, mut bytes) = (0usize, 0usize);
    let rotate = if starts.is_empty() {
        0
    } else {
        // A rotation by the clock, below `starts.len()`, so it fits a usize.
        usize_saturating(crate::record::now_ms().unsigned_abs() % starts.len() as u64)
    };
    let mut out = Vec::with_capacity(starts.len());
    for i in 0..starts.len() {
        let start = starts[(rotate + i) % starts.len()];
        if !start.leased || count >= max_records || bytes >= options.max_bytes {
            out.push(Read {
                start,
                fetched: None,
            });
            continue;
        }
        let fetched = t.partition(start.partition)?.log.read(
            start.offset,
            max_records - count,
            options.max_bytes - bytes,
        )?;
        count += fetched.records.len();
        bytes += fetched.records.iter().map(record_bytes).sum::<usize>();
        out.push(Read {
            start,
            fetched: Some(Fetched {
                records: fetched.records,
                next: fetched.next_offset,
            }),
        });
    }
    Ok(out)
}

/// Settles a poll's leases (lease id `id`) after its read: a partition that returned
/// records keeps its lease and moves its position past them; one that returned none
/// releases it; a failed read puts every lease back where it started. A lease a
/// rebalance, commit or seek replaced meanwhile is not ours: its records are dropped.
pub(super) fn keep_leases(
    ts: Option<&mut TopicState>,
    read: Result<Vec<Read>>,
    starts: &[Start],
    id: u64,
) -> Kept {
    let mut kept = Kept {
        records: Ok(Vec::new()),
        leases: Vec::new(),
        positions: Vec::with_capacity(starts.len()),
        released: false,
    };
    let Some(ts) = ts else {
        kept.records = read.map(|_| Vec::new());
        return kept;
    };
    let ours = |ts: &TopicState, p: u32| ts.leases.get(&p).is_some_and(|l| l.id == id);
    let read = match read {
        Ok(read) => read,
        Err(e) => {
            for start in starts {
                if start.leased && ours(ts, start.partition) {
                    ts.leases.remove(&start.partition);
                    ts.positions.insert(start.partition, start.offset);
                }
            }
            kept.released = true;
            kept.records = Err(e);
            return kept;
        }
    };
    let mut records = Vec::new();
    for Read { start, fetched } in read {
        let p = start.partition;
        if !(start.leased && ours(ts, p)) {
            kept.positions.push(PartitionOffset {
                partition: p,
                offset: ts.positions.get(&p).copied().unwrap_or(start.offset),
            });
            continue;
        }
        let next = fetched.as_ref().map_or(start.offset, |f| f.next);
        ts.positions.insert(p, next);
        match fetched {
            Some(f) if !f.records.is_empty() => {
                records.extend(f.records);
                kept.leases.push((p, id));
            }
            _ => {
                ts.leases.remove(&p);
                kept.released = true;
            }
        }
        kept.positions.push(PartitionOffset {
            partition: p,
            offset: next,
        });
    }
    kept.records = Ok(records);
    kept
}
