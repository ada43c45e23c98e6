"""A client nobody here wrote: PyPI's kafka-bridge-client in its `confluent` mode.
Its producer posts v2 binary and json batches; its consumer deletes any leftover
instance (expecting 404), creates one (expecting 200), subscribes (204), reads
(`Accept: application/vnd.kafka.binary.v2+json`), commits (200) and deletes (204),
raising on any other status. What it read is cross-checked against kafko's /v1 API
when KAFKO_URL is set."""

import asyncio
import base64
import json

from kafka_bridge_client import KafkaBridgeConsumer, KafkaBridgeProducer, Message

from conftest import create_topic, unique


def test_produce_consume_commit_delete(base, http, cluster):
    topic = create_topic(base, http, cluster, partitions=2)
    producer = KafkaBridgeProducer(base, timeout=10)
    binary = [Message(key=f"key-{i}", value=f"bin-{i}".encode()) for i in range(4)]
    assert producer.sends(topic, binary, binary=True)
    as_json = [{"key": "json-key", "value": {"id": i, "tags": ["a", "b"]}} for i in range(3)]
    assert producer.sends(topic, as_json)
    assert producer.send(topic, Message(key=None, value=b"\x00\xffraw"), binary=True)

    group = unique("bridge")
    records = consume_with_bridge_client(base, topic, group, 8)
    assert len(records) == 8, records
    values = sorted(base64.b64decode(r["value"]) for r in records)
    expected = sorted(
        [f"bin-{i}".encode() for i in range(4)]
        + [json.dumps(m["value"], separators=(",", ":")).encode() for m in as_json]
        + [b"\x00\xffraw"]
    )
    assert values == expected
    keys = {base64.b64decode(r["key"]) for r in records if r["key"] is not None}
    assert keys == {f"key-{i}".encode() for i in range(4)} | {b'"json-key"'}


def test_bridge_client_reads_match_v1(base, kafko, http, cluster):
    topic = create_topic(base, http, cluster, partitions=3)
    producer = KafkaBridgeProducer(base, timeout=10)
    assert producer.sends(topic, [Message(key=f"k{i}", value=f"v{i}".encode()) for i in range(9)], binary=True)
    group = unique("bridge")
    records = consume_with_bridge_client(base, topic, group, 9)
    # Every (partition, offset, key, value) the client read is what /v1 stores there.
    stored = {}
    for p in range(3):
        r = http.get(f"{kafko}/v1/topics/{topic}/records", params={"partition": p, "offset": "earliest", "format": "base64"})
        assert r.status_code == 200, r.text
        for rec in r.json()["records"]:
            stored[(p, rec["offset"])] = (rec["key"], rec["value"])
    assert len(stored) == 9
    assert {(r["partition"], r["offset"]): (r["key"], r["value"]) for r in records} == stored
    # The commit reached the group: nothing left to read.
    g = http.get(f"{kafko}/v1/groups/{group}").json()
    assert g["topics"][0]["total_lag"] == 0, g
    # The client deleted its instance on exit, so the group has no members.
    assert g["topics"][0]["members"] == []


def consume_with_bridge_client(base, topic, group, count):
    """Reads `count` records with a new kafka-bridge-client consumer in `group` from the
    earliest offset, then commits them; returns the records it read."""
    consumer = KafkaBridgeConsumer(
        topic,
        bootstrap_server=base + "/",
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_name=unique("client"),
        sleep_interval_seconds=0.2,
        proxy="confluent",
    )

    async def run():
        got = []
        async with consumer:
            for _ in range(50):
                got.extend(await consumer.poll_records(max_bytes=1_000_000, timeout=500))
                if len(got) >= count:
                    break
            await consumer.commit()
        return got

    return asyncio.run(run())
