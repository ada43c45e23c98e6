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
import sys

from confluent_kafka import Producer
from eos_check import check_once_each, kill_and_restart, read_counts


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
    return read_counts(bootstrap, topic, isolation)


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

    committed_at_kill = kill_and_restart(run, bootstrap, CHANGELOG, records,
                                         stdout=log, stderr=log)
    check_once_each(counts(bootstrap, "read_committed"), records)
    uncommitted = len(counts(bootstrap, "read_uncommitted"))
    sent = len(counts(bootstrap, "read_committed", "faust-counts"))
    print(f"  ok  faust's table counted {records} records exactly once across a SIGKILL ({committed_at_kill} "
          f"counts committed at the kill; read_committed sees {records} in its changelog, read_uncommitted "
          f"{uncommitted}); faust sent {sent} counts to faust-counts, outside its transactions")


if __name__ == "__main__":
    main()
