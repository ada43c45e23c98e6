"""Karapace (stock, built from its source) with kafko as its Kafka broker, and the
`_schemas` topic shared by Karapace and kafko's own registry, read both ways.

  karapace_flow.py first KAFKA KAFKO_REGISTRY WORKDIR
      Karapace registers Avro schemas (two subjects, an evolution, one schema under
      two subjects), a JSON Schema and a Protobuf schema, sets a subject's
      compatibility, soft-deletes a version and a subject and deletes a subject for
      good; it serves them by id and by subject/version, also after its own restart.
      kafko's registry serves what Karapace wrote; Karapace serves what kafko's
      registry then registers (Avro, JSON Schema, Protobuf), sets and deletes (a
      version, a subject softly, a subject for good). The state both serve is saved
      in WORKDIR.
  karapace_flow.py again KAFKA KAFKO_REGISTRY WORKDIR
      After kafko's restart on the same data: kafko's registry (replaying `_schemas`)
      and a fresh Karapace serve the saved state; a schema Karapace then registers
      takes the next id, and kafko's registry serves it.

Ids, subjects, versions (soft-deleted ones too), schema types, compatibility levels
and schemas are compared: the text Karapace wrote is served by kafko byte for byte;
Karapace serves every schema in its own form (Avro and JSON Schema with keys sorted,
Protobuf printed by its parser), so a schema kafko's registry wrote is compared as JSON
(Avro, JSON Schema) or by its tokens (Protobuf).
"""

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

CT = "application/vnd.schemaregistry.v1+json"
KARAPACE_START_S = 60
PROPAGATE_S = 30


def avro(name, *fields):
    return json.dumps({"type": "record", "name": name, "namespace": "interop",
                       "fields": [{"name": n, "type": t, **extra} for n, t, extra in fields]})


PAYMENT_V1 = avro("Payment", ("id", "string", {}), ("amount", "double", {}))
PAYMENT_V2 = avro("Payment", ("id", "string", {}), ("amount", "double", {}),
                  ("currency", "string", {"default": "EUR"}))
SCRATCH_V1 = avro("Scratch", ("a", "int", {}))
SCRATCH_V2 = avro("Scratch", ("a", "int", {}), ("b", "int", {"default": 0}))
USER_V1 = avro("User", ("name", "string", {}))
USER_V2 = avro("User", ("name", "string", {}), ("email", ["null", "string"], {"default": None}))
AUDIT_V1 = avro("Audit", ("at", "long", {}))
LATE_V1 = avro("Late", ("n", "long", {}))
TMP_V1 = avro("Tmp", ("t", "int", {}))
GONE_V1 = avro("Gone", ("g", "int", {}))
TICKET_JSON = json.dumps({"type": "object", "required": ["id"],
                          "properties": {"id": {"type": "integer"}, "note": {"type": "string"}}})
TICKET_PROTO = 'syntax = "proto3";\npackage interop;\n\nmessage Ticket {\n  string id = 1;\n  int64 seat = 2;\n}\n'
EVENT_JSON = json.dumps({"type": "object", "properties": {"at": {"type": "string"}}})
SEAT_PROTO = 'syntax = "proto3";\npackage interop;\n\nmessage Seat {\n  string row = 1;\n  int32 number = 2;\n}\n'


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"  ok  {what}", flush=True)


def call(base, method, path, body=None, timeout=15):
    """(status, decoded JSON) of one registry call."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": CT, "Accept": CT})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def ok(base, method, path, body=None):
    status, answer = call(base, method, path, body)
    if status != 200:
        raise SystemExit(f"FAILED: {method} {base}{path}: {status} {answer}")
    return answer


def register(base, subject, schema, schema_type="AVRO"):
    body = {"schema": schema} if schema_type == "AVRO" else {"schema": schema, "schemaType": schema_type}
    return ok(base, "POST", f"/subjects/{subject}/versions", body)["id"]


def deleted_for_good(base, subject, schema):
    """Registers `schema` under `subject`, soft-deletes the subject, then deletes it
    for good."""
    register(base, subject, schema)
    check(ok(base, "DELETE", f"/subjects/{subject}") == [1], f"{base}: {subject} soft-deleted")
    check(ok(base, "DELETE", f"/subjects/{subject}?permanent=true") == [1], f"{base}: {subject} deleted for good")


def poll(what, fn, deadline_s):
    """fn() until it answers something truthy, for at most deadline_s."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            got = fn()
        except (OSError, urllib.error.URLError):
            got = None
        if got:
            return got
        if time.monotonic() > deadline:
            raise SystemExit(f"FAILED: {what} within {deadline_s} s")
        time.sleep(0.2)


def state(base):
    """What a registry serves: subject -> version -> (id, type, schema), id -> (type,
    schema), subject -> every version, soft-deleted ones too (subjects with only
    soft-deleted versions included), subject -> compatibility level (if set on the
    subject)."""
    subjects, ids, every, configs = {}, {}, {}, {}
    for subject in sorted(ok(base, "GET", "/subjects")):
        versions = {}
        for v in ok(base, "GET", f"/subjects/{subject}/versions"):
            got = ok(base, "GET", f"/subjects/{subject}/versions/{v}")
            assert got["subject"] == subject and got["version"] == v, got
            kind = got.get("schemaType", "AVRO")
            versions[v] = (got["id"], kind, got["schema"])
            by_id = ok(base, "GET", f"/schemas/ids/{got['id']}")
            ids[got["id"]] = (by_id.get("schemaType", "AVRO"), by_id["schema"])
        subjects[subject] = versions
        status, config = call(base, "GET", f"/config/{subject}")
        if status == 200:
            configs[subject] = config["compatibilityLevel"]
    for subject in sorted(ok(base, "GET", "/subjects?deleted=true")):
        every[subject] = ok(base, "GET", f"/subjects/{subject}/versions?deleted=true")
    return {"subjects": subjects, "ids": ids, "every": every, "configs": configs}


def text(kind, schema):
    """A schema as compared across registries: Avro and JSON Schema as JSON, Protobuf
    as its tokens (comments and layout dropped)."""
    if kind == "PROTOBUF":
        return re.findall(r'"(?:\\.|[^"\\])*"|\w+|[^\s\w]', re.sub(r"//[^\n]*", "", schema))
    return json.loads(schema)


def same_state(a, b, what):
    """The two states are equal: ids, subjects, versions, types and levels exactly,
    schemas as `text` reads them."""
    def shape(s):
        return ({sub: {v: (i, k) for v, (i, k, _) in vs.items()} for sub, vs in s["subjects"].items()},
                s["configs"], s["every"], sorted(s["ids"]))

    def schemas(s):
        return ({(sub, v): text(k, t) for sub, vs in s["subjects"].items() for v, (_, k, t) in vs.items()},
                {i: text(k, t) for i, (k, t) in s["ids"].items()})

    if shape(a) != shape(b):
        raise SystemExit(f"FAILED: {what}:\n  {shape(a)}\n  {shape(b)}")
    check(schemas(a) == schemas(b), what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Karapace:
    """One Karapace registry process with kafko as its broker."""

    def __init__(self, kafka, workdir, name):
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        config = {
            "bootstrap_uri": kafka, "host": "127.0.0.1", "port": port,
            "advertised_hostname": "127.0.0.1", "advertised_port": port,
            "registry_host": "127.0.0.1", "registry_port": port,
            "karapace_registry": True, "karapace_rest": False,
            "topic_name": "_schemas", "group_id": "schema-registry",
            "replication_factor": 1, "log_level": "INFO",
        }
        path = os.path.join(workdir, f"{name}.json")
        with open(path, "w") as f:
            json.dump(config, f)
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "karapace"), path],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        t0 = time.monotonic()

        def ready():
            if self.proc.poll() is not None:
                raise SystemExit(f"FAILED: Karapace exited with {self.proc.returncode}\n{self.tail()}")
            status, health = call(self.url, "GET", "/_health", timeout=5)
            return status == 200 and health["schema_registry_ready"] and health["schema_registry_is_primary"]
        poll(f"Karapace ({name}) ready and primary", ready, KARAPACE_START_S)
        print(f"  ok  Karapace ({name}) ready and primary in {time.monotonic() - t0:.1f} s", flush=True)

    def tail(self):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-40:])

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            raise SystemExit("FAILED: Karapace did not stop within 30 s of SIGTERM")
        self.log.close()
        print("  ok  Karapace stopped by SIGTERM", flush=True)


@contextlib.contextmanager
def session(kafka, workdir, name):
    """A Karapace for the block, in a one-slot list (the block may replace it): its log's
    tail shown if the block fails, stopped at the end either way."""
    running = [Karapace(kafka, workdir, name)]
    try:
        yield running
    except BaseException:
        print(f"--- Karapace log (tail) ---\n{running[0].tail()}", file=sys.stderr)
        raise
    finally:
        if running[0].proc.poll() is None:
            running[0].stop()


def first(kafka, kafko, workdir):
    with session(kafka, workdir, "karapace1") as running:
        k = running[0]
        p1 = register(k.url, "payments-value", PAYMENT_V1)
        p2 = register(k.url, "payments-value", PAYMENT_V2)
        again = register(k.url, "payments-copy-value", PAYMENT_V1)
        s1 = register(k.url, "scratch-value", SCRATCH_V1)
        s2 = register(k.url, "scratch-value", SCRATCH_V2)
        check(len({p1, p2, s1, s2}) == 4 and again == p1,
              f"Karapace registered ids {p1}, {p2}, {s1}, {s2}; the same schema under another subject keeps {p1}")
        ok(k.url, "PUT", "/config/payments-value", {"compatibility": "FULL"})
        check(ok(k.url, "DELETE", "/subjects/scratch-value/versions/1") == 1,
              "Karapace soft-deleted scratch-value version 1")
        register(k.url, "tickets-json-value", TICKET_JSON, "JSON")
        register(k.url, "tickets-proto-value", TICKET_PROTO, "PROTOBUF")
        register(k.url, "karapace-tmp-value", TMP_V1)
        check(ok(k.url, "DELETE", "/subjects/karapace-tmp-value") == [1],
              "Karapace soft-deleted the subject karapace-tmp-value")
        deleted_for_good(k.url, "karapace-gone-value", GONE_V1)
        byid = json.loads(ok(k.url, "GET", f"/schemas/ids/{p2}")["schema"])
        check(byid == json.loads(PAYMENT_V2), f"Karapace serves id {p2} by id")
        before = state(k.url)
        k.stop()
        k = running[0] = Karapace(kafka, workdir, "karapace2")
        check(state(k.url) == before, "after its restart Karapace serves the same ids, subjects, versions and schemas")

        # (a) kafko's registry reads what Karapace wrote into `_schemas`.
        ours = state(kafko)
        check(ours == before and before["configs"] == {"payments-value": "FULL"} and len(before["ids"]) == 5,
              "kafko's registry serves Karapace's schemas (same ids, subjects, versions, types, schema text"
              " byte for byte: Avro, JSON Schema, Protobuf), its level FULL and its soft deletes")
        check(before["every"]["karapace-tmp-value"] == [1] and before["every"]["scratch-value"] == [1, 2]
              and "karapace-gone-value" not in before["every"] and "karapace-tmp-value" not in before["subjects"],
              "both list karapace-tmp-value only with the deleted, and karapace-gone-value not at all")

        # (b) Karapace reads what kafko's registry writes.
        u1 = register(kafko, "users-value", USER_V1)
        u2 = register(kafko, "users-value", USER_V2)
        p3 = register(kafko, "payments-value", PAYMENT_V1)
        check(p3 == p1, f"kafko's registry finds Karapace's id {p1} for the same schema")
        check(len({p1, p2, s1, s2, u1, u2}) == 6, f"kafko's registry gave the new ids {u1}, {u2}")
        ok(kafko, "PUT", "/config/users-value", {"compatibility": "NONE"})
        ok(kafko, "DELETE", "/subjects/scratch-value/versions/2")
        register(kafko, "events-json-value", EVENT_JSON, "JSON")
        register(kafko, "seats-proto-value", SEAT_PROTO, "PROTOBUF")
        register(kafko, "kafko-tmp-value", avro("KafkoTmp", ("t", "int", {})))
        check(ok(kafko, "DELETE", "/subjects/kafko-tmp-value") == [1],
              "kafko's registry soft-deleted the subject kafko-tmp-value")
        deleted_for_good(kafko, "kafko-gone-value", avro("KafkoGone", ("g", "int", {})))
        # Written last: once Karapace serves it, it has read every record before it.
        audit = register(kafko, "audit-value", AUDIT_V1)
        poll("Karapace serving kafko's registrations",
             lambda: call(k.url, "GET", "/subjects/audit-value/versions/1")[0] == 200, PROPAGATE_S)
        want = state(kafko)
        got = state(k.url)
        same_state(want, got, "Karapace serves kafko's registrations (ids, subjects, versions, types; Avro and"
                   " JSON Schema as JSON, Protobuf by its tokens), its level NONE and its soft deletes")
        check(got["every"]["kafko-tmp-value"] == [1] and "kafko-tmp-value" not in got["subjects"]
              and "kafko-gone-value" not in got["every"],
              "both list kafko-tmp-value only with the deleted, and kafko-gone-value not at all")
        check(audit in got["ids"] and "scratch-value" not in got["subjects"]
              and got["configs"] == {"payments-value": "FULL", "users-value": "NONE"},
              "both hide scratch-value, all of its versions soft-deleted; both show the two levels")
        with open(os.path.join(workdir, "state.json"), "w") as f:
            json.dump(want, f)


def again(kafka, kafko, workdir):
    with open(os.path.join(workdir, "state.json")) as f:
        saved = json.load(f)

    def norm(s):
        return json.loads(json.dumps(s))

    check(norm(state(kafko)) == saved, "after its restart kafko's registry serves the same state")
    with session(kafka, workdir, "karapace3") as running:
        k = running[0]
        same_state(saved, norm(state(k.url)), "Karapace against the restarted kafko serves the same state")
        late = register(k.url, "late-value", LATE_V1)
        top = max(int(i) for i in saved["ids"])
        check(late == top + 1, f"Karapace's next id is {top + 1}")
        got = ok(kafko, "GET", "/subjects/late-value/versions/1")
        check(got["id"] == late and got["schema"] == ok(k.url, "GET", f"/schemas/ids/{late}")["schema"],
              "kafko's registry serves it at once, same id and text")


if __name__ == "__main__":
    phase, kafka_addr, kafko_url, work = sys.argv[1:5]
    {"first": first, "again": again}[phase](kafka_addr, kafko_url, work)
