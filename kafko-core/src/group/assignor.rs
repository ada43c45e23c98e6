//! The server-side assignors of Kafka's consumer group protocol (KIP-848): `uniform`
//! (the default) and `range`. Pure functions from the members' subscriptions, the
//! subscribed topics' partition counts and the previous target assignment to the next
//! target assignment; no I/O, no time.
//!
//! - `uniform` spreads every subscribed partition so that members' counts differ by at
//!   most one where their subscriptions allow it, and is sticky: a member keeps each
//!   partition of its previous target that it still subscribes to, unless balance
//!   needs it elsewhere, and balancing moves partitions from the most loaded members
//!   only.
//! - `range` splits each topic's partitions into contiguous ranges over the members
//!   subscribed to it, in member-id order, the first ones getting one more when the
//!   count does not divide: members subscribed to the same topics get the same
//!   partition numbers on each (co-partitioning).

use std::collections::{BTreeMap, BTreeSet};

/// A member's partitions, by topic name.
pub(crate) type Assignment = BTreeMap<String, BTreeSet<u32>>;

/// A server-side assignor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Assignor {
    /// Balanced and sticky (Kafka's `uniform`).
    #[default]
    Uniform,
    /// Per-topic ranges (Kafka's `range`).
    Range,
}

impl Assignor {
    /// Every assignor, the default first.
    pub(crate) const ALL: [Assignor; 2] = [Assignor::Uniform, Assignor::Range];

    /// Its name as clients give it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }

    /// The assignor named `name`, if served.
    pub(crate) fn named(name: &str) -> Option<Assignor> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The next target assignment: every member of `members` (id → subscribed topic
    /// names) gets an entry, possibly empty. `partitions` holds the partition count of
    /// each existing subscribed topic (a topic missing from it is not assigned);
    /// `previous` is the current target, for stickiness.
    pub(crate) fn assign(
        self,
        members: &BTreeMap<String, BTreeSet<String>>,
        partitions: &BTreeMap<String, u32>,
        previous: &BTreeMap<String, Assignment>,
    ) -> BTreeMap<String, Assignment> {
        match self {
            Assignor::Uniform => uniform(members, partitions, previous),
            Assignor::Range => range(members, partitions),
        }
    }
}

fn empty_targets(members: &BTreeMap<String, BTreeSet<String>>) -> BTreeMap<String, Assignment> {
    members
        .keys()
        .map(|id| (id.clone(), Assignment::new()))
        .collect()
}

fn range(
    members: &BTreeMap<String, BTreeSet<String>>,
    partitions: &BTreeMap<String, u32>,
) -> BTreeMap<String, Assignment> {
    let mut out = empty_targets(members);
    for (topic, &count) in partitions {
        let readers: Vec<&String> = members
            .iter()
            .filter(|(_, topics)| topics.contains(topic))
            .map(|(id, _)| id)
            .collect();
        let Ok(n) = u32::try_from(readers.len()) else {
            continue;
        };
        if n == 0 {
            continue;
        }
        let (quota, extra) = (count / n, count % n);
        let mut next = 0;
        for (i, id) in (0..n).zip(readers) {
            let take = quota + u32::from(i < extra);
            if take > 0
                && let Some(a) = out.get_mut(id)
            {
                a.insert(topic.clone(), (next..next + take).collect());
            }
            next += take;
        }
    }
    out
}

/// One partition, and the members that may own it.
struct Slot<'a> {
    topic: &'a str,
    partition: u32,
    eligible: Vec<&'a str>,
}

fn uniform(
    members: &BTreeMap<String, BTreeSet<String>>,
    partitions: &BTreeMap<String, u32>,
    previous: &BTreeMap<String, Assignment>,
) -> BTreeMap<String, Assignment> {
    // Every subscribed partition, with its eligible members.
    let mut slots: Vec<Slot<'_>> = Vec::new();
    for (topic, &count) in partitions {
        let eligible: Vec<&str> = members
            .iter()
            .filter(|(_, topics)| topics.contains(topic))
            .map(|(id, _)| id.as_str())
            .collect();
        if eligible.is_empty() {
            continue;
        }
        for partition in 0..count {
            slots.push(Slot {
                topic,
                partition,
                eligible: eligible.clone(),
            });
        }
    }
    // owner[i]: the member slot i goes to.
    let mut owner: Vec<Option<&str>> = vec![None; slots.len()];
    let mut load: BTreeMap<&str, usize> = members.keys().map(|id| (id.as_str(), 0)).collect();
    // 1. Stickiness: each member keeps what it had and may still own.
    for (i, slot) in slots.iter().enumerate() {
        let kept = slot.eligible.iter().find(|id| {
            previous
                .get(**id)
                .and_then(|a| a.get(slot.topic))
                .is_some_and(|p| p.contains(&slot.partition))
        });
        if let Some(&id) = kept {
            owner[i] = Some(id);
            *load.entry(id).or_default() += 1;
        }
    }
    // 2. The rest, each to its least loaded eligible member.
    for (i, slot) in slots.iter().enumerate() {
        if owner[i].is_some() {
            continue;
        }
        let least = slot
            .eligible
            .iter()
            .min_by_key(|id| (load.get(**id).copied().unwrap_or(0), **id));
        if let Some(&id) = least {
            owner[i] = Some(id);
            *load.entry(id).or_default() += 1;
        }
    }
    // 3. Balance: move partitions off members holding two more than an eligible other,
    // most loaded first, until no move helps (bounded by the partition count).
    for _ in 0..=slots.len() {
        let mut moved = false;
        let mut by_load: Vec<(&str, usize)> = load.iter().map(|(id, n)| (*id, *n)).collect();
        by_load.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        'heavy: for (heavy, heavy_load) in by_load {
            for i in (0..slots.len()).rev() {
                if owner[i] != Some(heavy) {
                    continue;
                }
                let light = slots[i]
                    .eligible
                    .iter()
                    .filter(|id| load.get(**id).copied().unwrap_or(0) + 1 < heavy_load)
                    .min_by_key(|id| (load.get(**id).copied().unwrap_or(0), **id));
                if let Some(&light) = light {
                    owner[i] = Some(light);
                    *load.entry(heavy).or_default() -= 1;
                    *load.entry(light).or_default() += 1;
                    moved = true;
                    break 'heavy;
                }
            }
        }
        if !moved {
            break;
        }
    }
    let mut out = empty_targets(members);
    for (slot, id) in slots.iter().zip(owner) {
        if let Some(a) = id.and_then(|id| out.get_mut(id)) {
            a.entry(slot.topic.to_owned())
                .or_default()
                .insert(slot.partition);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subs(list: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        list.iter()
            .map(|(id, topics)| {
                (
                    (*id).to_owned(),
                    topics.iter().map(|t| (*t).to_owned()).collect(),
                )
            })
            .collect()
    }

    fn counts(list: &[(&str, u32)]) -> BTreeMap<String, u32> {
        list.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
    }

    fn total(a: &Assignment) -> usize {
        a.values().map(BTreeSet::len).sum()
    }

    /// Every partition of every subscribed topic is assigned exactly once, to a member
    /// subscribed to its topic.
    fn check_complete(
        members: &BTreeMap<String, BTreeSet<String>>,
        partitions: &BTreeMap<String, u32>,
        out: &BTreeMap<String, Assignment>,
    ) {
        let mut seen = BTreeSet::new();
        for (id, a) in out {
            for (topic, ps) in a {
                assert!(members[id].contains(topic), "{id} does not read {topic}");
                for p in ps {
                    assert!(seen.insert((topic.clone(), *p)), "{topic}-{p} twice");
                }
            }
        }
        for (topic, &n) in partitions {
            if members.values().any(|t| t.contains(topic)) {
                for p in 0..n {
                    assert!(seen.contains(&(topic.clone(), p)), "{topic}-{p} unassigned");
                }
            }
        }
    }

    #[test]
    fn uniform_balances_a_homogeneous_group() {
        let m = subs(&[("a", &["t", "u"]), ("b", &["t", "u"]), ("c", &["t", "u"])]);
        let p = counts(&[("t", 4), ("u", 3)]);
        let out = Assignor::Uniform.assign(&m, &p, &BTreeMap::new());
        check_complete(&m, &p, &out);
        let loads: Vec<usize> = out.values().map(total).collect();
        assert!(loads.iter().max().unwrap() - loads.iter().min().unwrap() <= 1);
    }

    #[test]
    fn uniform_is_sticky_when_a_member_joins_and_leaves() {
        let p = counts(&[("t", 6)]);
        let one = subs(&[("a", &["t"])]);
        let first = Assignor::Uniform.assign(&one, &p, &BTreeMap::new());
        assert_eq!(total(&first["a"]), 6);
        let two = subs(&[("a", &["t"]), ("b", &["t"])]);
        let second = Assignor::Uniform.assign(&two, &p, &first);
        check_complete(&two, &p, &second);
        assert_eq!((total(&second["a"]), total(&second["b"])), (3, 3));
        // a only gave partitions away.
        assert!(second["a"]["t"].is_subset(&first["a"]["t"]));
        let three = subs(&[("a", &["t"]), ("b", &["t"]), ("c", &["t"])]);
        let third = Assignor::Uniform.assign(&three, &p, &second);
        check_complete(&three, &p, &third);
        for id in ["a", "b"] {
            assert!(
                third[id]["t"].is_subset(&second[id]["t"]),
                "{id} kept its own"
            );
        }
        // b leaves: a and c keep theirs and split b's.
        let ac = subs(&[("a", &["t"]), ("c", &["t"])]);
        let fourth = Assignor::Uniform.assign(&ac, &p, &third);
        check_complete(&ac, &p, &fourth);
        assert!(third["a"]["t"].is_subset(&fourth["a"]["t"]));
        assert!(third["c"]["t"].is_subset(&fourth["c"]["t"]));
        assert_eq!((total(&fourth["a"]), total(&fourth["c"])), (3, 3));
    }

    #[test]
    fn uniform_respects_heterogeneous_subscriptions() {
        let m = subs(&[("a", &["t"]), ("b", &["t", "u"]), ("c", &["u"])]);
        let p = counts(&[("t", 4), ("u", 4), ("unread", 3)]);
        let out = Assignor::Uniform.assign(&m, &p, &BTreeMap::new());
        check_complete(&m, &p, &out);
        let loads: Vec<usize> = out.values().map(total).collect();
        assert!(loads.iter().max().unwrap() - loads.iter().min().unwrap() <= 1);
        assert!(out.values().all(|a| !a.contains_key("unread")));
    }

    #[test]
    fn uniform_skips_missing_topics_and_partitions_gone() {
        let m = subs(&[("a", &["t", "gone"]), ("b", &["t"])]);
        let before = Assignor::Uniform.assign(&m, &counts(&[("t", 8)]), &BTreeMap::new());
        let p = counts(&[("t", 4)]);
        let out = Assignor::Uniform.assign(&m, &p, &before);
        check_complete(&m, &p, &out);
        assert!(
            out.values()
                .flat_map(|a| a.values())
                .flatten()
                .all(|p| *p < 4)
        );
    }

    #[test]
    fn range_gives_contiguous_ranges_in_member_order() {
        let m = subs(&[("b", &["t", "u"]), ("a", &["t", "u"]), ("c", &["t"])]);
        let p = counts(&[("t", 7), ("u", 3)]);
        let out = Assignor::Range.assign(&m, &p, &BTreeMap::new());
        check_complete(&m, &p, &out);
        let t = |id: &str| out[id].get("t").cloned().unwrap_or_default();
        let u = |id: &str| out[id].get("u").cloned().unwrap_or_default();
        assert_eq!(t("a"), (0..3).collect());
        assert_eq!(t("b"), (3..5).collect());
        assert_eq!(t("c"), (5..7).collect());
        assert_eq!(u("a"), (0..2).collect());
        assert_eq!(u("b"), (2..3).collect());
        assert!(!out["c"].contains_key("u"));
    }

    #[test]
    fn more_members_than_partitions_leaves_some_empty() {
        let m = subs(&[("a", &["t"]), ("b", &["t"]), ("c", &["t"])]);
        let p = counts(&[("t", 2)]);
        for assignor in Assignor::ALL {
            let out = assignor.assign(&m, &p, &BTreeMap::new());
            check_complete(&m, &p, &out);
            assert_eq!(out.len(), 3);
            assert_eq!(out.values().map(total).sum::<usize>(), 2);
        }
    }

    #[test]
    fn names_round_trip() {
        for a in Assignor::ALL {
            assert_eq!(Assignor::named(a.name()), Some(a));
        }
        assert_eq!(Assignor::named("sticky"), None);
    }
}
