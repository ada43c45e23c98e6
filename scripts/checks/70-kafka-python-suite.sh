#!/usr/bin/env bash
# kafka-python's own integration tests against the Kafka listener of the real debug
# binary: the suite from kafka-python's PyPI sdist (pinned), run with KAFKA_URI and
# KAFKA_VERSION=4.0.0 as its README says for an external broker. Its fixtures import a
# `test.service` module the sdist leaves out; scripts/clients/kafka-python-suite/service.py
# stands in for it (external broker only). Every test's outcome must match
# scripts/clients/kafka-python-suite/expected.txt, which gives the reason for each one
# kafko does not pass.
set -euo pipefail
cd "$(dirname "$0")/../.."

VERSION=3.0.12
VENV=.venv-test
PINS=(pytest==9.2.0 pytest-timeout==2.4.0 pytest-mock==3.17.0 "kafka-python==$VERSION" lz4==4.4.5
      zstandard==0.25.0 crc32c==2.9.post0 python-snappy==0.7.3 xxhash==4.1.0)
source scripts/lib/python-pins.sh
install_pins "$VENV" "${PINS[@]}"

SUITE=target/kafka-python-suite
if [[ ! -d "$SUITE/kafka_python-$VERSION" ]]; then
    rm -rf "$SUITE" && mkdir -p "$SUITE"
    "$VENV/bin/pip" download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
        "kafka-python==$VERSION" -d "$SUITE"
    tar xzf "$SUITE/kafka_python-$VERSION.tar.gz" -C "$SUITE"
fi
SRC=$SUITE/kafka_python-$VERSION
cp scripts/clients/kafka-python-suite/service.py "$SRC/test/service.py"
touch "$SRC/test/__init__.py"
mkdir -p "$SRC/servers/4.0.0/kafka-bin"

source scripts/lib/debug-server.sh
start_server --kafka-bind 127.0.0.1:0
KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
[[ -n "$KAFKA" ]] || { echo "the Kafka listener did not start"; exit 1; }

(cd "$SRC" && KAFKA_URI="tcp://$KAFKA" KAFKA_VERSION=4.0.0 PYTHONPATH=. timeout 600 \
    "$OLDPWD/$VENV/bin/python" -m pytest test/integration -q -rA -p no:cacheprovider \
    --timeout=30 --timeout-method=signal --assert=plain) >"$WORK/suite.out" 2>&1 || true
grep -E '^(PASSED|FAILED|ERROR) ' "$WORK/suite.out" | sed -E 's/ - .*//' >"$WORK/outcomes.txt" || true
"$VENV/bin/python" - "$WORK/outcomes.txt" scripts/clients/kafka-python-suite/expected.txt <<'PY'
import sys
got = {}
for line in open(sys.argv[1]):
    status, test = line.split(" ", 1)
    got[test.strip()] = "PASS" if status == "PASSED" else "FAIL"
want = {}
for line in open(sys.argv[2]):
    if line.startswith("#") or not line.strip():
        continue
    status, rest = line.split(" ", 1)
    want[rest.split(" | ")[0].strip()] = status
wrong = [f"{t}: expected {want.get(t, 'unlisted')}, got {got.get(t, 'not run')}"
         for t in sorted(set(got) | set(want)) if got.get(t) != want.get(t)]
if wrong:
    print("kafka-python's suite differs from expected.txt:\n  " + "\n  ".join(wrong))
    sys.exit(1)
passed = sum(1 for s in got.values() if s == "PASS")
print(f"kafka-python's integration suite: {passed} passed, {len(got) - passed} failed as expected (reasons in expected.txt)")
PY
fail_on_panic
