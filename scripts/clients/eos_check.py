"""What the exactly-once application checks share (quixstreams_eos.py, faust_eos.py):
reading running counts back, the SIGKILL-and-restart drive, and the once-each verdict."""

import json
import signal
import subprocess
import sys
import time

from confluent_kafka import Consumer, TopicPartition


def read_counts(bootstrap, topic, isolation):
    """Every (key, count) of `topic` a reader with `isolation` sees, in order. A count is
    an integer value, a JSON object's "n", or either inside a JSON string."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"eos-check-{time.monotonic()}",
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
                    value = json.loads(m.value())
                    value = json.loads(value) if isinstance(value, str) else value
                    n = value["n"] if isinstance(value, dict) else value
                    out.append((m.key().decode().strip('"'), n))
                    positions[m.partition()] = m.offset() + 1
            # Aborted records and markers are skipped: the position moves past them.
            for tp in reader.position([TopicPartition(topic, p) for p in parts]):
                if tp.offset >= 0:
                    positions[tp.partition] = max(positions[tp.partition], tp.offset)
        return out
    finally:
        reader.close()


class CommittedFollower:
    """A read_committed reader that follows `topic` from its start and counts the records
    it has seen. Waiting for a count long-polls the broker, which answers as soon as a
    transaction's records become readable: no re-read of the topic, no pause."""

    def __init__(self, bootstrap, topic):
        self.seen = 0
        self.reader = Consumer({"bootstrap.servers": bootstrap,
                                "group.id": f"eos-follow-{time.monotonic()}",
                                "isolation.level": "read_committed",
                                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                # The topic may not exist yet: look for it again soon.
                                "topic.metadata.refresh.interval.ms": 1000})
        self.reader.subscribe([topic])

    def wait_for(self, count, what, seconds):
        deadline = time.monotonic() + seconds
        while self.seen < count and time.monotonic() < deadline:
            self.seen += sum(1 for m in self.reader.consume(1000, 1.0) if m.error() is None)
        if self.seen < count:
            sys.exit(f"  FAIL {what}: {self.seen} of {count} counts committed")

    def close(self):
        self.reader.close()


def kill_and_restart(run, bootstrap, topic, records, **popen):
    """Starts the application `run`; once 30 counts are committed to `topic`, SIGKILLs it
    (a transaction open) and starts it again; once `records` counts are committed, stops
    it with SIGTERM. Returns the count committed at the kill."""
    follower = CommittedFollower(bootstrap, topic)
    first = subprocess.Popen(run, **popen)
    follower.wait_for(30, "the first run commits some counts", 120)
    first.send_signal(signal.SIGKILL)
    first.wait()
    at_kill = len(read_counts(bootstrap, topic, "read_committed"))
    second = subprocess.Popen(run, **popen)
    follower.wait_for(records, "the second run commits every count", 240)
    follower.close()
    second.send_signal(signal.SIGTERM)
    if second.wait(timeout=60) not in (0, -signal.SIGTERM):
        sys.exit("  FAIL the application did not stop on SIGTERM")
    return at_kill


def check_once_each(counts, records, keys=("k0", "k1", "k2")):
    """Exits unless each key's counts are 1, 2, … records/len(keys), once each."""
    seen = {}
    for key, n in counts:
        seen.setdefault(key, []).append(n)
    per_key = records // len(keys)
    for key in keys:
        got = seen.get(key, [])
        if got != list(range(1, per_key + 1)):
            sys.exit(f"  FAIL {key}: {len(got)} counts, not 1…{per_key} once each "
                     f"(first differences: {[(i, n) for i, n in enumerate(got, 1) if n != i][:5]})")
