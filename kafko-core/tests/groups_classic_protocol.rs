//! Kafka's classic group protocol on the one coordinator: the member-id handshake, a
//! lone member answered at once, a second member's join held until the first rejoins,
//! only the leader seeing the members' metadata, followers' SyncGroup waiting for the
//! leader's assignment and getting it byte for byte, heartbeats telling a rebalance, the
//! generation check on commits, metadata read back, and no mixing of Kafka members with
//! kafko's own members in one group.
mod gc_support;

use std::time::Duration;

use gc_support::{open, small};
use kafko_core::{
    Bytes, CommitOffset, GroupError, GroupHandle, GroupProtocol, JoinGroupAnswer, JoinGroupOutcome,
    JoinGroupRequest, MemberAssignment,
};

fn request(member_id: &str) -> JoinGroupRequest {
    JoinGroupRequest {
        member_id: member_id.to_owned(),
        group_instance_id: None,
        session_timeout: Duration::from_secs(10),
        rebalance_timeout: Duration::from_secs(20),
        protocol_type: "consumer".into(),
        protocols: vec![GroupProtocol {
            name: "range".into(),
            metadata: Bytes::from(format!("subscription of {member_id}")),
        }],
        client_id: "test".into(),
        client_host: "/127.0.0.1".into(),
        require_known_member_id: true,
    }
}

/// The handshake, then the join: returns the answer.
async fn join(g: &GroupHandle) -> JoinGroupAnswer {
    let id = match g.classic_join(request("")).await.unwrap() {
        JoinGroupOutcome::MemberIdRequired(id) => id,
        other => panic!("expected the member-id handshake, got {other:?}"),
    };
    rejoin(g, &id).await
}

async fn rejoin(g: &GroupHandle, id: &str) -> JoinGroupAnswer {
    match g.classic_join(request(id)).await.unwrap() {
        JoinGroupOutcome::Joined(answer) => answer,
        other => panic!("expected a join, got {other:?}"),
    }
}

#[tokio::test]
async fn two_members_rebalance_through_join_and_sync() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(2)).await.unwrap();
    let g = k.group("g").unwrap();

    // A lone member: answered at once, leader of generation 1.
    let a = join(&g).await;
    assert_eq!((a.generation, a.leader.clone()), (1, a.member_id.clone()));
    assert_eq!(a.members.len(), 1);
    let assignment_a = Bytes::from_static(b"a owns t-0, t-1");
    let synced = g
        .classic_sync(
            &a.member_id,
            1,
            vec![MemberAssignment {
                member_id: a.member_id.clone(),
                assignment: assignment_a.clone(),
                partitions: vec![("t".into(), vec![0, 1])],
            }],
        )
        .await
        .unwrap();
    assert_eq!(synced, assignment_a);
    g.classic_heartbeat(&a.member_id, 1).unwrap();

    // b joins: its join waits until a rejoins; a learns of it by a heartbeat.
    let b_id = match g.classic_join(request("")).await.unwrap() {
        JoinGroupOutcome::MemberIdRequired(id) => id,
        other => panic!("{other:?}"),
    };
    let b_join = tokio::spawn({
        let g = g.clone();
        let b_id = b_id.clone();
        async move { rejoin(&g, &b_id).await }
    });
    let rebalancing = loop {
        match g.classic_heartbeat(&a.member_id, 1) {
            Err(e @ GroupError::RebalanceInProgress { .. }) => break e,
            Ok(()) => tokio::task::yield_now().await,
            Err(e) => panic!("{e}"),
        }
    };
    assert!(rebalancing.to_string().contains("rebalancing"));
    assert!(!b_join.is_finished());
    let a2 = rejoin(&g, &a.member_id).await;
    let b2 = b_join.await.unwrap();
    assert_eq!((a2.generation, b2.generation), (2, 2));
    assert_eq!(
        a2.leader, a.member_id,
        "the leader stays while it is a member"
    );
    assert_eq!(a2.members.len(), 2);
    assert!(b2.members.is_empty(), "only the leader sees the members");
    let b_metadata = a2.members.iter().find(|m| m.member_id == b_id).unwrap();
    assert_eq!(
        &b_metadata.metadata[..],
        format!("subscription of {b_id}").as_bytes()
    );

    // b's SyncGroup waits for the leader's and gets its assignment unchanged.
    let b_sync = tokio::spawn({
        let g = g.clone();
        let b_id = b_id.clone();
        async move { g.classic_sync(&b_id, 2, Vec::new()).await }
    });
    tokio::task::yield_now().await;
    assert!(!b_sync.is_finished());
    let for_b = Bytes::from_static(b"\x00\x03opaque cooperative-sticky bytes");
    let leader_got = g
        .classic_sync(
            &a.member_id,
            2,
            vec![
                MemberAssignment {
                    member_id: a.member_id.clone(),
                    assignment: Bytes::from_static(b"a: t-0"),
                    partitions: vec![("t".into(), vec![0])],
                },
                MemberAssignment {
                    member_id: b_id.clone(),
                    assignment: for_b.clone(),
                    partitions: vec![("t".into(), vec![1])],
                },
            ],
        )
        .await
        .unwrap();
    assert_eq!(&leader_got[..], b"a: t-0");
    assert_eq!(
        g.classic_protocol(),
        Some(("consumer".to_owned(), "range".to_owned()))
    );
    assert_eq!(b_sync.await.unwrap().unwrap(), for_b);

    // Commits check the generation and keep their metadata.
    let t = k.topic("t").unwrap();
    let offset = |partition, offset| CommitOffset {
        partition,
        offset,
        metadata: Some(format!("note {partition}")),
        leader_epoch: None,
    };
    assert!(matches!(
        g.classic_commit(Some(((&b_id).into(), 1)), &t, &[offset(1, 0)])
            .await,
        Err(GroupError::StaleGeneration { current: 2, .. })
    ));
    g.classic_commit(Some(((&b_id).into(), 2)), &t, &[offset(1, 0)])
        .await
        .unwrap();
    let committed = g.classic_committed().unwrap();
    assert_eq!(committed["t"][0].metadata.as_deref(), Some("note 1"));
    // A client that is no member may not commit while the group has members.
    assert!(matches!(
        g.classic_commit(None, &t, &[offset(0, 0)]).await,
        Err(GroupError::UnknownMember { .. })
    ));

    // Descriptions show the Kafka side, with the partitions the assignments named.
    let d = g.describe().unwrap();
    let classic = d.classic.unwrap();
    assert_eq!(
        (classic.state, classic.protocol.as_str()),
        ("Stable", "range")
    );
    assert_eq!(d.topics[0].partitions[1].owner.as_deref(), Some(&*b_id));

    // Leaving: the other member must rejoin; the last one empties the group.
    assert!(
        g.classic_leave(std::slice::from_ref(&b_id))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(matches!(
        g.classic_heartbeat(&a.member_id, 2),
        Err(GroupError::RebalanceInProgress { .. })
    ));
    let a3 = rejoin(&g, &a.member_id).await;
    assert_eq!((a3.generation, a3.members.len()), (3, 1));
    assert_eq!(
        g.classic_leave(&[a.member_id.clone(), "nobody".into()])
            .await
            .unwrap(),
        ["nobody"]
    );
    assert_eq!(g.classic_protocol(), None, "an empty group has no protocol");
    // An empty group takes commits from clients that are no members.
    g.classic_commit(None, &t, &[offset(0, 0)]).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_member_that_does_not_rejoin_is_removed_at_the_rebalance_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    let g = k.group("g").unwrap();
    let a = join(&g).await;
    g.classic_sync(&a.member_id, 1, Vec::new()).await.unwrap();
    // b joins; a never rejoins (nor heartbeats): b's join completes at the deadline.
    let b = join(&g).await;
    assert_eq!((b.generation, b.leader.clone()), (2, b.member_id.clone()));
    assert_eq!(b.members.len(), 1);
    assert!(matches!(
        g.classic_heartbeat(&a.member_id, 1),
        Err(GroupError::UnknownMember { .. })
    ));
}

#[tokio::test]
async fn kafka_members_and_kafkos_own_members_do_not_share_a_group() {
    let dir = tempfile::tempdir().unwrap();
    let k = open(dir.path()).await;
    k.create_topic_with_config("t", small(1)).await.unwrap();
    let t = k.topic("t").unwrap();
    let http = k.group("http").unwrap();
    http.join(&t, Some("m"), Duration::from_secs(10)).unwrap();
    assert!(matches!(
        http.classic_join(request("")).await,
        Err(GroupError::InconsistentGroupProtocol { .. })
    ));
    let kafka = k.group("kafka").unwrap();
    join(&kafka).await;
    assert!(matches!(
        kafka.join(&t, Some("m"), Duration::from_secs(10)),
        Err(GroupError::InconsistentGroupProtocol { .. })
    ));
    // Another protocol type, or no assignor in common, is refused too.
    let mut other = request("");
    other.protocol_type = "connect".into();
    assert!(matches!(
        kafka.classic_join(other).await,
        Err(GroupError::InconsistentGroupProtocol { .. })
    ));
    // An id the group never handed out is unknown.
    assert!(matches!(
        kafka.classic_join(request("made-up")).await,
        Err(GroupError::UnknownMember { .. })
    ));
}
