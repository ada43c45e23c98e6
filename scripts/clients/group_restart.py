"""A live group of three confluent-kafka consumers across a SIGKILL of the server, and a
static member's restart: nobody is revoked, nothing moves.

Usage: group_restart.py KAFKO_BINARY WORK_DIR

Starts kafko itself (data in WORK_DIR/group-restart/data, Kafka on a free loopback port, so that the
restarted server is found at the same address), creates a 3-partition topic, and runs
three consumers of one group, each with a group.instance.id (static members) and a
30 s session. Once every partition is owned: SIGKILL the server, start it again on
the same directory and port, and keep the consumers polling for 8 s. Then one consumer
is closed (a static member does not leave) and a new consumer with its instance id
takes its place. Each step checks that no consumer saw a revoke or a new assignment,
and that the replacement owns what its predecessor owned.
"""

import sys
import time

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic
from kafko_server import Server

TOPIC = "group-restart"
GROUP = "survivors"


def check(cond, what):
    if not cond:
        print(f"  FAIL {what}")
        sys.exit(1)


class Member:
    """A consumer that records what it is given and what it gives back."""

    def __init__(self, bootstrap, instance):
        self.instance = instance
        self.owned = set()
        self.events = []
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "group.instance.id": instance,
            "session.timeout.ms": 30000,
            "heartbeat.interval.ms": 500,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
        })
        self.consumer.subscribe([TOPIC], on_assign=self.assigned, on_revoke=self.revoked)

    def assigned(self, _consumer, partitions):
        self.owned = {p.partition for p in partitions}
        self.events.append(("assign", sorted(self.owned)))

    def revoked(self, _consumer, partitions):
        self.events.append(("revoke", sorted(p.partition for p in partitions)))
        self.owned = set()

    def poll(self):
        message = self.consumer.poll(0.05)
        if message is not None and message.error():
            self.events.append(("error", str(message.error())))


def poll_all(members, seconds, until=None):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for m in members:
            m.poll()
        if until is not None and until():
            return True
    return until is None


def main():
    binary, work = sys.argv[1:]
    server = Server(binary, work, "group-restart")
    server.start()
    bootstrap = f"127.0.0.1:{server.port}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=3)])[TOPIC].result(30)

    members = [Member(bootstrap, f"host-{i}") for i in range(3)]
    stable = lambda: sorted(p for m in members for p in m.owned) == [0, 1, 2] and all(m.owned for m in members)
    check(poll_all(members, 60, stable), f"three members own the 3 partitions: {[m.events for m in members]}")
    # Let the last rebalance settle: every member sees the same generation for a while.
    poll_all(members, 2)
    check(stable(), "still one partition each")
    before = [set(m.owned) for m in members]
    seen = [len(m.events) for m in members]
    print(f"  ok  three static members own {[sorted(o) for o in before]}")

    server.kill()
    server.start()
    poll_all(members, 8)
    for m, owned, n in zip(members, before, seen):
        check(m.events[n:] == [], f"{m.instance} after SIGKILL and restart: {m.events[n:]}")
        check(m.owned == owned, f"{m.instance} still owns {sorted(owned)}")
    print("  ok  SIGKILL and restart: no member revoked, no partition moved")

    # A static member restarts within its session: its replacement takes its place.
    leaving = members.pop(0)
    leaving.consumer.close()
    others_seen = [len(m.events) for m in members]
    back = Member(bootstrap, leaving.instance)
    members.insert(0, back)
    check(poll_all(members, 30, lambda: bool(back.owned)), f"the restarted member is assigned: {back.events}")
    poll_all(members, 3)
    check(back.owned == before[0], f"{back.instance} owns {sorted(back.owned)}, had {sorted(before[0])}")
    for m, n in zip(members[1:], others_seen):
        check(m.events[n:] == [], f"{m.instance} while {back.instance} restarted: {m.events[n:]}")
    print("  ok  a static member's restart moves nothing")

    for m in members:
        m.consumer.close()
    server.stop()


if __name__ == "__main__":
    main()
