#!/usr/bin/env python3
"""The HTTP benchmark of kafko: drives `kafko`, the no-op ceiling server and Redis
Streams with the same load generators, alternating systems run by run, and writes the
raw results as JSON (then `report.py` turns them into `bench/README.md`).

Run it through `bench/run-http.sh`, which installs the tools and builds the binaries.

Layout of a run:
- cells are grouped by what they are compared with (same body, same connections); for
  each round r in 1..runs, every cell of a group runs once, in order (A B C A B C ...),
  so slow drift of a shared machine hits every system alike;
- every run starts its server afresh on a fresh data directory, so the peak RSS
  (`VmHWM` of the server process, read just before it is stopped) belongs to that run;
- the consume cell reads from one pre-filled data directory, copied per run.

Units: MB = 10^6 bytes of record values; latencies in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field

MODES = {
    # Default: every cell of the targets tables, 3 runs of 4 s each (~10 min with builds done).
    "full": dict(
        duration=4,
        runs=3,
        sizes=[256, 4096],
        conns=[1, 16, 64],
        codecs=["none", "lz4"],
        fsyncs=["never", "always"],
        batches=[100, 1000],
        prefill=100_000,
        redis=True,
    ),
    # Under 3 minutes: the cells the targets are about, plus the connection sweep.
    "quick": dict(
        duration=2,
        runs=3,
        sizes=[256],
        conns=[1, 16, 64],
        codecs=["none"],
        fsyncs=["never", "always"],
        batches=[1000],
        prefill=100_000,
        redis=True,
    ),
    # A few seconds: proves the harness works end to end (scripts/checks).
    "smoke": dict(
        duration=1,
        runs=1,
        sizes=[256],
        conns=[4],
        codecs=["none"],
        fsyncs=["never"],
        batches=[100],
        prefill=10_000,
        redis=False,
    ),
}

BATCH_CONNS = 16
CONSUME_CONNS = 16
CONSUME_PER_FETCH = 1000
REDIS_CLIENTS = 16


@dataclass
class Cell:
    """One measured configuration; `runs` holds one dict per run."""

    id: str
    kind: str  # produce | batch | consume | xadd
    system: str  # kafko | noop (plain axum::serve) | transport (kafko's transport, no-op handler) | redis
    size: int
    conns: int
    codec: str = "-"
    fsync: str = "-"
    records_per_request: int = 1
    runs: list = field(default_factory=list)


def value(size: int, seed: int = 0) -> bytes:
    """A semi-compressible, quote-free ASCII event of exactly `size` bytes."""
    head = f"id={seed:08d} user=u{seed % 1000:03d} event=click payload=".encode()
    body = bytearray(head)
    i = 0
    while len(body) < size:
        body.append(ord("a") + (i * 7 + seed) % 26)
        i += 1
    return bytes(body[:size])


def batch_body(n: int, size: int) -> bytes:
    records = ",".join(
        '{"value":"' + value(size, i).decode() + '"}' for i in range(n)
    )
    return ('{"records":[' + records + "]}").encode()


def ndjson_body(n: int, size: int) -> bytes:
    """The records of `batch_body`, one JSON object per line."""
    return "".join('{"value":"' + value(size, i).decode() + '"}\n' for i in range(n)).encode()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name may hold spaces; the fields after its closing paren are fixed.
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Server:
    """A server process that prints `listening on http://ADDR` when bound."""

    def __init__(self, argv: list[str], log_path: str, env: dict | None = None):
        self.log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env={**os.environ, **(env or {})},
        )
        self.addr = self._wait_listening(argv[0])

    def _wait_listening(self, name: str) -> str:
        deadline = time.monotonic() + 30
        buf = b""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                buf += chunk
                # The HTTP listener's own line (the registry's says "schema registry ...").
                m = re.search(rb"(?m)^listening on http://(\S+)", buf)
                if m:
                    return m.group(1).decode()
            if self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"{name} did not start; see {self.log.name}")

    def url(self, path: str) -> str:
        return f"http://{self.addr}{path}"

    def peak_rss_kib(self) -> int:
        return peak_rss_kib(self.proc.pid)

    def stop(self) -> float:
        """SIGTERM, wait (bounded); returns the seconds the exit took."""
        started = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return time.monotonic() - started


def http(method: str, url: str, body: bytes | None = None, ctype: str = "application/json"):
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("content-type", ctype)
    with urllib.request.urlopen(req, timeout=60) as resp:
        return resp.status, resp.read()


def run_oha(oha: str, url: str, conns: int, duration: int, extra: list[str]) -> dict:
    argv = [
        oha, "--no-tui", "--output-format", "json", "-z", f"{duration}s",
        "-w", "-c", str(conns), *extra, url,
    ]
    out = subprocess.run(argv, capture_output=True, timeout=duration + 60, check=True)
    d = json.loads(out.stdout)
    s = d["summary"]
    codes = {int(k): v for k, v in (d.get("statusCodeDistribution") or {}).items()}
    ok = sum(v for k, v in codes.items() if 200 <= k < 300)
    failed = sum(codes.values()) - ok + sum((d.get("errorDistribution") or {}).values())
    lp = d["latencyPercentiles"]
    ms = lambda v: None if v is None else v * 1000.0  # noqa: E731 — oha reports seconds
    return {
        "requests_per_s": ok / s["total"] if s["total"] else 0.0,
        "ok": ok,
        "failed": failed,
        "status": {str(k): v for k, v in sorted(codes.items())},
        "p50_ms": ms(lp.get("p50")),
        "p99_ms": ms(lp.get("p99")),
        "p999_ms": ms(lp.get("p99.9")),
        "bytes_per_response": s.get("sizePerRequest"),
    }


class Bench:
    def __init__(self, args, mode: dict):
        self.args = args
        self.mode = mode
        self.tmp = tempfile.mkdtemp(prefix="kafko-bench-", dir=args.tmp_dir)
        self.bodies: dict[tuple, str] = {}
        self.n = 0
        self.prefilled: str | None = None
        self.redis_n: int | None = None

    # ---- bodies -------------------------------------------------------------
    def body_file(self, kind: str, size: int, records: int) -> str:
        key = (kind, size, records)
        if key not in self.bodies:
            path = os.path.join(self.tmp, f"body-{kind}-{size}-{records}")
            data = value(size) if kind == "produce" else batch_body(records, size)
            with open(path, "wb") as f:
                f.write(data)
            self.bodies[key] = path
        return self.bodies[key]

    # ---- servers ------------------------------------------------------------
    def fresh_dir(self) -> str:
        self.n += 1
        return os.path.join(self.tmp, f"run-{self.n}")

    def start_kafko(self, data_dir: str) -> Server:
        return Server(
            [self.args.kafko, "--bind", "127.0.0.1:0", "--kafka-bind", "off",
             "--schema-registry-bind", "off", "--data-dir", data_dir],
            data_dir + ".log",
        )

    def start_noop(self, transport: str) -> Server:
        argv = [self.args.noop, "--transport", transport, "--bind", "127.0.0.1:0"]
        return Server(argv, self.fresh_dir() + ".log")

    def create_topic(self, srv: Server, codec: str, fsync: str) -> None:
        cfg = {"partitions": 1, "compression": codec, "fsync": {"mode": fsync}}
        status, body = http("PUT", srv.url("/v1/topics/bench"), json.dumps(cfg).encode())
        if status != 201:
            raise RuntimeError(f"create topic: {status} {body[:200]!r}")

    def prefill(self) -> str:
        """A data directory holding `prefill` records of 256 B in topic `bench`."""
        if self.prefilled:
            return self.prefilled
        d = os.path.join(self.tmp, "prefilled")
        srv = self.start_kafko(d)
        try:
            self.create_topic(srv, "none", "never")
            body = batch_body(1000, 256)
            for _ in range(self.mode["prefill"] // 1000):
                status, _ = http("POST", srv.url("/v1/topics/bench/records"), body)
                if status != 201:
                    raise RuntimeError(f"prefill: {status}")
        finally:
            srv.stop()
        self.prefilled = d
        return d

    # ---- one run of one cell -------------------------------------------------
    def run(self, cell: Cell) -> dict:
        dur = self.mode["duration"]
        if cell.system == "redis":
            return self.run_redis(cell)
        srv_dir = self.fresh_dir()
        if cell.kind == "consume":
            shutil.copytree(self.prefill(), srv_dir)
            srv = self.start_kafko(srv_dir)
        elif cell.system == "noop":
            srv = self.start_noop("plain")
        elif cell.system == "transport":
            srv = self.start_noop("kafko")
        else:
            srv = self.start_kafko(srv_dir)
            self.create_topic(srv, cell.codec, cell.fsync)
        try:
            cpu0 = cpu_seconds(srv.proc.pid)
            if cell.kind == "consume":
                # prefill = 1000 * 10^digits: every offset the regex draws is a full read.
                digits = len(str(self.mode["prefill"] // 1000)) - 1
                url = (
                    f"http://{srv.addr}/v1/topics/bench/records\\?partition=0"
                    f"&offset=[0-9]{{{digits}}}000&max_records={CONSUME_PER_FETCH}"
                )
                # Offsets past the prefill would read nothing; clamp by construction.
                r = run_oha(self.args.oha, url, cell.conns, dur, ["--rand-regex-url"])
                # records/s assumes full reads: a short answer would inflate it.
                if (r["bytes_per_response"] or 0) < CONSUME_PER_FETCH * cell.size:
                    print(f"warning: short reads ({r['bytes_per_response']} B per response)", file=sys.stderr)
                    r["failed"] += r["ok"]
            else:
                ctype = "application/json" if cell.kind == "batch" else "application/octet-stream"
                body = self.body_file(cell.kind, cell.size, cell.records_per_request)
                r = run_oha(
                    self.args.oha,
                    srv.url("/v1/topics/bench/records"),
                    cell.conns,
                    dur,
                    ["-m", "POST", "-T", ctype, "-D", body],
                )
            r["peak_rss_kib"] = srv.peak_rss_kib()
            # The server's user + system CPU over the run, per answered request.
            r["cpu_us"] = (cpu_seconds(srv.proc.pid) - cpu0) * 1e6 / r["ok"] if r["ok"] else None
        finally:
            r_stop = srv.stop()
            if cell.system == "kafko" and not self.args.keep:
                # Each run starts from the same page-cache state: a run's gigabyte of
                # dirty segment pages, left in place, is written back during the next
                # cells and throttles them (the batch cells at the end saw p99s of 60 ms).
                shutil.rmtree(srv_dir, ignore_errors=True)
        r["stop_s"] = r_stop
        r["records_per_s"] = r["requests_per_s"] * cell.records_per_request
        r["mb_per_s"] = r["records_per_s"] * cell.size / 1e6
        return r

    def run_redis(self, cell: Cell) -> dict:
        d = self.fresh_dir()
        os.makedirs(d)
        port = free_port()
        log = open(d + ".log", "ab")
        proc = subprocess.Popen(
            [
                "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                "--dir", d, "--save", "", "--appendonly", "yes",
                "--appendfsync", "everysec", "--daemonize", "no",
            ],
            stdout=log,
            stderr=log,
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise RuntimeError(f"redis-server did not start; see {log.name}")
                    time.sleep(0.05)
            dur = self.mode["duration"]
            n = self.redis_n or 20_000 * dur
            v = value(cell.size).decode()
            cpu0 = cpu_seconds(proc.pid)
            out = subprocess.run(
                [
                    "redis-benchmark", "-p", str(port), "-c", str(cell.conns),
                    "-n", str(n), "--precision", "3", "XADD", "bench", "*", "v", v,
                ],
                capture_output=True, text=True, timeout=dur * 20 + 60, check=True,
            )
            r = parse_redis_benchmark(out.stdout)
            r["cpu_us"] = (cpu_seconds(proc.pid) - cpu0) * 1e6 / n
            # Size the next run to take about `duration` seconds.
            self.redis_n = max(5_000, int(r["requests_per_s"] * dur))
            r["peak_rss_kib"] = peak_rss_kib(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
        r["records_per_s"] = r["requests_per_s"]
        r["mb_per_s"] = r["records_per_s"] * cell.size / 1e6
        return r


def parse_redis_benchmark(text: str) -> dict:
    """Throughput and percentiles from redis-benchmark's plain output (its CSV has no
    p99.9; the cumulative distribution does)."""
    text = text.replace("\r", "\n")
    m = re.search(r"throughput summary: ([0-9.]+) requests per second", text)
    if not m:
        raise RuntimeError(f"unexpected redis-benchmark output: {text[-500:]}")
    rps = float(m.group(1))
    dist = [
        (float(p), float(ms))
        for p, ms in re.findall(r"([0-9.]+)% <= ([0-9.]+) milliseconds", text)
    ]

    def pct(q: float):
        for p, ms in dist:
            if p >= q:
                return ms
        return dist[-1][1] if dist else None

    summary = re.search(
        r"avg\s+min\s+p50\s+p95\s+p99\s+max\s*\n\s*([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)",
        text,
    )
    p50 = float(summary.group(3)) if summary else pct(50.0)
    p99 = float(summary.group(5)) if summary else pct(99.0)
    total = re.search(r"([0-9]+) requests completed", text)
    return {
        "requests_per_s": rps,
        "ok": int(total.group(1)) if total else None,
        "failed": 0,
        "status": {},
        "p50_ms": p50,
        "p99_ms": p99,
        "p999_ms": pct(99.9),
    }


def plan(mode: dict, have_redis: bool) -> list[list[Cell]]:
    groups: list[list[Cell]] = []
    for size in mode["sizes"]:
        for c in mode["conns"]:
            g = [
                Cell(f"noop/raw/{size}/c{c}", "produce", "noop", size, c),
                Cell(f"transport/raw/{size}/c{c}", "produce", "transport", size, c),
            ]
            for codec in mode["codecs"]:
                for fsync in mode["fsyncs"]:
                    g.append(
                        Cell(
                            f"kafko/raw/{size}/c{c}/{codec}/{fsync}",
                            "produce", "kafko", size, c, codec, fsync,
                        )
                    )
            if mode["redis"] and have_redis and size == 256 and c == REDIS_CLIENTS:
                g.append(Cell(f"redis/xadd/{size}/c{c}", "xadd", "redis", size, c, "-", "aof everysec"))
            groups.append(g)
    for n in mode["batches"]:
        groups.append(
            [
                Cell(f"noop/batch{n}/256/c{BATCH_CONNS}", "batch", "noop", 256, BATCH_CONNS, records_per_request=n),
                Cell(
                    f"transport/batch{n}/256/c{BATCH_CONNS}",
                    "batch", "transport", 256, BATCH_CONNS, records_per_request=n,
                ),
                Cell(
                    f"kafko/batch{n}/256/c{BATCH_CONNS}/none/never",
                    "batch", "kafko", 256, BATCH_CONNS, "none", "never", records_per_request=n,
                ),
            ]
        )
    groups.append(
        [
            Cell(
                f"kafko/consume{CONSUME_PER_FETCH}/256/c{CONSUME_CONNS}",
                "consume", "kafko", 256, CONSUME_CONNS, "none", "-",
                records_per_request=CONSUME_PER_FETCH,
            )
        ]
    )
    return groups


def tool_version(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unavailable"


def machine() -> dict:
    model = "unknown"
    mem = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) // 1024} MiB"
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "memory": mem,
        "kernel": platform.release(),
        "rustc": tool_version(["rustc", "-V"]),
        "oha": tool_version(["oha", "--version"]),
        "redis": tool_version(["redis-server", "--version"]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "loadavg_at_start": open("/proc/loadavg").read().split()[:3],
    }


def disk_flush_us(directory: str, rounds: int = 200) -> dict:
    """What one fsync costs on the data directories' file system: the median fdatasync
    after a 4 KiB append (what an fsync `always` produce pays: the file grows, so the
    file system commits metadata too) and after a 4 KiB overwrite of blocks already
    written and flushed (data only). Every fsync `always` produce pays the first."""
    block = b"k" * 4096
    out = {}
    for kind in ("append", "overwrite"):
        path = os.path.join(directory, f"fsync-probe-{kind}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            if kind == "overwrite":
                os.write(fd, bytes(len(block) * rounds))
                os.fsync(fd)
            took = []
            for i in range(rounds):
                if kind == "append":
                    os.write(fd, block)
                else:
                    os.pwrite(fd, block, i * len(block))
                t = time.perf_counter()
                os.fdatasync(fd)
                took.append(time.perf_counter() - t)
        finally:
            os.close(fd)
            os.unlink(path)
        took.sort()
        out[kind] = round(took[len(took) // 2] * 1e6)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=sorted(MODES), default="full")
    ap.add_argument("--kafko", required=True, help="path to the kafko binary")
    ap.add_argument("--noop", required=True, help="path to the kafko-bench-noop binary")
    ap.add_argument("--oha", default="oha")
    ap.add_argument("--out", required=True, help="results JSON to write")
    ap.add_argument("--tmp-dir", default=None, help="parent of the data directories (a real disk: fsync must cost what it costs)")
    ap.add_argument("--keep", action="store_true", help="keep the data directories and server logs")
    args = ap.parse_args()
    mode = MODES[args.mode]
    have_redis = shutil.which("redis-server") is not None and shutil.which("redis-benchmark") is not None
    if mode["redis"] and not have_redis:
        print("note: redis-server/redis-benchmark not found; the XADD comparison is skipped", file=sys.stderr)
    bench = Bench(args, mode)
    groups = plan(mode, have_redis)
    described = machine()
    described["fdatasync_us"] = disk_flush_us(bench.tmp)
    started = time.monotonic()
    total = sum(len(g) for g in groups) * mode["runs"]
    done = 0
    try:
        for g in groups:
            for r in range(mode["runs"]):
                for cell in g:
                    res = bench.run(cell)
                    cell.runs.append(res)
                    done += 1
                    print(
                        f"[{done:3}/{total}] {cell.id:38} run {r + 1}: "
                        f"{res['records_per_s']:>12,.0f} rec/s  p99 {res['p99_ms'] or 0:7.2f} ms  "
                        f"rss {res['peak_rss_kib'] / 1024:6.1f} MiB"
                        + (f"  FAILED {res['failed']}" if res["failed"] else ""),
                        flush=True,
                    )
    finally:
        if not args.keep:
            shutil.rmtree(bench.tmp, ignore_errors=True)
        else:
            print(f"data and logs kept in {bench.tmp}")
    result = {
        "mode": args.mode,
        "settings": {k: v for k, v in mode.items()},
        "machine": described,
        "elapsed_s": round(time.monotonic() - started, 1),
        "cells": [c.__dict__ for g in groups for c in g],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"results: {args.out} ({result['elapsed_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
