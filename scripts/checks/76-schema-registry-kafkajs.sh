#!/usr/bin/env bash
# kafkajs with @kafkajs/confluent-schema-registry against the schema registry
# (--schema-registry-bind) and Kafka listener of the real debug binary: Avro, JSON Schema
# and Protobuf schemas registered, records encoded, produced and consumed with kafkajs and
# decoded by the schema id they carry (each decode by a client with an empty cache, so
# the schema comes from kafko); Avro evolution under BACKWARD and an incompatible change
# refused with 409; basic auth with the token as the password against a second server
# run with --auth-token (scripts/clients/registry-js/flow.mjs). Pinned, installed here on
# first use: npm into scripts/clients/registry-js/node_modules from its lock file.
set -euo pipefail
cd "$(dirname "$0")/../.."

JS=scripts/clients/registry-js
source scripts/lib/debian-tools.sh
install_missing_tools node:nodejs npm:npm
source scripts/lib/npm-ci.sh
npm_ci_if_changed "$JS" "kafkajs and @kafkajs/confluent-schema-registry"

source scripts/lib/debug-server.sh
start_server --kafka-bind 127.0.0.1:0 --schema-registry-bind 127.0.0.1:0
KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
REGISTRY=$(sed -n 's/^schema registry listening on //p' "$WORK/stdout")
[[ -n "$KAFKA" && -n "$REGISTRY" ]] \
    || { echo "the Kafka or registry listener did not start"; cat "$WORK/server.log"; exit 1; }
trap 'echo "--- server log (tail) ---"; tail -50 "$WORK/server.log"' ERR

KAFKO_AUTH_TOKEN=registry-token launch "$WORK/auth" --schema-registry-bind 127.0.0.1:0
AUTH_REGISTRY=$(sed -n 's/^schema registry listening on //p' "$WORK/auth/stdout")

(cd "$JS" && timeout 300 node flow.mjs "$REGISTRY" "$KAFKA" "$AUTH_REGISTRY" registry-token)
fail_on_panic
