"""Transactional producers of two clients across SIGKILLs of the server: every committed
transaction is visible whole to read_committed readers, no aborted one is, and no
transaction is ever visible in part.

Usage: transactional_kills.py KAFKO_BINARY WORK_DIR KILLS

Starts kafko itself (kafko_server.Server, with a short transaction check interval), and
per client two topics (3 and 2 partitions) and a transactional producer
(transactional_producer.py) writing transactions of 1–40 records over both, committing
four in five and aborting the rest. KILLS times: wait a random 0–600 ms, and until both
producers' topics grew since the last restart, then SIGKILL the server (a kill may land
between a transaction's records, between its markers, or during the commit) and start
it again on the same directory and port. Then the producers stop, and each client's
topics are read whole with isolation.level=read_committed, and with read_uncommitted.
"""

import json
import os
import random
import subprocess
import sys
import time
from collections import defaultdict

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafko_server import Server

CLIENTS = ["confluent", "kafka-python"]
PARTITIONS = {"a": 3, "b": 2}
HERE = os.path.dirname(os.path.abspath(__file__))


def check(cond, what):
    if not cond:
        print(f"  FAIL {what}")
        sys.exit(1)


def topics_of(client):
    return [f"txn-{client}-{suffix}" for suffix in PARTITIONS]


def partitions(topic):
    return PARTITIONS[topic[-1]]


def watermarks(bootstrap, topic, isolation):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-kills-watch",
                         "isolation.level": isolation})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(partitions(topic))]
    finally:
        consumer.close()


def total(bootstrap, client):
    try:
        return sum(sum(watermarks(bootstrap, t, "read_uncommitted")) for t in topics_of(client))
    except Exception:  # the server is restarting: not grown yet
        return -1


def wait_growth(bootstrap, since, seconds=120):
    deadline = time.monotonic() + seconds
    now = {}
    while time.monotonic() < deadline:
        now = {c: total(bootstrap, c) for c in CLIENTS}
        if all(now[c] > since[c] for c in CLIENTS):
            return now
        time.sleep(0.05)
    check(False, f"every producer writes again: since {since}, now {now}")


def read_all(bootstrap, topic, isolation, where=None):
    """Every record value of `topic` as a reader with `isolation` sees it (and, into
    `where`, value → (partition, offset))."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"txn-kills-{isolation}",
                         "enable.auto.commit": False, "isolation.level": isolation})
    # The end a reader reaches: the last stable offset, or the high watermark.
    ends = watermarks(bootstrap, topic, isolation)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions(topic))])
    values, positions = [], {p: 0 for p in range(partitions(topic))}
    deadline = time.monotonic() + 120
    while any(positions[p] < ends[p] for p in positions) and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.5):
            check(m.error() is None, f"read {topic}: {m.error()}")
            values.append(m.value().decode())
            if where is not None:
                where[values[-1]] = (m.partition(), m.offset())
            positions[m.partition()] = m.offset() + 1
        # Aborted records and markers are skipped: the position moves past them.
        for tp in consumer.position([TopicPartition(topic, p) for p in positions]):
            if tp.offset >= 0:
                positions[tp.partition] = max(positions[tp.partition], tp.offset)
    consumer.close()
    check(all(positions[p] >= ends[p] for p in positions),
          f"read {topic} ({isolation}) to {ends}: reached {positions}")
    return values


def main():
    binary, work, kills = sys.argv[1], sys.argv[2], int(sys.argv[3])
    server = Server(binary, work, "txn-kills", ["--transaction-abort-check-interval-ms", "200"])
    server.start()
    bootstrap = server.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 2})
    for client in CLIENTS:
        for topic in topics_of(client):
            # 1 MiB segments: a restart scans only the active one, so it stays short
            # however much the loop wrote.
            new = NewTopic(topic, num_partitions=partitions(topic), config={"segment.bytes": str(1 << 20)})
            admin.create_topics([new])[topic].result(30)

    stop = os.path.join(work, "txn-kills", "stop")
    producers = {}
    for seed, client in enumerate(CLIENTS):
        out = os.path.join(work, "txn-kills", f"{client}.json")
        args = [sys.executable, os.path.join(HERE, "transactional_producer.py"), client, bootstrap,
                ",".join(topics_of(client)), out, stop, str(seed)]
        producers[client] = (subprocess.Popen(args), out)

    rng = random.Random(7)
    since = wait_growth(bootstrap, {c: 0 for c in CLIENTS})
    started = time.monotonic()
    for _ in range(kills):
        time.sleep(rng.random() * 0.6)
        server.kill()
        server.start()
        since = wait_growth(bootstrap, since)
    print(f"  ok  {kills} SIGKILLs in {time.monotonic() - started:.0f} s; every producer wrote on after each")

    with open(stop, "w"):
        pass
    for client, (proc, _) in producers.items():
        check(proc.wait(timeout=300) == 0, f"the {client} producer exits cleanly")
    # Every transaction left open is aborted by its timeout (60 s) at the latest: wait
    # until the last stable offsets reach the high watermarks.
    deadline = time.monotonic() + 120
    for client in CLIENTS:
        for topic in topics_of(client):
            while watermarks(bootstrap, topic, "read_committed") != watermarks(bootstrap, topic, "read_uncommitted"):
                check(time.monotonic() < deadline, f"{topic}: every open transaction ends")
                time.sleep(0.1)
    for client, (_, out) in producers.items():
        with open(out) as f:
            result = json.load(f)
        seen = defaultdict(set)
        sizes = {}
        for topic in topics_of(client):
            for v in read_all(bootstrap, topic, "read_committed"):
                t, i, k = (int(x) for x in v.split(":"))
                check(i not in seen[t], f"{client}: record {v} read once")
                seen[t].add(i)
                sizes[t] = k
        dropped = set(result["dropped"])
        partial = [t for t in seen if len(seen[t]) != sizes[t] and t not in dropped]
        committed, aborted = set(result["committed"]), set(result["aborted"])
        missing = committed - set(seen)
        visible_aborted = aborted & set(seen)
        uncommitted = sum(len(read_all(bootstrap, t, "read_uncommitted")) for t in topics_of(client))
        print(f"  {client}: {result['transactions']} transactions, {len(committed)} committed, "
              f"{len(aborted)} aborted, {len(result['unknown'])} unknown ({result['failures']} failures), "
              f"{len(dropped)} committed by the client after a failed send; "
              f"read_committed sees {len(seen)} whole, {len(partial)} partial, {len(missing)} committed missing, "
              f"{len(visible_aborted)} aborted visible; read_uncommitted sees {uncommitted} records")
        check(not partial, f"{client}: no transaction visible in part ({partial[:5]})")
        if missing:
            where = {}
            for topic in topics_of(client):
                for v in read_all(bootstrap, topic, "read_uncommitted", where):
                    if int(v.split(":")[0]) in missing:
                        print(f"    {topic} {where[v]} holds {v} (read_uncommitted)")
        check(not missing, f"{client}: every committed transaction visible ({sorted(missing)[:5]})")
        check(not visible_aborted, f"{client}: no aborted transaction visible ({sorted(visible_aborted)[:5]})")
        check(len(committed) > 0 and len(aborted) > 0, f"{client}: both commits and aborts happened")
    server.stop()


if __name__ == "__main__":
    main()
