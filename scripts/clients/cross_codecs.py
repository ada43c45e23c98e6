"""Compressed batches across clients: what one client wrote compressed, every other reads.

Usage: cross_codecs.py KAFKA_ADDR DATA_DIR

confluent-kafka writes a zstd topic and an lz4 topic, kafka-python a gzip topic, kafkajs
an lz4 topic (scripts/clients/kafka/cross.mjs, with an lz4 codec over lz4js): 200
records each, in batches of about 50 (one partition, the topic's `compression.type`
left at `producer`). The first batch of each segment must be stored with the producer's
codec (read from the segment file: Kafka's record batch, codec in bits 0-2 of the
attributes at byte 21). Then confluent-kafka, kafka-python and aiokafka read every topic
from the beginning, and from offset 77, inside a batch: each client gets the whole batch
and must hand its application the records from 77 on, as with Kafka. kafkajs reads the
gzip topic and confluent-kafka's lz4 topic the same way (cross.mjs, run by the check).
"""

import asyncio
import glob
import os
import subprocess
import sys
import time

COUNT = 200
MID = 77
TOPICS = {"cross-zstd": ("confluent", "zstd", 4), "cross-lz4": ("confluent", "lz4", 3),
          "cross-gzip": ("kafka-python", "gzip", 1), "cross-lz4-kafkajs": ("kafkajs", "lz4", 3)}
KAFKAJS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kafka")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def value(i):
    return f"value-{i}-{'x' * (i % 40)}".encode()


def produce_confluent(bootstrap, topic, codec):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                  "linger.ms": 200, "batch.num.messages": 50, "enable.idempotence": True})
    for i in range(COUNT):
        p.produce(topic, value(i), key=f"k{i}".encode(), partition=0)
    check(p.flush(30) == 0, f"{topic}: unflushed")


def produce_kafka_python(bootstrap, topic, codec):
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec, linger_ms=200,
                      batch_size=50 * 64)
    for i in range(COUNT):
        p.send(topic, value(i), key=f"k{i}".encode(), partition=0)
    p.flush(30)
    p.close()


def produce_kafkajs(bootstrap, topic, codec):
    check(codec == "lz4", f"kafkajs writes lz4 here, not {codec}")
    subprocess.run(["node", "cross.mjs", bootstrap, "write", topic], cwd=KAFKAJS, check=True,
                   timeout=60)


PRODUCERS = {"confluent": produce_confluent, "kafka-python": produce_kafka_python,
             "kafkajs": produce_kafkajs}


def stored_codec(data_dir, topic):
    """The codec of the first batch of the partition's first segment, as stored."""
    logs = sorted(glob.glob(os.path.join(data_dir, "topics", topic, "0", "*.log")))
    check(logs, f"{topic}: no segment")
    with open(logs[0], "rb") as f:
        head = f.read(23)
    check(head[16] == 2, f"{topic}: magic {head[16]}")
    return int.from_bytes(head[21:23], "big") & 7


def collect(start, poll):
    """What `poll()` yields, (offset, value) pairs, until the records from `start` on are
    all in, or 30 s passed."""
    got = []
    deadline = time.time() + 30
    while len(got) < COUNT - start and time.time() < deadline:
        got.extend(poll())
    return got


def read_confluent(bootstrap, topic, start):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "cross-unused",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, start)])

    def poll():
        messages = c.consume(100, 1)
        for m in messages:
            check(m.error() is None, f"{topic}: {m.error()}")
        return [(m.offset(), m.value()) for m in messages]

    got = collect(start, poll)
    c.close()
    return got


def read_kafka_python(bootstrap, topic, start):
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    c.seek(tp, start)
    got = collect(start, lambda: [(r.offset, r.value) for rs in c.poll(1000).values() for r in rs])
    c.close()
    return got


def read_aiokafka(bootstrap, topic, start):
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run():
        c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await c.start()
        try:
            tp = TopicPartition(topic, 0)
            c.assign([tp])
            c.seek(tp, start)
            got = []
            deadline = time.time() + 30
            while len(got) < COUNT - start and time.time() < deadline:
                for records in (await c.getmany(timeout_ms=1000)).values():
                    got.extend((r.offset, r.value) for r in records)
            return got
        finally:
            await c.stop()

    return asyncio.run(run())


READERS = {"confluent": read_confluent, "kafka-python": read_kafka_python,
           "aiokafka": read_aiokafka}


def main(bootstrap, data_dir):
    for topic, (writer, codec, codec_id) in TOPICS.items():
        PRODUCERS[writer](bootstrap, topic, codec)
        stored = stored_codec(data_dir, topic)
        check(stored == codec_id, f"{topic}: stored with codec {stored}, sent with {codec_id}")
        print(f"  ok  {writer} wrote {topic}, stored as sent ({codec})", flush=True)
        for reader, read in READERS.items():
            for start in (0, MID):
                got = read(bootstrap, topic, start)
                want = [(i, value(i)) for i in range(start, COUNT)]
                check(got == want, f"{reader} reading {topic} from {start}: "
                      f"{len(got)} records, first {got[:1]}")
            print(f"  ok  {reader} reads {topic} from the start and from offset {MID}", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
