# Shared helpers for the integration tests (sourced by tests/integration/test_*.sh).
# Every test starts its own ratelimit-server on 127.0.0.1 port 0, reads the port
# it prints, and stops everything it started on exit.
set -eu
: "${BUILD:?BUILD must name the build directory}"
TOP=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-test.XXXXXX")
# The shim's host-wide state (BACKOFF_SHARE=host) lives in
# $XDG_RUNTIME_DIR: each test has its own, so that tests (which reuse port
# numbers on 127.0.0.1), parallel runs and the developer's own runs never
# share a destination's state.
XDG_RUNTIME_DIR=$TMP
export XDG_RUNTIME_DIR
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
server_die() { fail "$@"; }
# server_launch, server_wait_port, server_stop: shared with the demo
. "$TOP/demo/server-lib.sh"
# stop_server: SIGTERM the last server and wait; its TSV summary is then in $TMP/NAME.out.
stop_server() { server_stop; }

# start_server NAME [ratelimit-server flags...]: starts the server with stdout
# in $TMP/NAME.out and stderr in $TMP/NAME.err; sets SERVER_PID and PORT.
# Waits (at most 30 s, however busy the machine) for the "listening" line and
# fails the test loudly when the server exits first or prints no valid port.
start_server() {
    name=$1; shift
    server_launch "$TMP/$name.out" "$TMP/$name.err" "$@"
    PIDS="$PIDS $SERVER_PID"
}

# start_redis NAME [redis-server flags...]: Debian's redis-server on
# 127.0.0.1, in its own process group and directory ($TMP/NAME), nothing
# saved; a free port unless REDIS_PORT is set (a restart on the same port).
# Sets REDIS_PID and REDIS_PORT once it answers PING (at most 10 s).
# stop_redis [SIGNAL]: stops it (TERM by default; KILL for a crash).
start_redis() {
    command -v redis-server >/dev/null || fail "redis-server is not installed (Debian: redis-server)"
    _rn=$1; shift
    if [ -z "${REDIS_PORT:-}" ]; then
        REDIS_PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    fi
    mkdir -p "$TMP/$_rn"
    setsid redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
        --dir "$TMP/$_rn" "$@" >"$TMP/$_rn/log" 2>&1 &
    REDIS_PID=$!
    PIDS="$PIDS $REDIS_PID"
    _w=0
    until [ "$(timeout -k 1 2 redis-cli -p "$REDIS_PORT" --no-auth-warning ${REDIS_PASS:+-a "$REDIS_PASS"} ping 2>/dev/null)" = PONG ]; do
        kill -0 "$REDIS_PID" 2>/dev/null || fail "redis-server exited: $(tail -3 "$TMP/$_rn/log")"
        _w=$((_w + 1))
        [ $_w -gt 100 ] && fail "redis-server did not answer PING within 10 s"
        sleep 0.1
    done
}
stop_redis() {
    kill "-${1:-TERM}" "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
}
# rcli ARGS...: redis-cli on the test's Redis (bounded).
rcli() {
    timeout -k 1 5 redis-cli -p "$REDIS_PORT" --no-auth-warning ${REDIS_PASS:+-a "$REDIS_PASS"} "$@"
}

# wait_port NAME PID WHAT: waits (at most 30 s) until $TMP/NAME.out holds a
# complete "listening on 127.0.0.1:PORT" line, then sets PORT; fails the test
# when PID exits first or the port is not a number in 1..65535.
wait_port() {
    server_wait_port "$TMP/$1.out" "$TMP/$1.err" "$2" "$3"
}

# start_py_server NAME SCRIPT [ARGS...]: runs /usr/bin/python3 SCRIPT ARGS with
# stdout in $TMP/NAME.out and stderr in $TMP/NAME.err, for a test's own server
# that prints "listening on 127.0.0.1:PORT" (flushed) once it listens; sets
# SERVER_PID and PORT like start_server (stop it with stop_server).
start_py_server() {
    _name=$1; shift
    : >"$TMP/$_name.out"
    : >"$TMP/$_name.err"
    /usr/bin/python3 "$@" >"$TMP/$_name.out" 2>"$TMP/$_name.err" &
    SERVER_PID=$!
    PIDS="$PIDS $SERVER_PID"
    wait_port "$_name" "$SERVER_PID" "python server $_name"
}

# start_flip_server NAME: a deterministic throttling server, for tests that
# need "a 429 first, then a 200" without depending on a clock: every path
# (query included) is answered 429 (body "rejected", Retry-After: 0) on its
# odd-numbered requests and 200 on its even-numbered ones, with the body
# ratelimit-server sends (GET .../item/N[?size=B]: item_body N B, else "ok").
# A path starting with /ok/ is answered 200 at once, as the same path without
# /ok would be, and does not count as a request to that path.  HTTP/1.1 with keep-alive.  Sets SERVER_PID and PORT like
# start_server; stop it with stop_server (it prints no summary).
start_flip_server() {
    cat >"$TMP/$1.py" <<'FLIP'
import http.server, re, threading
hits = {}
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def version_string(self):
        return "flip"
    def do_GET(self):
        path = self.path
        always = path.startswith("/ok/")
        if always:
            path = path[3:]
        n = 0
        if not always:
            with lock:
                n = hits[path] = hits.get(path, 0) + 1
        m = re.search(r"/item/(\d+)(?:\?size=(\d+))?$", path)
        if not always and n % 2 == 1:
            status, body = 429, b"rejected"
        elif m:
            status = 200
            unit = ("item=%s;" % m.group(1)).encode()
            size = int(m.group(2) or 64)
            body = (unit * (size // len(unit) + 1))[:size]
        else:
            status, body = 200, b"ok"
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "0")
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print("listening on 127.0.0.1:%d" % s.server_address[1], flush=True)
s.serve_forever()
FLIP
    start_py_server "$1" "$TMP/$1.py"
}

# wait_state PID STATE SECONDS: waits (polling every 0.02 s, at most SECONDS)
# until the state letter in /proc/PID/stat is STATE (T: stopped); fails the
# test otherwise.  A signal is delivered asynchronously: kill -STOP returns
# before the target has stopped.
wait_state() {
    _i=0
    while :; do
        # The comm field may hold spaces and parentheses: the state follows the last ')'.
        _s=$(sed 's/.*) \([A-Za-z]\).*/\1/' "/proc/$1/stat" 2>/dev/null) || _s=gone
        [ "$_s" = "$2" ] && return 0
        _i=$((_i + 1))
        [ $_i -gt $(($3 * 50)) ] && fail "process $1 state '$_s' after $3 s, expected $2"
        sleep 0.02
    done
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

# program_case NAME TOTAL PROGRAM... -- SERVER-FLAGS...: a program that prints
# "done TOTAL bad N" runs as `PROGRAM... URL TAG` against a fresh ratelimit-server
# with SERVER-FLAGS, plain and under the shim: plain, some answers must be
# wrong (else the test could not fail); under the shim none, the shim must
# have retried, and no POST may reach the server twice.  (The PHP and R
# clients of the multi tests.)
program_case() {
    _name=$1 _total=$2
    shift 2
    _cmd=""
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do _cmd="$_cmd $1"; shift; done
    [ $# -gt 0 ] && shift
    start_server "$_name" "$@"
    _u="http://127.0.0.1:$PORT"
    # shellcheck disable=SC2086
    setsid timeout -k 2 60 $_cmd "$_u" plain >"$TMP/$_name.plain" 2>&1 ||
        fail "$_name: the plain program failed: $(cat "$TMP/$_name.plain")"
    grep -q "^done $_total bad [1-9]" "$TMP/$_name.plain" ||
        fail "$_name: without the shim nothing was throttled (this test could not fail): $(cat "$TMP/$_name.plain")"
    # shellcheck disable=SC2086
    setsid timeout -k 2 90 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$_name.stats" \
        $_cmd "$_u" shim >"$TMP/$_name.shim" 2>&1 ||
        fail "$_name: the program under the shim failed: $(cat "$TMP/$_name.shim")"
    grep -q "^done $_total bad 0\$" "$TMP/$_name.shim" || fail "$_name: under the shim: $(cat "$TMP/$_name.shim")"
    stop_server
    [ "$(summary_field "$TMP/$_name.out" duplicate_posts)" = 0 ] || fail "$_name: a POST reached the server twice"
    [ "$(stats_sum "$TMP/$_name.stats" retries)" -gt 0 ] || fail "$_name: the shim retried nothing"
    note "$_name: plain $(cat "$TMP/$_name.plain"); under the shim $(cat "$TMP/$_name.shim"), $(stats_sum "$TMP/$_name.stats" retries) retries, no POST twice"
}

# make_test_cert DIR: a self-signed certificate for 127.0.0.1 and localhost
# (subjectAltName; EC P-256, valid one day) in DIR/cert.pem, its key in
# DIR/key.pem, made now with the openssl command (never committed).  The
# certificate is its own CA: point clients at DIR/cert.pem (curl --cacert,
# SSL_CERT_FILE and REQUESTS_CA_BUNDLE for Python, wget --ca-certificate,
# PERL_LWP_SSL_CA_FILE, ruby's SSL_CERT_FILE).  Serve it with
# start_server NAME --tls-cert DIR/cert.pem --tls-key DIR/key.pem.
make_test_cert() {
    command -v openssl >/dev/null || fail "openssl is not installed (Debian: openssl)"
    mkdir -p "$1"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
        -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$1/key.pem" -out "$1/cert.pem" >"$1/openssl.log" 2>&1 ||
        fail "openssl could not make a test certificate: $(cat "$1/openssl.log")"
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
