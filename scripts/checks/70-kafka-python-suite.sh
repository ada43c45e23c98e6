#!/usr/bin/env bash
# kafka-python's own integration tests against the Kafka listener of the real debug
# binary: the suite from kafka-python's PyPI sdist (pinned), run with KAFKA_URI and
# KAFKA_VERSION=4.0.0 as its README says for an external broker. Its fixtures import a
# `test.service` module the sdist leaves out; scripts/clients/kafka-python-suite/service.py
# stands in for it (external broker only). Every test's outcome must match
# scripts/clients/kafka-python-suite/expected.txt, which gives the reason for each one
# kafko does not pass; a test expected to pass that fails is run once more alone, and
# fails the check only if it fails again (the suite's own timing flakes are reported).
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
# Topics the suite does not create itself are auto-created with 4 partitions, as on the
# suite's own test broker (its fixture sets num.partitions=4): its tests address
# partitions of such topics (test_transactional_producer_offsets commits an offset of
# partition 1).
start_server --kafka-bind 127.0.0.1:0 --default-partitions 4
KAFKA=$(sed -n 's/^kafka listening on //p' "$WORK/stdout")
[[ -n "$KAFKA" ]] || { echo "the Kafka listener did not start"; exit 1; }

# run_suite OUT [TEST...]: the suite (or only TESTs) against the server; each test's
# outcome in OUT.txt, the whole output in OUT.out.
run_suite() {
    local out=$1
    shift
    (cd "$SRC" && KAFKA_URI="tcp://$KAFKA" KAFKA_VERSION=4.0.0 PYTHONPATH=. timeout 600 \
        "$OLDPWD/$VENV/bin/python" -m pytest "${@:-test/integration}" -q -rA -p no:cacheprovider \
        --timeout=30 --timeout-method=signal --assert=plain) >"$out.out" 2>&1 || true
    grep -E '^(PASSED|FAILED|ERROR) ' "$out.out" | sed -E 's/ - .*//' >"$out.txt" || true
}

# compare OUTCOMES: exit 0 when every outcome is expected.txt's; else prints the
# differences, writes the tests expected to pass that failed to $WORK/rerun.list, and
# exits 3 when those are all the differences (1 otherwise).
compare() {
    "$VENV/bin/python" - "$1" scripts/clients/kafka-python-suite/expected.txt "$WORK/rerun.list" <<'PY'
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
tests = sorted(set(got) | set(want))
wrong = [f"{t}: expected {want.get(t, 'unlisted')}, got {got.get(t, 'not run')}"
         for t in tests if got.get(t) != want.get(t)]
if not wrong:
    passed = sum(1 for s in got.values() if s == "PASS")
    print(f"kafka-python's integration suite: {passed} passed, {len(got) - passed} failed as expected (reasons in expected.txt)")
    sys.exit(0)
print("kafka-python's suite differs from expected.txt:\n  " + "\n  ".join(wrong))
again = [t for t in tests if want.get(t) == "PASS" and got.get(t) == "FAIL"]
open(sys.argv[3], "w").write("".join(t + "\n" for t in again))
sys.exit(3 if len(again) == len(wrong) else 1)
PY
}

run_suite "$WORK/suite"
status=0
compare "$WORK/suite.txt" || status=$?
if [[ $status == 3 ]]; then
    # Tests expected to pass that failed, and nothing else: once more, alone. A test
    # that passes then was a timing flake of the client's suite (its first failure is
    # shown for the record); one that fails again fails the check.
    echo "--- first failure(s):"
    grep -E -A25 '^_{5,} .* _{5,}$' "$WORK/suite.out" | head -80 || true
    mapfile -t again <"$WORK/rerun.list"
    run_suite "$WORK/again" "${again[@]}"
    grep -q '^FAILED\|^ERROR' "$WORK/again.txt" && { cat "$WORK/again.out"; exit 1; }
    [[ $(grep -c '^PASSED' "$WORK/again.txt") == "${#again[@]}" ]] || { cat "$WORK/again.out"; exit 1; }
    echo "passed when run again alone (flaky in the client's suite): ${again[*]}"
elif [[ $status != 0 ]]; then
    exit 1
fi
fail_on_panic
