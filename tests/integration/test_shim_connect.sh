#!/bin/sh
# connect(): a blocking client (Debian's python3, socket.create_connection
# without a timeout) to a port that starts listening 1 s later succeeds
# under the shim when BACKOFF_HOSTS names it, and fails without the shim and
# when not named (a destination never seen accepting: handed back at once);
# on final failure errno is what libc left (ECONNREFUSED); a unix socket
# whose listener restarts (seen alive, then a stale file) is reached again;
# a non-blocking connect passes straight through; BACKOFF_CONNECT=0 and
# BACKOFF_HOSTS turn the hook off.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
LIB="$BUILD/libbackoff.so"
[ -f "$LIB" ] || fail "build $LIB first"

free_port() {
    $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# listen_after PORT TRACE N: accept one connection on PORT, send "hello", once
# the trace file TRACE holds N retried attempts (at most 30 s): the port
# starts listening after the shim has retried, however busy the machine,
# and never for a client the shim does not manage (its trace stays empty).
listen_after() {
    $PY -c '
import socket, sys, time
end = time.time() + 30
while True:
    try:
        n = sum(",retry," in l for l in open(sys.argv[2]))
    except OSError:
        n = 0
    if n >= int(sys.argv[3]):
        break
    if time.time() > end:
        sys.exit(1)
    time.sleep(0.01)
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
s.settimeout(20)
c, _ = s.accept()
c.sendall(b"hello")
c.close()' "$1" "$2" "$3" &
    PIDS="$PIDS $!"
}

CLIENT='
import errno, socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    print("connected", s.recv(5).decode())
except OSError as e:
    print("error", errno.errorcode.get(e.errno, e.errno))
'

note "without the shim: refused"
port=$(free_port)
listen_after "$port" "$TMP/none.csv" 1
out=$($PY -c "$CLIENT" "$port")
note "$out"
[ "$out" = "error ECONNREFUSED" ] || fail "without the shim: $out"

note "under the shim, not named and never seen accepting: handed back at once"
port=$(free_port)
listen_after "$port" "$TMP/b.csv" 1 # would come up had the shim retried
out=$(BACKOFF_POLICY=exponential BACKOFF_BASE_MS=100 BACKOFF_MAX_ATTEMPTS=20 BACKOFF_TRACE="$TMP/b.csv" \
    BACKOFF_STATS="$TMP/b.json" LD_PRELOAD="$LIB" $PY -c "$CLIENT" "$port")
note "$out; attempts $(stats_sum "$TMP/b.json" attempts)"
[ "$out" = "error ECONNREFUSED" ] || fail "an unknown destination was retried: $out"
[ "$(stats_sum "$TMP/b.json" attempts)" -eq 0 ] || fail "an unknown destination was counted"

note "under the shim, named in BACKOFF_HOSTS: connects once the port listens"
port=$(free_port)
listen_after "$port" "$TMP/c.csv" 2
out=$(BACKOFF_HOSTS=127.0.0.1 BACKOFF_POLICY=exponential BACKOFF_BASE_MS=100 BACKOFF_MAX_ATTEMPTS=20 BACKOFF_TRACE="$TMP/c.csv" \
    BACKOFF_STATS="$TMP/c.json" LD_PRELOAD="$LIB" $PY -c "$CLIENT" "$port")
note "$out; attempts $(stats_sum "$TMP/c.json" attempts)"
[ "$out" = "connected hello" ] || fail "under the shim: $out"
[ "$(stats_sum "$TMP/c.json" attempts)" -ge 3 ] || fail "expected several connect attempts"

note "the default policy (aimd) connects too"
port=$(free_port)
listen_after "$port" "$TMP/d.csv" 1
out=$(BACKOFF_HOSTS=127.0.0.1 BACKOFF_STATS="$TMP/d.json" BACKOFF_TRACE="$TMP/d.csv" LD_PRELOAD="$LIB" $PY -c "$CLIENT" "$port")
note "$out; attempts $(stats_sum "$TMP/d.json" attempts)"
[ "$out" = "connected hello" ] || fail "under the shim (aimd): $out"

note "final failure: errno as libc left it"
port=$(free_port)
out=$(BACKOFF_HOSTS=127.0.0.1 BACKOFF_POLICY=fixed BACKOFF_BASE_MS=20 BACKOFF_MAX_ATTEMPTS=3 BACKOFF_STATS="$TMP/e.json" \
    LD_PRELOAD="$LIB" $PY -c "$CLIENT" "$port")
note "$out; attempts $(stats_sum "$TMP/e.json" attempts)"
[ "$out" = "error ECONNREFUSED" ] || fail "final failure: $out"
[ "$(stats_sum "$TMP/e.json" attempts)" -eq 3 ] || fail "expected exactly 3 attempts"

note "a small C client: errno and the descriptor number survive the retries"
if [ -x "$BUILD/tests/helpers/shim_connect" ]; then
    port=$(free_port)
    listen_after "$port" "$TMP/cc.csv" 2
    out=$(BACKOFF_HOSTS=127.0.0.1 BACKOFF_POLICY=exponential BACKOFF_BASE_MS=100 BACKOFF_MAX_ATTEMPTS=20 BACKOFF_TRACE="$TMP/cc.csv" \
        LD_PRELOAD="$LIB" "$BUILD/tests/helpers/shim_connect" "$port")
    note "$out"
    [ "$out" = "connected fd-kept flags-kept hello" ] || fail "C client: $out"
    port=$(free_port)
    out=$(BACKOFF_HOSTS=127.0.0.1 BACKOFF_POLICY=fixed BACKOFF_BASE_MS=20 BACKOFF_MAX_ATTEMPTS=2 \
        LD_PRELOAD="$LIB" "$BUILD/tests/helpers/shim_connect" "$port" || true)
    note "$out"
    [ "$out" = "failed errno=ECONNREFUSED" ] || fail "C client final failure: $out"
else
    fail "build $BUILD/tests/helpers/shim_connect first"
fi

note "a unix socket whose listener restarts: served, then a stale socket file, back after two retries"
UNIX_SRV='
import os, socket, sys, time
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
s.settimeout(20)
c, _ = s.accept()         # the client sees it alive once
c.close()
s.close()
os.unlink(path)
stale = socket.socket(socket.AF_UNIX)
stale.bind(path)          # a socket file nobody listens on: connect() is refused
stale.close()
print("stale", flush=True)
end = time.time() + 30    # the listener comes back once the trace shows 2 retries
while True:
    try:
        n = sum(",retry," in l for l in open(sys.argv[2]))
    except OSError:
        n = 0
    if n >= 2:
        break
    if time.time() > end:
        sys.exit(1)
    time.sleep(0.01)
os.unlink(path)
s = socket.socket(socket.AF_UNIX)
s.bind(path)
s.listen(4)
s.settimeout(20)
c, _ = s.accept()
c.sendall(b"hello")
c.close()
'
UNIX_CLIENT='
import errno, os, socket, sys, time
first = socket.socket(socket.AF_UNIX)
for i in range(200):
    try:
        first.connect(sys.argv[1])
        break
    except OSError:
        time.sleep(0.02)
first.close()
for i in range(200):      # until the server has left a stale file
    if os.path.exists(sys.argv[2]) and open(sys.argv[2]).read().strip() == "stale":
        break
    time.sleep(0.02)
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
    print("connected", s.recv(5).decode())
except OSError as e:
    print("error", errno.errorcode.get(e.errno, e.errno))
'
unix_case() { # NAME ENV... : start the server, run the client with ENV
    name=$1; shift
    rm -f "$TMP/$name.sock"
    $PY -c "$UNIX_SRV" "$TMP/$name.sock" "$TMP/$name.csv" >"$TMP/$name.srv" 2>&1 &
    PIDS="$PIDS $!"
    env "$@" $PY -c "$UNIX_CLIENT" "$TMP/$name.sock" "$TMP/$name.srv"
}
out=$(unix_case u1 BACKOFF_CONNECT=1)
note "without the shim: $out"
[ "$out" = "error ECONNREFUSED" ] || fail "unix socket without the shim: $out"
out=$(unix_case u2 LD_PRELOAD="$LIB" BACKOFF_POLICY=exponential BACKOFF_BASE_MS=100 \
    BACKOFF_MAX_ATTEMPTS=20 BACKOFF_STATS="$TMP/u.json" BACKOFF_TRACE="$TMP/u2.csv")
note "under the shim: $out; attempts $(stats_sum "$TMP/u.json" attempts)"
[ "$out" = "connected hello" ] || fail "unix socket under the shim: $out"
[ "$(stats_sum "$TMP/u.json" attempts)" -ge 3 ] || fail "unix socket: expected several attempts"

NONBLOCK='
import errno, socket, sys
s = socket.socket()
s.setblocking(False)
r = s.connect_ex(("127.0.0.1", int(sys.argv[1])))
print(errno.errorcode.get(r, r))
'
note "a non-blocking connect passes straight through"
port=$(free_port)
out=$(BACKOFF_STATS="$TMP/n.json" LD_PRELOAD="$LIB" $PY -c "$NONBLOCK" "$port")
note "$out; calls $(stats_sum "$TMP/n.json" calls)"
[ "$(stats_sum "$TMP/n.json" calls)" -eq 0 ] || fail "a non-blocking connect was managed"

note "BACKOFF_CONNECT=0 and BACKOFF_HOSTS leave connect() alone"
port=$(free_port)
listen_after "$port" "$TMP/off.csv" 1
out=$(BACKOFF_CONNECT=0 BACKOFF_STATS="$TMP/off.json" BACKOFF_TRACE="$TMP/off.csv" LD_PRELOAD="$LIB" \
    $PY -c "$CLIENT" "$port")
[ "$out" = "error ECONNREFUSED" ] || fail "BACKOFF_CONNECT=0: $out"
[ "$(stats_sum "$TMP/off.json" calls)" -eq 0 ] || fail "BACKOFF_CONNECT=0: the connect was managed"
port=$(free_port)
listen_after "$port" "$TMP/h.csv" 1
out=$(BACKOFF_HOSTS=example.org BACKOFF_STATS="$TMP/h.json" BACKOFF_TRACE="$TMP/h.csv" LD_PRELOAD="$LIB" \
    $PY -c "$CLIENT" "$port")
[ "$out" = "error ECONNREFUSED" ] || fail "BACKOFF_HOSTS=example.org: $out"
[ "$(stats_sum "$TMP/h.json" calls)" -eq 0 ] || fail "BACKOFF_HOSTS: an unlisted destination was managed"
echo "ok"
