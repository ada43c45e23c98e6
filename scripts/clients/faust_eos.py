"""A stateful faust application, exactly_once, against kafko's Kafka listener,
SIGKILLed in the middle and started again: its output is exactly once.

Usage: faust_eos.py KAFKA_ADDR WORK_DIR RECORDS
       faust_eos.py --worker KAFKA_ADDR WORK_DIR     (the worker itself)

Produces RECORDS records keyed k0, k1, k2 in turn to `faust-words`. The worker (app
`faust-eos`, processing_guarantee="exactly_once", one partition per topic, an in-memory
table backed by its changelog topic) counts records per key in the table and sends each
running count to `faust-counts`; faust commits every 0.3 s, in transactions that hold
the table's changelog records and the consumed offsets (faust sends to a topic it does
not consume, such as `faust-counts`, outside them). Once some counts are committed the
worker is SIGKILLed with a transaction open and started again (its table comes back from
the changelog); once every count is committed it is stopped with SIGTERM. A
read_committed reader of the changelog must then see, per key, the counts 1, 2, …
RECORDS/3 once each; a read_uncommitted one also sees what the killed transaction wrote.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def worker(bootstrap, work):
    import faust

    app = faust.App("faust-eos", broker=f"kafka://{bootstrap}", store="memory://",
                    processing_guarantee="exactly_once", topic_partitions=1,
                    broker_commit_interval=0.3, web_enabled=False,
                    datadir=os.path.join(work, "faust-data"))
    words = app.topic("faust-words", key_type=str, value_type=str)
    out = app.topic("faust-counts", key_type=str, value_type=str)
    table = app.Table("faust-counts-by-key", default=int)

    @app.agent(words)
    async def count(stream):
        async for key, _value in stream.items():
            # Slow enough that a kill finds a transaction open.
            await asyncio.sleep(0.005)
            table[key] += 1
            await out.send(key=key, value=json.dumps({"n": table[key]}))

    sys.argv = [sys.argv[0], "worker", "-l", "warn"]
    app.main()


CHANGELOG = "faust-eos-faust-counts-by-key-changelog"


def counts(bootstrap, isolation, topic=CHANGELOG):
    """Every (key, count) of `topic` a reader with `isolation` sees, in order."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"faust-check-{time.monotonic()}",
                       "isolation.level": isolation, "enable.auto.commit": False})
    try:
        meta = reader.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            return []
        parts = sorted(meta.partitions)
        ends = [reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in parts]
        reader.assign([TopicPartition(topic, p, 0) for p in parts])
        out, positions = [], dict.fromkeys(parts, 0)
        deadline = time.monotonic() + 30
        while any(positions[p] < e for p, e in zip(parts, ends)) and time.monotonic() < deadline:
            for m in reader.consume(1000, 0.3):
                if m.error() is None:
                    # The table's values are counts; the sent ones JSON in a JSON string
                    # (faust's json codec wraps the str).
                    value = json.loads(m.value())
                    value = json.loads(value) if isinstance(value, str) else value
                    n = value["n"] if isinstance(value, dict) else value
                    out.append((m.key().decode().strip('"'), n))
                    positions[m.partition()] = m.offset() + 1
            for tp in reader.position([TopicPartition(topic, p) for p in parts]):
                if tp.offset >= 0:
                    positions[tp.partition] = max(positions[tp.partition], tp.offset)
        return out
    finally:
        reader.close()


def wait_until(what, cond, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.2)
    sys.exit(f"  FAIL {what}")


def main():
    if sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        return
    bootstrap, work, records = sys.argv[1], sys.argv[2], int(sys.argv[3])
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        producer.produce("faust-words", key=f"k{i % 3}".encode(), value=str(i).encode())
    producer.flush(30)
    run = [sys.executable, __file__, "--worker", bootstrap, work]
    log = open(os.path.join(work, "faust.log"), "ab")

    first = subprocess.Popen(run, stdout=log, stderr=log)
    wait_until("the first run commits some counts", lambda: len(counts(bootstrap, "read_committed")) >= 30)
    first.send_signal(signal.SIGKILL)
    first.wait()
    committed_at_kill = len(counts(bootstrap, "read_committed"))

    per_key = records // 3
    second = subprocess.Popen(run, stdout=log, stderr=log)
    wait_until("the second run commits every count",
               lambda: len(counts(bootstrap, "read_committed")) >= records, seconds=240)
    second.send_signal(signal.SIGTERM)
    second.wait(timeout=60)

    seen = {}
    for key, n in counts(bootstrap, "read_committed"):
        seen.setdefault(key, []).append(n)
    expected = list(range(1, per_key + 1))
    for key in ("k0", "k1", "k2"):
        if seen.get(key) != expected:
            got = seen.get(key, [])
            sys.exit(f"  FAIL {key}: {len(got)} counts, not 1…{per_key} once each "
                     f"(first differences: {[(i, n) for i, n in enumerate(got, 1) if n != i][:5]})")
    uncommitted = len(counts(bootstrap, "read_uncommitted"))
    sent = len(counts(bootstrap, "read_committed", "faust-counts"))
    print(f"  ok  faust's table counted {records} records exactly once across a SIGKILL ({committed_at_kill} "
          f"counts committed at the kill; read_committed sees {records} in its changelog, read_uncommitted "
          f"{uncommitted}); faust sent {sent} counts to faust-counts, outside its transactions")


if __name__ == "__main__":
    main()
