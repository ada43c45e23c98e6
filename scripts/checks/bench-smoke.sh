#!/usr/bin/env bash
# Smoke test of the HTTP benchmark harness (bench/run-http.sh --smoke): one short run of
# each cell kind (no-op ceiling, raw produce, JSON batch, consume) against the debug
# binaries `cargo test` already built; checks every request succeeded. ~15 s.
# Skips with a message when oha is not installed (installing it takes ~10 minutes;
# set KAFKO_BENCH_INSTALL=1 to have the bench script install it).
set -euo pipefail
cd "$(dirname "$0")/../.."
exec bench/run-http.sh --smoke
