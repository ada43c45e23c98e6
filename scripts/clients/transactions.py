"""Kafka transactions with a stock Python client against kafko's Kafka listener: a
transaction across two topics committed, one aborted, one committed again; a
consume-transform-produce loop whose group offsets move only when its transaction
commits; a zombie producer fenced by a newer one with the same transactional.id; a
transaction left open past transaction.timeout.ms aborted by the server. read_committed
and read_uncommitted consumers are counted record by record against the exact sets
expected. The server must run with a short --transaction-abort-check-interval-ms (the
check passes 200).

Usage: transactions.py confluent|kafka-python BOOTSTRAP
"""

import sys
import time
import uuid

END = b"end"


def check(ok, what):
    if not ok:
        raise AssertionError(what)


def ok(what):
    print(f"  ok  {what}", flush=True)


class Confluent:
    """confluent-kafka (librdkafka)."""

    name = "confluent"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def create(self, *topics):
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        for f in admin.create_topics([NewTopic(t, 1) for t in topics]).values():
            f.result(30)

    def producer(self, tid, timeout_ms=60000):
        from confluent_kafka import Producer

        conf = {"bootstrap.servers": self.bootstrap, "transactional.id": tid,
                "transaction.timeout.ms": timeout_ms, "log_level": 0}
        if timeout_ms < 60000:
            conf["message.timeout.ms"] = timeout_ms
        p = Producer(conf)
        p.init_transactions(30)
        return TxnConfluent(p)

    def plain_send(self, topic, values):
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": self.bootstrap, "log_level": 0})
        for v in values:
            p.produce(topic, v)
        check(p.flush(30) == 0, "plain records delivered")

    def read(self, topic, isolation, deadline_s=30):
        """Every value of `topic` up to the END record, in order, as `isolation` reads it."""
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"r-{uuid.uuid4()}",
                      "enable.auto.commit": False, "isolation.level": isolation,
                      "log_level": 0})
        c.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.time() + deadline_s
        try:
            while time.time() < deadline:
                m = c.poll(0.5)
                if m is None or m.error():
                    continue
                if m.value() == END:
                    return got
                got.append(m.value())
            raise AssertionError(f"{topic} ({isolation}): no end record; read {got}")
        finally:
            c.close()

    def committed(self, group, topic):
        from confluent_kafka import Consumer, TopicPartition

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group, "log_level": 0})
        try:
            return c.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
        finally:
            c.close()

    def transform(self, group, src, dst, producer, count, commit):
        """Reads `count` records of `src` in `group` and writes them upper-cased to `dst`
        in one transaction with the group's offsets; commits or aborts it."""
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "isolation.level": "read_committed", "log_level": 0})
        c.subscribe([src])
        producer.p.begin_transaction()
        seen = 0
        deadline = time.time() + 60
        while seen < count and time.time() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            producer.p.produce(dst, m.value().upper())
            seen += 1
        check(seen == count, f"read {seen} of {count} from {src}")
        producer.p.send_offsets_to_transaction(c.position(c.assignment()),
                                               c.consumer_group_metadata(), 30)
        # Written before the end: an abort purges what was not sent yet.
        producer.p.flush(30)
        if commit:
            producer.p.commit_transaction(30)
        else:
            producer.p.abort_transaction(30)
        c.close()

    @staticmethod
    def fenced(e):
        from confluent_kafka import KafkaError, KafkaException

        if not isinstance(e, KafkaException):
            return False
        err = e.args[0]
        return err.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                              KafkaError.INVALID_PRODUCER_EPOCH) or err.fatal()


class TxnConfluent:
    def __init__(self, p):
        self.p = p

    def begin(self):
        self.p.begin_transaction()

    def send(self, topic, value):
        self.p.produce(topic, value)

    def flush(self):
        self.p.flush(30)

    def commit(self):
        self.p.commit_transaction(30)

    def abort(self):
        self.p.abort_transaction(30)

    def close(self):
        pass


class KafkaPython:
    """kafka-python."""

    name = "kafka-python"

    def __init__(self, bootstrap):
        self.bootstrap = bootstrap

    def create(self, *topics):
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        admin.create_topics([NewTopic(t, 1, 1) for t in topics])
        admin.close()

    def producer(self, tid, timeout_ms=60000):
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=self.bootstrap, transactional_id=tid,
                          transaction_timeout_ms=timeout_ms)
        p.init_transactions()
        return TxnKafkaPython(p)

    def plain_send(self, topic, values):
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=self.bootstrap)
        for v in values:
            p.send(topic, v).get(30)
        p.close()

    def read(self, topic, isolation, deadline_s=30):
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False,
                          isolation_level=isolation)
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 0)
        got = []
        deadline = time.time() + deadline_s
        try:
            while time.time() < deadline:
                for records in c.poll(500).values():
                    for m in records:
                        if m.value == END:
                            return got
                        got.append(m.value)
            raise AssertionError(f"{topic} ({isolation}): no end record; read {got}")
        finally:
            c.close()

    def committed(self, group, topic):
        from kafka import KafkaConsumer, TopicPartition

        c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=group,
                          enable_auto_commit=False)
        try:
            offset = c.committed(TopicPartition(topic, 0))
            return -1001 if offset is None else offset
        finally:
            c.close()

    def transform(self, group, src, dst, producer, count, commit):
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata

        c = KafkaConsumer(src, bootstrap_servers=self.bootstrap, group_id=group,
                          enable_auto_commit=False, auto_offset_reset="earliest",
                          isolation_level="read_committed")
        producer.p.begin_transaction()
        seen = 0
        deadline = time.time() + 60
        while seen < count and time.time() < deadline:
            for records in c.poll(500, max_records=count - seen).values():
                for m in records:
                    producer.p.send(dst, m.value.upper())
                    seen += 1
        check(seen == count, f"read {seen} of {count} from {src}")
        tp = TopicPartition(src, 0)
        offsets = {tp: OffsetAndMetadata(c.position(tp), "", -1)}
        producer.p.send_offsets_to_transaction(offsets, group)
        producer.p.flush(30)
        if commit:
            producer.p.commit_transaction()
        else:
            producer.p.abort_transaction()
        c.close()

    @staticmethod
    def fenced(e):
        from kafka.errors import KafkaError

        return isinstance(e, KafkaError)


class TxnKafkaPython:
    def __init__(self, p):
        self.p = p

    def begin(self):
        self.p.begin_transaction()

    def send(self, topic, value):
        self.p.send(topic, value)

    def flush(self):
        self.p.flush(30)

    def commit(self):
        self.p.commit_transaction()

    def abort(self):
        self.p.abort_transaction()

    def close(self):
        self.p.close(0)


def values(prefix, numbers):
    return [f"{prefix}{n}".encode() for n in numbers]


def commit_and_abort(cl, run):
    a, b = f"{run}-a", f"{run}-b"
    cl.create(a, b)
    p = cl.producer(f"{run}-tx")
    p.begin()
    for v in values("a", range(10)):
        p.send(a, v)
    for v in values("b", range(10)):
        p.send(b, v)
    p.commit()
    p.begin()
    for v in values("a", range(10, 15)):
        p.send(a, v)
    for v in values("b", range(10, 15)):
        p.send(b, v)
    p.flush()
    p.abort()
    p.begin()
    for v in values("a", range(15, 18)):
        p.send(a, v)
    p.commit()
    p.close()
    cl.plain_send(a, [END])
    cl.plain_send(b, [END])
    got = cl.read(a, "read_committed")
    check(got == values("a", [*range(10), *range(15, 18)]), f"{a} read_committed: {got}")
    got = cl.read(b, "read_committed")
    check(got == values("b", range(10)), f"{b} read_committed: {got}")
    got = cl.read(a, "read_uncommitted")
    check(got == values("a", range(18)), f"{a} read_uncommitted: {got}")
    got = cl.read(b, "read_uncommitted")
    check(got == values("b", range(15)), f"{b} read_uncommitted: {got}")
    ok("commit, abort, commit across two topics: read_committed 13 + 10, read_uncommitted 18 + 15")


def consume_transform_produce(cl, run):
    src, dst, group = f"{run}-src", f"{run}-dst", f"{run}-ctp"
    cl.create(src, dst)
    cl.plain_send(src, values("s", range(10)))
    p = cl.producer(f"{run}-ctp-tx")
    cl.transform(group, src, dst, p, 10, commit=True)
    check(cl.committed(group, src) == 10, "the group's offset moved with the commit")
    cl.plain_send(src, values("s", range(10, 15)))
    cl.transform(group, src, dst, p, 5, commit=False)
    check(cl.committed(group, src) == 10, "the group's offset stays on an abort")
    # The aborted five are read again, and committed this time.
    cl.transform(group, src, dst, p, 5, commit=True)
    check(cl.committed(group, src) == 15, "the group's offset moved with the commit")
    p.close()
    cl.plain_send(dst, [END])
    want = values("S", range(15))
    got = cl.read(dst, "read_committed")
    check(got == want, f"{dst} read_committed: {got}")
    got = cl.read(dst, "read_uncommitted")
    check(got == values("S", [*range(10), *range(10, 15), *range(10, 15)]),
          f"{dst} read_uncommitted: {got}")
    ok("consume-transform-produce: offsets commit with the transaction, not on abort")


def zombie_fencing(cl, run):
    topic, tid = f"{run}-zombie", f"{run}-zombie-tx"
    cl.create(topic)
    zombie = cl.producer(tid)
    zombie.begin()
    zombie.send(topic, b"zombie-1")
    zombie.flush()
    fresh = cl.producer(tid)
    try:
        zombie.send(topic, b"zombie-2")
        zombie.flush()
        zombie.commit()
    except Exception as e:  # noqa: BLE001 - the fencing error each client raises
        check(cl.fenced(e), f"the zombie's error: {e!r}")
    else:
        raise AssertionError("the zombie committed")
    zombie.close()
    fresh.begin()
    fresh.send(topic, b"fresh")
    fresh.commit()
    fresh.close()
    cl.plain_send(topic, [END])
    got = cl.read(topic, "read_committed")
    check(got == [b"fresh"], f"{topic} read_committed: {got}")
    got = cl.read(topic, "read_uncommitted")
    check(b"zombie-1" in got and got[-1] == b"fresh" and b"fresh" not in got[:-1],
          f"{topic} read_uncommitted: {got}")
    ok("a second producer with the same transactional.id fences the first")


def timeout_abort(cl, run):
    topic = f"{run}-slow"
    cl.create(topic)
    slow = cl.producer(f"{run}-slow-tx", timeout_ms=2000)
    slow.begin()
    slow.send(topic, b"left-open")
    slow.flush()
    # A record after the open transaction: read_committed reaches it only once the
    # server aborted the transaction and the last stable offset moved past it.
    cl.plain_send(topic, [b"after", END])
    t0 = time.time()
    got = cl.read(topic, "read_committed", deadline_s=60)
    check(got == [b"after"], f"{topic} read_committed: {got}")
    got = cl.read(topic, "read_uncommitted")
    check(got == [b"left-open", b"after"], f"{topic} read_uncommitted: {got}")
    try:
        slow.commit()
    except Exception as e:  # noqa: BLE001 - the client's error for a timed-out transaction
        print(f"      the late commit fails: {e!r}", flush=True)
    else:
        raise AssertionError("a transaction aborted by its timeout committed")
    slow.close()
    ok(f"a transaction open past transaction.timeout.ms is aborted ({time.time() - t0:.1f} s)")


def main():
    client, bootstrap = sys.argv[1:3]
    cl = {"confluent": Confluent, "kafka-python": KafkaPython}[client](bootstrap)
    run = f"txn-{client}-{uuid.uuid4().hex[:8]}"
    print(f"--- transactions: {client}", flush=True)
    commit_and_abort(cl, run)
    consume_transform_produce(cl, run)
    zombie_fencing(cl, run)
    timeout_abort(cl, run)


if __name__ == "__main__":
    main()
