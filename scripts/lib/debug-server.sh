# Sourced by the checks in scripts/checks/ (from the repository root): the real debug
# binary on an ephemeral loopback port with a temporary data directory. Sets WORK (a
# temporary directory, removed on exit, with the server's stdout and server.log) and,
# once `start_server` returns, URL and SERVER_PID. Every server launched is stopped on exit,
# and waited for before WORK is removed (a stopping server still writes its data).

WORK=$(mktemp -d)
SERVER_PID=
LAUNCHED_PIDS=()
cleanup() {
    local pid
    for pid in "${LAUNCHED_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${LAUNCHED_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# launch DIR [FLAG...]: builds kafko and starts it with the flags on an ephemeral HTTP port
# (Kafka and the schema registry's own listener off unless a flag asks for them), its data, stdout and server.log in DIR; returns
# once it says it listens (at most 10 s), with its pid in LAUNCHED_PID.
launch() {
    local dir=$1
    shift
    # Kafka's default port stays free unless a check asks for the listener.
    local kafka=(--kafka-bind off) registry=(--schema-registry-bind off)
    [[ " $* " == *" --kafka-bind "* ]] && kafka=()
    [[ " $* " == *" --schema-registry-bind "* ]] && registry=()
    launch_as_is "$dir" --bind 127.0.0.1:0 "${kafka[@]}" "${registry[@]}" --data-dir "$dir/data" "$@"
}

# launch_as_is DIR [FLAG...]: as `launch`, with only the given flags (the binary's own
# defaults otherwise), run from DIR. Its stdout comes through a FIFO: reading the
# "listening on" line is the signal, no polling; the rest of the output goes on into
# DIR/stdout.
launch_as_is() {
    local dir=$1 line fd bin=$PWD/target/debug/kafko
    shift
    cargo build --quiet -p kafko
    mkdir -p "$dir"
    mkfifo "$dir/stdout.fifo"
    (cd "$dir" && exec "$bin" "$@") >"$dir/stdout.fifo" 2>"$dir/server.log" &
    LAUNCHED_PID=$!
    LAUNCHED_PIDS+=("$LAUNCHED_PID")
    exec {fd}<"$dir/stdout.fifo"
    while IFS= read -r -t 10 -u "$fd" line; do
        printf '%s\n' "$line" >>"$dir/stdout"
        [[ $line == "listening on "* ]] && break
    done
    cat <&"$fd" >>"$dir/stdout" &
    exec {fd}<&-
    grep -q "^listening on" "$dir/stdout" 2>/dev/null \
        || { echo "kafko did not start"; cat "$dir/server.log"; exit 1; }
}

# start_server [FLAG...]: the server of this check (see `launch`), in WORK; sets URL and
# SERVER_PID.
start_server() {
    launch "$WORK" "$@"
    SERVER_PID=$LAUNCHED_PID
    URL=$(sed -n 's/^listening on //p' "$WORK/stdout")
}

# fail_on_panic: exits 1, showing where, if the server log holds a panic.
fail_on_panic() {
    if grep -q "panicked" "$WORK/server.log"; then
        echo "kafko panicked:"; grep -A5 panicked "$WORK/server.log"; exit 1
    fi
}
