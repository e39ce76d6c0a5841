# Starting and stopping ratelimit-server from a shell script: the one copy
# that demo/lib.sh (demo, bench) and tests/integration/lib.sh (the tests)
# both source.  The caller defines server_die MESSAGE (print and exit).
# BUILD names the build directory (an absolute path).

# server_launch OUT ERR FLAGS...: start ratelimit-server on 127.0.0.1, a
# free port (--port 0), stdout to OUT and stderr to ERR, then wait for its
# port (server_wait_port).  Sets SERVER_PID and PORT.
server_launch() {
    _out=$1 _err=$2; shift 2
    # Truncated here, in this shell, before the server starts: with a file
    # reused (a restarted server) the wait must not read the previous
    # server's line before the new process has truncated it.
    : >"$_out"
    : >"$_err"
    "$BUILD/ratelimit-server" --port 0 "$@" >"$_out" 2>"$_err" &
    SERVER_PID=$!
    server_wait_port "$_out" "$_err" "$SERVER_PID" "ratelimit-server $*"
}

# server_wait_port OUT ERR PID WHAT: wait (at most 30 s, however busy the
# machine) until OUT holds a complete "listening on 127.0.0.1:PORT" line,
# then set PORT; server_die when PID exits first or the port is not a
# number in 1..65535.
server_wait_port() {
    _i=0
    while ! grep -q '^listening on 127\.0\.0\.1:[0-9][0-9]*$' "$1" 2>/dev/null; do
        _i=$((_i + 1))
        [ $_i -gt 600 ] && server_die "$4 printed no port within 30 s: $(cat "$1" "$2" 2>/dev/null)"
        kill -0 "$3" 2>/dev/null || server_die "$4 exited before listening: $(cat "$2" 2>/dev/null)"
        sleep 0.05
    done
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$1" | head -n 1)
    case $PORT in
    '' | *[!0-9]*) server_die "$4: no port in '$(head -n 1 "$1")'" ;;
    esac
    [ "$PORT" -ge 1 ] && [ "$PORT" -le 65535 ] || server_die "$4: port $PORT out of range"
}

# server_stop: end the last server (continuing it first if it was stopped)
# and wait for it, so that its TSV summary is complete in its OUT file.
server_stop() {
    kill -CONT "$SERVER_PID" 2>/dev/null || true
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
}
