#!/bin/sh
# Memory stays bounded: 1000 concurrent connections with half-sent requests,
# then the same 1000 requests completed and held 2 s at once (suspended, not a
# thread each), then a slow client reading a 200 MB body one byte per 0.2 s.
# VmRSS growth must stay under 64 MB in each phase, and the server must keep
# answering others throughout.
. "$(dirname "$0")/lib.sh"

LIMIT_KB=65536
start_server mem --service-ms 2000
base=$(rss_kb "$SERVER_PID")
note "baseline VmRSS $base kB"

# A python client driven by commands on a fifo so the shell can measure between phases.
mkfifo "$TMP/ctl"
cat >"$TMP/client.py" <<'PY'
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
port = int(sys.argv[1])
ctl = open(sys.argv[2])
socks = []
for i in range(1000):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"GET /item/%d HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Partial: " % i)
    socks.append(s)
print("partial", flush=True)
ctl.readline()
for s in socks:
    s.sendall(b"yes\r\n\r\n")
print("sent", flush=True)
ok = 0
for i, s in enumerate(socks):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    ok += data.startswith(b"HTTP/1.1 200")
print("answered %d" % ok, flush=True)
ctl.readline()
PY
python3 "$TMP/client.py" "$PORT" "$TMP/ctl" >"$TMP/py.out" 2>"$TMP/py.err" &
PY_PID=$!
PIDS="$PIDS $PY_PID"
# If the client dies, a write to the fifo raises SIGPIPE: fail (and clean up)
# instead of being killed with the server left running.
trap 'fail "the python client went away: $(cat "$TMP/py.err")"' PIPE
exec 3>"$TMP/ctl"
wait_for "$TMP/py.out" '^partial' 60
# All 1000 must be real connections in the server, not waiting in the backlog.
i=0
while [ "$(ls "/proc/$SERVER_PID/fd" | wc -l)" -lt 1000 ]; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "server holds only $(ls "/proc/$SERVER_PID/fd" | wc -l) fds"
    sleep 0.1
done
rss1=$(rss_kb "$SERVER_PID")
note "1000 half-sent requests: VmRSS $rss1 kB (+$((rss1 - base)) kB)"
[ $((rss1 - base)) -lt $LIMIT_KB ] || fail "VmRSS grew $((rss1 - base)) kB with 1000 idle connections"
code=$(http_code "http://127.0.0.1:$PORT/item/1" -m 10) || fail "curl failed with 1000 connections open"
[ "$code" = 200 ] || fail "status $code with 1000 connections open"

echo go >&3
wait_for "$TMP/py.out" '^sent' 30
sleep 1
rss2=$(rss_kb "$SERVER_PID")
note "1000 requests held at once: VmRSS $rss2 kB (+$((rss2 - base)) kB)"
[ $((rss2 - base)) -lt $LIMIT_KB ] || fail "VmRSS grew $((rss2 - base)) kB with 1000 held requests"
wait_for "$TMP/py.out" '^answered' 60
grep -q '^answered 1000$' "$TMP/py.out" || fail "not all held requests were answered: $(cat "$TMP/py.out")"
echo done >&3
exec 3>&-
wait "$PY_PID" || fail "python client failed: $(cat "$TMP/py.err")"

rss_after=$(rss_kb "$SERVER_PID")
note "after answering the 1000 (each connection's 32 kB pool touched once): VmRSS $rss_after kB"
[ $((rss_after - base)) -lt $LIMIT_KB ] || fail "VmRSS grew $((rss_after - base)) kB after 1000 answers"

# Slow reader of a huge streamed body: it must cost a fixed buffer, not the body.
python3 - "$PORT" >"$TMP/slow.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /item/9?size=200000000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
got = b""
for _ in range(25):
    got += s.recv(1)
    time.sleep(0.2)
print("read", len(got), got[:12], flush=True)
PY
SLOW_PID=$!
PIDS="$PIDS $SLOW_PID"
sleep 3
rss3=$(rss_kb "$SERVER_PID")
note "slow reader of a 200 MB body: VmRSS $rss3 kB (+$((rss3 - rss_after)) kB during it)"
[ $((rss3 - base)) -lt $LIMIT_KB ] || fail "VmRSS grew $((rss3 - base)) kB with a slow reader"
[ $((rss3 - rss_after)) -lt 8192 ] || fail "the slow reader alone grew VmRSS by $((rss3 - rss_after)) kB"
code=$(http_code "http://127.0.0.1:$PORT/item/2" -m 10) || fail "curl failed beside the slow reader"
[ "$code" = 200 ] || fail "status $code beside the slow reader"
wait "$SLOW_PID" || fail "slow reader failed: $(cat "$TMP/slow.out")"
cat "$TMP/slow.out"
grep -q "read 25 b'HTTP/1.1 200'" "$TMP/slow.out" || fail "slow reader did not get its answer"
stop_server
cat "$TMP/mem.out"
[ "$(summary_field "$TMP/mem.out" max_concurrency)" -ge 1000 ] || fail "the 1000 requests were not held concurrently"
note "memory bounded: +$((rss1 - base)) / +$((rss2 - base)) / +$((rss_after - base)) / +$((rss3 - rss_after)) kB"
