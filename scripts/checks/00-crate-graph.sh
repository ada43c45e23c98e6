#!/usr/bin/env bash
# The workspace's layering, read from cargo's dependency graph (normal dependencies):
# the Kafka front end uses no HTTP stack, the HTTP front ends do not know the Kafka one,
# the schema registry knows neither front end, and the service under them all knows
# neither front end nor either protocol's stack.
set -euo pipefail
cd "$(dirname "$0")/../.."

# forbid CRATE DEP...: fails when CRATE depends, directly or not, on any DEP.
forbid() {
    local crate=$1 found=()
    shift
    local deps
    deps=$(cargo tree --quiet --locked -p "$crate" -e normal --prefix none --format '{p}' \
        | awk '{print $1}' | sort -u)
    for dep in "$@"; do
        grep -qx "$dep" <<<"$deps" && found+=("$dep")
    done
    if [[ ${#found[@]} -gt 0 ]]; then
        echo "$crate must not depend on: ${found[*]}"
        cargo tree --quiet --locked -p "$crate" -e normal -i "${found[0]}" | head -20
        exit 1
    fi
    echo "  ok  $crate uses none of: $*"
}

forbid kafko-kafka axum hyper hyper-util utoipa tower-http kafko-http
forbid kafko-http kafko-kafka kafka-protocol kafko-registry
forbid kafko-registry kafko-http kafko-kafka kafka-protocol kafko-service
forbid kafko-service axum hyper hyper-util utoipa tower-http kafka-protocol kafko-http kafko-kafka kafko-registry
forbid kafko-core axum hyper utoipa kafka-protocol kafko-service kafko-http kafko-kafka kafko-registry
