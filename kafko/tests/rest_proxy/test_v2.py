"""v2 endpoints: metadata, produce, consumer instances. Each test names the endpoint it
covers; statuses, content types, body shapes and error codes are the proxy's."""

import base64
import os
import time

import pytest

from conftest import BINARY, JSON, V2, assert_error, create_topic, unique


def b64(text):
    return base64.b64encode(text.encode()).decode()


def produce(base, http, topic, records, media=BINARY, path=None):
    r = http.post(
        f"{base}{path or f'/topics/{topic}'}",
        json={"records": records},
        headers={"Content-Type": media, "Accept": V2},
        timeout=30,
    )
    return r


# --- metadata -------------------------------------------------------------------------


def test_get_topics_lists_names(base, http, topic):
    r = http.get(f"{base}/topics", headers={"Accept": V2}, timeout=10)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(V2)
    names = r.json()
    assert isinstance(names, list) and topic in names


def test_get_topic(base, http, topic):
    r = http.get(f"{base}/topics/{topic}", headers={"Accept": V2}, timeout=10)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(V2)
    t = r.json()
    assert t["name"] == topic
    assert isinstance(t["configs"], dict)
    assert [p["partition"] for p in t["partitions"]] == [0, 1, 2]
    for p in t["partitions"]:
        assert isinstance(p["leader"], int)
        assert p["replicas"] and {"broker", "leader", "in_sync"} <= set(p["replicas"][0])


def test_get_unknown_topic_is_40401(base, http):
    assert_error(http.get(f"{base}/topics/{unique('missing')}", headers={"Accept": V2}), 404, 40401)


def test_get_partitions(base, http, topic):
    r = http.get(f"{base}/topics/{topic}/partitions", headers={"Accept": V2}, timeout=10)
    assert r.status_code == 200
    assert [p["partition"] for p in r.json()] == [0, 1, 2]
    r = http.get(f"{base}/topics/{topic}/partitions/1", headers={"Accept": V2}, timeout=10)
    assert r.status_code == 200
    assert r.json()["partition"] == 1
    assert_error(http.get(f"{base}/topics/{topic}/partitions/42", headers={"Accept": V2}), 404, 40402)


def test_get_partition_offsets(base, http, topic):
    r = produce(base, http, topic, [{"value": b64("a")}, {"value": b64("b")}], path=f"/topics/{topic}/partitions/1")
    assert r.status_code == 200
    r = http.get(f"{base}/topics/{topic}/partitions/1/offsets", headers={"Accept": V2}, timeout=10)
    assert r.status_code == 200
    assert r.json() == {"beginning_offset": 0, "end_offset": 2}


def test_get_brokers(base, http):
    r = http.get(f"{base}/brokers", headers={"Accept": V2}, timeout=10)
    assert r.status_code == 200
    brokers = r.json()["brokers"]
    assert brokers and all(isinstance(b, int) for b in brokers)


# --- produce --------------------------------------------------------------------------


def test_produce_binary(base, http, topic):
    r = produce(base, http, topic, [{"key": b64("k"), "value": b64("v")}, {"value": b64("w"), "partition": 2}])
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(V2)
    body = r.json()
    assert body["key_schema_id"] is None and body["value_schema_id"] is None
    assert len(body["offsets"]) == 2
    for o in body["offsets"]:
        assert isinstance(o["partition"], int) and isinstance(o["offset"], int)
        assert o["error_code"] is None and o["error"] is None
    assert body["offsets"][1]["partition"] == 2


def test_produce_json(base, http, topic):
    r = produce(base, http, topic, [{"key": "user-1", "value": {"clicks": [1, 2]}}, {"value": None}], media=JSON)
    assert r.status_code == 200
    assert [o["error_code"] for o in r.json()["offsets"]] == [None, None]


def test_produce_to_partition(base, http, topic):
    r = produce(base, http, topic, [{"value": b64("p")}], path=f"/topics/{topic}/partitions/2")
    assert r.status_code == 200
    assert r.json()["offsets"][0]["partition"] == 2
    r = produce(base, http, topic, [{"value": b64("p")}], path=f"/topics/{topic}/partitions/9")
    assert_error(r, 404, 40402)


def test_produce_to_a_missing_partition_fails_that_record_inside_the_200(base, http, topic):
    r = produce(base, http, topic, [{"value": b64("ok")}, {"value": b64("bad"), "partition": 9}])
    assert r.status_code == 200
    ok, bad = r.json()["offsets"]
    assert ok["error_code"] is None
    assert bad["partition"] is None and bad["offset"] is None
    assert isinstance(bad["error_code"], int) and bad["error"]


def test_produce_needs_an_embedded_format(base, http, topic):
    r = http.post(f"{base}/topics/{topic}", json={"records": [{"value": "x"}]}, headers={"Content-Type": "application/json"})
    assert r.status_code == 415
    assert r.json()["error_code"] == 415


def test_produce_schema_formats_are_refused_not_a_server_error(base, http, topic):
    r = produce(base, http, topic, [{"value": {"f": 1}}], media="application/vnd.kafka.avro.v2+json")
    assert r.status_code == 422, r.text
    assert r.json()["error_code"] in (42201, 42202, 42205)


def test_produce_bad_base64_is_422(base, http, topic):
    r = produce(base, http, topic, [{"value": "%%% not base64"}])
    assert r.status_code == 422
    assert r.json()["error_code"] // 100 == 422


# --- consumers ------------------------------------------------------------------------


def create_instance(base, http, group, **config):
    config.setdefault("auto.offset.reset", "earliest")
    r = http.post(f"{base}/consumers/{group}", json=config, headers={"Content-Type": V2}, timeout=10)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith(V2)
    body = r.json()
    assert set(body) == {"instance_id", "base_uri"}
    assert body["base_uri"].endswith(f"/consumers/{group}/instances/{body['instance_id']}")
    return f"{base}/consumers/{group}/instances/{body['instance_id']}"


def subscribe(http, inst, *topics):
    r = http.post(f"{inst}/subscription", json={"topics": list(topics)}, headers={"Content-Type": V2}, timeout=10)
    assert r.status_code == 204, r.text


def read_all(http, inst, want, accept=BINARY):
    got = []
    deadline = time.time() + 30
    while len(got) < want and time.time() < deadline:
        r = http.get(f"{inst}/records", params={"timeout": 1000}, headers={"Accept": accept}, timeout=30)
        assert r.status_code == 200, r.text
        assert r.headers["content-type"].startswith(accept)
        got.extend(r.json())
    return got


def test_consumer_binary_lifecycle(base, http, topic):
    group = unique("g")
    inst = create_instance(base, http, group, name="one", format="binary", **{"auto.commit.enable": "false"})
    dup = http.post(f"{base}/consumers/{group}", json={"name": "one"}, headers={"Content-Type": V2})
    assert_error(dup, 409, 40902)
    subscribe(http, inst, topic)
    r = http.get(f"{inst}/subscription", headers={"Accept": V2})
    assert r.status_code == 200 and r.json() == {"topics": [topic]}
    assert produce(base, http, topic, [{"key": b64(f"k{i}"), "value": b64(f"v{i}")} for i in range(6)]).status_code == 200
    records = read_all(http, inst, 6)
    assert sorted(base64.b64decode(r["value"]).decode() for r in records) == [f"v{i}" for i in range(6)]
    for rec in records:
        assert set(rec) >= {"topic", "key", "value", "partition", "offset"} and rec["topic"] == topic
    # Commit the last record read per partition; the committed offset is one past it.
    last = {}
    for rec in records:
        last[rec["partition"]] = max(last.get(rec["partition"], -1), rec["offset"])
    offsets = [{"topic": topic, "partition": p, "offset": o} for p, o in last.items()]
    r = http.post(f"{inst}/offsets", json={"offsets": offsets}, headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    r = http.request(
        "GET",
        f"{inst}/offsets",
        json={"partitions": [{"topic": topic, "partition": p} for p in last]},
        headers={"Content-Type": V2, "Accept": V2},
    )
    assert r.status_code == 200, r.text
    committed = {o["partition"]: o["offset"] for o in r.json()["offsets"]}
    assert committed == {p: o + 1 for p, o in last.items()}
    r = http.post(f"{inst}/offsets", headers={"Content-Type": V2})
    assert r.status_code == 200
    r = http.get(f"{inst}/assignments", headers={"Accept": V2})
    assert r.status_code == 200
    assigned = r.json()["partitions"]
    assert sorted(p["partition"] for p in assigned) == [0, 1, 2]
    r = http.delete(f"{inst}/subscription", headers={"Content-Type": V2})
    assert r.status_code == 204
    r = http.get(f"{inst}/subscription", headers={"Accept": V2})
    assert r.json() == {"topics": []}
    assert http.delete(inst, headers={"Content-Type": V2}).status_code == 204
    assert_error(http.delete(inst, headers={"Content-Type": V2}), 404, 40403)
    assert_error(http.get(f"{inst}/records", headers={"Accept": BINARY}), 404, 40403)


def test_consumer_json_format_and_accept(base, http, topic):
    inst = create_instance(base, http, unique("g"), format="json")
    subscribe(http, inst, topic)
    values = [{"n": i} for i in range(3)]
    assert produce(base, http, topic, [{"value": v} for v in values], media=JSON).status_code == 200
    # Accept must name the instance's format; */* means binary.
    assert_error(http.get(f"{inst}/records", headers={"Accept": BINARY}), 406, 40601)
    assert_error(http.get(f"{inst}/records", headers={"Accept": "*/*"}), 406, 40601)
    got = read_all(http, inst, 3, accept=JSON)
    assert sorted((r["value"] for r in got), key=lambda v: v["n"]) == values
    http.delete(inst, headers={"Content-Type": V2})


def test_binary_instance_takes_star_accept(base, http, topic):
    inst = create_instance(base, http, unique("g"))
    subscribe(http, inst, topic)
    r = http.get(f"{inst}/records", params={"timeout": 100}, headers={"Accept": "*/*"})
    assert r.status_code == 200 and r.json() == []
    assert_error(http.get(f"{inst}/records", headers={"Accept": JSON}), 406, 40601)
    http.delete(inst, headers={"Content-Type": V2})


def test_positions(base, http, topic):
    inst = create_instance(base, http, unique("g"), **{"auto.commit.enable": "false"})
    subscribe(http, inst, topic)
    assert produce(base, http, topic, [{"value": b64(f"x{i}")} for i in range(3)], path=f"/topics/{topic}/partitions/0").status_code == 200
    assert len(read_all(http, inst, 3)) == 3
    tp = {"partitions": [{"topic": topic, "partition": 0}]}
    r = http.post(f"{inst}/positions/beginning", json=tp, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    again = read_all(http, inst, 3)
    assert [r["offset"] for r in again] == [0, 1, 2]
    r = http.post(f"{inst}/positions", json={"offsets": [{"topic": topic, "partition": 0, "offset": 2}]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    assert [r["offset"] for r in read_all(http, inst, 1)] == [2]
    r = http.post(f"{inst}/positions/end", json=tp, headers={"Content-Type": V2})
    assert r.status_code == 204
    r = http.get(f"{inst}/records", params={"timeout": 200}, headers={"Accept": BINARY})
    assert r.json() == []
    http.delete(inst, headers={"Content-Type": V2})


def assign(http, inst, partitions):
    return http.post(f"{inst}/assignments", json={"partitions": partitions}, headers={"Content-Type": V2}, timeout=10)


def committed(http, inst, partitions):
    r = http.request("GET", f"{inst}/offsets", json={"partitions": partitions}, headers={"Content-Type": V2, "Accept": V2})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith(V2)
    return {(o["topic"], o["partition"]): o["offset"] for o in r.json()["offsets"]}


def test_assignments_read_only_the_assigned_partitions(base, http, topic):
    for p, n in [(0, 2), (1, 3), (2, 1)]:
        r = produce(base, http, topic, [{"value": b64(f"p{p}-{i}")} for i in range(n)], path=f"/topics/{topic}/partitions/{p}")
        assert r.status_code == 200
    inst = create_instance(base, http, unique("g"), **{"auto.commit.enable": "false"})
    wanted = [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}]
    r = assign(http, inst, wanted)
    assert r.status_code == 204, r.text
    assert r.content == b""
    r = http.get(f"{inst}/assignments", headers={"Accept": V2})
    assert r.status_code == 200
    assert r.headers["content-type"].startswith(V2)
    assert sorted(r.json()["partitions"], key=lambda p: p["partition"]) == wanted
    records = read_all(http, inst, 5)
    assert sorted((r["partition"], r["offset"]) for r in records) == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]
    r = http.get(f"{inst}/records", params={"timeout": 200}, headers={"Accept": BINARY})
    assert r.status_code == 200 and r.json() == []
    http.delete(inst, headers={"Content-Type": V2})


def test_assigned_commits_and_committed_offsets(base, http, topic):
    assert produce(base, http, topic, [{"value": b64(f"x{i}")} for i in range(3)], path=f"/topics/{topic}/partitions/2").status_code == 200
    group = unique("g")
    inst = create_instance(base, http, group, **{"auto.commit.enable": "false"})
    assert assign(http, inst, [{"topic": topic, "partition": 2}]).status_code == 204
    assert len(read_all(http, inst, 3)) == 3
    # A body commits offset + 1.
    r = http.post(f"{inst}/offsets", json={"offsets": [{"topic": topic, "partition": 2, "offset": 0}]}, headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    assert committed(http, inst, [{"topic": topic, "partition": 2}]) == {(topic, 2): 1}
    # An empty body commits every position read.
    r = http.post(f"{inst}/offsets", headers={"Content-Type": V2})
    assert r.status_code == 200, r.text
    assert committed(http, inst, [{"topic": topic, "partition": 2}]) == {(topic, 2): 3}
    # Another instance of the group assigned the same partition starts at the commit.
    other = create_instance(base, http, group)
    assert assign(http, other, [{"topic": topic, "partition": 2}]).status_code == 204
    assert produce(base, http, topic, [{"value": b64("new")}], path=f"/topics/{topic}/partitions/2").status_code == 200
    assert [r["offset"] for r in read_all(http, other, 1)] == [3]
    for i in (inst, other):
        http.delete(i, headers={"Content-Type": V2})


def test_assigned_positions(base, http, topic):
    assert produce(base, http, topic, [{"value": b64(f"y{i}")} for i in range(3)], path=f"/topics/{topic}/partitions/1").status_code == 200
    inst = create_instance(base, http, unique("g"), **{"auto.commit.enable": "false"})
    tp = {"topic": topic, "partition": 1}
    assert assign(http, inst, [tp]).status_code == 204
    assert [r["offset"] for r in read_all(http, inst, 3)] == [0, 1, 2]
    r = http.post(f"{inst}/positions", json={"offsets": [dict(tp, offset=1)]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    assert [r["offset"] for r in read_all(http, inst, 2)] == [1, 2]
    r = http.post(f"{inst}/positions/beginning", json={"partitions": [tp]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    assert [r["offset"] for r in read_all(http, inst, 3)] == [0, 1, 2]
    # A timestamp seek: the first record at or after it.
    since = {"timestamps": [dict(tp, timestamp="1970-01-01T00:00:00Z")]}
    r = http.post(f"{inst}/positions", json=since, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    assert [r["offset"] for r in read_all(http, inst, 3)] == [0, 1, 2]
    r = http.post(f"{inst}/positions/end", json={"partitions": [tp]}, headers={"Content-Type": V2})
    assert r.status_code == 204, r.text
    r = http.get(f"{inst}/records", params={"timeout": 200}, headers={"Accept": BINARY})
    assert r.status_code == 200 and r.json() == []
    http.delete(inst, headers={"Content-Type": V2})


def test_subscribed_and_assigned_are_exclusive(base, http, topic):
    subscribed = create_instance(base, http, unique("g"))
    subscribe(http, subscribed, topic)
    assert_error(assign(http, subscribed, [{"topic": topic, "partition": 0}]), 409, 40901)
    assigned = create_instance(base, http, unique("g"))
    assert assign(http, assigned, [{"topic": topic, "partition": 0}]).status_code == 204
    r = http.post(f"{assigned}/subscription", json={"topics": [topic]}, headers={"Content-Type": V2})
    assert_error(r, 409, 40901)
    # An empty assignment drops it; the instance may subscribe then.
    assert assign(http, assigned, []).status_code == 204
    assert http.get(f"{assigned}/assignments", headers={"Accept": V2}).json() == {"partitions": []}
    subscribe(http, assigned, topic)
    for i in (subscribed, assigned):
        http.delete(i, headers={"Content-Type": V2})


def test_assignment_errors(base, http, topic):
    inst = create_instance(base, http, unique("g"))
    assert_error(assign(http, inst, [{"topic": unique("missing"), "partition": 0}]), 404, 40401)
    assert_error(assign(http, inst, [{"topic": topic, "partition": 42}]), 404, 40402)
    r = http.post(f"{inst}/assignments", data="{not json", headers={"Content-Type": V2})
    assert_error(r, 400, 400)
    r = http.post(f"{inst}/assignments", json={"partitions": [{"topic": topic}]}, headers={"Content-Type": V2})
    assert_error(r, 422, 422)
    assert assign(http, inst, [{"topic": topic, "partition": 0}]).status_code == 204
    # A commit or a seek of a partition the instance does not hold.
    r = http.post(f"{inst}/offsets", json={"offsets": [{"topic": topic, "partition": 1, "offset": 0}]}, headers={"Content-Type": V2})
    assert_error(r, 409, 40903)
    r = http.post(f"{inst}/positions/end", json={"partitions": [{"topic": topic, "partition": 1}]}, headers={"Content-Type": V2})
    assert_error(r, 409, 40903)
    http.delete(inst, headers={"Content-Type": V2})
    gone = [{"topic": topic, "partition": 0}]
    assert_error(assign(http, inst, gone), 404, 40403)
    assert_error(http.get(f"{inst}/assignments", headers={"Accept": V2}), 404, 40403)


def test_unknown_instance_is_40403(base, http):
    inst = f"{base}/consumers/{unique('g')}/instances/nobody"
    for method, path in [("GET", "/subscription"), ("POST", "/offsets"), ("GET", "/records"), ("GET", "/assignments"), ("DELETE", "")]:
        r = http.request(method, f"{inst}{path}", headers={"Content-Type": V2, "Accept": BINARY})
        assert_error(r, 404, 40403)


def test_schema_format_instance_is_refused(base, http):
    r = http.post(f"{base}/consumers/{unique('g')}", json={"format": "avro"}, headers={"Content-Type": V2})
    # The proxy creates it (a schema registry is configured) or refuses it; never a 500.
    assert r.status_code in (200, 422), r.text


def test_idle_instance_expires(base, http):
    timeout_ms = os.environ.get("CONSUMER_INSTANCE_TIMEOUT_MS")
    if not timeout_ms:
        pytest.skip("CONSUMER_INSTANCE_TIMEOUT_MS (the server's consumer.instance.timeout.ms) not set")
    inst = create_instance(base, http, unique("g"))
    time.sleep(int(timeout_ms) / 1000 + 1.5)
    assert_error(http.get(f"{inst}/subscription", headers={"Accept": V2}), 404, 40403)


def test_v2_key_lands_where_v1_puts_it(base, kafko, http):
    name = create_topic(base, http, http.get(f"{base}/v3/clusters").json()["data"][0]["cluster_id"], partitions=5)
    for i in range(20):
        key = f"order-{i}"
        v2 = produce(base, http, name, [{"key": b64(key), "value": b64("x")}]).json()["offsets"][0]["partition"]
        v1 = http.post(f"{kafko}/v1/topics/{name}/records", json={"records": [{"key": key, "value": "x"}]})
        assert v1.status_code == 201, v1.text
        assert v1.json()["offsets"][0]["partition"] == v2, key
