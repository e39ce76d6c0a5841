# Shell helpers shared by demo/demo.sh and demo/bench.sh (sourced, not run).
# They expect BUILD to be an absolute path and `top` the project's top
# directory, and keep the server's pid in SERVER_PID so that the caller's
# exit trap can stop it.

. "$top/demo/server-lib.sh"
server_die() { echo "backoff: $*" >&2; exit 1; }

# start_server OUTFILE FLAGS...: start ratelimit-server on 127.0.0.1, a free
# port; its stdout (the "listening" line, then the summary) goes to OUTFILE,
# its stderr to OUTFILE.err.  Sets SERVER_PID and PORT.
start_server() {
    _o=$1; shift
    server_launch "$_o" "$_o.err" "$@"
}

# stop_server: server_stop, and forget the pid (the exit trap stops nothing twice).
stop_server() {
    server_stop
    SERVER_PID=""
}

# col FILE NAME: the value of column NAME in the row after the TSV header that names it.
col() {
    awk -F'\t' -v c="$2" '!k { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
                          { print $k; exit }' "$1"
}
