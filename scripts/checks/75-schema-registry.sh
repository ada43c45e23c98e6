#!/usr/bin/env bash
# confluent-kafka's schema-registry serializers (AvroSerializer/AvroDeserializer,
# JSONSerializer/JSONDeserializer, ProtobufSerializer/ProtobufDeserializer,
# SchemaRegistryClient) against the schema registry
# (--schema-registry-bind) and Kafka listener of the real debug binary: produce,
# consume, evolution under each of the seven compatibility levels (what each allows
# registered and produced, the rest refused with 409), JSON Schema, Protobuf, and basic
# auth with the token as password against a second server run with --auth-token
# (scripts/clients/schema_registry_flow.py). Pinned, in its own venv.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-registry
source scripts/lib/python-pins.sh
install_pins "$VENV" confluent-kafka==2.16.1 fastavro==1.13.1 jsonschema==4.26.0 \
    httpx==0.28.1 attrs==26.1.0 cachetools==8.0.0 authlib==1.9.6 protobuf==7.36.2 \
    googleapis-common-protos==1.76.0

source scripts/lib/debug-server.sh
start_server --kafka-bind 127.0.0.1:0 --schema-registry-bind 127.0.0.1:0
KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
REGISTRY=$(sed -n 's/^schema registry listening on //p' "$WORK/stdout")
[[ -n "$KAFKA" && -n "$REGISTRY" ]] \
    || { echo "the Kafka or registry listener did not start"; cat "$WORK/server.log"; exit 1; }
trap 'echo "--- server log (tail) ---"; tail -50 "$WORK/server.log"' ERR

KAFKO_AUTH_TOKEN=registry-token launch "$WORK/auth" --schema-registry-bind 127.0.0.1:0
AUTH_REGISTRY=$(sed -n 's/^schema registry listening on //p' "$WORK/auth/stdout")

timeout 300 "$VENV/bin/python" -W ignore scripts/clients/schema_registry_flow.py \
    "$REGISTRY" "$KAFKA" "$AUTH_REGISTRY" registry-token
fail_on_panic
