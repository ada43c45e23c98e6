"""A stateful quixstreams application, exactly-once, against kafko's Kafka listener,
SIGKILLed in the middle and started again: its output is exactly once.

Usage: quixstreams_eos.py KAFKA_ADDR STATE_DIR RECORDS
       quixstreams_eos.py --app KAFKA_ADDR STATE_DIR     (the application itself)

Produces RECORDS records keyed k0, k1, k2 in turn to `eos-words`. The application
(consumer group `eos-counter`, processing_guarantee="exactly-once", a commit every 0.3 s)
counts records per key in its state store (backed by a changelog topic) and writes
each running count to `eos-counts`, in transactions. Once some counts are committed the
application is SIGKILLed, with a transaction open, and started again on the same state
directory; once every count is committed it is stopped with SIGTERM. A read_committed
reader must then see, per key, the counts 1, 2, … RECORDS/3 each exactly once; a
read_uncommitted reader also sees what the killed transaction wrote.
"""

import json
import signal
import subprocess
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def app(bootstrap, state_dir):
    from quixstreams import Application

    application = Application(broker_address=bootstrap, consumer_group="eos-counter",
                              auto_offset_reset="earliest", state_dir=state_dir,
                              processing_guarantee="exactly-once", commit_interval=0.3)
    words = application.topic("eos-words", value_deserializer="json")
    counts = application.topic("eos-counts", value_serializer="json")

    def count(_value, state):
        n = state.get("n", 0) + 1
        state.set("n", n)
        # Slow enough that a kill finds a transaction open.
        time.sleep(0.002)
        return {"n": n}

    application.dataframe(words).apply(count, stateful=True).to_topic(counts)
    application.run()


def counts(bootstrap, isolation):
    """Every (key, count) of `eos-counts` a reader with `isolation` sees, in order."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-check-{time.monotonic()}",
                       "isolation.level": isolation, "enable.auto.commit": False})
    try:
        meta = reader.list_topics("eos-counts", timeout=10).topics.get("eos-counts")
        if meta is None or meta.error is not None:
            return []
        parts = sorted(meta.partitions)
        ends = [reader.get_watermark_offsets(TopicPartition("eos-counts", p), timeout=10)[1] for p in parts]
        reader.assign([TopicPartition("eos-counts", p, 0) for p in parts])
        out, positions = [], dict.fromkeys(parts, 0)
        deadline = time.monotonic() + 30
        while any(positions[p] < e for p, e in zip(parts, ends)) and time.monotonic() < deadline:
            for m in reader.consume(1000, 0.3):
                if m.error() is None:
                    out.append((m.key().decode(), json.loads(m.value())["n"]))
                    positions[m.partition()] = m.offset() + 1
            for tp in reader.position([TopicPartition("eos-counts", p) for p in parts]):
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
    if sys.argv[1] == "--app":
        app(sys.argv[2], sys.argv[3])
        return
    bootstrap, state_dir, records = sys.argv[1], sys.argv[2], int(sys.argv[3])
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        producer.produce("eos-words", key=f"k{i % 3}".encode(), value=json.dumps({"i": i}).encode())
    producer.flush(30)
    run = [sys.executable, __file__, "--app", bootstrap, state_dir]

    first = subprocess.Popen(run)
    wait_until("the first run commits some counts", lambda: len(counts(bootstrap, "read_committed")) >= 30)
    first.send_signal(signal.SIGKILL)
    first.wait()
    committed_at_kill = len(counts(bootstrap, "read_committed"))

    per_key = records // 3
    second = subprocess.Popen(run)
    wait_until("the second run commits every count",
               lambda: len(counts(bootstrap, "read_committed")) >= records, seconds=240)
    second.send_signal(signal.SIGTERM)
    if second.wait(timeout=60) != 0:
        sys.exit("  FAIL the application did not stop cleanly on SIGTERM")

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
    print(f"  ok  {records} records counted exactly once across a SIGKILL ({committed_at_kill} counts "
          f"committed at the kill; read_committed sees {records}, read_uncommitted {uncommitted})")


if __name__ == "__main__":
    main()
