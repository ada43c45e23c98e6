//! A read-only summary of the groups' lag, for metrics: one figure per group and topic,
//! from the committed offsets the coordinator holds and the partitions' high watermarks.
//! Its cost is one pass over the committed offsets of the groups it visits (no
//! per-partition description, no allocation per partition), under the groups' lock
//! taken one chunk of groups at a time; a caller can visit the groups in pages of a
//! bounded cost ([`Kafko::group_lags_after`]).

use std::collections::HashMap;
use std::ops::Bound;

use crate::Kafko;

/// Groups visited per hold of the groups' lock.
const CHUNK: usize = 1024;

/// One group's lag on one topic: [`Kafko::group_lags`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLag {
    /// Group name.
    pub group: String,
    /// Topic name.
    pub topic: String,
    /// Records between the committed offsets and the high watermarks, summed over the
    /// partitions the group has committed on (as
    /// [`GroupTopicDescription::total_lag`](crate::GroupTopicDescription::total_lag)).
    pub lag: u64,
}

/// A page of [`Kafko::group_lags_after`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLagPage {
    /// The lags of the groups visited, by group then topic.
    pub lags: Vec<GroupLag>,
    /// The last group visited when the page stopped at its budget (the next page starts
    /// after it); `None` when it reached the last group.
    pub next: Option<String>,
}

impl Kafko {
    /// Every group's lag on every existing topic it has committed offsets on, by group
    /// then topic. Groups and topics without a committed offset are left out. Costs
    /// one pass over all committed offsets; the groups' lock is held for at most 1,024
    /// groups at a time.
    pub fn group_lags(&self) -> Vec<GroupLag> {
        self.group_lags_after(None, usize::MAX).lags
    }

    /// [`group_lags`](Self::group_lags) of the groups named after `after` (from the
    /// first when `None`), in name order, stopping after the group at which `budget`
    /// committed offsets have been read: the cost of a page is bounded by its budget
    /// plus one group.
    pub fn group_lags_after(&self, after: Option<&str>, budget: usize) -> GroupLagPage {
        let watermarks: HashMap<String, Vec<u64>> = self
            .all_topics()
            .into_iter()
            .map(|t| {
                let hw = t
                    .partitions
                    .iter()
                    .map(|p| p.log.high_watermark())
                    .collect();
                (t.name.to_string(), hw)
            })
            .collect();
        let mut out = Vec::new();
        let mut cursor: Option<String> = after.map(str::to_owned);
        let mut read = 0usize;
        loop {
            let groups = self.inner.groups.lock();
            let from = match &cursor {
                Some(last) => Bound::Excluded(last.as_str()),
                None => Bound::Unbounded,
            };
            let (mut seen, mut last) = (0, None);
            for (group, g) in groups.range::<str, _>((from, Bound::Unbounded)).take(CHUNK) {
                seen += 1;
                last = Some(group);
                for (topic, ts) in &g.topics {
                    if ts.committed.is_empty() {
                        continue;
                    }
                    read += ts.committed.len();
                    let Some(hw) = watermarks.get(topic) else {
                        continue;
                    };
                    let lag = ts
                        .committed
                        .iter()
                        .filter_map(|(&p, &c)| hw.get(p as usize).map(|h| h.saturating_sub(c)))
                        .sum();
                    out.push(GroupLag {
                        group: group.clone(),
                        topic: topic.clone(),
                        lag,
                    });
                }
                if read >= budget {
                    break;
                }
            }
            cursor = last.cloned();
            if read >= budget {
                // Whether any group follows decides if the pass ended here.
                let more = cursor.as_deref().is_some_and(|c| {
                    groups
                        .range::<str, _>((Bound::Excluded(c), Bound::Unbounded))
                        .next()
                        .is_some()
                });
                return GroupLagPage {
                    lags: out,
                    next: if more { cursor } else { None },
                };
            }
            if seen < CHUNK {
                return GroupLagPage {
                    lags: out,
                    next: None,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Kafko, PartitionOffset, TopicConfig};

    #[tokio::test]
    async fn pages_visit_each_group_once_within_their_budget() {
        let dir = tempfile::tempdir().unwrap();
        let kafko = Kafko::open(dir.path()).await.unwrap();
        let config = TopicConfig {
            partitions: 4,
            ..Default::default()
        };
        kafko.create_topic_with_config("t", config).await.unwrap();
        let topic = kafko.topic("t").unwrap();
        let all: Vec<PartitionOffset> = (0..4)
            .map(|partition| PartitionOffset {
                partition,
                offset: 0,
            })
            .collect();
        for g in ["a", "b", "c"] {
            let group = kafko.group(g).unwrap();
            group.commit(&topic, None, Some(&all)).await.unwrap();
        }
        // Four committed offsets a group: a budget of 5 stops after the second group.
        let first = kafko.group_lags_after(None, 5);
        let groups: Vec<_> = first.lags.iter().map(|l| l.group.as_str()).collect();
        assert_eq!((groups, first.next.as_deref()), (vec!["a", "b"], Some("b")));
        let second = kafko.group_lags_after(first.next.as_deref(), 5);
        assert_eq!(second.lags.len(), 1);
        assert_eq!((second.lags[0].group.as_str(), second.next), ("c", None));
        // A page that ends exactly at the last group says the pass is over.
        assert_eq!(kafko.group_lags_after(Some("a"), 8).next, None);
        assert_eq!(kafko.group_lags().len(), 3);
    }
}
