#!/usr/bin/env bash
# Karapace 3.16.0 (stock, built from its source in scripts/vendor/, with the dependencies
# it pins, aiokafka 0.10.0 among them, in its own venv) with the real debug binary as its
# Kafka broker, and the `_schemas` topic shared with kafko's own registry
# (scripts/clients/karapace_flow.py): Karapace registers Avro, JSON Schema and Protobuf
# schemas, sets a level, soft-deletes a version and a subject and deletes a subject for
# good, serves them by id and subject/version, also after its restart; kafko's registry
# serves what Karapace wrote, and Karapace what kafko's registry wrote (the same kinds
# of writes); after kafko's restart on the same data directory both serve the same
# again, and Karapace's next id follows on.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-karapace
KARAPACE=karapace-3.16.0
source scripts/lib/python-pins.sh
# avro: Karapace pins a fork of its Python package by a URL this project cannot reach;
# avro 1.11.3 from PyPI has every call Karapace makes.
if ! pins_hold "$VENV" karapace==3.16.0 aiokafka==0.10.0 confluent-kafka==2.4.0 avro==1.11.3; then
    echo "installing Karapace 3.16.0 and its pins into $VENV"
    SRC=$(mktemp -d)
    tar -xzf "scripts/vendor/$KARAPACE.tar.gz" -C "$SRC"
    touch "$SRC/$KARAPACE/README.rst"
    grep -v '^avro @' "$SRC/$KARAPACE/requirements/requirements.txt" > "$SRC/requirements.txt"
    KARAPACE_VERSION=3.16.0 timeout 600 "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        -r "$SRC/requirements.txt" avro==1.11.3 "$SRC/$KARAPACE"
    rm -rf "$SRC"
fi

source scripts/lib/debug-server.sh
FLAGS=(--bind 127.0.0.1:0 --kafka-bind 127.0.0.1:0 --schema-registry-bind 127.0.0.1:0)
logs() {
    local d
    for d in "$WORK"/k1 "$WORK"/k2; do
        [[ -f $d/server.log ]] && { echo "--- $d/server.log (tail) ---"; tail -30 "$d/server.log"; }
    done
    return 0
}
trap logs ERR

# listeners DIR: sets KAFKA and REGISTRY from the server's stdout in DIR.
listeners() {
    KAFKA=$(sed -n 's/^kafka listening on //p' "$1/stdout")
    REGISTRY=$(sed -n 's/^schema registry listening on //p' "$1/stdout")
    [[ -n "$KAFKA" && -n "$REGISTRY" ]] || { echo "the Kafka or registry listener did not start"; exit 1; }
}

launch_as_is "$WORK/k1" "${FLAGS[@]}" --data-dir "$WORK/data"
FIRST=$LAUNCHED_PID
listeners "$WORK/k1"
timeout 300 "$VENV/bin/python" -W ignore scripts/clients/karapace_flow.py first "$KAFKA" "$REGISTRY" "$WORK"

# kafko stops (SIGTERM: its graceful shutdown) and starts again on the same data.
kill "$FIRST"
# Returns when the process exits (its exit is the signal), at most 30 s.
timeout 30 tail --pid="$FIRST" -f /dev/null || { echo "kafko did not stop within 30 s"; exit 1; }
wait "$FIRST" || true
launch_as_is "$WORK/k2" "${FLAGS[@]}" --data-dir "$WORK/data"
listeners "$WORK/k2"
timeout 300 "$VENV/bin/python" -W ignore scripts/clients/karapace_flow.py again "$KAFKA" "$REGISTRY" "$WORK"

if grep -q panicked "$WORK"/k1/server.log "$WORK"/k2/server.log; then
    echo "kafko panicked:"; grep -A5 panicked "$WORK"/k1/server.log "$WORK"/k2/server.log; exit 1
fi
