#!/bin/sh
# BACKOFF_SHARE=host survives SIGKILL: processes killed while
# their attempts are in flight do not keep their slots (their leases are
# reaped within a second: the next process is admitted at once, --status
# shows nothing in flight), and a process killed while it holds a slot's
# lock or the file's lock wedges nobody (robust locks, repaired).  Also:
# exec'ed and fork()ed processes attach to the same state (--status counts
# them).  Our own programs (loadgen, share_hold), so that check-tsan runs it.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/loadgen" ] && [ -x "$BUILD/tests/helpers/share_hold" ] ||
    fail "build libbackoff.so, loadgen and the helpers first"

# A server whose /slow/ paths answer after 60 s (attempts that stay in
# flight until killed) and every other path at once.
cat >"$TMP/slow.py" <<'EOF'
import http.server, time
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path.startswith("/slow/"):
            time.sleep(60)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
s.daemon_threads = True
print("listening on 127.0.0.1:%d" % s.server_address[1], flush=True)
s.serve_forever()
EOF
start_py_server slow "$TMP/slow.py"
KEY="http://127.0.0.1:$PORT"

# Every process alike (the window is part of what they share): 2 slots.
export BACKOFF_WINDOW=2 BACKOFF_WINDOW_MAX=2
export LD_PRELOAD="$BUILD/libbackoff.so"

# status_of FIELD: FIELD (4 in flight, 5 processes) of the destination in --status.
status_of() {
    env -u LD_PRELOAD "$BUILD/backoff" --status >"$TMP/status" 2>&1 || fail "--status failed: $(cat "$TMP/status")"
    awk -v k="$KEY" -v f="$1" '$1 == k { print $f; found = 1 } END { if (!found) print "none" }' "$TMP/status"
}

# wait_status FIELD VALUE SECONDS
wait_status() {
    _i=0
    while [ "$(status_of "$1")" != "$2" ]; do
        _i=$((_i + 1))
        [ $_i -gt $(($3 * 10)) ] && fail "--status field $1 is not $2 after $3 s: $(cat "$TMP/status")"
        sleep 0.1
    done
}

# one NAME PATH: one request through loadgen (in the background); its pid in $ONE_PID.
one() {
    setsid timeout -k 2 90 "$BUILD/loadgen" --url "$KEY$2" --requests 1 --threads 1 \
        >"$TMP/$1.tsv" 2>"$TMP/$1.err" &
    ONE_PID=$!
}

# --- attempts in flight, then SIGKILL ---
"$BUILD/loadgen" --url "$KEY/item/{n}" --requests 4 --threads 2 >"$TMP/warm.tsv" ||
    fail "warm-up failed"
one slow1 /slow/1; p1=$ONE_PID
one slow2 /slow/2; p2=$ONE_PID
wait_status 4 2 30
note "two processes hold both slots: $(grep "^$KEY " "$TMP/status")"
[ "$(status_of 5)" = 2 ] || fail "--status counts $(status_of 5) processes attached, expected 2"
# The window is full: a third process waits for a slot ...
one blocked /item/3; p3=$ONE_PID
sleep 0.5
kill -0 $p3 2>/dev/null || fail "a third process ran although both slots were held: $(cat "$TMP/blocked.tsv")"
# ... until the holders die: their leases are reaped within a second.
t0=$(date +%s%3N)
/bin/kill -KILL -- -$p1 -$p2
i=0
while kill -0 $p3 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && fail "the waiting process was not admitted within 10 s of the holders' death"
    sleep 0.05
done
t1=$(date +%s%3N)
wait $p3 || true
[ "$(summary_field "$TMP/blocked.tsv" ok)" = 1 ] || fail "the waiting process's request failed: $(cat "$TMP/blocked.tsv" "$TMP/blocked.err")"
note "the waiting process finished $((t1 - t0)) ms after the holders were killed"
[ $((t1 - t0)) -le 5000 ] || fail "it took $((t1 - t0)) ms (leases are reaped within a second)"
wait_status 4 0 5
wait_status 5 0 5
note "after: $(grep "^$KEY " "$TMP/status")"
# the window is whole again: 2 at once
"$BUILD/loadgen" --url "$KEY/item/{n}" --requests 10 --threads 2 >"$TMP/after.tsv" || fail "loadgen failed"
[ "$(summary_field "$TMP/after.tsv" ok)" = 10 ] || fail "after the kill not every request ended 200"
w=$(status_of 2)
[ "${w%.*}" -ge 2 ] || fail "the window is $w after the kill, expected 2"

# --- a process killed while it holds the slot's lock ---
setsid "$BUILD/tests/helpers/share_hold" slot "$KEY" >"$TMP/hold.out" 2>"$TMP/hold.err" &
hp=$!
PIDS="$PIDS $hp"
wait_for "$TMP/hold.out" '^locked$' 20
one locked /item/5; p5=$ONE_PID
sleep 0.5
kill -0 $p5 2>/dev/null || fail "a process went through a slot whose lock another process held"
kill -KILL $hp
wait $p5 || true
[ "$(summary_field "$TMP/locked.tsv" ok)" = 1 ] || fail "after the lock holder's death the request failed: $(cat "$TMP/locked.err")"
note "a slot lock's holder killed: the waiting process went on"

# --- a process killed while it holds the file's lock (attaching) ---
setsid "$BUILD/tests/helpers/share_hold" file >"$TMP/holdf.out" 2>"$TMP/holdf.err" &
hp=$!
PIDS="$PIDS $hp"
wait_for "$TMP/holdf.out" '^locked$' 20
one flocked /item/6; p6=$ONE_PID
sleep 0.5
kill -KILL $hp
wait $p6 || true
[ "$(summary_field "$TMP/flocked.tsv" ok)" = 1 ] || fail "after the file lock holder's death the request failed: $(cat "$TMP/flocked.err")"
wait_status 4 0 5
note "the file lock's holder killed: attaching went on"

# --- exec'ed programs attach to the same state ---
setsid timeout -k 2 90 sh -c "\"$BUILD/loadgen\" --url \"$KEY/slow/7\" --requests 1 --threads 1 >/dev/null & \"$BUILD/loadgen\" --url \"$KEY/slow/8\" --requests 1 --threads 1 >/dev/null & wait" &
sp=$!
wait_status 4 2 30
[ "$(status_of 5)" = 2 ] || fail "two exec'ed programs: $(status_of 5) processes attached"
/bin/kill -KILL -- -$sp
wait_status 4 0 5
note "exec'ed programs share the window; killed, their leases are reaped"

# --- a fork()ed child attaches as itself ---
if /usr/bin/python3 -c 'import pycurl' 2>/dev/null; then
    cat >"$TMP/fork.py" <<EOF
import os, sys, time, pycurl, io
c = pycurl.Curl()
c.setopt(pycurl.URL, "$KEY/item/9")
c.setopt(pycurl.WRITEDATA, io.BytesIO())
c.perform()
pid = os.fork()
if pid == 0:
    c.setopt(pycurl.URL, "$KEY/slow/10")
    c.perform()
    os._exit(0)
print(pid, flush=True)
time.sleep(60)
EOF
    setsid timeout -k 2 90 /usr/bin/python3 "$TMP/fork.py" >"$TMP/fork.out" 2>"$TMP/fork.err" &
    fp=$!
    PIDS="$PIDS $fp"
    wait_for "$TMP/fork.out" '^[0-9]+$' 30
    child=$(cat "$TMP/fork.out")
    wait_status 4 1 30
    [ "$(status_of 5)" = 2 ] || fail "parent and forked child: $(status_of 5) processes attached, expected 2"
    kill -KILL "$child"
    wait_status 4 0 5
    /bin/kill -KILL -- -$fp
    note "a forked child's attempt is its own lease, reaped when it is killed"
fi
echo "ok"
