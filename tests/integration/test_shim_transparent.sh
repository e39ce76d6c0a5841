#!/bin/sh
# Transparency: whatever way a libcurl program receives a response (default
# fwrite to stdout, CURLOPT_HEADER, HEADERDATA without a header callback,
# callbacks, a duplicated handle, a reset handle, FAILONERROR), under the
# shim against a throttling server it receives exactly what it receives
# without the shim from a server that does not throttle (Date and
# RateLimit-* headers aside).  With one attempt allowed, the 429 itself is
# handed over as is.  A redirect chain (curl -L) through a 429 shows the
# redirect and the final response only.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
H="$BUILD/tests/helpers/shim_transparent"
[ -f "$LIB" ] && [ -x "$H" ] || fail "build $LIB and $H first"
CURL=/usr/bin/curl

# No clock: the flip server answers each path 429 first, then 200, and its
# /ok/ paths answer the same 200 at once (what a program sees from a server
# that does not throttle).  A server that answers 429 always gives the
# one-attempt case its 429 for certain.
start_flip_server flip
FLIP="http://127.0.0.1:$PORT"
start_server reject --max-busy 0 --retry-after 1
REJECT="http://127.0.0.1:$PORT"

scrub() { tr -d '\r' | grep -v -i -E '^(\[H\])?(date|ratelimit-[a-z]*|retry-after):' || true; }

for mode in stdout header headerdata callbacks dup reset fail; do
    case $mode in dup) path=/item ;; *) path=/item/5 ;; esac
    "$H" $mode "$FLIP/ok/$mode$path" | scrub >"$TMP/$mode.want"
    BACKOFF_STATS="$TMP/$mode.json" LD_PRELOAD="$LIB" "$H" $mode "$FLIP/$mode$path" | scrub >"$TMP/$mode.got"
    calls=$(stats_sum "$TMP/$mode.json" calls)
    attempts=$(stats_sum "$TMP/$mode.json" attempts)
    note "$mode: calls $calls attempts $attempts"
    [ "$attempts" -gt "$calls" ] || fail "$mode: nothing was retried, the test proves nothing"
    cmp -s "$TMP/$mode.want" "$TMP/$mode.got" ||
        fail "$mode: the program saw something else under the shim:
$(diff "$TMP/$mode.want" "$TMP/$mode.got" | head -n 20)"
done

note "one attempt allowed: the 429 is handed over as is (FAILONERROR and default write)"
for mode in fail header; do
    "$H" $mode "$REJECT/item/6" | scrub >"$TMP/one.want"
    BACKOFF_MAX_ATTEMPTS=1 BACKOFF_STATS="$TMP/one.$mode.json" LD_PRELOAD="$LIB" "$H" $mode "$REJECT/item/6" |
        scrub >"$TMP/one.got"
    grep -q 'status=429' "$TMP/one.want" || fail "$mode: the server did not answer 429 without the shim"
    [ "$(stats_sum "$TMP/one.$mode.json" attempts)" -eq 1 ] || fail "$mode: expected one attempt under the shim"
    cmp -s "$TMP/one.want" "$TMP/one.got" || fail "$mode with one attempt: $(diff "$TMP/one.want" "$TMP/one.got" | head)"
done

note "curl -L through a redirect whose target answers 429 first"
cat >"$TMP/redir.py" <<'EOF'
import http.server, sys, threading
hits = {}
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_GET(self):
        if self.path.startswith("/r/"):
            self.send_response(302)
            self.send_header("Location", "/t/" + self.path[3:])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with lock:
            n = hits[self.path] = hits.get(self.path, 0) + 1
        body = b"slow down" if n % 2 == 1 else ("final " + self.path).encode()
        self.send_response(429 if n % 2 == 1 else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print("listening on 127.0.0.1:%d" % s.server_address[1], flush=True)
threading.Timer(60, s.shutdown).start()
s.serve_forever()
EOF
/usr/bin/python3 "$TMP/redir.py" >"$TMP/redir.out" 2>"$TMP/redir.err" &
PIDS="$PIDS $!"
wait_port redir $! "redirect server"
RPORT=$PORT
$CURL -s -L -D - "http://127.0.0.1:$RPORT/r/a" | tr -d '\r' >"$TMP/plain.redir"
grep -q '^HTTP/1.0 429' "$TMP/plain.redir" || fail "without the shim the chain did not meet a 429"
LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/r.json" $CURL -s -L -D - "http://127.0.0.1:$RPORT/r/b" | tr -d '\r' >"$TMP/shim.redir"
note "statuses seen under the shim: $(grep '^HTTP/' "$TMP/shim.redir" | tr '\n' ' ')"
[ "$(grep -c '^HTTP/' "$TMP/shim.redir")" -eq 2 ] || fail "expected the 302 and the final 200 only"
grep -q '^HTTP/1.0 302' "$TMP/shim.redir" || fail "the redirect's headers are missing"
grep -q '^HTTP/1.0 200' "$TMP/shim.redir" || fail "the final response's headers are missing"
grep -q '429' "$TMP/shim.redir" && fail "the 429 leaked"
tail -c 13 "$TMP/shim.redir" | grep -q 'final /t/b$' || fail "body: $(tail -c 40 "$TMP/shim.redir")"
[ "$(stats_sum "$TMP/r.json" attempts)" -eq 2 ] || fail "expected two attempts"
cat "$TMP/headerdata.got" "$TMP/dup.got"
echo "ok"
