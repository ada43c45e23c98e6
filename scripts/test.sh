#!/usr/bin/env bash
# The whole test suite: every cargo test of the workspace, then each extra check in
# scripts/checks/ (in name order). Each check installs what it needs itself.
# Usage: scripts/test.sh [--long]   (--long runs the full-count reliability modes)
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--long" ]]; then
    export KAFKO_LONG=1
fi

echo "==> cargo test --workspace"
cargo test --workspace --all-targets

for check in scripts/checks/*.sh; do
    [[ -e "$check" ]] || continue
    echo "==> $check"
    bash "$check"
done
echo "==> all tests passed"
