//! The classic protocol's state machine, step by step.

use super::*;
use crate::group::limits::ClassicTotals;

fn join(id: &str, protocols: &[&str]) -> JoinGroupRequest {
    JoinGroupRequest {
        member_id: id.to_owned(),
        group_instance_id: None,
        session_timeout: Duration::from_secs(10),
        rebalance_timeout: Duration::from_secs(30),
        protocol_type: "consumer".into(),
        protocols: protocols
            .iter()
            .map(|name| GroupProtocol {
                name: (*name).to_owned(),
                metadata: Bytes::from(format!("{id}:{name}")),
            })
            .collect(),
        client_id: "c".into(),
        client_host: "h".into(),
        require_known_member_id: true,
    }
}

/// A stable group of members "a" and "b" (range), and its generation.
fn stable_pair(now: Instant) -> (Classic, u64) {
    let (mut c, mut generation) = (Classic::default(), 0);
    c.admit("a", &join("a", &["range"]), now);
    c.admit("b", &join("b", &["range"]), now);
    c.try_complete(&mut generation, false, now);
    c.assign(Vec::new());
    (c, generation)
}

#[test]
fn a_lone_member_completes_at_once_and_leads() {
    let now = Instant::now();
    let (mut c, mut generation) = (Classic::default(), 0);
    assert!(c.admit("a", &join("a", &["range"]), now));
    assert!(c.try_complete(&mut generation, false, now));
    assert_eq!(generation, 1);
    let answer = c.answer("a", generation).unwrap();
    assert_eq!(answer.leader, "a");
    assert_eq!(answer.protocol, "range");
    assert_eq!(answer.members.len(), 1);
    assert_eq!(&answer.members[0].metadata[..], b"a:range");
}

#[test]
fn a_second_member_waits_for_the_first_to_rejoin_and_only_the_leader_sees_members() {
    let now = Instant::now();
    let (mut c, mut generation) = (Classic::default(), 0);
    c.admit("a", &join("a", &["range", "roundrobin"]), now);
    c.try_complete(&mut generation, false, now);
    c.assign(Vec::new());
    assert!(c.admit("b", &join("b", &["roundrobin", "range"]), now));
    assert!(
        !c.try_complete(&mut generation, false, now),
        "a has not rejoined"
    );
    assert_eq!(
        c.check("a".into(), 1, generation, now),
        Err(Refusal::RebalanceInProgress)
    );
    c.admit("a", &join("a", &["range", "roundrobin"]), now);
    assert!(c.try_complete(&mut generation, false, now));
    assert_eq!(generation, 2);
    let (a, b) = (c.answer("a", 2).unwrap(), c.answer("b", 2).unwrap());
    assert_eq!(a.members.len(), 2);
    assert!(b.members.is_empty());
    // One vote each: the leader's order breaks the tie.
    assert_eq!(a.protocol, "range");
}

#[test]
fn members_that_do_not_rejoin_by_the_deadline_are_removed() {
    let now = Instant::now();
    let (mut c, mut generation) = stable_pair(now);
    c.admit("c", &join("c", &["range"]), now);
    assert!(c.try_complete(&mut generation, true, now));
    assert_eq!(c.members.keys().collect::<Vec<_>>(), vec!["c"]);
    assert_eq!(c.leader.as_deref(), Some("c"));
}

#[test]
fn a_member_without_a_shared_assignor_is_inconsistent() {
    let now = Instant::now();
    let mut c = Classic::default();
    c.admit("a", &join("a", &["range"]), now);
    assert!(matches!(
        c.check_protocols(&join("b", &["sticky"])),
        Err(Refusal::Inconsistent(_))
    ));
    let mut other_type = join("b", &["range"]);
    other_type.protocol_type = "connect".into();
    assert!(matches!(
        c.check_protocols(&other_type),
        Err(Refusal::Inconsistent(_))
    ));
    assert!(c.check_protocols(&join("b", &["range"])).is_ok());
}

#[test]
fn a_silent_member_expires_and_the_others_rebalance() {
    let now = Instant::now();
    let (mut c, mut generation) = stable_pair(now);
    let later = now + Duration::from_secs(11);
    c.members.get_mut("a").unwrap().last_seen = later;
    assert!(c.expire(later, &mut generation));
    assert_eq!(c.members.keys().collect::<Vec<_>>(), vec!["a"]);
    assert_eq!(c.phase.name(), "PreparingRebalance");
}

#[test]
fn leaving_last_empties_the_group() {
    let now = Instant::now();
    let (mut c, mut generation) = (Classic::default(), 0);
    c.admit("a", &join("a", &["range"]), now);
    c.try_complete(&mut generation, false, now);
    assert_eq!(c.remove(&["a".into()], now, &mut generation), vec!["a"]);
    assert_eq!(c.phase, Phase::Empty);
    assert!(c.protocol_type.is_empty());
}

#[test]
fn members_bytes_and_pending_ids_are_counted_server_wide_until_the_group_goes() {
    let now = Instant::now();
    let totals = Arc::new(ClassicTotals::default());
    let mut c = Classic::default();
    c.count_in(&totals);
    c.pending_ids
        .insert("p".into(), now + Duration::from_secs(6), 10);
    c.admit("a", &join("a", &["range"]), now);
    assert!(totals.bytes() >= join_bytes("a", &join("a", &["range"])));
    assert_eq!(totals.pending(), 1);
    let (mut generation, later) = (0, now + Duration::from_secs(20));
    // A completed join restarts the session: no expiry right after a long rebalance.
    assert!(c.try_complete(&mut generation, true, later));
    assert!(!c.expire(later, &mut generation));
    drop(c);
    assert_eq!((totals.bytes(), totals.pending()), (0, 0));
}
