//! A read-only summary of every group's lag, for metrics: one figure per group and
//! topic, from the committed offsets the coordinator holds and the partitions' high
//! watermarks. Its cost is one pass over the committed offsets (no per-partition
//! description, no allocation per partition), under the groups' lock taken one chunk of groups at a time.

use std::collections::HashMap;
use std::ops::Bound;

use crate::Kafko;

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

/// Groups visited per hold of the groups' lock.
const CHUNK: usize = 1024;

impl Kafko {
    /// Every group's lag on every existing topic it has committed offsets on, by group
    /// then topic. Groups and topics without a committed offset are left out. Costs
    /// one pass over the committed offsets; the groups' lock is held for at most 1,024
    /// groups at a time.
    pub fn group_lags(&self) -> Vec<GroupLag> {
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
        // The groups' lock is taken per chunk of groups, never for the whole pass, so
        // group operations wait at most one chunk's worth.
        let mut after: Option<String> = None;
        loop {
            let groups = self.inner.groups.lock();
            let from = match &after {
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
            }
            if seen < CHUNK {
                break;
            }
            after = last.cloned();
        }
        out
    }
}
