#!/bin/sh
# Malformed status lines (libmicrohttpd cannot send one, so a tiny python3
# raw TCP server on 127.0.0.1 port 0 answers every connection with one
# fixed reply and counts connections).  Under the shim the program gets
# curl's own error and bytes, exactly as without the shim, the call is made
# once (the server counts one connection: a reply that is not HTTP is not a
# throttle and is not retried), and nothing hangs.  A bare "429" status line
# without a blank line is still a 429 to curl: retried up to the bound.
. "$(dirname "$0")/lib.sh"

BO="$BUILD/backoff"
[ -x "$BO" ] && [ -f "$BUILD/libbackoff.so" ] || fail "build $BO and $BUILD/libbackoff.so first"
CURL=/usr/bin/curl

# raw_server NAME REPLY: serves REPLY (python bytes literal) to every
# connection; sets RAW_PID and RAW_PORT; the connection count is in $TMP/NAME.count.
raw_server() {
    python3 -u - "$2" "$TMP/$1.count" >"$TMP/$1.raw" 2>&1 <<'PY' &
import ast, socket, sys
reply = ast.literal_eval(sys.argv[1])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
print("listening on 127.0.0.1:%d" % s.getsockname()[1], flush=True)
n = 0
s.settimeout(120)
while True:
    try:
        c, _ = s.accept()
    except socket.timeout:
        break
    n += 1
    open(sys.argv[2], "w").write("%d\n" % n)
    c.settimeout(5)
    try:
        c.recv(65536)
        c.sendall(reply)
    except OSError:
        pass
    c.close()
PY
    RAW_PID=$!
    PIDS="$PIDS $RAW_PID"
    wait_for "$TMP/$1.raw" '^listening on' 10
    RAW_PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)/\1/p' "$TMP/$1.raw")
}

n=0
for reply in 'b"HTTP/1.1 abc OK\r\nContent-Length: 2\r\n\r\nhi"' \
    'b"HTTP/1.1 99999999999999999999 Huge\r\nContent-Length: 2\r\n\r\nhi"' \
    'b"HTTP/1.1 -429 Negative\r\n\r\n"' \
    'b"garbage that is not http at all\r\n\r\n"' \
    'b"HTTP/1.1 429\r\nRetry-After: 1\r\n"' \
    'b"HTTP/9.9 200 OK\r\nContent-Length: 2\r\n\r\nhi"' \
    'b"\x00\x01\x02\xff\xfe\r\n\r\n"'; do
    n=$((n + 1))
    raw_server "m$n" "$reply"
    plain_rc=0
    $CURL -s -m 10 "http://127.0.0.1:$RAW_PORT/item/1" >"$TMP/plain$n" 2>&1 || plain_rc=$?
    before=$(cat "$TMP/m$n.count")
    rc=0
    BACKOFF_MAX_ATTEMPTS=4 BACKOFF_BASE_MS=10 "$BO" --stats "$TMP/s$n.json" -- \
        $CURL -s -m 10 "http://127.0.0.1:$RAW_PORT/item/1" >"$TMP/shim$n" 2>&1 || rc=$?
    conns=$(($(cat "$TMP/m$n.count") - before))
    label=$(printf '%s' "$reply" | tr '\\' '/' | cut -c1-40)
    note "reply $label: curl exit $plain_rc without the shim, $rc with it; $conns connection(s), attempts $(stats_sum "$TMP/s$n.json" attempts)"
    [ $rc -eq $plain_rc ] || fail "reply $label: exit $rc under the shim, $plain_rc without"
    cmp -s "$TMP/plain$n" "$TMP/shim$n" || fail "reply $label: the program saw different bytes under the shim"
    [ "$conns" -le 4 ] || fail "reply $label: $conns connections for one call with 4 attempts"
    if [ $rc -ne 0 ] && [ $rc -ne 28 ]; then
        [ "$conns" -eq 1 ] || fail "reply $label: a malformed reply was retried ($conns connections)"
    fi
    kill "$RAW_PID" 2>/dev/null || true
    wait "$RAW_PID" 2>/dev/null || true
done
echo "ok"
