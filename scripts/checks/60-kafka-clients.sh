#!/usr/bin/env bash
# Stock Kafka clients against the Kafka listener (--kafka-bind) of the real debug binary.
# Each runs one flow: create a 3-partition topic, produce 1,000 keyed records with
# headers (compressed: snappy by confluent, gzip by kafka-python, aiokafka and kafkajs,
# lz4 by kcat), check every key landed where kafko's /v1 routes it (murmur2), read them
# back with manual assignment, watermarks, ListOffsets earliest/latest/by timestamp,
# a consumer group reads 500 and commits and a new consumer resumes at the commit,
# the admin calls (CreatePartitions, DeleteRecords; OffsetDelete, DescribeLogDirs,
# DescribeProducers, resetOffsets and the group's delete where the client has them),
# the configs (DescribeConfigs, AlterConfigs and, but kafkajs, IncrementalAlterConfigs on
# a topic, each change read back and taking effect, and the broker's configs; not
# aiokafka), DescribeCluster and DescribeAcls (confluent, kafka-python), delete the
# topic. The Python clients run scripts/clients/kafka_flow.py; kafkajs runs
# scripts/clients/kafka/flow.mjs and compares records through /v1 (it consumes only in a
# group); kcat runs below, its topic made through /v1 (it has no admin API). Then:
# compressed topics written by one client
# (zstd and lz4 by confluent, gzip by kafka-python, lz4 by kafkajs) are stored as sent and
# read by every other client, whole and from inside a batch
# (scripts/clients/cross_codecs.py, and scripts/clients/kafka/cross.mjs for kafkajs); two
# confluent-kafka consumers of one group with group.protocol=consumer (KIP-848) share a
# topic, hand it over on a leave and resume at their commits
# (scripts/clients/consumer_protocol.py); a group of three static members survives a
# SIGKILL of the server (scripts/clients/group_restart.py); idempotent producers of
# confluent-kafka, kafka-python and kafkajs lose nothing and write nothing twice across
# 50 SIGKILLs (scripts/clients/idempotent_kills.py); confluent-kafka over
# SASL/PLAIN against a second server run with --auth-token (DescribeAcls: no ACL).
# (Transactions: 62-kafka-transactions.sh; README.md's sessions: 15-readme-defaults.sh.)
# Pinned clients, installed here on first use: PyPI into .venv-test/ (confluent-kafka,
# kafka-python, aiokafka), npm into scripts/clients/kafka/node_modules from its lock
# file (kafkajs), Debian's kcat.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-test
# The codecs the Python clients need to read zstd, lz4 and snappy batches.
PINS=(confluent-kafka==2.16.1 kafka-python==3.0.12 aiokafka==0.14.0
      lz4==4.4.5 zstandard==0.25.0 cramjam==2.14.0 python-snappy==0.7.3)
JS=scripts/clients/kafka

source scripts/lib/python-pins.sh
install_pins "$VENV" "${PINS[@]}"
source scripts/lib/debian-tools.sh
install_missing_tools node:nodejs npm:npm kcat:kcat
source scripts/lib/npm-ci.sh
npm_ci_if_changed "$JS" "kafkajs"

source scripts/lib/debug-server.sh
start_server --kafka-bind 127.0.0.1:0
KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
[[ -n "$KAFKA" ]] || { echo "the Kafka listener did not start"; cat "$WORK/server.log"; exit 1; }

on_failure() {
    echo "--- server log (tail) ---"; tail -50 "$WORK/server.log"
}
trap on_failure ERR

for client in confluent kafka-python aiokafka; do
    timeout 300 "$VENV/bin/python" scripts/clients/kafka_flow.py "$client" "$KAFKA" "$URL"
done
(cd "$JS" && timeout 300 node flow.mjs "$KAFKA" "$URL")
echo "--- confluent-kafka with group.protocol=consumer (KIP-848)"
timeout 180 "$VENV/bin/python" scripts/clients/consumer_protocol.py "$KAFKA"
echo "--- compressed batches across clients"
timeout 300 "$VENV/bin/python" scripts/clients/cross_codecs.py "$KAFKA" "$WORK/data"
for topic in cross-gzip cross-lz4; do
    (cd "$JS" && timeout 120 node cross.mjs "$KAFKA" read "$topic")
done

echo "--- kcat"
T=flow-kcat
curl -fsS -X PUT "$URL/v1/topics/$T" -H 'content-type: application/json' -d '{"partitions":3}' >/dev/null
seq 0 999 | awk '{print "key-"$1":value-"$1}' \
    | timeout 60 kcat -P -b "$KAFKA" -t "$T" -K: -H dup=a -H dup=b -X partitioner=murmur2_random -z lz4
timeout 60 kcat -C -b "$KAFKA" -t "$T" -o beginning -e -q -f '%p %k %s %h\n' >"$WORK/kcat.txt"
for p in 0 1 2; do
    timeout 30 kcat -Q -b "$KAFKA" -t "$T:$p:-2" >>"$WORK/kcat-earliest.txt"
    timeout 30 kcat -Q -b "$KAFKA" -t "$T:$p:-1" >>"$WORK/kcat-latest.txt"
    timeout 30 kcat -Q -b "$KAFKA" -t "$T:$p:0" >>"$WORK/kcat-time.txt"
done
"$VENV/bin/python" - "$WORK" "$URL" "$T" <<'PY'
import sys
sys.path.insert(0, "scripts/clients")
from kafka_flow import expected_partitions, check

work, url, topic = sys.argv[1:]
want = expected_partitions(url, topic)
lines = open(f"{work}/kcat.txt").read().splitlines()
check(len(lines) == 1000, f"read {len(lines)} records")
for line in lines:
    p, key, value, headers = line.split(" ")
    check(want[key.encode()] == int(p), f"{key} on partition {p}")
    check(value == "value-" + key[4:], f"value of {key}")
    check(headers == "dup=a,dup=b", f"headers of {key}: {headers}")
offset = lambda line: int(line.rsplit(" ", 1)[1])
earliest = [offset(l) for l in open(f"{work}/kcat-earliest.txt").read().splitlines()]
latest = [offset(l) for l in open(f"{work}/kcat-latest.txt").read().splitlines()]
by_time = [offset(l) for l in open(f"{work}/kcat-time.txt").read().splitlines()]
check(earliest == [0, 0, 0], f"earliest {earliest}")
check(sum(latest) == 1000, f"latest {latest}")
check(by_time == [0, 0, 0], f"by timestamp 0: {by_time}")
print("  ok  produce, read back, watermarks, ListOffsets")
PY
# A group (librdkafka's balanced consumer, committing on close) reads 500; a new
# consumer of the group resumes at the commit and reads the other 500.
G=flow-kcat-group
timeout 60 kcat -b "$KAFKA" -G "$G" "$T" -c 500 -q -f '%k\n' -X auto.offset.reset=earliest >"$WORK/kcat-g1.txt"
timeout 60 kcat -b "$KAFKA" -G "$G" "$T" -e -q -f '%k\n' -X auto.offset.reset=earliest >"$WORK/kcat-g2.txt"
[[ $(wc -l <"$WORK/kcat-g1.txt") == 500 && $(wc -l <"$WORK/kcat-g2.txt") == 500 ]] \
    || { echo "the group read $(wc -l <"$WORK/kcat-g1.txt") then $(wc -l <"$WORK/kcat-g2.txt")"; exit 1; }
[[ $(sort -u "$WORK/kcat-g1.txt" "$WORK/kcat-g2.txt" | wc -l) == 1000 ]] || { echo "records read twice"; exit 1; }
echo "  ok  a group reads 500 and commits; a new consumer resumes at the commit"
curl -fsS -X DELETE "$URL/v1/topics/$T" >/dev/null
echo "  ok  delete"

fail_on_panic

# A live group of three static confluent-kafka consumers across a SIGKILL of a server of
# its own, then a static member's restart: nobody is revoked, nothing moves.
cargo build --quiet -p kafko
timeout 180 "$VENV/bin/python" scripts/clients/group_restart.py "$PWD/target/debug/kafko" "$WORK"
echo "--- idempotent producers across 50 SIGKILLs"
timeout 600 "$VENV/bin/python" scripts/clients/idempotent_kills.py "$PWD/target/debug/kafko" "$WORK" 50

# SASL/PLAIN: a second server with a token.
KAFKO_AUTH_TOKEN=flow-token launch "$WORK/sasl" --kafka-bind 127.0.0.1:0
SASL_KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/sasl/stdout")
[[ -n "$SASL_KAFKA" ]] || { echo "the SASL server did not start"; cat "$WORK/sasl/server.log"; exit 1; }
timeout 120 "$VENV/bin/python" scripts/clients/kafka_flow.py sasl "$SASL_KAFKA" flow-token
