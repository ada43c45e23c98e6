#!/usr/bin/env bash
# Generated clients work unedited. With pinned third-party tools, installed here on first
# use (PyPI into .venv-test/, npm into scripts/clients/node_modules from its lock file):
# - openapi-spec-validator accepts openapi/openapi.json;
# - openapi-python-client generates a client with no warning but the streaming request
#   body it does not support (application/x-ndjson), and scripts/clients/smoke.py drives
#   it against the real debug server (/v1, then the schema registry: register a schema,
#   read it by id and version);
# - openapi-typescript generates types, `tsc --strict` checks scripts/clients/smoke.ts
#   (openapi-fetch) with 0 errors, and node runs it against the same server.
set -euo pipefail
cd "$(dirname "$0")/../.."

PYTHON_CLIENT_VERSION=0.29.1
SPEC_VALIDATOR_VERSION=0.7.2
VENV=.venv-test
CLIENTS=scripts/clients

installed() { [[ "$("$VENV/bin/pip" show "$1" 2>/dev/null)" == *$'\nVersion: '"$2"$'\n'* ]]; }
if ! installed openapi-python-client "$PYTHON_CLIENT_VERSION" || ! installed openapi-spec-validator "$SPEC_VALIDATOR_VERSION"; then
    echo "installing openapi-python-client $PYTHON_CLIENT_VERSION and openapi-spec-validator $SPEC_VALIDATOR_VERSION into $VENV"
    [[ -x "$VENV/bin/pip" ]] || python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        "openapi-python-client==$PYTHON_CLIENT_VERSION" "openapi-spec-validator==$SPEC_VALIDATOR_VERSION"
fi
source scripts/lib/debian-tools.sh
install_missing_tools node:nodejs npm:npm
source scripts/lib/npm-ci.sh
npm_ci_if_changed "$CLIENTS" "the TypeScript tools"

source scripts/lib/debug-server.sh

echo "--- openapi-spec-validator"
"$VENV/bin/openapi-spec-validator" openapi/openapi.json

echo "--- openapi-python-client $PYTHON_CLIENT_VERSION"
echo "post_hooks: []" >"$WORK/config.yaml"
"$VENV/bin/openapi-python-client" generate --path openapi/openapi.json --meta none \
    --output-path "$WORK/kafko_client" --config "$WORK/config.yaml" >"$WORK/generate.txt" 2>&1 \
    || { cat "$WORK/generate.txt"; exit 1; }
# Each warning is a "WARNING parsing …" line, a blank line, then the reason.
UNEXPECTED=$(awk '/^WARNING/ { w = 1; next } w && NF { print; w = 0 }' "$WORK/generate.txt" \
    | grep -vx "Unsupported content type application/x-ndjson" || true)
if [[ -n "$UNEXPECTED" ]]; then
    echo "openapi-python-client warned:"; cat "$WORK/generate.txt"; exit 1
fi

echo "--- openapi-typescript + tsc --strict"
(
    cd "$CLIENTS"
    mkdir -p generated
    node node_modules/openapi-typescript/bin/cli.js ../../openapi/openapi.json -o generated/kafko.d.ts
    node node_modules/typescript/bin/tsc -p tsconfig.json
)

echo "--- both clients against the debug server"
start_server
PYTHONPATH="$WORK" "$VENV/bin/python" "$CLIENTS/smoke.py" "$URL"
node "$CLIENTS/generated/out/smoke.js" "$URL"
fail_on_panic
