#!/usr/bin/env bash
# Kafka transactions (KIP-98) with stock clients against the Kafka listener of the real
# debug binary, checking open transactions against their timeout every 200 ms: per
# client, a transaction across two topics committed, one aborted and one committed again;
# consume-transform-produce whose group offsets move only when its transaction commits;
# a zombie producer fenced by a newer one with the same transactional id; a transaction
# left open past its timeout aborted by the server. read_committed and read_uncommitted
# consumers are counted record by record against the exact sets expected.
# Then confluent-kafka and kafka-python transactional producers across 50 SIGKILLs of a
# server of their own (scripts/clients/transactional_kills.py): committed transactions
# whole, aborted and open ones never visible to read_committed, none visible in part.
# confluent-kafka and kafka-python run scripts/clients/transactions.py, kafkajs runs
# scripts/clients/kafka/transactions.mjs. Pinned clients, installed here on first use
# (the pins of 60-kafka-clients.sh): PyPI into .venv-test/, npm into
# scripts/clients/kafka/node_modules from its lock file.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-test
PINS=(confluent-kafka==2.16.1 kafka-python==3.0.12)
JS=scripts/clients/kafka

source scripts/lib/python-pins.sh
install_pins "$VENV" "${PINS[@]}"
source scripts/lib/debian-tools.sh
install_missing_tools node:nodejs npm:npm
source scripts/lib/npm-ci.sh
npm_ci_if_changed "$JS" "kafkajs"

source scripts/lib/debug-server.sh
start_server --kafka-bind 127.0.0.1:0 --transaction-abort-check-interval-ms 200
KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
[[ -n "$KAFKA" ]] || { echo "the Kafka listener did not start"; cat "$WORK/server.log"; exit 1; }

on_failure() {
    echo "--- server log (tail) ---"; tail -50 "$WORK/server.log"
}
trap on_failure ERR

for client in confluent kafka-python; do
    timeout 300 "$VENV/bin/python" scripts/clients/transactions.py "$client" "$KAFKA"
done
(cd "$JS" && timeout 300 node transactions.mjs "$KAFKA")

echo "--- transactional producers across SIGKILLs"
(cd scripts/clients && timeout 1200 "../../$VENV/bin/python" transactional_kills.py \
    ../../target/debug/kafko "$WORK" 50)

fail_on_panic
