//! Kafka groups across restarts and static membership (KIP-345), on the coordinator:
//! - a stable group is found again after the process stops without closing the log:
//!   same members, generation, leader and assignments, so heartbeats go on with no
//!   rebalance; a group that emptied is found empty;
//! - a static member that joins again with no member id takes its place back: same
//!   generation, same assignment, no rebalance for the others; its old id is fenced on
//!   every call; the leader is told to skip the assignment;
//! - a static member leaves by its instance id; a second instance that joins with an
//!   old member id is fenced.
mod gc_support;

use std::time::Duration;

use gc_support::{open, small};
use kafko_core::{
    Bytes, ClassicMemberId, GroupError, GroupHandle, GroupProtocol, JoinGroupAnswer,
    JoinGroupOutcome, JoinGroupRequest, LeaveOutcome, MemberAssignment,
};

fn request(member_id: &str, instance: Option<&str>) -> JoinGroupRequest {
    JoinGroupRequest {
        member_id: member_id.to_owned(),
        group_instance_id: instance.map(str::to_owned),
        session_timeout: Duration::from_secs(10),
        rebalance_timeout: Duration::from_secs(20),
        protocol_type: "consumer".into(),
        protocols: vec![GroupProtocol {
            name: "range".into(),
            metadata: Bytes::from_static(b"subscription"),
        }],
        client_id: "test".into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: true,
    }
}

async fn joined(g: &GroupHandle, member_id: &str, instance: Option<&str>) -> JoinGroupAnswer {
    match g.classic_join(request(member_id, instance)).await.unwrap() {
        JoinGroupOutcome::Joined(answer) => answer,
        JoinGroupOutcome::MemberIdRequired(id) => {
            assert!(instance.is_none(), "a static member needs no handshake");
            Box::pin(joined(g, &id, None)).await
        }
    }
}

fn assignment(member: &str, partitions: Vec<u32>) -> MemberAssignment {
    MemberAssignment {
        member_id: member.to_owned(),
        assignment: Bytes::from(format!("{member} owns {partitions:?}")),
        partitions: vec![("t".into(), partitions)],
    }
}

/// A stable group of a static member ("host-a") and a dynamic one: (static id,
/// dynamic id, generation). The static member joins first, so it leads.
async fn stable_pair(g: &GroupHandle) -> (String, String, u64) {
    let a = joined(g, "", Some("host-a")).await;
    assert!(a.member_id.starts_with("host-a-"), "{}", a.member_id);
    let g2 = g.clone();
    let b = tokio::spawn(async move { joined(&g2, "", None).await });
    // The second member's join starts a rebalance that waits for the first to rejoin:
    // its task runs as this one yields (a current-thread runtime).
    let mut a2 = None;
    for _ in 0..1000 {
        tokio::task::yield_now().await;
        if g.classic_heartbeat(&a.member_id, a.generation).is_err() {
            a2 = Some(joined(g, &a.member_id, Some("host-a")).await);
            break;
        }
    }
    let a2 = a2.expect("the second join started a rebalance");
    let b = b.await.unwrap();
    assert_eq!((a2.generation, b.generation), (2, 2));
    assert_eq!(a2.leader, a.member_id);
    let (ia, ib) = (a.member_id.clone(), b.member_id.clone());
    let all = vec![assignment(&ia, vec![0]), assignment(&ib, vec![1])];
    let g2 = g.clone();
    let ib2 = ib.clone();
    let follower = tokio::spawn(async move { g2.classic_sync(&ib2, 2, Vec::new()).await });
    let mine = g.classic_sync(&ia, 2, all).await.unwrap();
    assert_eq!(mine, assignment(&ia, vec![0]).assignment);
    assert_eq!(
        follower.await.unwrap().unwrap(),
        assignment(&ib, vec![1]).assignment
    );
    (ia, ib, 2)
}

#[tokio::test]
async fn a_stable_group_survives_a_crash_with_no_rebalance() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(2)).await.unwrap();
    let g = k.group("g").unwrap();
    let (ia, ib, generation) = stable_pair(&g).await;
    drop(g);
    drop(k);

    let k = open(dir.path()).await;
    let g = k.group("g").unwrap();
    g.classic_heartbeat(&ia, generation).unwrap();
    g.classic_heartbeat(&ib, generation).unwrap();
    let d = g.describe().unwrap().classic.unwrap();
    assert_eq!(d.state, "Stable");
    assert_eq!(
        (d.protocol_type.as_str(), d.protocol.as_str()),
        ("consumer", "range")
    );
    type Owned = Vec<(String, Vec<u32>)>;
    let owned: Vec<(String, Owned)> = d
        .members
        .iter()
        .map(|m| (m.member_id.clone(), m.partitions.clone()))
        .collect();
    assert_eq!(
        owned,
        vec![
            (ia.clone(), vec![("t".into(), vec![0])]),
            (ib.clone(), vec![("t".into(), vec![1])])
        ]
    );
    assert_eq!(
        d.members
            .iter()
            .find(|m| m.member_id == ia)
            .and_then(|m| m.group_instance_id.clone()),
        Some("host-a".into())
    );
    // A follower's SyncGroup in the stable generation gets its assignment back.
    assert_eq!(
        g.classic_sync(&ib, generation, Vec::new()).await.unwrap(),
        assignment(&ib, vec![1]).assignment
    );

    // Both leave: the group is empty, and found empty after another crash.
    assert_eq!(
        g.classic_leave(&[ia.clone(), ib.clone()]).await.unwrap(),
        Vec::<String>::new()
    );
    assert!(!dir.path().join("groups/g/members.json").exists());
    drop(g);
    drop(k);
    let k = open(dir.path()).await;
    let g = k.group("g").unwrap();
    assert!(matches!(
        g.classic_heartbeat(&ia, generation),
        Err(GroupError::UnknownMember { .. })
    ));
}

#[tokio::test]
async fn a_static_member_rejoins_without_a_rebalance_and_fences_its_old_id() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(2)).await.unwrap();
    let g = k.group("g").unwrap();
    let (ia, ib, generation) = stable_pair(&g).await;

    // The static leader restarts: a join with no member id, same instance.
    let again = joined(&g, "", Some("host-a")).await;
    assert_ne!(again.member_id, ia);
    assert_eq!(again.generation, generation, "no new generation");
    assert_eq!(again.leader, again.member_id, "it still leads");
    assert!(again.skip_assignment, "the leader keeps the assignment");
    assert_eq!(again.members.len(), 2);
    // The other member never noticed.
    g.classic_heartbeat(&ib, generation).unwrap();
    // It gets its old assignment under its new id.
    let new = ClassicMemberId {
        member_id: &again.member_id,
        group_instance_id: Some("host-a"),
    };
    assert_eq!(
        g.classic_sync(new, generation, Vec::new()).await.unwrap(),
        assignment(&ia, vec![0]).assignment
    );
    g.classic_heartbeat(new, generation).unwrap();

    // The old instance is fenced on every call that names the instance.
    let old = ClassicMemberId {
        member_id: &ia,
        group_instance_id: Some("host-a"),
    };
    for result in [
        g.classic_heartbeat(old, generation),
        g.classic_sync(old, generation, Vec::new())
            .await
            .map(|_| ()),
    ] {
        assert!(
            matches!(result, Err(GroupError::FencedInstanceId { ref instance, .. }) if instance == "host-a"),
            "{result:?}"
        );
    }
    assert!(matches!(
        g.classic_join(request(&ia, Some("host-a"))).await,
        Err(GroupError::FencedInstanceId { .. })
    ));
    // Without its instance id, the old id is simply unknown.
    assert!(matches!(
        g.classic_heartbeat(&ia, generation),
        Err(GroupError::UnknownMember { .. })
    ));
    // An instance the group never saw, with a member id, is unknown too.
    assert!(matches!(
        g.classic_join(request(&ib, Some("host-z"))).await,
        Err(GroupError::UnknownMember { .. })
    ));

    // The replacement survives a crash too.
    drop(g);
    drop(k);
    let k = open(dir.path()).await;
    let g = k.group("g").unwrap();
    g.classic_heartbeat(new, generation).unwrap();
    g.classic_heartbeat(&ib, generation).unwrap();

    // Leaving by instance id alone (an empty member id), fenced for an old id.
    let outcomes = g
        .classic_leave_members(&[
            (ia.clone(), Some("host-a".into())),
            (String::new(), Some("host-a".into())),
            (String::new(), Some("host-z".into())),
        ])
        .await
        .unwrap();
    assert_eq!(
        outcomes,
        [
            LeaveOutcome::FencedInstanceId,
            LeaveOutcome::Left,
            LeaveOutcome::UnknownMember
        ]
    );
    // The other member must rejoin now.
    assert!(matches!(
        g.classic_heartbeat(&ib, generation),
        Err(GroupError::RebalanceInProgress { .. })
    ));
}
