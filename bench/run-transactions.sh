#!/usr/bin/env bash
# Transactional produce (1,000 records per transaction) beside idempotent produce on one
# kafko, same client, same run: bench/kafka_transactions.py. Installs confluent-kafka
# into bench/.venv-kafka on first use and builds kafko in release (--debug: the debug
# binary `cargo test` built, for a smoke run). Other arguments go to the script.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=bench/.venv-kafka
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import confluent_kafka' 2>/dev/null \
    || "$VENV/bin/pip" install --quiet --disable-pip-version-check confluent-kafka==2.16.1
BINARY=target/release/kafko
if [[ "${1:-}" == "--debug" ]]; then
    shift
    BINARY=target/debug/kafko
    cargo build -p kafko
else
    cargo build --release -p kafko
fi
exec "$VENV/bin/python" bench/kafka_transactions.py --kafko "$BINARY" "$@"
