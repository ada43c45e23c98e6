//! Manual assignment (`POST {base}/assignments`): an instance assigned partitions,
//! instead of subscribed to topics, reads them from positions of its own, as a Kafka
//! consumer does after `assign()`. It joins no group: a partition starts at the group's
//! committed offset (else at `auto.offset.reset`), and commits write the group's offsets
//! as its implicit member (refused while members are subscribed to that topic, as Kafka
//! refuses a commit from outside a live group). A read moves the positions only once its
//! answer went out in full, so an answer lost on the way is read again.

use std::collections::BTreeMap;

use kafko_core::{
    Kafko, KafkoError, OffsetReset, Offsets, PartitionOffset, PartitionReader, Record, SeekTo,
};

use crate::rest_proxy::error::{ProxyError, ProxyResult};
use crate::rest_proxy::group_adapter::GroupAdapter;

/// A topic partition.
pub(crate) type Partition = (String, u32);

/// Where an assigned instance is on one partition.
#[derive(Default)]
struct Position {
    /// Next offset to read; resolved on the first read.
    next: Option<u64>,
    /// What this instance committed last (auto-commit skips an unchanged position).
    committed: Option<u64>,
}

/// The partitions of an instance's manual assignment, with its positions.
#[derive(Default)]
pub(crate) struct Assignment {
    positions: BTreeMap<Partition, Position>,
}

/// One partition's share of a read: its records, and the move it makes once delivered.
pub(crate) struct Read {
    pub(crate) topic: String,
    pub(crate) partition: u32,
    pub(crate) records: Vec<Record>,
    pub(crate) moved: Move,
}

/// A position change a delivered read makes.
#[derive(Clone, Copy)]
pub(crate) struct Move {
    from: u64,
    to: u64,
}

/// What a read needs besides the assignment: the log, the group, the reset policy.
pub(crate) struct Source<'a> {
    pub(crate) kafko: &'a Kafko,
    pub(crate) groups: GroupAdapter<'a>,
    pub(crate) reset: OffsetReset,
}

impl Source<'_> {
    /// The partition's reader; `None` while it does not exist (its topic deleted since
    /// the assignment, or recreated with fewer partitions; Kafka's consumer waits too).
    fn reader(
        &self,
        (topic, partition): &Partition,
    ) -> kafko_core::Result<Option<PartitionReader>> {
        match self.kafko.find_topic(topic)? {
            Some(t) if *partition < t.partitions() => Ok(Some(t.partition(*partition)?)),
            _ => Ok(None),
        }
    }

    /// Where `auto.offset.reset` puts a partition without a usable position.
    fn reset_to(&self, (topic, partition): &Partition, range: Offsets) -> kafko_core::Result<u64> {
        match self.reset {
            OffsetReset::Earliest => Ok(range.log_start),
            OffsetReset::Latest => Ok(range.high_watermark),
            OffsetReset::Error => Err(KafkoError::NoValidOffset {
                group: self.groups.group().to_owned(),
                topic: topic.clone(),
                partition: *partition,
            }),
        }
    }

    /// A partition's first position: the group's committed offset if it is still in
    /// the log, else the reset policy's.
    fn start(&self, tp: &Partition, reader: &PartitionReader) -> kafko_core::Result<u64> {
        let range = reader.offsets()?;
        match self.groups.committed(&tp.0)?.get(&tp.1) {
            Some(&c) if range.contains(c) => Ok(c),
            _ => self.reset_to(tp, range),
        }
    }
}

impl Assignment {
    pub(crate) fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    pub(crate) fn contains(&self, tp: &Partition) -> bool {
        self.positions.contains_key(tp)
    }

    /// The assigned partitions, in order.
    pub(crate) fn partitions(&self) -> impl Iterator<Item = &Partition> {
        self.positions.keys()
    }

    /// The assigned topics, each once.
    pub(crate) fn topics(&self) -> Vec<String> {
        let mut topics: Vec<String> = self.positions.keys().map(|(t, _)| t.clone()).collect();
        topics.dedup();
        topics
    }

    /// Replaces the assignment; partitions that stay keep their positions.
    pub(crate) fn replace(&mut self, partitions: Vec<Partition>) {
        let mut old = std::mem::take(&mut self.positions);
        for tp in partitions {
            let position = old.remove(&tp).unwrap_or_default();
            self.positions.insert(tp, position);
        }
    }

    /// Reads every assigned partition once, without waiting, sharing the limits. A
    /// partition whose topic is gone is passed over (it may come back, as on Kafka).
    pub(crate) fn read(
        &mut self,
        source: &Source<'_>,
        max_records: usize,
        max_bytes: usize,
    ) -> kafko_core::Result<Vec<Read>> {
        let (mut count, mut budget) = (0, max_bytes);
        let mut out = Vec::new();
        for (tp, position) in &mut self.positions {
            if budget == 0 || count >= max_records {
                break;
            }
            let Some(reader) = source.reader(tp)? else {
                continue;
            };
            let from = match position.next {
                Some(next) => next,
                None => source.start(tp, &reader)?,
            };
            let (from, fetched) = match reader.read(from, max_records - count, budget) {
                // Retention passed the position: start again where the policy says.
                Err(kafko_core::FetchError::OffsetOutOfRange { .. }) => {
                    let from = source.reset_to(tp, reader.offsets()?)?;
                    (from, reader.read(from, max_records - count, budget)?)
                }
                other => (from, other?),
            };
            position.next = Some(from);
            if fetched.next_offset == from {
                continue;
            }
            for r in &fetched.records {
                let size =
                    r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len());
                budget = budget.saturating_sub(size);
            }
            count += fetched.records.len();
            out.push(Read {
                topic: tp.0.clone(),
                partition: tp.1,
                records: fetched.records,
                moved: Move {
                    from,
                    to: fetched.next_offset,
                },
            });
        }
        Ok(out)
    }

    /// Applies the moves of a delivered read, unless the position changed meanwhile
    /// (a seek, or another read delivered first).
    pub(crate) fn advance(&mut self, moves: &[(Partition, Move)]) {
        for (tp, m) in moves {
            if let Some(p) = self.positions.get_mut(tp)
                && p.next == Some(m.from)
            {
                p.next = Some(m.to);
            }
        }
    }

    /// Moves one assigned partition's position (nothing is committed, as on Kafka).
    pub(crate) fn seek(&mut self, kafko: &Kafko, tp: &Partition, to: SeekTo) -> ProxyResult<()> {
        let Some(position) = self.positions.get_mut(tp) else {
            return Err(ProxyError::not_assigned(&tp.0, tp.1));
        };
        let reader = kafko.topic(&tp.0)?.partition(tp.1)?;
        let range = reader.offsets()?;
        position.next = Some(match to {
            SeekTo::Earliest => range.log_start,
            SeekTo::Latest => range.high_watermark,
            SeekTo::Offset(o) if range.contains(o) => o,
            SeekTo::Offset(o) => return Err(range.out_of_range(o).into()),
            SeekTo::Timestamp(ms) => reader
                .offset_for_timestamp(ms)?
                .unwrap_or(range.high_watermark),
        });
        Ok(())
    }

    /// Every position read so far (what an empty commit commits), by topic.
    pub(crate) fn consumed(&self) -> Vec<(String, Vec<PartitionOffset>)> {
        by_topic(self.positions.iter().filter_map(|((t, p), pos)| {
            pos.next.map(|offset| {
                (
                    t.clone(),
                    PartitionOffset {
                        partition: *p,
                        offset,
                    },
                )
            })
        }))
    }

    /// Commits `offsets` (next offsets to read) into the group, topic by topic.
    pub(crate) async fn commit(
        &mut self,
        groups: &GroupAdapter<'_>,
        offsets: Vec<(String, Vec<PartitionOffset>)>,
    ) -> kafko_core::Result<()> {
        for (topic, list) in offsets {
            groups.commit_unowned(&topic, &list).await?;
            for o in list {
                if let Some(p) = self.positions.get_mut(&(topic.clone(), o.partition)) {
                    p.committed = Some(o.offset);
                }
            }
        }
        Ok(())
    }

    /// Auto-commit: commits the positions that moved since the last commit. A failure
    /// is logged, not answered (Kafka's auto-commit does the same).
    pub(crate) async fn auto_commit(&mut self, groups: &GroupAdapter<'_>) {
        let moved = by_topic(self.positions.iter().filter_map(|((t, p), pos)| {
            let offset = pos.next.filter(|&n| pos.committed != Some(n))?;
            Some((
                t.clone(),
                PartitionOffset {
                    partition: *p,
                    offset,
                },
            ))
        }));
        if moved.is_empty() {
            return;
        }
        if let Err(e) = self.commit(groups, moved).await {
            tracing::warn!(group = groups.group(), error = %e, "auto-commit of an assigned consumer instance failed");
        }
    }
}

/// Offsets grouped by topic, topics in first-seen order.
pub(crate) fn by_topic(
    items: impl IntoIterator<Item = (String, PartitionOffset)>,
) -> Vec<(String, Vec<PartitionOffset>)> {
    let mut out: Vec<(String, Vec<PartitionOffset>)> = Vec::new();
    for (topic, offset) in items {
        match out.iter_mut().find(|(t, _)| *t == topic) {
            Some((_, list)) => list.push(offset),
            None => out.push((topic, vec![offset])),
        }
    }
    out
}

impl Read {
    /// The position change this read makes once delivered.
    pub(crate) fn movement(&self) -> (Partition, Move) {
        ((self.topic.clone(), self.partition), self.moved)
    }
}
