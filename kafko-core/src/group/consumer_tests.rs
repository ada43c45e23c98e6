//! The consumer group state machine: joins, leaves, epochs, fencing, expiry, static
//! members, and the incremental reconciliation's promise that no partition is owned by
//! two members at once.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use super::*;
use crate::group::consumer_types::ConsumerSubscription;

const SESSION: Duration = Duration::from_secs(45);

struct Harness {
    c: Consumer,
    now: Instant,
    partitions: BTreeMap<String, u32>,
}

/// A client as the protocol expects one to behave: it owns what its last assignment
/// said, releasing at once what an assignment no longer names.
#[derive(Debug, Clone, Default)]
struct Client {
    id: String,
    epoch: i32,
    owned: Assignment,
}

impl Harness {
    fn new(topics: &[(&str, u32)]) -> Self {
        Harness {
            c: Consumer::default(),
            now: Instant::now(),
            partitions: topics.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect(),
        }
    }

    fn send(
        &mut self,
        request: &ConsumerHeartbeat,
    ) -> Result<ConsumerHeartbeatAnswer, ConsumerError> {
        let cx = HeartbeatContext {
            now: self.now,
            regex_topics: None,
            partitions: &self.partitions,
            heartbeat_interval: Duration::from_secs(5),
            max_members: 10,
            new_id: &|| "generated".to_owned(),
        };
        self.c.expire(self.now, SESSION);
        self.c.heartbeat(request, &cx)
    }

    fn join(&mut self, id: &str, topics: &[&str], instance: Option<&str>) -> Client {
        let request = ConsumerHeartbeat {
            member_id: id.to_owned(),
            member_epoch: 0,
            instance_id: instance.map(str::to_owned),
            rebalance_timeout: Some(Duration::from_secs(30)),
            subscription: Some(ConsumerSubscription {
                topic_names: Some(topics.iter().map(|t| (*t).to_owned()).collect()),
                regex: None,
            }),
            owned: Some(Vec::new()),
            ..Default::default()
        };
        let answer = self.send(&request).expect("joined");
        let mut client = Client {
            id: answer.member_id.clone(),
            ..Client::default()
        };
        client.apply(&answer);
        client
    }

    /// One heartbeat of `client`, reporting what it owns.
    fn beat(&mut self, client: &mut Client) -> Result<(), ConsumerError> {
        let request = ConsumerHeartbeat {
            member_id: client.id.clone(),
            member_epoch: client.epoch,
            owned: Some(to_list(&client.owned)),
            ..Default::default()
        };
        let answer = self.send(&request)?;
        client.apply(&answer);
        Ok(())
    }

    fn leave(&mut self, client: &Client, epoch: i32) -> ConsumerHeartbeatAnswer {
        let request = ConsumerHeartbeat {
            member_id: client.id.clone(),
            member_epoch: epoch,
            instance_id: self
                .c
                .members
                .get(&client.id)
                .and_then(|m| m.instance_id.clone()),
            ..Default::default()
        };
        self.send(&request).expect("left")
    }
}

impl Client {
    fn apply(&mut self, answer: &ConsumerHeartbeatAnswer) {
        self.epoch = answer.member_epoch;
        if let Some(a) = &answer.assignment {
            self.owned = to_assignment(a);
        }
    }

    fn count(&self) -> usize {
        self.owned.values().map(BTreeSet::len).sum()
    }
}

/// No partition is owned by two clients.
fn check_disjoint(clients: &[&Client]) {
    let mut seen = HashSet::new();
    for c in clients {
        for (t, ps) in &c.owned {
            for p in ps {
                assert!(
                    seen.insert((t.clone(), *p)),
                    "{t}-{p} owned twice: {clients:?}"
                );
            }
        }
    }
}

#[test]
fn a_lone_member_gets_every_partition() {
    let mut h = Harness::new(&[("t", 4), ("u", 2)]);
    let a = h.join("a", &["t", "u"], None);
    assert_eq!(a.epoch, 1);
    assert_eq!(a.count(), 6);
    assert_eq!(h.c.state(), "Stable");
    assert_eq!((h.c.group_epoch, h.c.assignment_epoch), (1, 1));
}

#[test]
fn a_second_member_waits_for_the_first_to_release() {
    let mut h = Harness::new(&[("t", 4)]);
    let mut a = h.join("a", &["t"], None);
    let mut b = h.join("b", &["t"], None);
    // b is at the new epoch but owns nothing yet: a still holds everything.
    assert_eq!((b.epoch, b.count()), (2, 0));
    check_disjoint(&[&a, &b]);
    assert_eq!(h.c.state(), "Reconciling");
    // a is told to give up two partitions, and keeps its epoch until it has.
    h.beat(&mut a).unwrap();
    assert_eq!((a.epoch, a.count()), (1, 2));
    check_disjoint(&[&a, &b]);
    // b still cannot have them: a has not reported releasing them.
    h.beat(&mut b).unwrap();
    assert_eq!(b.count(), 0);
    // a reports owning two: it moves to epoch 2.
    h.beat(&mut a).unwrap();
    assert_eq!((a.epoch, a.count()), (2, 2));
    h.beat(&mut b).unwrap();
    assert_eq!((b.epoch, b.count()), (2, 2));
    check_disjoint(&[&a, &b]);
    assert_eq!(h.c.state(), "Stable");
}

#[test]
fn wrong_epochs_are_fenced_and_strangers_unknown() {
    let mut h = Harness::new(&[("t", 2)]);
    let mut a = h.join("a", &["t"], None);
    let mut ahead = a.clone();
    ahead.epoch = 7;
    let e = h.beat(&mut ahead).unwrap_err();
    assert_eq!(e.refusal, ConsumerRefusal::FencedMemberEpoch);
    let mut stranger = Client {
        id: "x".into(),
        epoch: 1,
        ..Client::default()
    };
    assert_eq!(
        h.beat(&mut stranger).unwrap_err().refusal,
        ConsumerRefusal::UnknownMember
    );
    h.beat(&mut a).unwrap();
    // A bad epoch value is an invalid request.
    let bad = ConsumerHeartbeat {
        member_id: "a".into(),
        member_epoch: -3,
        ..Default::default()
    };
    assert_eq!(
        h.send(&bad).unwrap_err().refusal,
        ConsumerRefusal::InvalidRequest
    );
}

#[test]
fn a_lost_answer_is_forgiven_with_the_previous_epoch() {
    let mut h = Harness::new(&[("t", 4)]);
    let mut a = h.join("a", &["t"], None);
    let b = h.join("b", &["t"], None);
    h.beat(&mut a).unwrap(); // told to revoke two, still epoch 1
    let stale = a.clone();
    h.beat(&mut a).unwrap(); // epoch 2
    assert_eq!(a.epoch, 2);
    // The epoch-2 answer was lost: the client heartbeats with epoch 1 and a subset.
    let mut retry = stale;
    h.beat(&mut retry).unwrap();
    assert_eq!(retry.epoch, 2);
    check_disjoint(&[&retry, &b]);
}

#[test]
fn leaving_hands_the_partitions_to_the_others() {
    let mut h = Harness::new(&[("t", 4)]);
    let mut a = h.join("a", &["t"], None);
    let mut b = h.join("b", &["t"], None);
    for _ in 0..3 {
        h.beat(&mut a).unwrap();
        h.beat(&mut b).unwrap();
    }
    assert_eq!((a.count(), b.count()), (2, 2));
    let left = h.leave(&a, LEAVE_EPOCH);
    assert_eq!(left.member_epoch, LEAVE_EPOCH);
    h.beat(&mut b).unwrap();
    assert_eq!(b.count(), 4);
    assert_eq!(b.epoch, h.c.group_epoch);
    assert!(!h.c.members.contains_key("a"));
}

#[test]
fn silent_members_and_slow_revokers_are_removed() {
    let mut h = Harness::new(&[("t", 4)]);
    let mut a = h.join("a", &["t"], None);
    let mut b = h.join("b", &["t"], None);
    // a is told to revoke but never reports it: past its rebalance timeout it goes.
    h.beat(&mut a).unwrap();
    assert_eq!(h.c.members["a"].state, MemberState::UnrevokedPartitions);
    h.now += Duration::from_secs(31);
    h.beat(&mut b).unwrap();
    assert!(!h.c.members.contains_key("a"));
    assert_eq!(b.count(), 4);
    assert_eq!(
        h.beat(&mut a).unwrap_err().refusal,
        ConsumerRefusal::UnknownMember
    );
    // b falls silent past the session timeout.
    h.now += SESSION + Duration::from_secs(1);
    let _c = h.join("c", &["t"], None);
    assert!(!h.c.members.contains_key("b"));
}

#[test]
fn a_static_member_comes_back_to_its_partitions() {
    let mut h = Harness::new(&[("t", 4)]);
    let mut a = h.join("a", &["t"], Some("ia"));
    let mut b = h.join("b", &["t"], Some("ib"));
    for _ in 0..3 {
        h.beat(&mut a).unwrap();
        h.beat(&mut b).unwrap();
    }
    let (epoch, owned) = (a.epoch, a.owned.clone());
    let group_epoch = h.c.group_epoch;
    // Another member cannot take the instance id while a is live.
    let request = ConsumerHeartbeat {
        member_id: "a2".into(),
        member_epoch: 0,
        instance_id: Some("ia".into()),
        subscription: Some(ConsumerSubscription {
            topic_names: Some(vec!["t".into()]),
            regex: None,
        }),
        owned: Some(Vec::new()),
        ..Default::default()
    };
    assert_eq!(
        h.send(&request).unwrap_err().refusal,
        ConsumerRefusal::UnreleasedInstanceId
    );
    assert_eq!(
        h.leave(&a, STATIC_LEAVE_EPOCH).member_epoch,
        STATIC_LEAVE_EPOCH
    );
    // b does not get a's partitions meanwhile.
    h.beat(&mut b).unwrap();
    assert_eq!(b.count(), 2);
    let answer = h.send(&request).unwrap();
    assert_eq!(answer.member_id, "a2");
    assert_eq!(answer.member_epoch, epoch);
    assert_eq!(answer.assignment.map(|a| to_assignment(&a)), Some(owned));
    assert_eq!(h.c.group_epoch, group_epoch, "no rebalance");
    assert!(!h.c.members.contains_key("a"));
}

#[test]
fn the_range_assignor_is_chosen_when_members_ask_for_it() {
    let mut h = Harness::new(&[("t", 3)]);
    let request = ConsumerHeartbeat {
        member_id: "a".into(),
        member_epoch: 0,
        server_assignor: Some("range".into()),
        subscription: Some(ConsumerSubscription {
            topic_names: Some(vec!["t".into()]),
            regex: None,
        }),
        owned: Some(Vec::new()),
        ..Default::default()
    };
    h.send(&request).unwrap();
    assert_eq!(h.c.assignor, Assignor::Range);
    let mut bad = request.clone();
    bad.member_id = "b".into();
    bad.server_assignor = Some("sticky".into());
    assert_eq!(
        h.send(&bad).unwrap_err().refusal,
        ConsumerRefusal::UnsupportedAssignor
    );
}

#[test]
fn offset_calls_check_the_member_epoch() {
    let mut h = Harness::new(&[("t", 2)]);
    assert!(h.c.check_offsets_call("", -1, false).is_ok(), "empty group");
    let a = h.join("a", &["t"], None);
    let refusal = |r: Result<(), ConsumerError>| r.unwrap_err().refusal;
    assert_eq!(
        refusal(h.c.check_offsets_call("", -1, false)),
        ConsumerRefusal::UnknownMember
    );
    assert!(h.c.check_offsets_call("", -1, true).is_ok());
    assert!(h.c.check_offsets_call("a", a.epoch, false).is_ok());
    assert_eq!(
        refusal(h.c.check_offsets_call("a", a.epoch + 1, false)),
        ConsumerRefusal::FencedMemberEpoch
    );
    assert_eq!(
        refusal(h.c.check_offsets_call("a", a.epoch - 1, false)),
        ConsumerRefusal::StaleMemberEpoch
    );
}

/// Members join, heartbeat in varying orders and leave; at every step no partition is
/// owned twice, and once everyone has heartbeated enough, every partition is owned.
#[test]
fn churn_never_owns_a_partition_twice_and_settles() {
    let mut h = Harness::new(&[("t", 7), ("u", 5)]);
    let mut clients: Vec<Client> = Vec::new();
    let mut seed = 12345u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for step in 0..400 {
        let roll = next() % 10;
        if roll == 0 && clients.len() < 5 {
            let c = h.join(&format!("m{step}"), &["t", "u"], None);
            clients.push(c);
        } else if roll == 1 && clients.len() > 1 {
            let i = usize::try_from(next() % clients.len() as u64).unwrap();
            let c = clients.remove(i);
            h.leave(&c, LEAVE_EPOCH);
        } else if !clients.is_empty() {
            let i = usize::try_from(next() % clients.len() as u64).unwrap();
            let c = &mut clients[i];
            if let Err(e) = h.beat(c) {
                panic!("{e:?} at step {step}");
            }
        }
        check_disjoint(&clients.iter().collect::<Vec<_>>());
    }
    for _ in 0..4 {
        for c in &mut clients {
            h.beat(c).unwrap();
        }
    }
    let owned: usize = clients.iter().map(Client::count).sum();
    assert_eq!(owned, 12);
    assert_eq!(h.c.state(), "Stable");
    let counts: Vec<usize> = clients.iter().map(Client::count).collect();
    assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1);
}
