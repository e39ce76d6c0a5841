# Shared helpers for the integration tests (sourced by tests/integration/test_*.sh).
# Every test starts its own ratelimit-server on 127.0.0.1 port 0, reads the port
# it prints, and stops everything it started on exit.
set -eu
: "${BUILD:?BUILD must name the build directory}"
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-test.XXXXXX")
PIDS=""

cleanup() {
    for p in $PIDS; do
        kill -CONT "$p" 2>/dev/null || true
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in $PIDS; do wait "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "# $*"; }

# start_server NAME [ratelimit-server flags...]: starts the server with stdout
# in $TMP/NAME.out and stderr in $TMP/NAME.err; sets SERVER_PID and PORT.
start_server() {
    name=$1; shift
    "$BUILD/ratelimit-server" --port 0 "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
    SERVER_PID=$!
    PIDS="$PIDS $SERVER_PID"
    i=0
    while ! grep -q '^listening on 127.0.0.1:' "$TMP/$name.out" 2>/dev/null; do
        i=$((i + 1))
        [ $i -gt 100 ] && fail "ratelimit-server did not start: $(cat "$TMP/$name.err")"
        kill -0 "$SERVER_PID" 2>/dev/null || fail "ratelimit-server exited: $(cat "$TMP/$name.err")"
        sleep 0.05
    done
    PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/$name.out" | head -n 1)
}

# stop_server: SIGTERM the last server and wait; its TSV summary is then in $TMP/NAME.out.
stop_server() {
    kill -CONT "$SERVER_PID" 2>/dev/null || true
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
}

# summary_field FILE COLUMN: value of COLUMN in the TSV summary (header row + one row) in FILE.
summary_field() {
    awk -F'\t' -v col="$2" '
        $1 == "requests" { for (i = 1; i <= NF; i++) idx[$i] = i; hdr = 1; next }
        hdr && (col in idx) { print $(idx[col]); exit }' "$1"
}

# stats_sum FILE KEY: sum of KEY over the BACKOFF_STATS JSON lines in FILE
# (one object per process; 0 when the file is missing or empty).
stats_sum() {
    [ -f "$1" ] || { echo 0; return; }
    awk -v k="\"$2\":" '{ i = index($0, k); if (i) { s += substr($0, i + length(k)) + 0 } }
        END { printf "%d\n", s }' "$1"
}

# item_body N [SIZE]: the body ratelimit-server sends for GET /item/N ("item=N;" repeated to SIZE, 64 by default).
item_body() {
    yes "item=$1;" | tr -d '\n' | head -c "${2:-64}"
}

# fnv1a64 FILE: "fnv1a64=HEX length=LEN", as ratelimit-server answers an upload of FILE.
fnv1a64() {
    /usr/bin/python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
h = 0xcbf29ce484222325
for b in d:
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print("fnv1a64=%016x length=%d" % (h, len(d)))' "$1"
}

# wait_for FILE PATTERN SECONDS: waits (polling every 0.1 s, at most SECONDS)
# until a line of FILE matches the grep -E PATTERN; fails the test otherwise.
wait_for() {
    _w=0
    while ! grep -Eq "$2" "$1" 2>/dev/null; do
        _w=$((_w + 1))
        [ $_w -gt $(($3 * 10)) ] && fail "no line matching '$2' in $1 within $3 s"
        sleep 0.1
    done
    return 0
}

# rss_kb PID: resident set size of PID in kB (VmRSS from /proc).
rss_kb() {
    awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"
}

# http_code URL [curl args...]: prints the HTTP status curl got (000 when none)
# and returns curl's exit status.
http_code() {
    _u=$1; shift
    curl -s -o /dev/null -w '%{http_code}' "$@" "$_u"
}
