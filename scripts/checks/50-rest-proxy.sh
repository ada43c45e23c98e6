#!/usr/bin/env bash
# The Kafka REST Proxy API, driven by clients written for Confluent's REST Proxy:
#  (a) PyPI's kafka-bridge-client in its `confluent` mode (create, subscribe, produce
#      binary and json, consume, commit, delete), cross-checked against /v1;
#  (b) the conformance suite in kafko-http/tests/rest_proxy/ (every endpoint: status,
#      content type, body shape, error codes);
#  (c) a key produced through v2 and through /v1 lands on the same partition.
# Pinned packages go into .venv-test/; the real debug binary runs on an ephemeral
# loopback port with a temporary data directory.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-test
PINS=(kafka-bridge-client==0.7.1 aiohttp==3.14.5 requests==2.34.2 pytest==9.2.0)
if [[ ! -x "$VENV/bin/python" ]]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" - "${PINS[@]}" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    if version(name) != want:
        sys.exit(1)
PY
then
    echo "installing ${PINS[*]} into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "${PINS[@]}"
fi

cargo build --quiet -p kafko-http
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
# A short instance timeout, so the expiry test takes seconds (the default is 300 s).
INSTANCE_TIMEOUT_MS=2000
target/debug/kafko-http --bind 127.0.0.1:0 --data-dir "$WORK/data" \
    --consumer-instance-timeout-ms "$INSTANCE_TIMEOUT_MS" >"$WORK/stdout" 2>"$WORK/server.log" &
SERVER_PID=$!
for _ in $(seq 1 100); do
    grep -q "^listening on" "$WORK/stdout" 2>/dev/null && break
    sleep 0.1
done
URL=$(sed -n 's/^listening on //p' "$WORK/stdout")
[[ -n "$URL" ]] || { echo "kafko-http did not start"; cat "$WORK/server.log"; exit 1; }

set +e
PYTHONDONTWRITEBYTECODE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 REST_PROXY_URL="$URL" KAFKO_URL="$URL" CONSUMER_INSTANCE_TIMEOUT_MS="$INSTANCE_TIMEOUT_MS" \
    "$VENV/bin/python" -m pytest -q -p no:cacheprovider kafko-http/tests/rest_proxy
STATUS=$?
set -e
if [[ $STATUS -ne 0 ]]; then
    echo "--- server log (tail) ---"; tail -50 "$WORK/server.log"
    exit "$STATUS"
fi
if grep -q "panicked" "$WORK/server.log"; then
    echo "kafko-http panicked during the run:"; grep -A5 panicked "$WORK/server.log"; exit 1
fi
