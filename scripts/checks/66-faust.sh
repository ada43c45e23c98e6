#!/usr/bin/env bash
# A stateful faust application (faust-streaming, pinned, in its own venv) with
# processing_guarantee="exactly_once" against the Kafka listener of the real debug
# binary: it counts records per key in a table backed by a changelog topic, is SIGKILLed
# with a transaction open and started again, and its table's changelog holds each count
# once for read_committed readers (scripts/clients/faust_eos.py).
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-faust
source scripts/lib/python-pins.sh
install_pins "$VENV" faust-streaming==0.15.3 confluent-kafka==2.16.1

source scripts/lib/debug-server.sh
start_server --kafka-bind 127.0.0.1:0
KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
[[ -n "$KAFKA" ]] || { echo "the Kafka listener did not start"; cat "$WORK/server.log"; exit 1; }
trap 'echo "--- server log (tail) ---"; tail -50 "$WORK/server.log"; echo "--- faust log (tail) ---"; tail -30 "$WORK/faust.log"' ERR

timeout 600 "$VENV/bin/python" scripts/clients/faust_eos.py "$KAFKA" "$WORK" 1500
fail_on_panic
