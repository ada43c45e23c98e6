#!/usr/bin/env bash
# User-space instructions per one-record produce (256 B, fsync never) of a kafko
# binary, counted by callgrind: the server runs under valgrind, a warm-up of 500
# produces goes uncounted, then N produces (4 connections) are counted. Unlike req/s on
# a shared machine, the count repeats to within a few hundred instructions, so two
# builds can be compared one after the other.
#
# Usage: bench/instructions.sh BINARY [N]   (needs valgrind, oha, curl)
set -euo pipefail
bin=$1
n=${2:-1000}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$d/cg.out" \
  "$bin" --data-dir "$d/data" --bind 127.0.0.1:0 --kafka-bind off >"$d/out" 2>"$d/err" &
pid=$!
addr=
for _ in $(seq 300); do
  addr=$(grep -o 'listening on http://[^ ]*' "$d/out" | sed 's#listening on http://##' || true)
  [ -n "$addr" ] && break
  sleep 0.2
done
[ -n "$addr" ] || { echo "the server did not start; see $d/err" >&2; exit 1; }
curl -sf -X PUT -H 'content-type: application/json' \
  -d '{"partitions":1,"fsync":{"mode":"never"}}' "http://$addr/v1/topics/bench" >/dev/null
head -c 256 /dev/zero | tr '\0' 'v' >"$d/body"
produce() {
  oha -n "$1" -c 4 --no-tui -m POST -D "$d/body" -H 'content-type: application/octet-stream' \
    "http://$addr/v1/topics/bench/records" >/dev/null
}
produce 500
callgrind_control -i on "$pid" >/dev/null 2>&1
produce "$n"
callgrind_control -i off "$pid" >/dev/null 2>&1
kill -TERM "$pid"
wait "$pid" || true
callgrind_annotate "$d/cg.out" >"$d/annotated" 2>/dev/null
total=$(awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}' "$d/annotated")
echo "$(basename "$bin"): $((total / n)) instructions per one-record produce"
