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
import sys
import time

from confluent_kafka import Producer
from eos_check import check_once_each, kill_and_restart, read_counts


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
    return read_counts(bootstrap, "eos-counts", isolation)


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
    committed_at_kill = kill_and_restart(run, bootstrap, "eos-counts", records)
    check_once_each(counts(bootstrap, "read_committed"), records)
    uncommitted = len(counts(bootstrap, "read_uncommitted"))
    print(f"  ok  {records} records counted exactly once across a SIGKILL ({committed_at_kill} counts "
          f"committed at the kill; read_committed sees {records}, read_uncommitted {uncommitted})")


if __name__ == "__main__":
    main()
