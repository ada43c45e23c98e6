#!/usr/bin/env bash
# A stateful quixstreams application (stock, pinned, in its own venv: it pins its own
# confluent-kafka) against the Kafka listener of the real debug binary: it creates its
# output and changelog topics (a compacted one, through CreateTopics with configs), counts
# 300 records per key at-least-once, and, run again with its local state removed,
# recovers the counts from the changelog topic and carries on (scripts/clients/
# quixstreams_app.py). Then the same counting exactly-once, SIGKILLed with a transaction
# open and started again: each key's counts are 1…N once each for read_committed readers
# (scripts/clients/quixstreams_eos.py).
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-quix
source scripts/lib/python-pins.sh
install_pins "$VENV" quixstreams==3.28.1

source scripts/lib/debug-server.sh
start_server --kafka-bind 127.0.0.1:0
KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
[[ -n "$KAFKA" ]] || { echo "the Kafka listener did not start"; cat "$WORK/server.log"; exit 1; }
trap 'echo "--- server log (tail) ---"; tail -50 "$WORK/server.log"' ERR

APP=scripts/clients/quixstreams_app.py
timeout 180 "$VENV/bin/python" "$APP" "$KAFKA" "$WORK/state" 300 100 2> "$WORK/app1.log"
timeout 180 "$VENV/bin/python" "$APP" "$KAFKA" "$WORK/state" 30 110 --fresh-state 2> "$WORK/app2.log"
grep -q "Recovery successful" "$WORK/app2.log" \
    || { echo "the second run did not recover its state from the changelog"; tail -20 "$WORK/app2.log"; exit 1; }
echo "  ok  the state came back from the changelog topic"
timeout 600 "$VENV/bin/python" scripts/clients/quixstreams_eos.py "$KAFKA" "$WORK/eos-state" 1500 \
    2> "$WORK/eos.log" || { echo "--- application log (tail)"; tail -30 "$WORK/eos.log"; exit 1; }
fail_on_panic
