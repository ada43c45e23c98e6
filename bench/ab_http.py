#!/usr/bin/env python3
"""A/B of kafko builds on the one-record produce, for profiling work: alternates
the no-op ceiling (plain axum), the same no-op on kafko's transport and any number of
kafko binaries round by round (A B C A B C …)
and reports, per system, requests/s, the server's CPU per request and, where `perf` is
installed, its kernel events per request (context switches, futex, write, epoll_wait).

Why it exists: on this shared 2-vCPU machine throughput moves ±20 % between runs of the
same binary, so a change is judged on alternated medians, and the per-request counts
tell *why* a build is slower (a hand-off between tasks shows up as context switches and
futex calls, an extra syscall as writes) where user-space instruction counts
(callgrind) see nothing.

Usage (after `cargo build --release -p kafko -p kafko-bench-noop`):

    bench/ab_http.py [--rounds 3] [--conns 16] [--secs 5] [--fsync never] [--size 256]
                     [--beside-batches 0] [--noop target/release/kafko-bench-noop]
                     NAME=BINARY [NAME=BINARY ...]

`--workload` picks the load: `single` (default: one raw record per request), `batch`
(a JSON batch of `--batch-records` records of `--size` bytes per request), `ndjson` (the
same records as NDJSON lines) or `consume`
(JSON fetches of 1,000 records from a partition pre-filled with 10,000, each system's
own directory written once by that system and copied per run). The no-op ceiling gets
the same requests, except with `consume`, which it does not serve.

With `--fsync always`, the data disk's fdatasync after a 4 KiB append is probed before
every round, and the median gives the group-commit bound: connections / fdatasync time.

`--redis` adds Redis `XADD` (AOF everysec, `redis-benchmark`, same connections and
size) to every round, for the "as fast as Redis on the same box" comparison.
`--beside-batches N` adds N connections posting 1,000 × 1 KiB JSON batches to the same
partition during every run (the no-op gets them too): the mixed load, whose headline is
the single-record p99. Each kafko run also reports its mean write-group size (appends per
`write`, from `/metrics`) when the build exports it.

Each NAME=BINARY is a kafko binary (copy builds aside to compare them); a topic
`bench` with one partition is created on a fresh data directory for every run. The
counts are taken over the middle of each run (after 1 s of warm-up), by `perf stat -p`
on the server process and from its `/proc/<pid>/stat` CPU times.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_bench import (  # noqa: E402
    Bench, Cell, Server, batch_body, cpu_seconds, disk_flush_us, http, ndjson_body, run_oha,
    value,
)

EVENTS = {
    "context-switches": "cs",
    "syscalls:sys_enter_futex": "futex",
    "syscalls:sys_enter_write": "write",
    "syscalls:sys_enter_epoll_wait": "epoll_wait",
}


def perf_counts(pid: int, seconds: float) -> dict[str, float]:
    """Kernel event totals of `pid` over `seconds`; empty when perf is unavailable."""
    if not shutil.which("perf"):
        time.sleep(seconds)
        return {}
    argv = ["perf", "stat", "-x,", "-e", ",".join(EVENTS), "-p", str(pid),
            "--", "sleep", str(seconds)]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
    counts = {}
    for line in out.stderr.splitlines():
        parts = line.split(",")
        if len(parts) > 2 and parts[2] in EVENTS and parts[0].replace(".", "").isdigit():
            counts[EVENTS[parts[2]]] = float(parts[0])
    return counts


PREFILL_RECORDS = 10_000
FETCH_RECORDS = 1_000


def create_topic(srv, args) -> None:
    cfg = {"partitions": 1, "fsync": {"mode": args.fsync}}
    http("PUT", srv.url("/v1/topics/bench"), json.dumps(cfg).encode())


def prefilled(name: str, argv: list[str], args, tmp: str) -> str:
    """A data directory holding `PREFILL_RECORDS` records in topic `bench`, written by
    this system itself (once; later runs copy it)."""
    d = os.path.join(tmp, f"prefilled-{name}")
    if os.path.isdir(d):
        return d
    srv = Server([*argv, "--data-dir", d, "--bind", "127.0.0.1:0", "--kafka-bind", "off",
                  "--schema-registry-bind", "off"], d + ".log")
    try:
        create_topic(srv, args)
        body = batch_body(1000, args.size)
        for _ in range(PREFILL_RECORDS // 1000):
            status, _ = http("POST", srv.url("/v1/topics/bench/records"), body)
            if status != 201:
                raise RuntimeError(f"prefill of {name}: {status}")
    finally:
        srv.stop()
    return d


def one_run(name: str, argv: list[str], is_kafko: bool, args, tmp: str) -> dict:
    data = tempfile.mkdtemp(prefix="ab-", dir=tmp)
    if is_kafko:
        if args.workload == "consume":
            shutil.copytree(prefilled(name, argv, args, tmp), os.path.join(data, "data"))
        # Kafka's port stays free: alternated runs start one server after another.
        argv = [*argv, "--data-dir", os.path.join(data, "data"), "--kafka-bind", "off",
                "--schema-registry-bind", "off"]
    srv = Server([*argv, "--bind", "127.0.0.1:0"], os.path.join(data, "server.log"))
    try:
        if is_kafko and args.workload != "consume":
            create_topic(srv, args)
        body = os.path.join(data, "body")
        with open(body, "wb") as f:
            if args.workload == "batch":
                f.write(batch_body(args.batch_records, args.size))
            elif args.workload == "ndjson":
                f.write(ndjson_body(args.batch_records, args.size))
            else:
                f.write(value(args.size, 0))
        result: dict = {}
        batches: dict = {}
        url = srv.url("/v1/topics/bench/records")
        if args.workload == "consume":
            # Offsets 0, 1000, …, 9000: every fetch is a full one.
            query = f"\\?partition=0&offset=[0-9]000&max_records={FETCH_RECORDS}"
            request = ["--rand-regex-url"]
            url = url + query
        elif args.workload == "batch":
            request = ["-m", "POST", "-D", body, "-H", "content-type: application/json"]
        elif args.workload == "ndjson":
            request = ["-m", "POST", "-D", body, "-H", "content-type: application/x-ndjson"]
        else:
            request = ["-m", "POST", "-D", body, "-H", "content-type: application/octet-stream"]

        def load():
            result.update(run_oha(args.oha, url, args.conns, args.secs, request))

        def batch_load():
            batch = os.path.join(data, "batch")
            with open(batch, "wb") as f:
                f.write(batch_body(1000, 1024))
            batches.update(run_oha(
                args.oha, url, args.beside_batches, args.secs,
                ["-m", "POST", "-D", batch, "-H", "content-type: application/json"],
            ))

        loaders = [threading.Thread(target=load)]
        if args.beside_batches:
            loaders.append(threading.Thread(target=batch_load))
        for loader in loaders:
            loader.start()
        time.sleep(1)
        window = max(args.secs - 2, 1)
        t0, c0 = time.monotonic(), cpu_seconds(srv.proc.pid)
        counts = perf_counts(srv.proc.pid, window)
        t1, c1 = time.monotonic(), cpu_seconds(srv.proc.pid)
        for loader in loaders:
            loader.join()
        requests = result["requests_per_s"] * (t1 - t0)
        out = {
            "name": name,
            "rps": result["requests_per_s"],
            "p99_ms": result["p99_ms"] or 0.0,
            "failed": result["failed"],
            "cpu_us": (c1 - c0) * 1e6 / requests if requests else 0.0,
            **{k: v / requests for k, v in counts.items()},
        }
        if args.beside_batches:
            out["batch_rps"] = batches.get("requests_per_s", 0.0)
        if is_kafko:
            group = mean_group_size(srv)
            if group is not None:
                out["group"] = group
        return out
    finally:
        srv.stop()
        shutil.rmtree(data, ignore_errors=True)


def mean_group_size(srv) -> float | None:
    """Appends per write group of partition 0, from `/metrics` (None if not exported)."""
    _, text = http("GET", srv.url("/metrics"))
    found = {}
    for line in text.decode().splitlines():
        for name in ("kafko_partition_write_groups_total", "kafko_partition_appends_written_total"):
            if line.startswith(name + '{topic="bench",partition="0"}'):
                found[name] = float(line.rsplit(" ", 1)[1])
    groups = found.get("kafko_partition_write_groups_total")
    if not groups:
        return None
    return found["kafko_partition_appends_written_total"] / groups


def fmt(r: dict) -> str:
    extra = " ".join(f"{k}={r[k]:.3f}" for k in EVENTS.values() if k in r)
    more = f"  p99 {r['p99_ms']:6.2f} ms"
    if "batch_rps" in r:
        more += f"  batches {r['batch_rps']:6,.0f}/s"
    if "group" in r:
        more += f"  group {r['group']:5.2f}"
    return (f"{r['name']:>12}: {r['rps']:>9,.0f} req/s{more}  cpu {r['cpu_us']:5.1f} µs/req"
            f"  {extra}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("systems", nargs="+", metavar="NAME=BINARY")
    ap.add_argument("--noop", default="target/release/kafko-bench-noop")
    ap.add_argument("--oha", default="oha")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--fsync", default="never", choices=["never", "always"])
    ap.add_argument("--workload", default="single", choices=["single", "batch", "ndjson", "consume"])
    ap.add_argument("--batch-records", type=int, default=1000)
    ap.add_argument("--beside-batches", type=int, default=0, metavar="N")
    ap.add_argument("--redis", action="store_true")
    args = ap.parse_args()
    if args.secs < 3:
        ap.error("--secs must be at least 3 (1 s warm-up, then the counted window)")
    systems = [] if args.workload == "consume" else [
        ("no-op", [args.noop, "--transport", "plain"], False),
        ("transport", [args.noop, "--transport", "kafko"], False),
    ]
    for spec in args.systems:
        name, sep, binary = spec.partition("=")
        if not sep or not name or not binary:
            ap.error(f"expected NAME=BINARY, got '{spec}'")
        systems.append((name, [binary], True))
    for _, argv, _ in systems:
        if not (os.path.isfile(argv[0]) and os.access(argv[0], os.X_OK)):
            ap.error(f"not an executable file: {argv[0]}")
    if not shutil.which(args.oha):
        ap.error(f"{args.oha} not found (cargo install oha --locked)")
    tmp = tempfile.mkdtemp(prefix="kafko-ab-")
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in systems}
    redis = None
    if args.redis:
        if not shutil.which("redis-benchmark"):
            ap.error("redis-benchmark not found (bench/run-http.sh installs it)")
        redis = Bench(argparse.Namespace(tmp_dir=tmp), {"duration": args.secs})
        runs["redis"] = []
    flush: list[float] = []
    try:
        for rnd in range(1, args.rounds + 1):
            if args.fsync == "always":
                # The disk as this round finds it (shared disks move from round to round).
                flush.append(disk_flush_us(tmp, rounds=100)["append"])
            for name, argv, is_kafko in systems:
                r = one_run(name, argv, is_kafko, args, tmp)
                runs[name].append(r)
                print(f"round {rnd} {fmt(r)}", flush=True)
            if redis is not None:
                cell = Cell("xadd", "xadd", "redis", args.size, args.conns)
                x = redis.run_redis(cell)
                r = {"name": "redis XADD", "rps": x["requests_per_s"],
                     "p99_ms": x.get("p99_ms") or 0.0, "failed": 0, "cpu_us": 0.0}
                runs["redis"].append(r)
                print(f"round {rnd} {fmt(r)}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ceiling = statistics.median(r["rps"] for r in runs.get("no-op", [{"rps": 0.0}]))
    cpu_ceiling = statistics.median(r["cpu_us"] for r in runs.get("no-op", [{"cpu_us": 0.0}]))
    if flush:
        # Every fsync round takes one fdatasync after an append; at most one request per
        # connection rides in a round.
        flush_us = statistics.median(flush)
        print(f"\nfdatasync after a 4 KiB append, median of the {len(flush)} probes between "
              f"rounds: {flush_us:.0f} µs; group-commit bound at {args.conns} connections: "
              f"{args.conns} / {flush_us:.0f} µs = {args.conns * 1e6 / flush_us:,.0f} req/s")
    print(f"\nmedians over {args.rounds} rounds ({args.workload}, {args.conns} connections, "
          f"{args.size} B, fsync {args.fsync}):")
    for name, rs in runs.items():
        keys = {k for r in rs for k in r if k != "name"}
        med = {k: statistics.median(r[k] for r in rs if k in r) for k in keys}
        lo, hi = min(r["rps"] for r in rs), max(r["rps"] for r in rs)
        share = ""
        if name != "no-op" and ceiling:
            share = (f"  {med['rps'] / ceiling:4.0%} of the no-op's req/s, "
                     f"{med['cpu_us'] / cpu_ceiling:.2f} × its CPU")
        print(f"{fmt({'name': name, **med})}  (req/s {lo:,.0f}–{hi:,.0f}){share}")
        if any(r["failed"] for r in rs):
            print(f"{'':>14}failed responses: {[r['failed'] for r in rs]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
