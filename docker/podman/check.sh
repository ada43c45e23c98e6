#!/usr/bin/env bash
# docker/podman/check.sh — builds docker/Dockerfile and runs the image and compose.yaml with
# podman, on a host that has no Docker engine and reaches no container registry (this
# project's development VM). Run from anywhere, as root: docker/podman/check.sh
#
# Where the registries are out of reach, the two base images the Dockerfile names are
# stood in for locally, under their own names, so the Dockerfile is built unchanged:
#   debian:bookworm-slim     <- debootstrap --variant=minbase bookworm (Debian's mirror)
#   rust:1.95-slim-bookworm  <- docker/podman/rust-slim.Containerfile (rustup from
#                               static.rust-lang.org on the stand-in above)
# plus an oha image for compose's load service (the host's oha binary on the stand-in).
# Extra CA certificates of the host (/usr/local/share/ca-certificates) are added to the
# stand-ins, so builds behind a TLS-inspecting egress proxy reach crates.io.
#
# What it checks, each against the image built from the committed HEAD:
#   1. image metadata: non-root user, volume, exposed port, KAFKO_* env, HEALTHCHECK,
#      STOPSIGNAL SIGTERM, entrypoint;
#   2. a container turns healthy by the image's own HEALTHCHECK, runs as uid 10001 with
#      kafko as PID 1, and serves produce and reads through the published port;
#   3. `podman stop` (SIGTERM, 10 s grace) ends it with exit code 0 well inside the grace,
#      and a new container on the same volume finds the clean-shutdown marker and every
#      acknowledged record;
#   4. after SIGKILL, a new container recovers (scan) and keeps every acknowledged record;
#   5. compose.yaml under podman-compose: the kafko service turns healthy, the load
#      service runs its bounded oha load (shortened with LOAD_SECONDS), `down` stops it.
# Exit status 0 only if every check passed. Leaves the images; removes its containers and
# volumes.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${KAFKO_PODMAN_WORK:-$ROOT/target/podman}
RUST_IMAGE=docker.io/library/rust:1.95-slim-bookworm
DEBIAN_IMAGE=docker.io/library/debian:bookworm-slim
OHA_IMAGE_LOCAL=localhost/oha:stand-in
IMAGE=localhost/kafko:local
NAME=kafko-podman-check
VOLUME=kafko-podman-check-data
# A free loopback port for the container's published 8080 (compose.yaml's own 8080 is
# used as written in step 5).
PORT=${KAFKO_PODMAN_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
LOAD_SECONDS=${LOAD_SECONDS:-5}

say() { printf '\n== %s\n' "$*"; }
# KAFKO_PODMAN_OPTIONAL=1 (.ci/run): a machine that cannot run containers at all (no root
# to install podman, or the runtime probe fails) skips with a message instead of failing.
# Everything after the probe is about the image and fails either way.
skip_or_fail() {
    if [ "${KAFKO_PODMAN_OPTIONAL:-0}" = 1 ]; then
        printf 'SKIPPED (no usable container runtime): %s\n' "$*"
        exit 0
    fi
    fail "$*"
}
# Podman schedules periodic health checks with systemd timers and logs an error for each
# container where there is no systemd (this VM); `podman healthcheck run` below runs the
# image's check itself. Those lines are dropped; every other podman message passes.
podman() { command podman "$@" 2> >(grep -v 'systemd connection' >&2); }
# No `grep -q` on pipelines below: under pipefail, grep -q exits at the first match and
# the writer's SIGPIPE fails the pipeline.
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
ok() { printf 'ok: %s\n' "$*"; }

mkdir -p "$WORK"

# ---- tools ------------------------------------------------------------------------
need=()
type -P podman >/dev/null || need+=(podman)
type -P runc >/dev/null || need+=(runc)
type -P debootstrap >/dev/null || need+=(debootstrap)
if ((${#need[@]})); then
    [ "$(id -u)" = 0 ] || skip_or_fail "${need[*]} missing, and installing needs root"
    say "installing ${need[*]} from Debian"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# runc, not crun: crun refuses this VM's hybrid cgroup v1/v2 layout. The ulimits are the
# VM's own hard limits: podman's defaults are higher and setrlimit refuses them.
cat > "$WORK/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF=$WORK/containers.conf
if [ ! -x "$WORK/venv/bin/podman-compose" ]; then
    say "installing podman-compose (PyPI) into $WORK/venv"
    python3 -m venv "$WORK/venv"
    "$WORK/venv/bin/pip" install -q 'podman-compose==1.5.0'
fi
OHA=$(command -v oha || true)
if [ -z "$OHA" ]; then
    say "installing oha from crates.io"
    cargo install oha --locked
    OHA=$(command -v oha)
fi

# ---- stand-in base images ---------------------------------------------------------
if ! podman image exists "$DEBIAN_IMAGE"; then
    say "stand-in for $DEBIAN_IMAGE: debootstrap minbase bookworm"
    rm -rf "$WORK/rootfs"
    debootstrap --variant=minbase --include=ca-certificates bookworm "$WORK/rootfs" \
        http://deb.debian.org/debian >/dev/null
    if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
        cp /usr/local/share/ca-certificates/*.crt "$WORK/rootfs/usr/local/share/ca-certificates/"
        chroot "$WORK/rootfs" update-ca-certificates >/dev/null
    fi
    rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"*
    tar -C "$WORK/rootfs" -c . | podman import --change 'CMD ["bash"]' - "$DEBIAN_IMAGE" >/dev/null
    rm -rf "$WORK/rootfs"
fi
podman run --rm "$DEBIAN_IMAGE" true > "$WORK/probe.log" 2>&1 \
    || skip_or_fail "podman cannot start a container here: $(tail -1 "$WORK/probe.log")"
if ! podman image exists "$RUST_IMAGE"; then
    say "stand-in for $RUST_IMAGE"
    podman build -q --network host -f "$ROOT/docker/podman/rust-slim.Containerfile" \
        -t "$RUST_IMAGE" "$ROOT/docker/podman" >/dev/null
fi
say "stand-in oha image ($OHA)"
rm -rf "$WORK/oha-ctx" && mkdir -p "$WORK/oha-ctx"
cp "$OHA" "$WORK/oha-ctx/oha"
printf 'FROM %s\nCOPY oha /usr/local/bin/oha\nENTRYPOINT ["oha"]\n' "$DEBIAN_IMAGE" \
    > "$WORK/oha-ctx/Containerfile"
podman build -q -f "$WORK/oha-ctx/Containerfile" -t "$OHA_IMAGE_LOCAL" "$WORK/oha-ctx" >/dev/null

# ---- the product image, from the committed HEAD ----------------------------------
say "building $IMAGE from $(git -C "$ROOT" rev-parse --short HEAD) (docker/Dockerfile, unchanged)"
rm -rf "$WORK/ctx" && mkdir -p "$WORK/ctx"
git -C "$ROOT" archive HEAD | tar -x -C "$WORK/ctx"
# --format docker: the OCI format has no HEALTHCHECK or STOPSIGNAL field.
(cd "$WORK/ctx" && podman build --format docker --network host -f docker/Dockerfile -t "$IMAGE" .) \
    > "$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; fail "podman build"; }
ok "image built ($(podman image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.1f MB", $1/1e6}'))"

cleanup() {
    podman rm -f -t 0 "$NAME" >/dev/null 2>&1 || true
    podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
    (cd "$ROOT" && OHA_IMAGE=$OHA_IMAGE_LOCAL "$WORK/venv/bin/podman-compose" \
        -p kafko-podman-check -f docker/compose.yaml --profile load down -v >/dev/null 2>&1) || true
}
trap cleanup EXIT
cleanup

# ---- 1. metadata ------------------------------------------------------------------
say "1. image metadata"
inspect() { podman image inspect -f "$1" "$IMAGE"; }
[ "$(inspect '{{.Config.User}}')" = "kafko:kafko" ] || fail "user is $(inspect '{{.Config.User}}')"
inspect '{{json .Config.Volumes}}' | grep '"/var/lib/kafko"' >/dev/null || fail "no /var/lib/kafko volume"
inspect '{{json .Config.ExposedPorts}}' | grep '"8080/tcp"' >/dev/null || fail "8080 not exposed"
inspect '{{json .Config.Env}}' | grep 'KAFKO_BIND=0.0.0.0:8080' >/dev/null || fail "KAFKO_BIND"
inspect '{{json .Config.Env}}' | grep 'KAFKO_DATA_DIR=/var/lib/kafko' >/dev/null || fail "KAFKO_DATA_DIR"
[ "$(inspect '{{.Config.StopSignal}}')" = "SIGTERM" ] || fail "stop signal $(inspect '{{.Config.StopSignal}}')"
inspect '{{json .Config.Healthcheck.Test}}' | grep -- '--healthcheck' >/dev/null || fail "healthcheck"
inspect '{{json .Config.Entrypoint}}' | grep '"kafko"' >/dev/null || fail "entrypoint"
ok "user kafko:kafko, volume /var/lib/kafko, 8080/tcp, KAFKO_BIND/KAFKO_DATA_DIR, HEALTHCHECK, STOPSIGNAL SIGTERM"

# ---- 2. health, identity, service -------------------------------------------------
start() {
    podman run -d --name "$NAME" -p "127.0.0.1:$PORT:8080" -v "$VOLUME:/var/lib/kafko" "$IMAGE" >/dev/null
    for _ in $(seq 60); do
        if podman healthcheck run "$NAME" >/dev/null 2>&1; then return 0; fi
        sleep 0.5
    done
    podman logs "$NAME" | tail -20
    fail "container never turned healthy"
}
say "2. health, identity, produce and read"
start
ok "healthy by the image's HEALTHCHECK (kafko --healthcheck)"
[ "$(podman exec "$NAME" id -u)" = "10001" ] || fail "not uid 10001"
pid1=$(podman exec "$NAME" cat /proc/1/cmdline | tr '\0' ' ')
case "$pid1" in kafko*) ok "runs as uid 10001, PID 1 is '$pid1'" ;; *) fail "PID 1 is '$pid1'" ;; esac
BASE=http://127.0.0.1:$PORT
curl -sf -X PUT "$BASE/v1/topics/check" -H 'content-type: application/json' \
    -d '{"partitions":2}' >/dev/null || fail "create topic"
acked=0
for i in $(seq 0 99); do
    curl -sf -X POST "$BASE/v1/topics/check/records?key=k$((i % 7))" -d "v$i" >/dev/null \
        || fail "produce $i"
    acked=$((acked + 1))
done
count_records() {
    local total=0 p n
    for p in 0 1; do
        n=$(curl -sf "$BASE/v1/topics/check/records?partition=$p&offset=earliest&max_records=1000" \
            | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["records"]))')
        total=$((total + n))
    done
    echo "$total"
}
[ "$(count_records)" = "$acked" ] || fail "read back $(count_records) of $acked"
ok "$acked records produced and read back through 127.0.0.1:$PORT"

# ---- 3. graceful stop, clean restart ----------------------------------------------
say "3. podman stop (SIGTERM, 10 s grace) under load, and restart on the same volume"
curl -sf -X PUT "$BASE/v1/topics/inflight" -H 'content-type: application/json' \
    -d '{"partitions":1}' >/dev/null || fail "create topic inflight"
# One client producing back to back until the server goes away; prints how many 201s it got.
python3 - "$PORT" > "$WORK/inflight-acks" <<'PY' &
import http.client, sys
acked = 0
try:
    conn = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
    while True:
        conn.request("POST", "/v1/topics/inflight/records", body=b"x" * 256)
        response = conn.getresponse()
        response.read()
        if response.status != 201:
            break
        acked += 1
except (OSError, http.client.HTTPException):
    pass
print(acked)
PY
producer=$!
sleep 1
t0=$(date +%s.%N)
podman stop -t 10 "$NAME" >/dev/null
elapsed=$(python3 -c "import time; print(round(time.time() - $t0, 2))")
code=$(podman inspect -f '{{.State.ExitCode}}' "$NAME")
[ "$code" = "0" ] || { podman logs "$NAME" | tail -20; fail "exit code $code after SIGTERM"; }
python3 -c "import sys; sys.exit(0 if $elapsed < 9 else 1)" || fail "stop took ${elapsed}s"
podman logs "$NAME" 2>&1 | grep '"kafko shut down"' >/dev/null || fail "no 'kafko shut down' log line"
ok "exit code 0 after ${elapsed}s, 'kafko shut down' logged"
wait "$producer"
inflight_acked=$(cat "$WORK/inflight-acks")
[ "$inflight_acked" -gt 0 ] || fail "the in-flight producer got no 201 before the stop"
podman rm "$NAME" >/dev/null
start
podman logs "$NAME" 2>&1 | grep 'clean shutdown marker found' >/dev/null || fail "restart did not find the clean-shutdown marker"
[ "$(count_records)" = "$acked" ] || fail "after restart: $(count_records) of $acked"
hw=$(curl -sf "$BASE/v1/topics/inflight/partitions/0/offsets" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["high_watermark"])')
# Every 201 survived; at most the one request in flight when the port closed is extra.
[ "$hw" -ge "$inflight_acked" ] && [ "$hw" -le $((inflight_acked + 1)) ] \
    || fail "in-flight topic: high watermark $hw, acknowledged $inflight_acked"
ok "restart found the clean-shutdown marker, all $acked records, and all $inflight_acked records acknowledged during the stop (high watermark $hw)"

# ---- 4. SIGKILL, recovery ---------------------------------------------------------
say "4. SIGKILL and recovery"
for i in $(seq 100 149); do
    curl -sf -X POST "$BASE/v1/topics/check/records" -d "v$i" >/dev/null || fail "produce $i"
    acked=$((acked + 1))
done
podman kill -s KILL "$NAME" >/dev/null
podman wait "$NAME" >/dev/null || true
podman rm "$NAME" >/dev/null
start
podman logs "$NAME" 2>&1 | grep 'no clean shutdown marker' >/dev/null || fail "restart after SIGKILL did not scan"
[ "$(count_records)" = "$acked" ] || fail "after SIGKILL: $(count_records) of $acked"
ok "recovered by scan with all $acked records"
podman rm -f -t 0 "$NAME" >/dev/null

# ---- 5. compose ---------------------------------------------------------------------
say "5. compose.yaml under podman-compose (load: ${LOAD_SECONDS}s)"
compose() {
    (cd "$ROOT" && OHA_IMAGE=$OHA_IMAGE_LOCAL "$WORK/venv/bin/podman-compose" \
        -p kafko-podman-check -f docker/compose.yaml "$@")
}
# compose.yaml publishes 127.0.0.1:8080; the image is already built, so no build runs.
export LOAD_DURATION="${LOAD_SECONDS}s"
compose up -d kafko > "$WORK/compose.log" 2>&1 || { cat "$WORK/compose.log"; fail "compose up"; }
kafko_service() {
    podman ps -q --filter label=com.docker.compose.service=kafko \
        --filter label=io.podman.compose.project=kafko-podman-check | head -1
}
cid=$(kafko_service)
[ -n "$cid" ] || fail "no kafko service container"
for _ in $(seq 60); do
    podman healthcheck run "$cid" >/dev/null 2>&1 && break
    sleep 0.5
done
podman healthcheck run "$cid" >/dev/null 2>&1 || fail "compose kafko service never healthy"
ok "compose kafko service healthy"
# The load service exactly as compose.yaml declares it, its duration shortened. --no-deps:
# podman-compose's `run` would bring the kafko service up again (recreating it) and start
# the load without waiting for `service_healthy`; the health wait above stands in for
# Docker Compose's, and the load runs against the container found healthy.
compose --profile load run --rm --no-deps load \
    > "$WORK/load.log" 2>&1 || { tail -30 "$WORK/load.log"; fail "compose load run"; }
# Every answer 201, and no error but the requests cut off by the run's deadline.
python3 - "$WORK/load.log" <<'PY' || fail "the load run saw other answers or errors (see $WORK/load.log)"
import re, sys
text = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1]).read())
codes = dict(re.findall(r"\[(\d{3})\] (\d+) responses", text))
errors = re.findall(r"^\s*\[\d+\] (.+)$", text.split("Error distribution:")[-1], re.M) if "Error distribution:" in text else []
rps = re.search(r"Requests/sec:\s*([\d.]+)", text)
print(f"   oha: {codes} answers, {float(rps.group(1)):.0f} req/s, errors: {errors or 'none'}")
sys.exit(0 if list(codes) == ["201"] and all(e == "aborted due to deadline" for e in errors) else 1)
PY
[ "$(kafko_service)" = "$cid" ] || fail "compose run replaced the healthy kafko container"
compose stop kafko >> "$WORK/compose.log" 2>&1 || fail "compose stop"
code=$(podman inspect -f '{{.State.ExitCode}}' "$cid")
[ "$code" = "0" ] || fail "compose kafko service exit code $code after stop"
compose down >> "$WORK/compose.log" 2>&1 || fail "compose down"
ok "compose load service ran against the kafko service; stop ended it with exit code 0"

say "all podman checks passed"
