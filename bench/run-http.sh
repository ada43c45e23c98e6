#!/usr/bin/env bash
# The HTTP benchmark of kafko, from a fresh machine: installs oha (crates.io) and Redis
# (Debian) when missing, builds the release binaries, measures every cell with the
# systems alternated run by run, and regenerates bench/README.md and the SVG plot.
#
# Usage: bench/run-http.sh [--quick | --smoke] [--no-criterion] [--keep]
#   (default)       every cell, 3 runs each, then the criterion log bench
#   --quick         the target cells and the connection sweep (< 3 min), no criterion run
#   --smoke         one tiny cell per kind with debug binaries; writes to a temp dir and
#                   leaves bench/README.md alone; skips (exit 0) when oha is missing
#                   unless KAFKO_BENCH_INSTALL=1 (installing oha takes ~10 minutes)
#   --no-criterion  summarize existing target/criterion results instead of running them
#   --keep          keep the data directories and server logs
set -euo pipefail
cd "$(dirname "$0")/.."

mode=full
criterion=1
keep=()
for arg in "$@"; do
    case "$arg" in
        --quick) mode=quick; criterion=0 ;;
        --smoke) mode=smoke; criterion=0 ;;
        --no-criterion) criterion=0 ;;
        --keep) keep=(--keep) ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "unknown argument: $arg" >&2; exit 2 ;;
    esac
done

export PATH="$HOME/.cargo/bin:$PATH"

if ! command -v oha >/dev/null; then
    if [[ "$mode" == smoke && "${KAFKO_BENCH_INSTALL:-0}" != 1 ]]; then
        echo "SKIP bench smoke: oha is not installed (cargo install oha --locked, ~10 min;" \
             "or set KAFKO_BENCH_INSTALL=1 to let this script install it)"
        exit 0
    fi
    echo "==> installing oha from crates.io (takes a while)"
    cargo install oha --locked
fi

if [[ "$mode" != smoke ]] && ! command -v redis-benchmark >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        echo "==> installing redis-server (Debian)"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    else
        echo "note: redis-benchmark missing and cannot install it (needs root + apt-get);" \
             "the Redis comparison is skipped" >&2
    fi
fi

target_dir="$(cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
if [[ "$mode" == smoke ]]; then
    # The debug binaries are what `cargo test` already built: no release build in CI.
    echo "==> cargo build -p kafko -p kafko-bench-noop"
    cargo build -q -p kafko -p kafko-bench-noop
    bin="$target_dir/debug"
else
    echo "==> cargo build --release -p kafko -p kafko-bench-noop"
    cargo build -q --release -p kafko -p kafko-bench-noop
    bin="$target_dir/release"
fi

# Data directories on the real disk (not tmpfs), so fsync costs what it costs.
work="$target_dir/bench-http"
mkdir -p "$work"

if [[ "$mode" == smoke ]]; then
    out="$(mktemp -d)"
    trap 'rm -rf "$out"' EXIT
    results="$out/http.json"
    readme="$out/README.md"
    svg="$out/http-records-per-s.svg"
else
    mkdir -p bench/results
    results=bench/results/http.json
    readme=bench/README.md
    svg=bench/http-records-per-s.svg
fi

echo "==> measuring ($mode)"
python3 bench/http_bench.py --mode "$mode" --kafko "$bin/kafko" \
    --noop "$bin/kafko-bench-noop" --oha "$(command -v oha)" --out "$results" \
    --tmp-dir "$work" ${keep[@]+"${keep[@]}"}

crit_log=bench/results/criterion-log.txt
if [[ "$criterion" == 1 ]]; then
    echo "==> cargo bench -p kafko-core --bench log"
    cargo bench -p kafko-core --bench log 2>&1 | tee "$crit_log.tmp"
    mv "$crit_log.tmp" "$crit_log"
fi

python3 bench/report.py "$results" --readme "$readme" --svg "$svg" \
    --criterion-dir "$target_dir/criterion" --criterion-log "$crit_log"

if [[ "$mode" == smoke ]]; then
    python3 - "$results" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
bad = [c["id"] for c in d["cells"] if not c["runs"] or any(r["failed"] or r["ok"] == 0 for r in c["runs"])]
if bad:
    sys.exit(f"smoke: cells with failed or no requests: {bad}")
flush = d["machine"].get("fdatasync_us") or {}
if not all(flush.get(k, 0) > 0 for k in ("append", "overwrite")):
    sys.exit(f"smoke: no fdatasync probe in the machine description: {flush}")
print(f"smoke: {len(d['cells'])} cells ok")
EOF
    # The A/B profiling harness (bench/ab_http.py): one short round of the same debug
    # binaries, which must answer every request and report a share of the no-op.
    ab_out="$(python3 bench/ab_http.py --rounds 1 --secs 3 --oha "$(command -v oha)" \
        --noop "$bin/kafko-bench-noop" "smoke=$bin/kafko")"
    echo "$ab_out"
    grep -q "of the no-op" <<<"$ab_out" || { echo "smoke: ab_http.py gave no ratio" >&2; exit 1; }
    if grep -q "failed responses" <<<"$ab_out"; then
        echo "smoke: ab_http.py saw failed responses" >&2
        exit 1
    fi
fi
