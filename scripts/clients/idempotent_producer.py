"""An idempotent producer writing numbered records until told to stop, for the SIGKILL
loop (idempotent_kills.py).

Usage: idempotent_producer.py CLIENT BOOTSTRAP TOPIC OUT STOP

CLIENT is confluent or kafka-python. Record n has the value "n" and the key "n % 30", so
every partition of the topic takes records. At most about 4,000 records a second. Once
the file STOP exists the producer flushes (every record still pending is retried until
acknowledged or failed) and writes OUT: {"acked": [n…], "failed": ["why"…]}.
"""

import json
import os
import sys
import time

RATE_PAUSE = 0.025  # seconds after every 100 records
FLUSH_SECONDS = 240


def run_confluent(bootstrap, topic, stop):
    from confluent_kafka import Producer

    acked, failed = [], []

    def delivered(err, msg):
        if err is None:
            acked.append(int(msg.value()))
        else:
            failed.append(str(err))

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 300000,
        "retry.backoff.ms": 50,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        # Each kill disconnects it: those are expected, not worth a line each.
        "log_level": 2,
    })
    n = 0
    while not os.path.exists(stop):
        try:
            producer.produce(topic, key=str(n % 30), value=str(n), on_delivery=delivered)
            n += 1
        except BufferError:
            producer.poll(0.1)
            continue
        producer.poll(0)
        if n % 100 == 0:
            time.sleep(RATE_PAUSE)
    left = producer.flush(FLUSH_SECONDS)
    if left:
        failed.append(f"{left} records still pending after the flush")
    return acked, failed


def run_kafka_python(bootstrap, topic, stop):
    from kafka import KafkaProducer

    acked, failed = [], []
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        retries=1_000_000,
        delivery_timeout_ms=300000,
        request_timeout_ms=10000,
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=500,
        retry_backoff_ms=50,
    )
    n = 0
    while not os.path.exists(stop):
        value = n
        future = producer.send(topic, key=str(n % 30).encode(), value=str(n).encode())
        future.add_callback(lambda _meta, v=value: acked.append(v))
        future.add_errback(lambda e: failed.append(repr(e)))
        n += 1
        if n % 100 == 0:
            time.sleep(RATE_PAUSE)
    producer.flush(timeout=FLUSH_SECONDS)
    producer.close(timeout=30)
    return acked, failed


def main():
    client, bootstrap, topic, out, stop = sys.argv[1:]
    run = {"confluent": run_confluent, "kafka-python": run_kafka_python}[client]
    acked, failed = run(bootstrap, topic, stop)
    with open(out, "w") as f:
        json.dump({"acked": acked, "failed": failed}, f)


if __name__ == "__main__":
    main()
