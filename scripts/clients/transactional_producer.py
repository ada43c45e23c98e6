"""A transactional producer writing numbered transactions until told to stop, for the
SIGKILL loop (transactional_kills.py).

Usage: transactional_producer.py CLIENT BOOTSTRAP TOPICS OUT STOP SEED

CLIENT is confluent or kafka-python; TOPICS a comma-separated list. Transaction t writes
k records (k from 1 to 40, drawn with SEED) with the value "t:i:k" (i = 0…k−1) spread
over every topic and several partitions, then commits it, or (one in five) aborts it.
OUT gets, once the file STOP exists: {"committed": [t…], "aborted": [t…], "unknown":
[t…], "dropped": [t…], "failures": n}: a transaction is committed or aborted once the
client said so, and unknown when the commit failed (the server died under it): then it
may have committed or not, but never in part. Dropped: the client committed it but one
of its sends had failed (kafka-python's commit does not fail then): its records were
never delivered, so it may be visible in part or not at all. After a failure the producer starts again: a new instance
of the same transactional id, which fences the old one and aborts what it left open.
"""

import json
import os
import random
import sys
import time

TRANSACTIONAL_ID = "kills"


class Confluent:
    def __init__(self, bootstrap):
        from confluent_kafka import Producer

        self.producer = Producer({
            "bootstrap.servers": bootstrap,
            "transactional.id": f"{TRANSACTIONAL_ID}-confluent",
            "transaction.timeout.ms": 60000,
            "message.timeout.ms": 60000,
            "retry.backoff.ms": 50,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "log_level": 2,
        })
        self.producer.init_transactions(30)

    def begin(self):
        self.producer.begin_transaction()

    def send(self, topic, partition, value):
        self.producer.produce(topic, value=value.encode(), partition=partition)

    def commit(self):
        self.producer.commit_transaction(30)
        return True

    def abort(self):
        self.producer.abort_transaction(30)


class KafkaPython:
    def __init__(self, bootstrap):
        from kafka import KafkaProducer

        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            transactional_id=f"{TRANSACTIONAL_ID}-kafka-python",
            transaction_timeout_ms=60000,
            request_timeout_ms=5000,
            reconnect_backoff_ms=50,
            reconnect_backoff_max_ms=500,
            retry_backoff_ms=50,
        )
        self.producer.init_transactions()
        self.sent = []

    def begin(self):
        self.producer.begin_transaction()
        self.sent = []

    def send(self, topic, partition, value):
        self.sent.append(self.producer.send(topic, value=value.encode(), partition=partition))

    def commit(self):
        """Whether every record sent in the transaction was delivered: kafka-python's
        commit can succeed after it dropped a record it failed to send."""
        self.producer.commit_transaction()
        failed = [f for f in self.sent if not (f.is_done and f.succeeded())]
        if failed:
            why = failed[0].exception if failed[0].is_done else "not done"
            print(f"  kafka-python committed after {len(failed)} failed sends: {why!r}", file=sys.stderr)
        return not failed

    def abort(self):
        self.producer.abort_transaction()


def start(make, bootstrap, stop):
    """A new instance, retried while the server restarts."""
    while not os.path.exists(stop):
        try:
            return make(bootstrap)
        except Exception:  # the server is down: try again
            time.sleep(0.2)
    return None


def main():
    client, bootstrap, topics, out, stop, seed = sys.argv[1:]
    topics = topics.split(",")
    make = {"confluent": Confluent, "kafka-python": KafkaPython}[client]
    rng = random.Random(int(seed))
    committed, aborted, unknown, dropped, failures = [], [], [], [], 0
    producer = start(make, bootstrap, stop)
    t = 0
    while producer is not None and not os.path.exists(stop):
        k = rng.randint(1, 40)
        commit = rng.random() >= 0.2
        t += 1
        stage = "begin"
        try:
            producer.begin()
            stage = "send"
            for i in range(k):
                topic = topics[i % len(topics)]
                producer.send(topic, rng.randrange(3 if topic.endswith("a") else 2), f"{t}:{i}:{k}")
            stage = "end"
            if commit:
                if producer.commit():
                    committed.append(t)
                else:
                    dropped.append(t)
            else:
                producer.abort()
                aborted.append(t)
        except Exception:  # the server died, or this instance was fenced
            failures += 1
            # Before the end was asked for, the transaction can only abort (its timeout,
            # or the next instance's InitProducerId); after, it may have ended either way.
            (unknown if stage == "end" else aborted).append(t)
            producer = start(make, bootstrap, stop)
    with open(out, "w") as f:
        json.dump({"committed": committed, "aborted": aborted, "unknown": unknown,
                   "dropped": dropped, "failures": failures, "transactions": t}, f)


if __name__ == "__main__":
    main()
