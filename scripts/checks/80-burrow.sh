#!/usr/bin/env bash
# Burrow (Debian's 1.2.1, a lag monitor built on sarama 1.22) reads a group's lag from
# kafko: its kafka cluster module reads topics and high watermarks (Metadata, ListOffsets),
# its kafka consumer module reads `__consumer_offsets` (Fetch) and decodes the commits. 10
# records go to a topic through /v1, a kafka-python group joins, reads 4 and commits offset
# 4 (scripts/clients/burrow_group.py), and Burrow's HTTP API must report a lag of 6 for
# it. Burrow 1.2 needs a ZooKeeper for its coordinator: Debian's, standalone on a
# loopback port. It decodes group metadata values up to v1 only, so it logs the v3 ones
# (what Kafka writes since 2.3, and kafko too) as undecodable; lag needs only commits.
# Burrow's client profile sets `kafka-version`: at Burrow's default, 0.8, sarama fetches
# with Fetch v0 (message format v0/v1), which Kafka 4.0 refuses (KIP-896) and kafko too;
# from 0.11.0 on it fetches with v4 (record batches), its newest. Its cluster module
# asks for high watermarks with ListOffsets v0 whatever the profile (Kafka 4.0 serves
# v1 and up; kafko serves v0). The clients reach kafko through a relay that notes every
# request's version (scripts/clients/kafka_tap.py; kafko advertises the relay's
# address), and Burrow's must include ListOffsets v0 and Fetch v4 and nothing older.
# Installed here on first use: Debian's burrow and zookeeper, kafka-python into
# .venv-test/.
set -euo pipefail
cd "$(dirname "$0")/../.."

source scripts/lib/debian-tools.sh
install_missing_tools Burrow:burrow java:default-jre-headless
ZK_JAR=/usr/share/java/zookeeper.jar
if [[ ! -f $ZK_JAR ]]; then
    echo "installing zookeeper (Debian package)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper >/dev/null
fi
VENV=.venv-test
source scripts/lib/python-pins.sh
install_pins "$VENV" kafka-python==3.0.12

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

source scripts/lib/debug-server.sh
# Clients come through the tap: kafko advertises its address.
TAP="127.0.0.1:$(free_port)"
start_server --kafka-bind 127.0.0.1:0 --kafka-advertised-addr "$TAP"
DIRECT=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
[[ -n "$DIRECT" ]] || { echo "the Kafka listener did not start"; cat "$WORK/server.log"; exit 1; }
trap 'echo "--- server log (tail) ---"; tail -30 "$WORK/server.log";
      echo "--- burrow log (tail) ---"; tail -30 "$WORK/burrow/burrow.log" 2>/dev/null' ERR
coproc TAP_PROC { exec python3 scripts/clients/kafka_tap.py "$TAP" "$DIRECT" "$WORK/requests"; }
LAUNCHED_PIDS+=("$TAP_PROC_PID")
read -r -t 10 -u "${TAP_PROC[0]}" line && [[ $line == "tap listening on $TAP" ]] \
    || { echo "the tap did not start: $line"; exit 1; }
KAFKA=$TAP

# until SECONDS WHAT CMD...: runs CMD every 0.2 s until it succeeds, failing after SECONDS.
until_ok() {
    local deadline=$((SECONDS + $1)) what=$2
    shift 2
    until "$@"; do
        ((SECONDS < deadline)) || { echo "timed out waiting for $what"; return 1; }
        sleep 0.2
    done
}

# ZooKeeper, standalone, its data in WORK.
ZK_PORT=$(free_port)
mkdir -p "$WORK/zk"
cat >"$WORK/zk/zoo.cfg" <<EOF
tickTime=2000
dataDir=$WORK/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr
EOF
java -cp "/etc/zookeeper/conf:$ZK_JAR" org.apache.zookeeper.server.ZooKeeperServerMain \
    "$WORK/zk/zoo.cfg" >"$WORK/zk/log" 2>&1 &
LAUNCHED_PIDS+=($!)
# Serving sessions (`ruok` answers before the server is).
zk_ok() {
    timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$ZK_PORT; printf srvr >&3; cat <&3" 2>/dev/null \
        | grep -q "^Mode: standalone"
}
until_ok 30 "ZooKeeper" zk_ok

# Burrow: one cluster, one consumer module on __consumer_offsets, refreshing every second.
BURROW_PORT=$(free_port)
mkdir -p "$WORK/burrow"
cat >"$WORK/burrow/burrow.toml" <<EOF
[general]
pidfile="$WORK/burrow/burrow.pid"

[logging]
filename="$WORK/burrow/burrow.log"
level="info"

[zookeeper]
servers=["127.0.0.1:$ZK_PORT"]
timeout=6
root-path="/burrow"

# Fetch v4 from sarama (0.8, Burrow's default, would fetch with v0: refused).
[client-profile.kafko]
client-id="burrow"
kafka-version="2.0.0"

[cluster.kafko]
class-name="kafka"
servers=["$KAFKA"]
client-profile="kafko"
topic-refresh=1
offset-refresh=1

[consumer.kafko]
class-name="kafka"
cluster="kafko"
servers=["$KAFKA"]
client-profile="kafko"
offsets-topic="__consumer_offsets"

[httpserver.default]
address="127.0.0.1:$BURROW_PORT"

[storage.default]
class-name="inmemory"
workers=2
intervals=10
expire-group=604800
min-distance=1
EOF
(cd "$WORK/burrow" && exec Burrow -config-dir "$WORK/burrow") >"$WORK/burrow/stdout" 2>&1 &
BURROW_PID=$!
LAUNCHED_PIDS+=("$BURROW_PID")
# Burrow may hang on SIGTERM once ZooKeeper is gone: stopped first, killed if it lingers.
stop_burrow() {
    kill "$BURROW_PID" 2>/dev/null || true
    until_ok 10 "Burrow to stop" bash -c "! kill -0 $BURROW_PID 2>/dev/null || grep -q Z /proc/$BURROW_PID/stat" \
        || kill -9 "$BURROW_PID" 2>/dev/null || true
}
API="http://127.0.0.1:$BURROW_PORT/v3/kafka/kafko"
until_ok 30 "Burrow's HTTP API" curl -sf -o /dev/null "$API"

# 10 records; Burrow sees the high watermark before the group commits.
TOPIC=burrow-orders
curl -sf -X PUT "$URL/v1/topics/$TOPIC" -H 'content-type: application/json' -d '{"partitions":1}' >/dev/null
RECORDS=$(python3 -c 'import json; print(json.dumps({"records": [{"value": "r%d" % i} for i in range(10)]}))')
curl -sf -X POST "$URL/v1/topics/$TOPIC/records" -H 'content-type: application/json' -d "$RECORDS" >/dev/null
topic_known() {
    curl -sf "$API/topic/$TOPIC" | python3 -c 'import json, sys; sys.exit(json.load(sys.stdin).get("offsets") != [10])' 2>/dev/null
}
until_ok 60 "Burrow to see the topic's 10 records" topic_known
echo "  ok  Burrow reads the topic and its high watermark"

timeout 90 "$VENV/bin/python" scripts/clients/burrow_group.py "$KAFKA" "$TOPIC" lagging 4
lag_is_6() {
    curl -sf "$API/consumer/lagging/lag" | python3 -c '
import json, sys
status = json.load(sys.stdin)["status"]
parts = status["partitions"]
sys.exit(not (status["totallag"] == 6 and len(parts) == 1 and parts[0]["end"]["offset"] == 4
              and parts[0]["current_lag"] == 6))' 2>/dev/null
}
until_ok 60 "Burrow to report a lag of 6" lag_is_6
echo "  ok  Burrow reports the group's commit at 4 and a lag of 6 (from __consumer_offsets)"
stop_burrow
# What Burrow sent, as the tap saw it.
python3 - "$WORK/requests" <<'PY'
import sys
from collections import defaultdict

names = {0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 18: "ApiVersions"}
sent = defaultdict(set)
for line in open(sys.argv[1]):
    client, key, version = line.split()
    if client == "burrow":
        sent[int(key)].add(int(version))
print("  Burrow sent: " + ", ".join(
    f"{names.get(k, k)} v{'/'.join(map(str, sorted(v)))}" for k, v in sorted(sent.items())))
if 0 not in sent[2]:
    sys.exit("Burrow sent no ListOffsets v0")
if sent[1] != {4}:
    sys.exit(f"Burrow fetched with {sorted(sent[1])}, not v4")
PY
echo "  ok  Burrow read its high watermarks with ListOffsets v0 and fetched with Fetch v4"
if grep -q "refused a Kafka request version" "$WORK/server.log"; then
    echo "kafko refused a request version Burrow or kafka-python sent:"
    grep "refused a Kafka request version" "$WORK/server.log"; exit 1
fi
echo "  ok  every request version they sent was served"
fail_on_panic
