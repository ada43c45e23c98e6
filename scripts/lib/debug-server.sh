# Sourced by the checks in scripts/checks/ (from the repository root): the real debug
# binary on an ephemeral loopback port with a temporary data directory. Sets WORK (a
# temporary directory, removed on exit, with the server's stdout and server.log) and,
# once `start_server` returns, URL and SERVER_PID; the server is stopped on exit.

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
    if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# start_server [FLAG...]: builds kafko-http, starts it with the flags and waits (up to
# 10 s) until it listens.
start_server() {
    cargo build --quiet -p kafko-http
    target/debug/kafko-http --bind 127.0.0.1:0 --data-dir "$WORK/data" "$@" \
        >"$WORK/stdout" 2>"$WORK/server.log" &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        grep -q "^listening on" "$WORK/stdout" 2>/dev/null && break
        sleep 0.1
    done
    URL=$(sed -n 's/^listening on //p' "$WORK/stdout")
    [[ -n "$URL" ]] || { echo "kafko-http did not start"; cat "$WORK/server.log"; exit 1; }
}

# fail_on_panic: exits 1, showing where, if the server log holds a panic.
fail_on_panic() {
    if grep -q "panicked" "$WORK/server.log"; then
        echo "kafko-http panicked:"; grep -A5 panicked "$WORK/server.log"; exit 1
    fi
}
