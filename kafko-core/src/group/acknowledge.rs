//! What the implicit member's consumers showed they received, and what its auto-commit
//! may therefore commit.
//!
//! The implicit member is anonymous: any number of clients poll it, so one client's
//! poll proves nothing about another's answer. An answer handed to a connection
//! ([`Delivery::sent`](super::Delivery::sent)) may also never reach its client: the
//! kernel took the bytes, the client hung up unread. So every answer it delivers is
//! remembered here, *acknowledged* only when confirmed in process
//! ([`Delivery::confirm`](super::Delivery::confirm)) or when a later poll carries its
//! cursor ([`GroupPoll::cursor`](super::GroupPoll::cursor)).
//!
//! Each answer remembers the cursor its own poll carried (`after`), so a poll carrying
//! cursor `c` shows that `c` and the answers before it in the same chain arrived, and
//! that an answer whose poll also carried `c` did not (its client asks again from the
//! same point): that answer's records are read again when nothing read past them.
//!
//! The **frontier** of a partition is the offset below which every record is
//! committed, acknowledged, or was skipped on purpose (an offset reset, a seek).
//! Acknowledged answers move it only when they start at or below it, so an
//! acknowledged answer never carries a commit over another client's unacknowledged
//! one. Auto-commit commits the frontier.

use std::collections::{BTreeMap, BTreeSet};

use super::PartitionOffset;
use super::coordinator::TopicState;

/// Most answers remembered per group and topic; past it the oldest is forgotten, and
/// the frontier cannot pass its records until they are committed some other way (an
/// explicit commit, or reading them again after a restart).
pub(super) const MAX_ANSWERS: usize = 256;

/// One answer delivered to the implicit member, not yet behind the frontier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Answer {
    /// The cursor the poll carried: the answer its client had received before.
    pub(super) after: Option<u64>,
    /// `(partition, start, end)` of the records it carried.
    pub(super) parts: Vec<(u32, u64, u64)>,
    /// Whether its client showed it has the records.
    pub(super) acknowledged: bool,
}

/// Where a partition's frontier started (an offset reset, a commit or a seek) and
/// where it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Frontier {
    pub(super) from: u64,
    pub(super) to: u64,
}

/// Starts partition `p`'s frontier at `offset` unless it has one: the group starts
/// reading there (from its committed offset, or an offset reset).
pub(super) fn start_frontier(ts: &mut TopicState, p: u32, offset: u64) {
    ts.frontier.entry(p).or_insert(Frontier {
        from: offset,
        to: offset,
    });
}

/// Remembers answer `id`; an acknowledged one moves the frontier at once.
pub(super) fn remember(ts: &mut TopicState, id: u64, answer: Answer) {
    let acknowledged = answer.acknowledged;
    ts.answers.insert(id, answer);
    while ts.answers.len() > MAX_ANSWERS {
        ts.answers.pop_first();
    }
    if acknowledged {
        advance(ts);
    }
}

/// Applies what a poll carrying `cursor` shows (see the module doc). Returns whether
/// a position moved back (a lost answer's records are to be read again).
pub(super) fn acknowledge(ts: &mut TopicState, cursor: u64) -> bool {
    let chain = chain(&ts.answers, cursor);
    let lost: Vec<u64> = ts
        .answers
        .iter()
        .filter(|(id, a)| a.after == Some(cursor) && !a.acknowledged && !chain.contains(id))
        .map(|(&id, _)| id)
        .collect();
    let mut moved = false;
    for id in lost {
        let Some(answer) = ts.answers.remove(&id) else {
            continue;
        };
        for (partition, start, end) in answer.parts {
            if ts.positions.get(&partition) == Some(&end) && !ts.leases.contains_key(&partition) {
                ts.positions.insert(partition, start);
                moved = true;
            }
        }
    }
    for id in &chain {
        if let Some(answer) = ts.answers.get_mut(id) {
            answer.acknowledged = true;
        }
    }
    advance(ts);
    moved
}

/// What auto-commit may commit: each frontier past the committed offset (or, with none
/// committed, past where it started), ascending by partition.
pub(super) fn committable(ts: &TopicState) -> Vec<PartitionOffset> {
    ts.frontier
        .iter()
        .filter(|(p, f)| f.to > ts.committed.get(p).copied().unwrap_or(f.from))
        .map(|(&partition, f)| PartitionOffset {
            partition,
            offset: f.to,
        })
        .collect()
}

/// Moves each frontier over the acknowledged answers that start at or below it, and
/// forgets the answers wholly behind the frontiers.
fn advance(ts: &mut TopicState) {
    let mut acknowledged: Vec<(u32, u64, u64)> = ts
        .answers
        .values()
        .filter(|a| a.acknowledged)
        .flat_map(|a| a.parts.iter().copied())
        .collect();
    acknowledged.sort_unstable();
    for (p, start, end) in acknowledged {
        if let Some(f) = ts.frontier.get_mut(&p)
            && start <= f.to
            && f.to < end
        {
            f.to = end;
        }
    }
    let frontier = &ts.frontier;
    ts.answers.retain(|_, a| {
        !a.parts
            .iter()
            .all(|(p, _, end)| frontier.get(p).is_some_and(|f| *end <= f.to))
    });
}

/// `cursor` and the answers before it in its client's chain, as far as remembered.
fn chain(answers: &BTreeMap<u64, Answer>, cursor: u64) -> BTreeSet<u64> {
    let mut chain = BTreeSet::new();
    let mut at = Some(cursor);
    while let Some(id) = at {
        // A poll only carries an older answer's cursor, so no cycle forms; the walk
        // stops at a repeat anyway.
        if !chain.insert(id) {
            break;
        }
        at = answers.get(&id).and_then(|a| a.after);
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(after: Option<u64>, parts: &[(u32, u64, u64)]) -> Answer {
        Answer {
            after,
            parts: parts.to_vec(),
            acknowledged: false,
        }
    }

    fn state() -> TopicState {
        let mut ts = TopicState::default();
        start_frontier(&mut ts, 0, 0);
        start_frontier(&mut ts, 1, 0);
        ts
    }

    fn offsets(ts: &TopicState) -> Vec<(u32, u64)> {
        committable(ts)
            .iter()
            .map(|p| (p.partition, p.offset))
            .collect()
    }

    #[test]
    fn a_cursor_acknowledges_its_chain_and_nothing_else() {
        let mut ts = state();
        // One client: 1 then 2 (after 1). Another: 3, on partition 1.
        remember(&mut ts, 1, answer(None, &[(0, 0, 5)]));
        remember(&mut ts, 2, answer(Some(1), &[(0, 5, 9)]));
        remember(&mut ts, 3, answer(None, &[(1, 0, 4)]));
        ts.positions.extend([(0, 9), (1, 4)]);
        assert_eq!(offsets(&ts), [], "nothing acknowledged yet");
        assert!(!acknowledge(&mut ts, 2));
        assert_eq!(offsets(&ts), [(0, 9)]);
        assert_eq!(ts.answers.keys().copied().collect::<Vec<_>>(), [3]);
    }

    #[test]
    fn an_acknowledged_answer_does_not_carry_a_commit_over_an_unacknowledged_one() {
        let mut ts = state();
        // Client A got 0..4 (answer 1) and never showed it; client B read on: 4..5.
        remember(&mut ts, 1, answer(None, &[(0, 0, 4)]));
        remember(&mut ts, 2, answer(None, &[(0, 4, 5)]));
        assert!(!acknowledge(&mut ts, 2));
        assert_eq!(offsets(&ts), [], "B's answer starts past the frontier");
        // Once A shows it got its answer, both are behind the frontier.
        assert!(!acknowledge(&mut ts, 1));
        assert_eq!(offsets(&ts), [(0, 5)]);
        assert!(ts.answers.is_empty());
    }

    #[test]
    fn an_answer_asked_for_again_after_the_same_cursor_was_lost() {
        let mut ts = state();
        remember(&mut ts, 1, answer(None, &[(0, 0, 5)]));
        remember(&mut ts, 2, answer(Some(1), &[(0, 5, 9)]));
        ts.positions.insert(0, 9);
        // The client polls again carrying 1: it never got 2.
        assert!(acknowledge(&mut ts, 1));
        assert_eq!(ts.positions[&0], 5, "read again from where 2 started");
        assert_eq!(offsets(&ts), [(0, 5)], "1 is committable, 2 is not");
        assert!(ts.answers.is_empty());
    }

    #[test]
    fn a_lost_answer_read_past_stays_where_the_group_is() {
        let mut ts = state();
        remember(&mut ts, 1, answer(None, &[(0, 0, 5)]));
        remember(&mut ts, 2, answer(Some(1), &[(0, 5, 9)]));
        ts.positions.insert(0, 12);
        assert!(!acknowledge(&mut ts, 1));
        assert_eq!(ts.positions[&0], 12);
    }

    #[test]
    fn the_memory_of_answers_is_bounded() {
        let mut ts = state();
        for id in 0..(MAX_ANSWERS as u64 * 2) {
            remember(&mut ts, id, answer(None, &[(0, id + 1, id + 2)]));
        }
        assert_eq!(ts.answers.len(), MAX_ANSWERS);
        assert_eq!(ts.answers.keys().next(), Some(&(MAX_ANSWERS as u64)));
    }
}
