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


def wait_until(what, cond, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.2)
    sys.exit(f"  FAIL {what}")


def kill_and_restart(run, committed, records, **popen):
    """Starts the application `run`; once `committed()` counts 30, SIGKILLs it (a
    transaction open) and starts it again; once `committed()` counts `records`, stops it
    with SIGTERM. Returns the count committed at the kill."""
    first = subprocess.Popen(run, **popen)
    wait_until("the first run commits some counts", lambda: committed() >= 30)
    first.send_signal(signal.SIGKILL)
    first.wait()
    at_kill = committed()
    second = subprocess.Popen(run, **popen)
    wait_until("the second run commits every count", lambda: committed() >= records, seconds=240)
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
