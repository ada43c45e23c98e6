"""One flow of a stock Kafka client against kafko's Kafka listener, checked step by step.

Usage: kafka_flow.py CLIENT KAFKA_ADDR HTTP_URL   (CLIENT: confluent, kafka-python, aiokafka)
       kafka_flow.py sasl KAFKA_ADDR TOKEN          (a server run with --auth-token TOKEN)

The flow: create a 3-partition topic; produce 1,000 keyed records with headers (a repeated
header name among them) and CreateTime timestamps, compressed (confluent: snappy; the
others: gzip); check every key went to the partition
kafko's /v1 routes it to (Kafka's murmur2); read them all back with manual assignment
(assign + seek to the beginning, no group) and compare keys, values, headers and
timestamps; the watermarks; ListOffsets earliest, latest and by timestamp; delete the
topic. Between them, a consumer group reads 500 records and commits, and a new consumer
of the group resumes at the commit and reads the other 500; the group is listed and
described; then the admin calls: CreatePartitions, DeleteRecords, and OffsetDelete,
DescribeLogDirs, DescribeProducers and the group's delete where the client has them; the
configs (confluent and kafka-python): DescribeConfigs, IncrementalAlterConfigs and
AlterConfigs on a topic, each change read back through the client and /v1 and taking
effect on what the topic accepts, and the broker's configs; the cluster (confluent and
kafka-python): DescribeCluster and DescribeAcls. Each client is an adapter of the same few calls; the
steps are a list.
"""

import asyncio
import json
import sys
import time
import urllib.request

RECORDS = 1000
PARTITIONS = 3
BASE_TS = 1_700_000_000_000
# Topic configs every Kafka broker describes; DescribeConfigs must list them all.
STANDARD_TOPIC_CONFIGS = {
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
    "flush.messages", "flush.ms", "index.interval.bytes", "max.compaction.lag.ms",
    "max.message.bytes", "message.timestamp.type", "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms", "min.insync.replicas", "preallocate", "retention.bytes",
    "retention.ms", "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable",
}
MESSAGE_TOO_LARGE = 10


def record(i):
    return {
        "key": f"key-{i}".encode(),
        "value": f"value-{i}".encode(),
        "headers": [("seq", str(i).encode()), ("dup", b"a"), ("dup", b"b")],
        "timestamp": BASE_TS + i,
    }


def http(url, method="GET", body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read()
        return json.loads(text) if text else None


def expected_partitions(http_url, topic):
    """Where kafko's /v1 routes each key (a scratch topic of the same partition count)."""
    scratch = f"{topic}-routes"
    http(f"{http_url}/v1/topics/{scratch}", "PUT", {"partitions": PARTITIONS})
    out = http(
        f"{http_url}/v1/topics/{scratch}/records?answer=records",
        "POST",
        {"records": [{"key": f"key-{i}", "value": ""} for i in range(RECORDS)]},
    )
    http(f"{http_url}/v1/topics/{scratch}", "DELETE")
    return {f"key-{i}".encode(): o["partition"] for i, o in enumerate(out["offsets"])}


def next_offsets(read):
    """The offset to commit per partition after reading `read` ((partition, offset, key)
    in order): one past the last one read."""
    out = {}
    for partition, offset, _ in read:
        out[partition] = max(out.get(partition, 0), offset + 1)
    return out


def check(cond, what):
    if not cond:
        raise AssertionError(what)


# ------------------------------------------------------------------- adapters


class Confluent:
    def __init__(self, bootstrap):
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.consumer = None

    def create_topic(self, topic):
        from confluent_kafka.admin import NewTopic

        for f in self.admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
            f.result(30)

    def produce(self, topic, records):
        from confluent_kafka import Producer

        # librdkafka's default partitioner is CRC32-based: murmur2_random is Java's.
        p = Producer({"bootstrap.servers": self.bootstrap, "partitioner": "murmur2_random",
                      "enable.idempotence": True, "linger.ms": 5, "compression.type": "snappy"})
        placed = {}

        def done(err, msg):
            check(err is None, f"delivery failed: {err}")
            placed[msg.key()] = msg.partition()

        for r in records:
            p.produce(topic, key=r["key"], value=r["value"], headers=r["headers"],
                      timestamp=r["timestamp"], on_delivery=done)
            p.poll(0)
        check(p.flush(30) == 0, "unflushed records")
        return placed

    def _consumer(self):
        from confluent_kafka import Consumer

        if self.consumer is None:
            self.consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "kafko-flow-unused",
                                      "enable.auto.commit": False, "enable.auto.offset.store": False})
        return self.consumer

    def read_all(self, topic, count):
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        c = self._consumer()
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        out = []
        deadline = time.time() + 60
        while len(out) < count and time.time() < deadline:
            for m in c.consume(500, 1.0):
                check(m.error() is None, f"consume error: {m.error()}")
                out.append({"partition": m.partition(), "key": m.key(), "value": m.value(),
                            "headers": list(m.headers() or []), "timestamp": m.timestamp()[1]})
        c.unassign()
        return out

    def watermarks(self, topic, partition):
        from confluent_kafka import TopicPartition

        return self._consumer().get_watermark_offsets(TopicPartition(topic, partition), timeout=10)

    def offset_for_time(self, topic, partition, ts):
        from confluent_kafka import TopicPartition

        [tp] = self._consumer().offsets_for_times([TopicPartition(topic, partition, ts)], timeout=10)
        return tp.offset

    def delete_topic(self, topic):
        for f in self.admin.delete_topics([topic]).values():
            f.result(30)

    def group_read(self, topic, group, count):
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group,
                      "auto.offset.reset": "earliest", "enable.auto.commit": False})
        c.subscribe([topic])
        out = []
        deadline = time.time() + 60
        while len(out) < count and time.time() < deadline:
            for m in c.consume(count - len(out), 1.0):
                check(m.error() is None, f"consume error: {m.error()}")
                out.append((m.partition(), m.offset(), m.key()))
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in next_offsets(out).items()],
                 asynchronous=False)
        c.close()
        return out

    def groups(self):
        return sorted(g.group_id for g in self.admin.list_consumer_groups().result(30).valid)

    def create_partitions(self, topic, count):
        from confluent_kafka.admin import NewPartitions

        for f in self.admin.create_partitions([NewPartitions(topic, count)]).values():
            f.result(30)

    def delete_records(self, topic, partition, offset):
        from confluent_kafka import TopicPartition

        [f] = self.admin.delete_records([TopicPartition(topic, partition, offset)]).values()
        return f.result(30).low_watermark

    def delete_group_offsets(self, group, topic, partition):
        return None  # confluent-kafka's AdminClient has no OffsetDelete

    def delete_group(self, group):
        for f in self.admin.delete_consumer_groups([group]).values():
            f.result(30)

    def log_dirs(self):
        return None  # confluent-kafka's AdminClient has no DescribeLogDirs

    def producers(self, topic, partition):
        return None  # nor DescribeProducers

    def describe_group(self, group):
        d = self.admin.describe_consumer_groups([group])[group].result(30)
        return str(d.state.name).lower(), len(d.members)

    def _describe_configs(self, resource_type, name):
        from confluent_kafka.admin import ConfigResource, ConfigSource

        r = ConfigResource(resource_type, name)
        entries = self.admin.describe_configs([r])[r].result(30)
        return {n: (e.value, ConfigSource(e.source).name, e.is_read_only) for n, e in entries.items()}

    def describe_topic_configs(self, topic):
        from confluent_kafka.admin import ResourceType

        return self._describe_configs(ResourceType.TOPIC, topic)

    def describe_broker_configs(self):
        from confluent_kafka.admin import ResourceType

        return self._describe_configs(ResourceType.BROKER, "0")

    def incremental_alter_configs(self, topic, ops):
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

        entries = [ConfigEntry(name, value, incremental_operation=AlterConfigOpType[op])
                   for name, (op, value) in ops.items()]
        r = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
        for f in self.admin.incremental_alter_configs([r]).values():
            f.result(30)

    def alter_configs(self, topic, configs):
        """AlterConfigs with `configs` alone: True, the set replaces the topic's."""
        from confluent_kafka.admin import ConfigResource, ResourceType

        r = ConfigResource(ResourceType.TOPIC, topic, set_config=configs)
        for f in self.admin.alter_configs([r]).values():
            f.result(30)
        return True

    def produce_one(self, topic, size):
        """One keyed record of `size` value bytes, unretried: its error code (0: written)."""
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "retries": 0, "linger.ms": 0})
        errors = []
        p.produce(topic, key=b"k", value=b"v" * size, on_delivery=lambda err, _: errors.append(err))
        check(p.flush(30) == 0, "unflushed record")
        return 0 if errors[0] is None else errors[0].code()

    def describe_cluster(self):
        d = self.admin.describe_cluster(request_timeout=30).result(30)
        return d.cluster_id, d.controller.id, [(n.id, n.host, n.port) for n in d.nodes]

    # librdkafka reads DescribeAcls' error code and drops it: SECURITY_DISABLED reaches
    # confluent-kafka as an empty listing.
    NO_AUTHORIZER = []

    def describe_acls(self):
        """Every ACL, or the error's name."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType,
                                           ResourcePatternType, ResourceType)

        everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                      AclOperation.ANY, AclPermissionType.ANY)
        try:
            return self.admin.describe_acls(everything, request_timeout=30).result(30)
        except KafkaException as e:
            return e.args[0].name()

    def close(self):
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None


class KafkaPython:
    def __init__(self, bootstrap):
        from kafka import KafkaAdminClient, KafkaConsumer

        self.bootstrap = bootstrap
        self.admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)

    def create_topic(self, topic):
        from kafka.admin import NewTopic

        self.admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])

    def produce(self, topic, records):
        from kafka import KafkaProducer

        # Idempotent by default in 3.0 (InitProducerId, sequence numbers).
        p = KafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5, compression_type="gzip")
        futures = [(r["key"], p.send(topic, key=r["key"], value=r["value"], headers=r["headers"],
                                     timestamp_ms=r["timestamp"])) for r in records]
        p.flush(30)
        placed = {k: f.get(30).partition for k, f in futures}
        p.close()
        return placed

    def read_all(self, topic, count):
        from kafka import TopicPartition

        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        self.consumer.assign(tps)
        self.consumer.seek_to_beginning(*tps)
        out = []
        deadline = time.time() + 60
        while len(out) < count and time.time() < deadline:
            for tp, msgs in self.consumer.poll(timeout_ms=1000).items():
                for m in msgs:
                    out.append({"partition": tp.partition, "key": m.key, "value": m.value,
                                "headers": list(m.headers), "timestamp": m.timestamp})
        self.consumer.unsubscribe()
        return out

    def watermarks(self, topic, partition):
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        return self.consumer.beginning_offsets([tp])[tp], self.consumer.end_offsets([tp])[tp]

    def offset_for_time(self, topic, partition, ts):
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        found = self.consumer.offsets_for_times({tp: ts})[tp]
        return -1 if found is None else found.offset

    def delete_topic(self, topic):
        self.admin.delete_topics([topic])

    def group_read(self, topic, group, count):
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata

        c = KafkaConsumer(topic, bootstrap_servers=self.bootstrap, group_id=group,
                          auto_offset_reset="earliest", enable_auto_commit=False)
        out = []
        deadline = time.time() + 60
        while len(out) < count and time.time() < deadline:
            for tp, msgs in c.poll(timeout_ms=1000, max_records=count - len(out)).items():
                out.extend((tp.partition, m.offset, m.key) for m in msgs)
        c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1)
                  for p, o in next_offsets(out).items()})
        c.close()
        return out

    def groups(self):
        return sorted(g["group_id"] for g in self.admin.list_groups())

    def create_partitions(self, topic, count):
        self.admin.create_partitions({topic: count})

    def delete_records(self, topic, partition, offset):
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        return self.admin.delete_records({tp: offset})[tp]["low_watermark"]

    def delete_group_offsets(self, group, topic, partition):
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        return self.admin.delete_group_offsets(group, [tp])[tp].errno

    def delete_group(self, group):
        self.admin.delete_groups([group])

    def log_dirs(self):
        [broker] = self.admin.describe_log_dirs()
        return broker["log_dirs"]

    def producers(self, topic, partition):
        from kafka import TopicPartition

        tp = TopicPartition(topic, partition)
        return [p.producer_id for p in self.admin.describe_producers([tp])[tp].active_producers]

    def describe_group(self, group):
        d = self.admin.describe_groups([group])[group]
        return d["group_state"].lower(), len(d["members"])

    def _describe_configs(self, resource_type, name):
        from kafka.admin import ConfigResource

        got = self.admin.describe_configs([ConfigResource(resource_type, name)], config_filter="all")
        return {n: (c["value"], c["config_source"], c["read_only"])
                for n, c in got[resource_type.name.lower()][name].items()}

    def describe_topic_configs(self, topic):
        from kafka.admin import ConfigResourceType

        return self._describe_configs(ConfigResourceType.TOPIC, topic)

    def describe_broker_configs(self):
        from kafka.admin import ConfigResourceType

        return self._describe_configs(ConfigResourceType.BROKER, "0")

    def _alter(self, topic, configs, incremental):
        from kafka.admin import ConfigResource, ConfigResourceType

        got = self.admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs)],
                                       incremental=incremental)
        check(got == {"topic": {topic: "OK"}}, f"alter_configs: {got}")

    def incremental_alter_configs(self, topic, ops):
        self._alter(topic, ops, incremental=True)

    def alter_configs(self, topic, configs):
        """AlterConfigs: False, kafka-python sends the topic's other set configs along
        (an AlterConfigs replaces the whole set)."""
        self._alter(topic, configs, incremental=False)
        return False

    def describe_cluster(self):
        d = self.admin.describe_cluster()
        return d["cluster_id"], d["controller_id"], [(b["broker_id"], b["host"], b["port"]) for b in d["brokers"]]

    NO_AUTHORIZER = "SECURITY_DISABLED"

    def describe_acls(self):
        """Every ACL, or the error's name."""
        from kafka.admin import (ACLFilter, ACLOperation, ACLPermissionType, ACLResourcePatternType,
                                 ResourcePatternFilter, ResourceType)
        from kafka.errors import SecurityDisabledError

        everything = ACLFilter(principal=None, host="*", operation=ACLOperation.ANY,
                               permission_type=ACLPermissionType.ANY,
                               resource_pattern=ResourcePatternFilter(ResourceType.ANY, None,
                                                                      ACLResourcePatternType.ANY))
        try:
            return self.admin.describe_acls(everything)[0]
        except SecurityDisabledError:
            return "SECURITY_DISABLED"

    def produce_one(self, topic, size):
        from kafka import KafkaProducer
        from kafka.errors import KafkaError

        p = KafkaProducer(bootstrap_servers=self.bootstrap, enable_idempotence=False, retries=0,
                          linger_ms=0)
        try:
            p.send(topic, key=b"k", value=b"v" * size).get(30)
            return 0
        except KafkaError as e:
            return e.errno
        finally:
            p.close()

    def close(self):
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None


class AioKafka:
    """aiokafka's asyncio calls, run to completion one at a time."""

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap
        self.loop = asyncio.new_event_loop()
        self.consumer = None

    def run(self, coro):
        return self.loop.run_until_complete(coro)

    def _admin(self, op):
        from aiokafka.admin import AIOKafkaAdminClient

        async def go():
            admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
            await admin.start()
            try:
                return await op(admin)
            finally:
                await admin.close()

        return self.run(go())

    def create_topic(self, topic):
        from aiokafka.admin import NewTopic

        self._admin(lambda a: a.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)]))

    def produce(self, topic, records):
        from aiokafka import AIOKafkaProducer

        async def go():
            p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, enable_idempotence=True, linger_ms=5,
                                 compression_type="gzip")
            await p.start()
            try:
                futures = [(r["key"], await p.send(topic, key=r["key"], value=r["value"], headers=r["headers"],
                                                    timestamp_ms=r["timestamp"])) for r in records]
                return {k: (await f).partition for k, f in futures}
            finally:
                await p.stop()

        return self.run(go())

    def _consumer(self):
        from aiokafka import AIOKafkaConsumer

        async def make():
            c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None, enable_auto_commit=False)
            await c.start()
            return c

        if self.consumer is None:
            self.consumer = self.run(make())
        return self.consumer

    def read_all(self, topic, count):
        from aiokafka import TopicPartition

        c = self._consumer()
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]

        async def go():
            c.assign(tps)
            await c.seek_to_beginning(*tps)
            out = []
            deadline = time.time() + 60
            while len(out) < count and time.time() < deadline:
                for tp, msgs in (await c.getmany(timeout_ms=1000)).items():
                    for m in msgs:
                        out.append({"partition": tp.partition, "key": m.key, "value": m.value,
                                    "headers": list(m.headers), "timestamp": m.timestamp})
            return out

        return self.run(go())

    def watermarks(self, topic, partition):
        from aiokafka import TopicPartition

        tp = TopicPartition(topic, partition)
        c = self._consumer()
        low = self.run(c.beginning_offsets([tp]))[tp]
        high = self.run(c.end_offsets([tp]))[tp]
        return low, high

    def offset_for_time(self, topic, partition, ts):
        from aiokafka import TopicPartition

        tp = TopicPartition(topic, partition)
        found = self.run(self._consumer().offsets_for_times({tp: ts}))[tp]
        return -1 if found is None else found.offset

    def delete_topic(self, topic):
        self._admin(lambda a: a.delete_topics([topic]))

    def create_partitions(self, topic, count):
        from aiokafka.admin import NewPartitions

        self._admin(lambda a: a.create_partitions({topic: NewPartitions(count)}))

    def delete_records(self, topic, partition, offset):
        from aiokafka import TopicPartition
        from aiokafka.admin import RecordsToDelete

        tp = TopicPartition(topic, partition)
        return self._admin(lambda a: a.delete_records({tp: RecordsToDelete(offset)}))[tp]

    def delete_group_offsets(self, group, topic, partition):
        return None  # aiokafka's admin client has no OffsetDelete

    def delete_group(self, group):
        return False  # nor DeleteGroups

    def log_dirs(self):
        return None  # nor DescribeLogDirs

    def producers(self, topic, partition):
        return None  # nor DescribeProducers

    def group_read(self, topic, group, count):
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def go():
            c = AIOKafkaConsumer(topic, bootstrap_servers=self.bootstrap, group_id=group,
                                 auto_offset_reset="earliest", enable_auto_commit=False)
            await c.start()
            try:
                out = []
                deadline = time.time() + 60
                while len(out) < count and time.time() < deadline:
                    got = await c.getmany(timeout_ms=1000, max_records=count - len(out))
                    for tp, msgs in got.items():
                        out.extend((tp.partition, m.offset, m.key) for m in msgs)
                await c.commit({TopicPartition(topic, p): o for p, o in next_offsets(out).items()})
                return out
            finally:
                await c.stop()

        return self.run(go())

    def groups(self):
        return sorted(g[0] for g in self._admin(lambda a: a.list_consumer_groups()))

    def describe_group(self, group):
        [response] = self._admin(lambda a: a.describe_consumer_groups([group]))
        d = response.to_object()["groups"][0]
        return d["state"].lower(), len(d["members"])

    def close(self):
        if self.consumer is not None:
            self.run(self.consumer.stop())
            self.consumer = None


ADAPTERS = {"confluent": Confluent, "kafka-python": KafkaPython, "aiokafka": AioKafka}
# The clients each step runs with (every one when unlisted): where the adapter has the calls.
STEP_CLIENTS = {
    "admin": {"confluent", "kafka-python", "aiokafka"},
    "configs": {"confluent", "kafka-python"},
    "cluster": {"confluent", "kafka-python"},
}


# ------------------------------------------------------------------- the flow


class Flow:
    def __init__(self, client, bootstrap, http_url):
        self.c = ADAPTERS[client](bootstrap)
        self.bootstrap = bootstrap
        self.http_url = http_url
        self.topic = f"flow-{client}"
        self.records = [record(i) for i in range(RECORDS)]
        self.steps = [s for s in self.STEPS if client in STEP_CLIENTS.get(s, {client})]

    def create(self):
        self.c.create_topic(self.topic)
        described = http(f"{self.http_url}/v1/topics/{self.topic}")
        check(described["config"]["partitions"] == PARTITIONS, f"partitions: {described['config']}")

    def produce(self):
        placed = self.c.produce(self.topic, self.records)
        check(len(placed) == RECORDS, f"{len(placed)} delivered")
        want = expected_partitions(self.http_url, self.topic)
        wrong = [k for k, p in placed.items() if want[k] != p]
        check(not wrong, f"{len(wrong)} keys placed unlike kafko's murmur2, e.g. {wrong[:3]}")

    def read_back(self):
        got = self.c.read_all(self.topic, RECORDS)
        check(len(got) == RECORDS, f"read {len(got)} of {RECORDS}")
        want = expected_partitions(self.http_url, self.topic)
        by_key = {r["key"]: r for r in self.records}
        for m in got:
            r = by_key[m["key"]]
            check(m["value"] == r["value"], f"value of {m['key']}")
            check(m["headers"] == r["headers"], f"headers of {m['key']}: {m['headers']}")
            check(m["timestamp"] == r["timestamp"], f"timestamp of {m['key']}")
            check(m["partition"] == want[m["key"]], f"partition of {m['key']}")
        check(len({m["key"] for m in got}) == RECORDS, "duplicates read")

    def watermarks(self):
        total = 0
        for p in range(PARTITIONS):
            low, high = self.c.watermarks(self.topic, p)
            check(low == 0, f"partition {p} low watermark {low}")
            total += high
        check(total == RECORDS, f"high watermarks sum to {total}")

    def list_offsets(self):
        # Record i has timestamp BASE_TS + i; each partition's records are in key order.
        want = expected_partitions(self.http_url, self.topic)
        for p in range(PARTITIONS):
            mine = [i for i in range(RECORDS) if want[f"key-{i}".encode()] == p]
            check(self.c.offset_for_time(self.topic, p, BASE_TS) == 0, "by timestamp: the first")
            middle = mine[len(mine) // 2]
            found = self.c.offset_for_time(self.topic, p, BASE_TS + middle)
            check(found == len(mine) // 2, f"partition {p}: ts of record {middle} → {found}")
            check(self.c.offset_for_time(self.topic, p, BASE_TS + RECORDS + 1) in (-1, None),
                  "a timestamp past every record finds none")

    def delete(self):
        # Consumers stop first: a consumer still fetching refreshes its metadata, which
        # may create the topic again (auto-create), as against Kafka.
        self.c.close()
        self.c.delete_topic(self.topic)
        try:
            http(f"{self.http_url}/v1/topics/{self.topic}")
        except urllib.error.HTTPError as e:
            check(e.code == 404, f"after delete: {e.code}")
        else:
            raise AssertionError("the topic is still there")

    def group(self):
        """A group reads 500 records and commits; a new consumer of the group resumes
        exactly at the commit and reads the other 500; /v1 shows the same commits; the
        group is listed and described."""
        group = f"{self.topic}-group"
        first = self.c.group_read(self.topic, group, RECORDS // 2)
        check(len(first) == RECORDS // 2, f"the group read {len(first)}")
        committed = http(f"{self.http_url}/v1/groups/{group}")["topics"][0]["partitions"]
        check(sum(p["committed"] or 0 for p in committed) == RECORDS // 2,
              f"/v1 shows the commits: {committed}")
        second = self.c.group_read(self.topic, group, RECORDS - RECORDS // 2)
        keys = [k for _, _, k in first] + [k for _, _, k in second]
        check(len(keys) == RECORDS and len(set(keys)) == RECORDS,
              f"{len(keys)} read, {len(set(keys))} distinct: the second resumed at the commit")
        check(group in self.c.groups(), f"{group} listed: {self.c.groups()}")
        state, members = self.c.describe_group(group)
        check(state == "empty" and members == 0, f"described: {state}, {members} members")

    def admin(self):
        """CreatePartitions raises the count to 4 (as /v1 then shows); DeleteRecords moves
        partition 0's log start to 10 (the answered low watermark, /v1 and the earliest
        offset agree); OffsetDelete (where the client has it) deletes the group's commit
        on partition 1; DescribeLogDirs (where the client has it) shows the partitions,
        DescribeProducers the idempotent producer; the group is deleted (/v1: gone)."""
        group = f"{self.topic}-group"
        self.c.create_partitions(self.topic, PARTITIONS + 1)
        described = http(f"{self.http_url}/v1/topics/{self.topic}")
        check(len(described["partitions"]) == PARTITIONS + 1, f"partitions: {described['partitions']}")
        low = self.c.delete_records(self.topic, 0, 10)
        check(low == 10, f"low watermark {low}")
        starts = [p["log_start_offset"] for p in http(f"{self.http_url}/v1/topics/{self.topic}")["partitions"]]
        check(starts == [10, 0, 0, 0], f"/v1 log starts {starts}")
        check(self.c.watermarks(self.topic, 0)[0] == 10, "earliest offset of partition 0")
        deleted = self.c.delete_group_offsets(group, self.topic, 1)
        if deleted is not None:
            check(deleted == 0, f"OffsetDelete error {deleted}")
            committed = http(f"{self.http_url}/v1/groups/{group}")["topics"][0]["partitions"]
            check([p["committed"] for p in committed if p["partition"] == 1] in ([None], []),
                  f"/v1 after OffsetDelete: {committed}")
        dirs = self.c.log_dirs()
        if dirs is not None:
            check(len(dirs) == 1 and dirs[0]["error_code"] == 0, f"log dirs {dirs}")
            mine = [t for t in dirs[0]["topics"] if t["name"] == self.topic]
            check(len(mine) == 1 and len(mine[0]["partitions"]) == PARTITIONS + 1, f"log dir topics {mine}")
        producers = self.c.producers(self.topic, 0)
        if producers is not None:
            # The flow's producer is idempotent: the one that wrote partition 0.
            check(len(producers) == 1, f"DescribeProducers: {producers}")
        if self.c.delete_group(group) is False:
            return
        try:
            http(f"{self.http_url}/v1/groups/{group}")
        except urllib.error.HTTPError as e:
            check(e.code == 404, f"after the group's delete: {e.code}")
        else:
            raise AssertionError("the group is still there")

    def configs(self):
        """On a topic of its own: DescribeConfigs lists every standard topic config (the
        defaults /v1 shows, none read-only); IncrementalAlterConfigs SETs retention.ms and
        max.message.bytes and APPENDs compact to cleanup.policy (described as set on the
        topic, shown by /v1, and a record past the new max.message.bytes is refused);
        AlterConfigs sets retention.ms alone, which replaces the topic's whole set (the
        others back to their defaults, DELETE by IncrementalAlterConfigs where the client
        carries them along), and the large record is taken again. The broker's configs are
        described read-only."""
        topic = f"{self.topic}-configs"
        self.c.create_topic(topic)

        def v1():
            return http(f"{self.http_url}/v1/topics/{topic}")["config"]

        described = self.c.describe_topic_configs(topic)
        missing = STANDARD_TOPIC_CONFIGS - set(described)
        check(not missing, f"DescribeConfigs lacks {sorted(missing)}")
        read_only = [n for n, (_, _, ro) in described.items() if ro]
        check(not read_only, f"topic configs described read-only: {read_only}")
        defaults = v1()
        check(described["retention.ms"] == (str(defaults["retention_ms"]), "DEFAULT_CONFIG", False),
              f"retention.ms {described['retention.ms']}, /v1 {defaults['retention_ms']}")
        default_max = described["max.message.bytes"]
        check(default_max[:2] == (str(defaults["max_record_bytes"]), "DEFAULT_CONFIG"),
              f"max.message.bytes {default_max}, /v1 {defaults['max_record_bytes']}")
        check(described["cleanup.policy"][:2] == ("delete", "DEFAULT_CONFIG"),
              f"cleanup.policy {described['cleanup.policy']}")
        check(self.c.produce_one(topic, 4000) == 0, "a 4000-byte record at the defaults")

        self.c.incremental_alter_configs(topic, {"retention.ms": ("SET", "3600000"),
                                                 "max.message.bytes": ("SET", "2048"),
                                                 "cleanup.policy": ("APPEND", "compact")})
        described = self.c.describe_topic_configs(topic)
        check(described["retention.ms"][:2] == ("3600000", "DYNAMIC_TOPIC_CONFIG"),
              f"retention.ms {described['retention.ms']}")
        check(described["max.message.bytes"][:2] == ("2048", "DYNAMIC_TOPIC_CONFIG"),
              f"max.message.bytes {described['max.message.bytes']}")
        policy, source, _ = described["cleanup.policy"]
        check(set(policy.split(",")) == {"delete", "compact"} and source == "DYNAMIC_TOPIC_CONFIG",
              f"cleanup.policy {described['cleanup.policy']}")
        shown = v1()
        check((shown["retention_ms"], shown["max_record_bytes"], shown["cleanup_policy"])
              == (3600000, 2048, "compact_delete"), f"/v1 after IncrementalAlterConfigs: {shown}")
        refused = self.c.produce_one(topic, 4000)
        check(refused == MESSAGE_TOO_LARGE, f"a 4000-byte record past max.message.bytes 2048: {refused}")
        check(self.c.produce_one(topic, 100) == 0, "a 100-byte record within it")

        replaces = self.c.alter_configs(topic, {"retention.ms": "7200000"})
        described = self.c.describe_topic_configs(topic)
        check(described["retention.ms"][:2] == ("7200000", "DYNAMIC_TOPIC_CONFIG"),
              f"retention.ms {described['retention.ms']}")
        if not replaces:
            check(described["max.message.bytes"][:2] == ("2048", "DYNAMIC_TOPIC_CONFIG"),
                  f"carried along: max.message.bytes {described['max.message.bytes']}")
            self.c.incremental_alter_configs(topic, {"max.message.bytes": ("DELETE", None),
                                                     "cleanup.policy": ("DELETE", None)})
            described = self.c.describe_topic_configs(topic)
        check(described["max.message.bytes"] == default_max,
              f"max.message.bytes back to its default: {described['max.message.bytes']}")
        check(described["cleanup.policy"][:2] == ("delete", "DEFAULT_CONFIG"),
              f"cleanup.policy back to its default: {described['cleanup.policy']}")
        shown = v1()
        check((shown["retention_ms"], shown["max_record_bytes"], shown["cleanup_policy"])
              == (7200000, defaults["max_record_bytes"], "delete"), f"/v1 after AlterConfigs: {shown}")
        check(self.c.produce_one(topic, 4000) == 0, "a 4000-byte record at the default again")

        broker = self.c.describe_broker_configs()
        for name in ("log.retention.ms", "num.partitions", "log.segment.bytes", "message.max.bytes"):
            check(name in broker and broker[name][2], f"broker config {name}: {broker.get(name)}")
        check(broker["log.retention.ms"][0] == str(defaults["retention_ms"]),
              f"log.retention.ms {broker['log.retention.ms']}, the topics' default {defaults['retention_ms']}")
        self.c.delete_topic(topic)

    def cluster(self):
        """DescribeCluster: this one node, the controller, at the bootstrap address;
        DescribeAcls: SECURITY_DISABLED (no --auth-token), as Kafka without an authorizer
        answers (kafka-python raises it; confluent-kafka lists nothing, as from Kafka)."""
        cluster_id, controller, nodes = self.c.describe_cluster()
        host, port = self.bootstrap.rsplit(":", 1)
        check(cluster_id and controller == 0 and nodes == [(0, host, int(port))],
              f"DescribeCluster: {cluster_id}, controller {controller}, nodes {nodes}")
        acls = self.c.describe_acls()
        check(acls == self.c.NO_AUTHORIZER, f"DescribeAcls: {acls}")

    STEPS = ["create", "produce", "read_back", "watermarks", "list_offsets", "group", "admin",
             "configs", "cluster", "delete"]

    def run(self):
        try:
            for step in self.steps:
                t0 = time.time()
                getattr(self, step)()
                print(f"  ok  {step} ({time.time() - t0:.2f} s)", flush=True)
        finally:
            self.c.close()


def sasl(bootstrap, token):
    """confluent-kafka with SASL/PLAIN against a server run with --auth-token: the token as
    password produces and reads back, and DescribeAcls answers no ACL; a wrong one is
    reported as an authentication failure."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
    from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType, AdminClient,
                                       NewTopic, ResourcePatternType, ResourceType)

    print("--- confluent with SASL/PLAIN", flush=True)

    def conf(password, **more):
        return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": "flow", "sasl.password": password, **more}

    admin = AdminClient(conf(token))
    admin.create_topics([NewTopic("flow-sasl", 1, 1)])["flow-sasl"].result(30)
    p = Producer(conf(token))
    p.produce("flow-sasl", b"secret value", key=b"k")
    check(p.flush(30) == 0, "unflushed")
    c = Consumer(conf(token, **{"group.id": "kafko-flow-unused", "enable.auto.commit": False}))
    c.assign([TopicPartition("flow-sasl", 0, OFFSET_BEGINNING)])
    got = c.consume(1, 30)
    c.close()
    check(len(got) == 1 and got[0].value() == b"secret value", f"read back {got}")
    print("  ok  the token as password: create, produce, read back", flush=True)
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    acls = admin.describe_acls(everything, request_timeout=30).result(30)
    check(acls == [], f"DescribeAcls with a token: {acls}")
    print("  ok  DescribeAcls with a token: no ACL (every authenticated client may do everything)",
          flush=True)
    errors = []
    refused = Producer(conf("wrong", **{"error_cb": errors.append, "log_level": 0}))
    refused.produce("flow-sasl", b"x")
    deadline = time.time() + 30
    while not errors and time.time() < deadline:
        refused.poll(0.1)
    check(any(e.code() == KafkaError._AUTHENTICATION for e in errors), f"errors: {errors}")
    refused.purge()
    refused.flush(0)
    print("  ok  a wrong password: authentication failure", flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "sasl":
        sasl(*sys.argv[2:4])
        sys.exit(0)
    client, bootstrap, http_url = sys.argv[1:4]
    print(f"--- {client}", flush=True)
    Flow(client, bootstrap, http_url).run()
