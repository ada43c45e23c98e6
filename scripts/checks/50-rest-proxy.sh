#!/usr/bin/env bash
# The Kafka REST Proxy API, driven by clients written for Confluent's REST Proxy:
#  (a) PyPI's kafka-bridge-client in its `confluent` mode (create, subscribe, produce
#      binary and json, consume, commit, delete), cross-checked against /v1;
#  (b) the conformance suite in kafko/tests/rest_proxy/ (every endpoint: status,
#      content type, body shape, error codes);
#  (c) a key produced through v2 and through /v1 lands on the same partition.
# Pinned packages go into .venv-test/; the real debug binary runs on an ephemeral
# loopback port with a temporary data directory.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-test
PINS=(kafka-bridge-client==0.7.1 aiohttp==3.14.5 requests==2.34.2 pytest==9.2.0)
source scripts/lib/python-pins.sh
install_pins "$VENV" "${PINS[@]}"

source scripts/lib/debug-server.sh
# A short instance timeout, so the expiry test takes seconds (the default is 300 s).
INSTANCE_TIMEOUT_MS=2000
start_server --consumer-instance-timeout-ms "$INSTANCE_TIMEOUT_MS"

set +e
PYTHONDONTWRITEBYTECODE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 REST_PROXY_URL="$URL" KAFKO_URL="$URL" CONSUMER_INSTANCE_TIMEOUT_MS="$INSTANCE_TIMEOUT_MS" \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider kafko/tests/rest_proxy
STATUS=$?
set -e
if [[ $STATUS -ne 0 ]]; then
    echo "--- server log (tail) ---"; tail -50 "$WORK/server.log"
    exit "$STATUS"
fi
fail_on_panic
