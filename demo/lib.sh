# Shell helpers shared by demo/demo.sh and demo/bench.sh (sourced, not run).
# They expect BUILD to be an absolute path and keep the server's pid in
# SERVER_PID so that the caller's exit trap can stop it.

# start_server OUTFILE FLAGS...: start ratelimit-server on 127.0.0.1, a free
# port; its stdout (the "listening" line, then the summary) goes to OUTFILE.
# Sets SERVER_PID and PORT.
start_server() {
    out=$1; shift
    # Truncated here first: a reused OUTFILE must not show the previous port.
    : >"$out"
    "$BUILD/ratelimit-server" --port 0 "$@" >"$out" 2>/dev/null &
    SERVER_PID=$!
    i=0
    until grep -q '^listening on 127\.0\.0\.1:[0-9][0-9]*$' "$out" 2>/dev/null; do
        i=$((i + 1))
        if [ $i -gt 600 ] || ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "backoff: ratelimit-server $* did not start (30 s)" >&2
            exit 1
        fi
        sleep 0.05
    done
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9][0-9]*\)$/\1/p' "$out" | head -n 1)
    case $PORT in
    '' | *[!0-9]*) echo "backoff: no port in '$(head -n 1 "$out")'" >&2; exit 1 ;;
    esac
}

# stop_server: end the server (continuing it first if it was stopped) and wait
# for it, so its TSV summary is complete in OUTFILE.
stop_server() {
    kill -CONT "$SERVER_PID" 2>/dev/null || true
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# col FILE NAME: the value of column NAME in the row after the TSV header that names it.
col() {
    awk -F'\t' -v c="$2" '!k { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
                          { print $k; exit }' "$1"
}
