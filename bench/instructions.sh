#!/usr/bin/env bash
# User-space instructions per request of a kafko server binary, counted by callgrind:
# the server runs under valgrind, a warm-up of 500 requests goes uncounted, then N
# requests (4 connections) are counted. Unlike req/s on a shared machine, the count
# repeats to within a few hundred instructions, so two builds can be compared one after
# the other. Modes:
#   v1-produce     POST /v1/topics/bench/records, one 256 B raw record (oha)
#   v1-batch       the same with a JSON batch of 1,000 records of 256 B
#   v1-fetch       GET /v1/topics/bench/records of 1,000 stored 256 B records from offset 0
#   kafka-produce  Kafka Produce v3, one 256 B record (bench/kafka_requests.py)
#   kafka-fetch    Kafka Fetch v4 from offset 0 of 300 stored 256 B records, at most 64 KiB
# The topic has one partition and fsync never.
#
# Usage: bench/instructions.sh BINARY [N] [MODE]   (needs valgrind; oha for the v1 modes)
set -euo pipefail
bin=$1
n=${2:-1000}
mode=${3:-v1-produce}
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] && cp "$d/cg.out" "$KEEP"; rm -rf "$d"' EXIT
# Builds from before the schema registry have no flag for it.
registry=()
"$bin" --help | grep -q -- --schema-registry-bind && registry=(--schema-registry-bind off)
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$d/cg.out" \
  "$bin" --data-dir "$d/data" --bind 127.0.0.1:0 --kafka-bind 127.0.0.1:0 "${registry[@]}" \
  >"$d/out" 2>"$d/err" &
pid=$!
addr=
for _ in $(seq 300); do
  addr=$(sed -n 's#^listening on http://##p' "$d/out")
  [ -n "$addr" ] && break
  sleep 0.2
done
[ -n "$addr" ] || { echo "the server did not start; see $d/err" >&2; exit 1; }
kafka=$(sed -n 's/^kafka listening on //p' "$d/out")
curl -sf -X PUT -H 'content-type: application/json' \
  -d '{"partitions":1,"fsync":{"mode":"never"}}' "http://$addr/v1/topics/bench" >/dev/null
head -c 256 /dev/zero | tr '\0' 'v' >"$d/body"
python3 - "$d/batch" <<'PY'
import json, sys
value = "v" * 256
json.dump({"records": [{"value": value} for _ in range(1000)]}, open(sys.argv[1], "w"))
PY
send() {
  case $mode in
    v1-produce)
      oha -n "$1" -c 4 --no-tui -m POST -D "$d/body" -H 'content-type: application/octet-stream' \
        "http://$addr/v1/topics/bench/records" >/dev/null ;;
    v1-batch)
      oha -n "$1" -c 4 --no-tui -m POST -D "$d/batch" -H 'content-type: application/json' \
        "http://$addr/v1/topics/bench/records" >/dev/null ;;
    v1-fetch)
      oha -n "$1" -c 4 --no-tui \
        "http://$addr/v1/topics/bench/records?partition=0&offset=0&max_records=1000&max_bytes=4194304" >/dev/null ;;
    kafka-produce) python3 "$here/kafka_requests.py" "$kafka" produce "$1" 4 ;;
    kafka-fetch) python3 "$here/kafka_requests.py" "$kafka" fetch "$1" 4 ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
}
[[ $mode == kafka-fetch ]] && python3 "$here/kafka_requests.py" "$kafka" produce 300 1
if [[ $mode == v1-fetch ]]; then
  curl -sf -X POST -H 'content-type: application/json' --data-binary @"$d/batch" \
    "http://$addr/v1/topics/bench/records" >/dev/null
fi
send "${WARMUP:-500}"
callgrind_control -i on "$pid" >/dev/null 2>&1
send "$n"
callgrind_control -i off "$pid" >/dev/null 2>&1
kill -TERM "$pid"
wait "$pid" || true
callgrind_annotate "$d/cg.out" >"$d/annotated" 2>/dev/null
total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}' "$d/annotated")
echo "$(basename "$bin") $mode: $((total / n)) instructions per request"
