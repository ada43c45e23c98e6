"""v3 endpoints: the cluster, topics, partitions, offsets, and the streaming produce."""

import base64
import json
import socket
import urllib.parse

from conftest import assert_error, create_topic, unique

APP = "application/json"


def get(http, url):
    r = http.get(url, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith(APP)
    return r.json()


def test_clusters(base, http, cluster):
    listed = get(http, f"{base}/v3/clusters")
    assert listed["kind"] == "KafkaClusterList"
    assert listed["metadata"]["self"].endswith("/v3/clusters")
    one = get(http, f"{base}/v3/clusters/{cluster}")
    assert one["kind"] == "KafkaCluster" and one["cluster_id"] == cluster
    assert one["metadata"]["self"].endswith(f"/v3/clusters/{cluster}")
    assert one["topics"]["related"].endswith(f"/v3/clusters/{cluster}/topics")
    r = http.get(f"{base}/v3/clusters/{unique('nope')}")
    assert r.status_code == 404 and r.json()["error_code"] == 404


def test_topics(base, http, cluster):
    name = create_topic(base, http, cluster, partitions=2)
    listed = get(http, f"{base}/v3/clusters/{cluster}/topics")
    assert listed["kind"] == "KafkaTopicList"
    assert name in [t["topic_name"] for t in listed["data"]]
    t = get(http, f"{base}/v3/clusters/{cluster}/topics/{name}")
    assert t["kind"] == "KafkaTopic"
    assert (t["cluster_id"], t["topic_name"], t["partitions_count"], t["is_internal"]) == (cluster, name, 2, False)
    assert t["partitions"]["related"].endswith(f"/topics/{name}/partitions")
    again = http.post(f"{base}/v3/clusters/{cluster}/topics", json={"topic_name": name})
    assert_error(again, 400, 40002, media=APP)
    assert http.delete(f"{base}/v3/clusters/{cluster}/topics/{name}").status_code == 204
    assert_error(http.get(f"{base}/v3/clusters/{cluster}/topics/{name}"), 404, 40403, media=APP)


def test_create_topic_with_configs(base, http, cluster):
    name = unique("cfg")
    r = http.post(
        f"{base}/v3/clusters/{cluster}/topics",
        json={"topic_name": name, "partitions_count": 1, "configs": [{"name": "cleanup.policy", "value": "compact"}]},
    )
    assert r.status_code == 201, r.text
    assert r.json()["topic_name"] == name


def test_partitions_and_offsets(base, http, cluster):
    name = create_topic(base, http, cluster, partitions=2)
    listed = get(http, f"{base}/v3/clusters/{cluster}/topics/{name}/partitions")
    assert listed["kind"] == "KafkaPartitionList"
    assert [p["partition_id"] for p in listed["data"]] == [0, 1]
    p = get(http, f"{base}/v3/clusters/{cluster}/topics/{name}/partitions/1")
    assert p["kind"] == "KafkaPartition" and p["topic_name"] == name
    assert_error(http.get(f"{base}/v3/clusters/{cluster}/topics/{name}/partitions/5"), 404, 40402, media=APP)
    r = http.post(
        f"{base}/v3/clusters/{cluster}/topics/{name}/records",
        json={"partition_id": 1, "value": {"type": "JSON", "data": 1}},
    )
    assert r.status_code == 200 and r.json()["error_code"] == 200
    off = get(http, f"{base}/v3/clusters/{cluster}/topics/{name}/partitions/1/offset")
    assert off["kind"] == "KafkaPartitionWithOffsets"
    assert (off["earliest_offset"], off["latest_offset"]) == (0, 1)


def test_produce_one_record(base, http, cluster):
    name = create_topic(base, http, cluster, partitions=1)
    r = http.post(
        f"{base}/v3/clusters/{cluster}/topics/{name}/records",
        json={
            "key": {"type": "STRING", "data": "k"},
            "value": {"type": "BINARY", "data": base64.b64encode(b"\x00\x01").decode()},
            "headers": [{"name": "trace", "value": base64.b64encode(b"abc").decode()}],
            "timestamp": "2024-05-01T12:00:00Z",
        },
    )
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith(APP)
    receipt = r.json()
    assert receipt["error_code"] == 200
    assert (receipt["cluster_id"], receipt["topic_name"], receipt["partition_id"], receipt["offset"]) == (cluster, name, 0, 0)
    assert receipt["timestamp"].startswith("2024-05-01T12:00:00")
    assert receipt["key"] == {"type": "STRING", "size": 1}
    assert receipt["value"] == {"type": "BINARY", "size": 2}


def test_produce_streams_receipts_in_order(base, http, cluster):
    """A chunked body of concatenated records: one receipt per record, in order, and the
    first receipts arrive while the request body is still open (a raw socket, since
    HTTP libraries send the whole body before they read the answer)."""
    name = create_topic(base, http, cluster, partitions=1)
    url = urllib.parse.urlsplit(base)
    sock = socket.create_connection((url.hostname, url.port or 80), timeout=15)
    path = f"{url.path}/v3/clusters/{cluster}/topics/{name}/records"
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: {APP}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n".encode()
    )

    def chunk(obj):
        data = json.dumps(obj).encode()
        sock.sendall(b"%x\r\n%s\r\n" % (len(data), data))

    reader = ChunkedReceipts(sock)
    for i in range(3):
        chunk({"value": {"type": "JSON", "data": {"n": i}}})
    first = reader.take(3)
    assert reader.status == 200
    assert [x["offset"] for x in first] == [0, 1, 2]
    assert all(x["error_code"] == 200 for x in first)
    chunk({"partition_id": 99, "value": {"type": "JSON", "data": 0}})
    chunk({"value": {"type": "STRING", "data": "last"}})
    sock.sendall(b"0\r\n\r\n")
    rest = reader.take(2)
    assert rest[0]["error_code"] != 200 and rest[0]["message"]
    assert rest[1]["error_code"] == 200 and rest[1]["offset"] == 3
    sock.close()


class ChunkedReceipts:
    """Reads a chunked HTTP answer off a socket, as JSON objects."""

    def __init__(self, sock):
        self.sock, self.raw, self.status, self.text = sock, b"", None, ""

    def _fill(self):
        data = self.sock.recv(65536)
        assert data, "connection closed early"
        self.raw += data
        if self.status is None and b"\r\n\r\n" in self.raw:
            head, self.raw = self.raw.split(b"\r\n\r\n", 1)
            self.status = int(head.split(b" ")[1])
            assert b"transfer-encoding: chunked" in head.lower(), head
        while self.status is not None and b"\r\n" in self.raw:
            size_line, rest = self.raw.split(b"\r\n", 1)
            size = int(size_line, 16)
            if len(rest) < size + 2:
                break
            self.text += rest[:size].decode()
            self.raw = rest[size + 2 :]

    def take(self, n):
        decoder, out = json.JSONDecoder(), []
        while len(out) < n:
            stripped = self.text.lstrip()
            try:
                obj, end = decoder.raw_decode(stripped)
            except ValueError:
                self._fill()
                continue
            out.append(obj)
            self.text = stripped[end:]
        return out


def test_produce_schema_format_is_an_error_receipt(base, http, cluster):
    name = create_topic(base, http, cluster, partitions=1)
    r = http.post(
        f"{base}/v3/clusters/{cluster}/topics/{name}/records",
        json={"value": {"type": "AVRO", "data": {"f": 1}}},
    )
    assert r.status_code in (200, 400, 422), r.text
    assert r.json()["error_code"] != 200


def test_produce_unknown_cluster_is_404(base, http, cluster):
    r = http.post(f"{base}/v3/clusters/{unique('nope')}/topics/t/records", json={"value": {"type": "JSON", "data": 1}})
    assert r.status_code == 404
