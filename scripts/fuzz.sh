#!/usr/bin/env bash
# Bounded fuzzing of every kafko on-disk decoder and the Kafka request decoder
# (fuzz/fuzz_targets/*).
#
#   scripts/fuzz.sh [seconds-per-target] [target...]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). cargo-fuzz needs nightly
# compiler flags (-Zsanitizer=address); on a stable toolchain this script sets
# RUSTC_BOOTSTRAP=1 so stable rustc accepts them. Each target starts from its committed
# seeds (fuzz/corpus/<target>/seed-*: real batches of every codec, real index and state
# files) plus whatever earlier runs added. A crash leaves its input in
# fuzz/artifacts/<target>/ and fails the script; reproduce it with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> fuzz/artifacts/<target>/<file>
# and turn it into a regression test in kafko-core (see src/fuzzing.rs).
#
# Not part of scripts/test.sh: installing cargo-fuzz and building with ASan takes
# minutes. The default test suite runs a bounded mutation test over the same entry
# points instead (kafko-core: fuzzing::tests::decoders_survive_mutated_real_inputs).
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-60}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(batch record_area decompress sparse_index state_file recovery_scan kafka_request)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: cargo-fuzz is not installed (cargo install cargo-fuzz --locked)" >&2
    exit 2
fi
if ! rustc --version | grep -q nightly; then
    export RUSTC_BOOTSTRAP=1
fi

summary=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    echo "== fuzzing $t for ${secs}s"
    log="$(mktemp)"
    # -rss_limit_mb: a decoder may allocate up to its 64 MiB cap, never gigabytes;
    # -malloc_limit_mb: no single allocation past 256 MiB (a request's declared sizes).
    if ! cargo fuzz run --fuzz-dir fuzz "$t" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -rss_limit_mb=1024 -malloc_limit_mb=256 -timeout=10 -print_final_stats=1 \
        2>&1 | tee "$log" | grep -E "^(#[0-9]+ +(DONE|INITED)|==|stat::number_of_executed_units|stat::average_exec_per_sec|SUMMARY|.*panicked)"; then
        :
    fi
    if grep -qE "^SUMMARY|panicked at|Test unit written|ERROR: libFuzzer" "$log"; then
        echo "fuzz.sh: $t FOUND A CRASH (see fuzz/artifacts/$t/)" >&2
        tail -40 "$log" >&2
        exit 1
    fi
    execs="$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')"
    corpus="$(find "fuzz/corpus/$t" -type f | wc -l)"
    summary+=("$t: ${execs} execs in ${secs}s, corpus ${corpus} inputs, 0 crashes")
    rm -f "$log"
done
echo "== fuzz summary"
printf '%s\n' "${summary[@]}"
