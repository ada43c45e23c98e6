#!/usr/bin/env python3
"""Sends N identical Kafka requests to a broker over C connections, each connection one
request at a time (as stock clients send them), and checks every answer's error code:
the load of bench/instructions.sh's Kafka modes. Needs only the standard library.

    bench/kafka_requests.py ADDR produce|fetch N [C]

`produce`: ProduceRequest v3 (acks 1) of one 256 B record to partition 0 of `bench`.
`fetch`: FetchRequest v4 of partition 0 of `bench` from offset 0, at most 64 KiB,
without waiting. Exits 1 on any error code.
"""
import socket
import struct
import sys
import threading

TOPIC = b"bench"


def crc32c(data: bytes) -> int:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def varint(v: int) -> bytes:
    raw = (v << 1) ^ (v >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def record_batch(value: bytes) -> bytes:
    record = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(len(value)) + value + varint(0)
    area = varint(len(record)) + record
    after_crc = struct.pack(">hiqqqhii", 0, 0, 0, 0, -1, -1, -1, 1) + area
    body = struct.pack(">ib", -1, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def string(s: bytes) -> bytes:
    return struct.pack(">h", len(s)) + s


def request(api: int, version: int, body: bytes) -> bytes:
    head = struct.pack(">hhi", api, version, 0) + string(b"bench")
    return struct.pack(">i", len(head) + len(body)) + head + body


def produce() -> bytes:
    batch = record_batch(b"v" * 256)
    body = struct.pack(">hhi", -1, 1, 10_000) + struct.pack(">i", 1) + string(TOPIC)
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(batch)) + batch
    return request(0, 3, body)


def fetch() -> bytes:
    body = struct.pack(">iiiib", -1, 0, 1, 64 * 1024, 0) + struct.pack(">i", 1) + string(TOPIC)
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, 64 * 1024)
    return request(1, 4, body)


def error_code(mode: str, answer: bytes) -> int:
    # After the correlation id: produce v3 [topics: name, [partitions: index, error]];
    # fetch v4 throttle, [topics: name, [partitions: index, error]].
    at = 4 if mode == "produce" else 8
    (name_len,) = struct.unpack_from(">h", answer, at + 4)
    return struct.unpack_from(">h", answer, at + 4 + 2 + name_len + 4 + 4)[0]


def read_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed by the broker")
        out += chunk
    return bytes(out)


def run(addr: str, mode: str, count: int, failures: list) -> None:
    host, port = addr.rsplit(":", 1)
    frame = produce() if mode == "produce" else fetch()
    with socket.create_connection((host, int(port))) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            sock.sendall(frame)
            (size,) = struct.unpack(">i", read_exact(sock, 4))
            code = error_code(mode, read_exact(sock, size))
            if code != 0:
                failures.append(code)
                return


def main() -> None:
    addr, mode, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    conns = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    if mode not in ("produce", "fetch"):
        sys.exit(f"unknown mode {mode}")
    failures: list = []
    threads = [
        threading.Thread(target=run, args=(addr, mode, n // conns + (i < n % conns), failures))
        for i in range(conns)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        sys.exit(f"error codes: {sorted(set(failures))}")


if __name__ == "__main__":
    main()
