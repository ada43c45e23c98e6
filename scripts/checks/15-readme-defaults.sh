#!/usr/bin/env bash
# README.md's first command as written: the binary with no flags, from a scratch
# directory, serves HTTP on 127.0.0.1:8080, Kafka on 127.0.0.1:9092 and the schema
# registry on 127.0.0.1:8081 with its data in ./kafko-data. Against it: `curl .../healthz`, then the README's kcat and Python sessions
# (the "Kafka clients" section) run verbatim, and the text's claims about their output
# hold. Needs the default ports free.
set -euo pipefail
cd "$(dirname "$0")/../.."

VENV=.venv-test
source scripts/lib/python-pins.sh
install_pins "$VENV" confluent-kafka==2.16.1
source scripts/lib/debian-tools.sh
install_missing_tools kcat:kcat

for port in 8080 9092 8081; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "127.0.0.1:$port is taken on this machine: the defaults cannot be checked"; exit 1
    fi
done

source scripts/lib/debug-server.sh
launch_as_is "$WORK"
SERVER_PID=$LAUNCHED_PID
grep -qx "listening on http://127.0.0.1:8080" "$WORK/stdout"
grep -qx "kafka listening on 127.0.0.1:9092" "$WORK/stdout"
grep -qx "schema registry listening on http://127.0.0.1:8081" "$WORK/stdout"
grep -qx "data directory $(cd "$WORK" && pwd -P)/kafko-data" "$WORK/stdout"
curl -fsS http://127.0.0.1:8080/healthz >/dev/null
echo "  ok  no flags: HTTP on 127.0.0.1:8080, Kafka on 127.0.0.1:9092, registry on 127.0.0.1:8081, data in ./kafko-data"

# The first ```sh block after the "Kafka clients" heading, as written.
awk '/^## Kafka clients/ { s = 1 } s && /^```sh$/ { b = 1; next } b && /^```$/ { exit } b' README.md \
    >"$WORK/readme-kcat.sh"
grep -q "kcat -b \$K -L" "$WORK/readme-kcat.sh" || { echo "README.md has no kcat session"; exit 1; }
(cd "$WORK" && timeout 120 bash -euo pipefail readme-kcat.sh) >"$WORK/readme-kcat.out" 2>&1 \
    || { cat "$WORK/readme-kcat.out"; exit 1; }
# What the README's text says the session shows.
grep -q "broker 0 at 127.0.0.1:9092" "$WORK/readme-kcat.out"
grep -q "^0 0 alice order-1 source=kcat$" "$WORK/readme-kcat.out"
grep -q "^0 2 alice order-3 source=kcat$" "$WORK/readme-kcat.out"
grep -q "^orders \[0\] offset 3$" "$WORK/readme-kcat.out"
echo "  ok  the kcat session runs as written"
# The ```python block after it, as written, with the pinned confluent-kafka.
awk '/^## Kafka clients/ { s = 1 } s && /^```python$/ { b = 1; next } b && /^```$/ { exit } b' README.md \
    >"$WORK/readme-kafka.py"
grep -q confluent_kafka "$WORK/readme-kafka.py" || { echo "README.md has no Python session"; exit 1; }
timeout 120 "$VENV/bin/python" "$WORK/readme-kafka.py" >"$WORK/readme-kafka.out" 2>&1 \
    || { cat "$WORK/readme-kafka.out"; exit 1; }
grep -q "^0 3 carol order-4$" "$WORK/readme-kafka.out" || { cat "$WORK/readme-kafka.out"; exit 1; }
committed=$(curl -fsS http://127.0.0.1:8080/v1/groups/billing \
    | "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["topics"][0]["partitions"][0]["committed"])')
[[ $committed == 4 ]] || { echo "the Python session's group committed $committed, not 4"; exit 1; }
echo "  ok  the Python session runs as written"
fail_on_panic
