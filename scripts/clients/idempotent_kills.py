"""Idempotent producers of three clients across SIGKILLs of the server: nothing
acknowledged is lost and nothing is written twice.

Usage: idempotent_kills.py KAFKO_BINARY WORK_DIR KILLS

Starts kafko itself (kafko_server.Server), creates a 3-partition topic per client, and
runs an idempotent producer of each client (confluent-kafka and kafka-python through
idempotent_producer.py, kafkajs through kafka/idempotent.mjs) writing numbered records.
KILLS times: wait until every topic grew by at least 100 records since the last restart,
SIGKILL the server, start it again on the same directory and port. Then the producers
stop and flush, and each topic is read whole: every acknowledged number must be there
(0 lost), and no number twice (0 duplicates).
"""

import json
import os
import subprocess
import sys
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafko_server import Server

CLIENTS = ["confluent", "kafka-python", "kafkajs"]
PARTITIONS = 3
GROWTH = 100
HERE = os.path.dirname(os.path.abspath(__file__))


def check(cond, what):
    if not cond:
        print(f"  FAIL {what}")
        sys.exit(1)


def topic_of(client):
    return f"idempotent-{client}"


def high_watermarks(bootstrap, topic):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "idempotent-kills-watch"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in range(PARTITIONS)]
    finally:
        consumer.close()


def total(bootstrap, topic):
    try:
        return sum(high_watermarks(bootstrap, topic))
    except Exception:  # the server is restarting: not grown yet
        return -1


def wait_growth(bootstrap, since, seconds=90):
    deadline = time.monotonic() + seconds
    now = {}
    while time.monotonic() < deadline:
        now = {c: total(bootstrap, topic_of(c)) for c in CLIENTS}
        if all(now[c] >= since[c] + GROWTH for c in CLIENTS):
            return now
        time.sleep(0.05)
    check(False, f"every producer writes again: since {since}, now {now}")


def read_all(bootstrap, topic):
    ends = high_watermarks(bootstrap, topic)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "idempotent-kills-read",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    values, left = [], {p: e for p, e in enumerate(ends) if e > 0}
    deadline = time.monotonic() + 120
    while left and time.monotonic() < deadline:
        for m in consumer.consume(1000, 1.0):
            check(m.error() is None, f"read {topic}: {m.error()}")
            values.append(int(m.value()))
            if m.offset() + 1 >= ends[m.partition()]:
                left.pop(m.partition(), None)
    consumer.close()
    check(not left, f"read {topic} to its end: partitions {sorted(left)} short")
    return values


def main():
    binary, work, kills = sys.argv[1], sys.argv[2], int(sys.argv[3])
    server = Server(binary, work, "idempotent-kills")
    server.start()
    bootstrap = server.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for client in CLIENTS:
        admin.create_topics([NewTopic(topic_of(client), num_partitions=PARTITIONS)])[topic_of(client)].result(30)

    stop = os.path.join(work, "idempotent-kills", "stop")
    producers = {}
    for client in CLIENTS:
        out = os.path.join(work, "idempotent-kills", f"{client}.json")
        if client == "kafkajs":
            args = ["node", os.path.join(HERE, "kafka", "idempotent.mjs"), bootstrap, topic_of(client), out, stop]
        else:
            args = [sys.executable, os.path.join(HERE, "idempotent_producer.py"), client, bootstrap,
                    topic_of(client), out, stop]
        producers[client] = (subprocess.Popen(args, cwd=os.path.join(HERE, "kafka")), out)

    since = wait_growth(bootstrap, {c: 0 for c in CLIENTS})
    started = time.monotonic()
    for _ in range(kills):
        server.kill()
        server.start()
        since = wait_growth(bootstrap, since)
    print(f"  ok  {kills} SIGKILLs in {time.monotonic() - started:.0f} s; every producer wrote on after each")

    with open(stop, "w"):
        pass
    for client, (proc, _) in producers.items():
        check(proc.wait(timeout=300) == 0, f"the {client} producer exits cleanly")
    for client, (_, out) in producers.items():
        with open(out) as f:
            result = json.load(f)
        acked = set(result["acked"])
        values = read_all(bootstrap, topic_of(client))
        duplicates = len(values) - len(set(values))
        lost = len(acked - set(values))
        print(f"  {client}: {len(acked)} acknowledged, {len(values)} stored, {duplicates} duplicates, "
              f"{lost} lost, {len(result['failed'])} failed sends")
        check(duplicates == 0, f"{client}: no record written twice")
        check(lost == 0, f"{client}: every acknowledged record stored")
    server.stop()


if __name__ == "__main__":
    main()
