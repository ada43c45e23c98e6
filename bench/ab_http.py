#!/usr/bin/env python3
"""A/B of kafko-http builds on the one-record produce, for profiling work: alternates
the no-op ceiling and any number of kafko-http binaries round by round (A B C A B C …)
and reports, per system, requests/s, the server's CPU per request and, where `perf` is
installed, its kernel events per request (context switches, futex, write, epoll_wait).

Why it exists: on this shared 2-vCPU machine throughput moves ±20 % between runs of the
same binary, so a change is judged on alternated medians, and the per-request counts
tell *why* a build is slower (a hand-off between tasks shows up as context switches and
futex calls, an extra syscall as writes) where user-space instruction counts
(callgrind) see nothing.

Usage (after `cargo build --release -p kafko-http -p kafko-bench-noop`):

    bench/ab_http.py [--rounds 3] [--conns 16] [--secs 5] [--fsync never] [--size 256]
                     [--noop target/release/kafko-bench-noop] NAME=BINARY [NAME=BINARY ...]

Each NAME=BINARY is a kafko-http binary (copy builds aside to compare them); a topic
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
from http_bench import Server, http, run_oha, value  # noqa: E402

EVENTS = {
    "context-switches": "cs",
    "syscalls:sys_enter_futex": "futex",
    "syscalls:sys_enter_write": "write",
    "syscalls:sys_enter_epoll_wait": "epoll_wait",
}


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name may hold spaces; the fields after its closing paren are fixed.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def one_run(name: str, argv: list[str], is_kafko: bool, args, tmp: str) -> dict:
    data = tempfile.mkdtemp(prefix="ab-", dir=tmp)
    if is_kafko:
        argv = [*argv, "--data-dir", os.path.join(data, "data")]
    srv = Server([*argv, "--bind", "127.0.0.1:0"], os.path.join(data, "server.log"))
    try:
        if is_kafko:
            cfg = {"partitions": 1, "fsync": {"mode": args.fsync}}
            http("PUT", srv.url("/v1/topics/bench"), json.dumps(cfg).encode())
        body = os.path.join(data, "body")
        with open(body, "wb") as f:
            f.write(value(args.size, 0))
        result: dict = {}

        def load():
            result.update(run_oha(
                args.oha, srv.url("/v1/topics/bench/records"), args.conns, args.secs,
                ["-m", "POST", "-D", body, "-H", "content-type: application/octet-stream"],
            ))

        loader = threading.Thread(target=load)
        loader.start()
        time.sleep(1)
        window = max(args.secs - 2, 1)
        t0, c0 = time.monotonic(), cpu_seconds(srv.proc.pid)
        counts = perf_counts(srv.proc.pid, window)
        t1, c1 = time.monotonic(), cpu_seconds(srv.proc.pid)
        loader.join()
        requests = result["requests_per_s"] * (t1 - t0)
        return {
            "name": name,
            "rps": result["requests_per_s"],
            "failed": result["failed"],
            "cpu_us": (c1 - c0) * 1e6 / requests if requests else 0.0,
            **{k: v / requests for k, v in counts.items()},
        }
    finally:
        srv.stop()
        shutil.rmtree(data, ignore_errors=True)


def fmt(r: dict) -> str:
    extra = " ".join(f"{k}={r[k]:.3f}" for k in EVENTS.values() if k in r)
    return f"{r['name']:>12}: {r['rps']:>9,.0f} req/s  cpu {r['cpu_us']:5.1f} µs/req  {extra}"


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
    args = ap.parse_args()
    if args.secs < 3:
        ap.error("--secs must be at least 3 (1 s warm-up, then the counted window)")
    systems = [("no-op", [args.noop], False)]
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
    try:
        for rnd in range(1, args.rounds + 1):
            for name, argv, is_kafko in systems:
                r = one_run(name, argv, is_kafko, args, tmp)
                runs[name].append(r)
                print(f"round {rnd} {fmt(r)}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ceiling = statistics.median(r["rps"] for r in runs["no-op"])
    print(f"\nmedians over {args.rounds} rounds ({args.conns} connections, "
          f"{args.size} B, fsync {args.fsync}):")
    for name, rs in runs.items():
        med = {k: statistics.median(r[k] for r in rs) for k in rs[0] if k != "name"}
        lo, hi = min(r["rps"] for r in rs), max(r["rps"] for r in rs)
        share = f"  {med['rps'] / ceiling:4.0%} of the no-op" if name != "no-op" else ""
        print(f"{fmt({'name': name, **med})}  (req/s {lo:,.0f}–{hi:,.0f}){share}")
        if any(r["failed"] for r in rs):
            print(f"{'':>14}failed responses: {[r['failed'] for r in rs]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
