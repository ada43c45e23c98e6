"""A stateful quixstreams application against kafko's Kafka listener, at-least-once.

Usage: quixstreams_app.py KAFKA_ADDR STATE_DIR RECORDS EXPECTED [--fresh-state]

Produces RECORDS JSON records keyed k0, k1, k2 in turn to `words`; the application
(consumer group `counter`) counts records per key in its state store (RocksDB, backed by
a compacted changelog topic it creates) and writes each running count to `counts`. It
stops after RECORDS records; then every count written is read back, and the last count
of each key must be EXPECTED. With --fresh-state the local state is removed first, so
the counts carry on only if the state is recovered from the changelog topic.
"""

import json
import shutil
import sys
import time

from confluent_kafka import Consumer, Producer
from quixstreams import Application


def main():
    bootstrap, state_dir, records, expected = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if "--fresh-state" in sys.argv:
        shutil.rmtree(state_dir, ignore_errors=True)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(records):
        producer.produce("words", key=f"k{i % 3}".encode(), value=json.dumps({"word": f"w{i % 5}"}).encode())
    producer.flush(30)

    app = Application(broker_address=bootstrap, consumer_group="counter", auto_offset_reset="earliest",
                      state_dir=state_dir, processing_guarantee="at-least-once")
    words = app.topic("words", value_deserializer="json")
    counts = app.topic("counts", value_serializer="json")

    def count(_value, state):
        n = state.get("n", 0) + 1
        state.set("n", n)
        return {"n": n}

    app.dataframe(words).apply(count, stateful=True).to_topic(counts)
    app.run(count=records, timeout=60)

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{expected}",
                       "auto.offset.reset": "earliest"})
    reader.subscribe(["counts"])
    last, read, deadline = {}, 0, time.monotonic() + 30
    while time.monotonic() < deadline:
        message = reader.poll(0.5)
        if message is None:
            if read:
                break
            continue
        if message.error():
            continue
        read += 1
        last[message.key().decode()] = json.loads(message.value())["n"]
    reader.close()
    if sorted(last.values()) != [expected] * 3:
        sys.exit(f"  FAIL last counts {last}, expected {expected} for each key")
    print(f"  ok  {records} records counted; each key's count is {expected} ({read} counts read)")


if __name__ == "__main__":
    main()
