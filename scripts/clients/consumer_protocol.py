"""Two confluent-kafka consumers of one group with Kafka's consumer protocol (KIP-848,
`group.protocol=consumer`): the server assigns, the consumers reconcile.

Usage: consumer_protocol.py BOOTSTRAP

Creates a 4-partition topic and produces 400 records, then runs two consumers of one
group, committing as they read, polled in turn. Checks: together they read every record
exactly once; once both have polled a while they own two partitions each, never one
partition at once (the assignments seen through on_assign / on_revoke); the group is
described as a consumer group. Then the first consumer closes (it leaves), the second
comes to own all four partitions and reads 100 more records; a third consumer of the
group resumes at the commits and reads nothing twice.
"""

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "kip848-flow"
GROUP = "kip848-group"
PARTITIONS = 4


def check(cond, what):
    if not cond:
        print(f"  FAIL {what}")
        sys.exit(1)


def produce(bootstrap, start, count):
    p = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for i in range(start, start + count):
        p.produce(TOPIC, key=f"k{i}", value=f"v{i}", partition=i % PARTITIONS)
    check(p.flush(30) == 0, "every record delivered")


class Member:
    """A consumer of the group, with the partitions it owns as its callbacks tell."""

    def __init__(self, bootstrap, name):
        self.name = name
        self.owned = set()
        self.seen = []
        self.c = Consumer({
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "group.protocol": "consumer",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "client.id": name,
        })
        self.c.subscribe([TOPIC], on_assign=self.assigned, on_revoke=self.revoked,
                         on_lost=self.revoked)

    def assigned(self, consumer, partitions):
        self.owned |= {p.partition for p in partitions}

    def revoked(self, consumer, partitions):
        self.owned -= {p.partition for p in partitions}

    def poll(self, members):
        msg = self.c.poll(0.2)
        overlap = set()
        for other in members:
            if other is not self:
                overlap |= self.owned & other.owned
        check(not overlap, f"partitions {overlap} owned by two consumers at once")
        if msg is None:
            return
        check(msg.error() is None, f"{self.name}: {msg.error()}")
        self.seen.append(msg.value().decode())
        self.c.commit(message=msg, asynchronous=False)


def poll_until(members, what, done, seconds=60):
    deadline = time.monotonic() + seconds
    while not done():
        check(time.monotonic() < deadline,
              f"{what}: {[(m.name, sorted(m.owned), len(m.seen)) for m in members]}")
        for m in members:
            m.poll(members)


def main(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
    produce(bootstrap, 0, 400)
    a, b = Member(bootstrap, "first"), Member(bootstrap, "second")
    both = [a, b]
    poll_until(both, "two consumers read 400 records",
               lambda: len(a.seen) + len(b.seen) >= 400)
    poll_until(both, "two partitions each", lambda: len(a.owned) == 2 and len(b.owned) == 2)
    read = a.seen + b.seen
    check(len(read) == 400 and len(set(read)) == 400, f"every record once: {len(read)} read")
    check(a.seen and b.seen, f"both consumers read: {len(a.seen)}, {len(b.seen)}")
    print(f"  ok  two consumers share 4 partitions (read {len(a.seen)} and {len(b.seen)})")

    groups = admin.describe_consumer_groups([GROUP])[GROUP].result(30)
    check(len(groups.members) == 2, f"described members: {groups.members}")
    kind = getattr(groups, "type", None)
    check(kind is None or "CONSUMER" in str(kind), f"described type {kind}")
    print(f"  ok  described as a consumer group ({kind}, {groups.state})")

    a.c.close()
    a.owned = set()
    produce(bootstrap, 400, 100)
    poll_until([b], "the second consumer takes over",
               lambda: len(b.owned) == PARTITIONS and len(b.seen) >= len(read) - len(a.seen) + 100)
    check(len(set(b.seen)) == len(b.seen), "the second consumer read nothing twice")
    print("  ok  after a leave the other consumer owns every partition and reads on")
    b.c.close()

    c = Member(bootstrap, "third")
    produce(bootstrap, 500, 20)
    poll_until([c], "a new consumer resumes at the commits", lambda: len(c.seen) >= 20)
    check(sorted(c.seen) == sorted(f"v{i}" for i in range(500, 520)),
          f"resumed at the commits: {len(c.seen)} read")
    committed = c.c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)
    check(sum(tp.offset for tp in committed) == 520, f"committed {committed}")
    c.c.close()
    admin.delete_topics([TOPIC])[TOPIC].result(30)
    print("  ok  a new consumer resumes at the committed offsets")


if __name__ == "__main__":
    main(sys.argv[1])
