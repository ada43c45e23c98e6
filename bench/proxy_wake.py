#!/usr/bin/env python3
"""How fast a waiting REST Proxy read wakes for a new record: a subscribed consumer
instance (auto.offset.reset latest) starts a 5 s read, a record is produced through /v1
half a second later, and the time from sending that produce to the read's answer is
taken, ten times.

Usage: bench/proxy_wake.py http://127.0.0.1:8080   (a running kafko)
"""

import json
import sys
import threading
import time
import urllib.request

V2 = "application/vnd.kafka.v2+json"
BINARY = "application/vnd.kafka.binary.v2+json"


def call(base, method, path, body=None, content_type=V2, accept=None):
    data = json.dumps(body).encode() if body is not None else None
    r = urllib.request.Request(base + path, data=data, method=method)
    r.add_header("content-type", content_type)
    if accept:
        r.add_header("accept", accept)
    with urllib.request.urlopen(r, timeout=30) as resp:
        text = resp.read()
        return json.loads(text) if text else None


def main(base):
    call(base, "PUT", "/v1/topics/wake", {"partitions": 1}, content_type="application/json")
    latencies = []
    for i in range(10):
        created = call(base, "POST", "/consumers/wake", {"format": "binary", "auto.offset.reset": "latest"})
        instance = created["base_uri"].replace(base, "")
        call(base, "POST", f"{instance}/subscription", {"topics": ["wake"]})
        call(base, "GET", f"{instance}/records?timeout=0", accept=BINARY)
        out = {}

        def read():
            out["records"] = call(base, "GET", f"{instance}/records?timeout=5000", accept=BINARY)
            out["at"] = time.perf_counter()

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(0.5)
        sent = time.perf_counter()
        call(base, "POST", "/v1/topics/wake/records", {"records": [{"value": f"r{i}"}]},
             content_type="application/json")
        reader.join()
        assert len(out["records"]) == 1, out
        latencies.append((out["at"] - sent) * 1000)
        call(base, "DELETE", instance)
    latencies.sort()
    print(f"wake latency ms: min {latencies[0]:.1f} median {latencies[5]:.1f} max {latencies[-1]:.1f}")


if __name__ == "__main__":
    main(sys.argv[1])
