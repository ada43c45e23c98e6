#!/usr/bin/env python3
"""kafko's Kafka listener beside a peer Kafka-compatible broker (Tansu), driven by the
same stock client (confluent-kafka, librdkafka inside) in the same run, alternated
round by round (kafko, peer, kafko, peer …).

Each run starts a fresh broker, creates a one-partition topic, produces N records of
SIZE bytes (acks=1, linger.ms as given, one producer), then consumes them all from the
beginning (manual assignment, one consumer), and reports per system and phase:
records/s, the broker's CPU per record (utime+stime from /proc/PID/stat over the
phase, so it does not depend on how fast the client is), and the broker's RSS after
the run and its peak (VmHWM).

Usage (run with a Python that has confluent-kafka; bench/run-kafka.sh sets one up):

    bench/kafka_peer.py --kafko target/release/kafko --peer PATH/TO/tansu
                        [--records 200000] [--size 256] [--linger 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def memory_mib(pid: int) -> tuple[float, float]:
    rss = hwm = 0.0
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
    return rss, hwm


def wait_for_port(port: int, proc: subprocess.Popen, what: str) -> None:
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"{what} did not listen on {port}")


def start(system: str, binary: str, work: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(os.path.join(work, f"{system}.log"), "w")
    if system == "kafko":
        cmd = [binary, "--data-dir", os.path.join(work, "data"), "--bind", "127.0.0.1:0",
               "--kafka-bind", f"127.0.0.1:{port}", "--schema-registry-bind", "off"]
    else:
        url = f"tcp://127.0.0.1:{port}"
        cmd = [binary, "broker", "--listener-url", url, "--advertised-listener-url", url]
    # The binary path as given, from the caller's directory: the server runs in `work`.
    cmd[0] = os.path.abspath(cmd[0])
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=work)
    wait_for_port(port, proc, system)
    return proc, f"127.0.0.1:{port}"


def run(system: str, binary: str, args) -> dict:
    work = tempfile.mkdtemp(prefix=f"kafka-peer-{system}-")
    proc, addr = start(system, binary, work)
    try:
        admin = AdminClient({"bootstrap.servers": addr})
        for f in admin.create_topics([NewTopic("bench", 1, 1)]).values():
            f.result(30)
        value = b"v" * args.size
        producer = Producer({"bootstrap.servers": addr, "acks": "1",
                             "linger.ms": args.linger, "enable.idempotence": False})
        cpu0, t0 = cpu_seconds(proc.pid), time.perf_counter()
        for i in range(args.records):
            while True:
                try:
                    producer.produce("bench", value=value, partition=0)
                    break
                except BufferError:
                    producer.poll(0.01)
            if i % 10_000 == 0:
                producer.poll(0)
        left = producer.flush(120)
        if left:
            raise SystemExit(f"{system}: {left} records unacknowledged")
        produce_s, produce_cpu = time.perf_counter() - t0, cpu_seconds(proc.pid) - cpu0

        # librdkafka stops fetching for fetch.queue.backoff.ms (1 s by default) once its
        # queue holds queued.min.messages: a broker faster than this Python loop would be
        # timed by that back-off, so it is short here, for both brokers.
        consumer = Consumer({"bootstrap.servers": addr, "group.id": "bench",
                             "enable.auto.commit": False, "fetch.max.bytes": 52428800,
                             "fetch.queue.backoff.ms": 5})
        consumer.assign([TopicPartition("bench", 0, 0)])
        cpu0, t0 = cpu_seconds(proc.pid), time.perf_counter()
        got = 0
        deadline = time.time() + 120
        while got < args.records and time.time() < deadline:
            for m in consumer.consume(10_000, 1.0):
                if m.error() is None:
                    got += 1
        consume_s, consume_cpu = time.perf_counter() - t0, cpu_seconds(proc.pid) - cpu0
        consumer.close()
        if got < args.records:
            raise SystemExit(f"{system}: consumed {got} of {args.records}")
        rss, hwm = memory_mib(proc.pid)
        n = args.records
        return {
            "produce_rps": n / produce_s, "produce_cpu_us": produce_cpu / n * 1e6,
            "consume_rps": n / consume_s, "consume_cpu_us": consume_cpu / n * 1e6,
            "rss": rss, "hwm": hwm,
        }
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kafko", required=True)
    p.add_argument("--peer", required=True)
    p.add_argument("--records", type=int, default=200_000)
    p.add_argument("--size", type=int, default=256)
    p.add_argument("--linger", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    results: dict[str, list[dict]] = {"kafko": [], "tansu": []}
    for r in range(args.rounds):
        for system, binary in (("kafko", args.kafko), ("tansu", args.peer)):
            out = run(system, binary, args)
            results[system].append(out)
            print(f"round {r + 1} {system}: " + ", ".join(f"{k} {v:,.2f}" for k, v in out.items()),
                  flush=True)
    print(f"\n{args.records:,} × {args.size} B, acks=1, linger.ms {args.linger}, 1 partition, "
          f"confluent-kafka; medians of {args.rounds} alternated rounds")
    print("| broker | produce rec/s | produce CPU µs/rec | consume rec/s | consume CPU µs/rec "
          "| RSS after MiB | peak MiB |")
    print("|---|--:|--:|--:|--:|--:|--:|")
    for system, runs in results.items():
        med = {k: statistics.median(x[k] for x in runs) for k in runs[0]}
        print(f"| {system} | {med['produce_rps']:,.0f} | {med['produce_cpu_us']:.2f} | "
              f"{med['consume_rps']:,.0f} | {med['consume_cpu_us']:.2f} | {med['rss']:.0f} | "
              f"{med['hwm']:.0f} |")


if __name__ == "__main__":
    main()
