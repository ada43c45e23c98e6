#!/usr/bin/env python3
"""Transactional produce beside plain idempotent produce, on one kafko, same client
(confluent-kafka), same run, alternated round by round.

Each round produces N records of SIZE bytes to a 3-partition topic twice: once with an
idempotent producer (acks=all), once with a transactional producer committing every
TXN records (begin, produce TXN records, commit). It reports per mode records/s and the
server's CPU per record (utime+stime from /proc/PID/stat over the phase), and the
transactional mode's cost as a ratio of the idempotent one. Each round uses a fresh
topic; the server runs the whole time.

Usage (a Python with confluent-kafka; bench/run-transactions.sh sets one up):

    bench/kafka_transactions.py --kafko target/release/kafko
                                [--records 100000] [--txn 1000] [--size 256] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_peer import cpu_seconds, free_port, wait_for_port


def produce(addr: str, topic: str, args, transactional: bool, pid: int) -> tuple[float, float]:
    config = {"bootstrap.servers": addr, "linger.ms": 5, "enable.idempotence": True}
    if transactional:
        config["transactional.id"] = f"bench-{topic}"
    producer = Producer(config)
    if transactional:
        producer.init_transactions(30)
    value = b"v" * args.size
    cpu0, t0 = cpu_seconds(pid), time.perf_counter()
    for i in range(args.records):
        if transactional and i % args.txn == 0:
            if i:
                producer.commit_transaction(60)
            producer.begin_transaction()
        while True:
            try:
                producer.produce(topic, value=value, partition=i % 3)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)
    if transactional:
        producer.commit_transaction(60)
    elif producer.flush(120):
        raise SystemExit("records left unacknowledged")
    return time.perf_counter() - t0, cpu_seconds(pid) - cpu0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kafko", required=True)
    p.add_argument("--records", type=int, default=100_000)
    p.add_argument("--txn", type=int, default=1000)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="kafka-txn-bench-")
    port = free_port()
    log = open(os.path.join(work, "kafko.log"), "w")
    proc = subprocess.Popen([os.path.abspath(args.kafko), "--data-dir", os.path.join(work, "data"),
                             "--bind", "127.0.0.1:0", "--kafka-bind", f"127.0.0.1:{port}",
                             "--schema-registry-bind", "off"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc, "kafko")
        addr = f"127.0.0.1:{port}"
        admin = AdminClient({"bootstrap.servers": addr})
        results: dict[str, list[tuple[float, float]]] = {"idempotent": [], "transactional": []}
        for r in range(args.rounds):
            for mode in results:
                topic = f"{mode}-{r}"
                admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
                seconds, cpu = produce(addr, topic, args, mode == "transactional", proc.pid)
                results[mode].append((args.records / seconds, cpu / args.records * 1e6))
        print(f"{args.records} records of {args.size} B per round, {args.rounds} rounds, "
              f"transactions of {args.txn} records")
        print(f"{'mode':<14}{'records/s':>12}{'server CPU µs/record':>24}")
        medians = {}
        for mode, rows in results.items():
            rps = statistics.median(r for r, _ in rows)
            cpu = statistics.median(c for _, c in rows)
            medians[mode] = (rps, cpu)
            print(f"{mode:<14}{rps:>12,.0f}{cpu:>24.2f}")
        (i_rps, i_cpu), (t_rps, t_cpu) = medians["idempotent"], medians["transactional"]
        print(f"transactional / idempotent: CPU per record {t_cpu / i_cpu:.2f}x, records/s {t_rps / i_rps:.2f}x")
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
