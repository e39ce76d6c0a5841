#!/bin/sh
# python3-pycurl's CurlMulti (Debian's python3, libcurl's GnuTLS flavour
# dlopen()ed by the module): a perform()/select() loop and an event loop on
# socket_action with CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION (as
# tornado drives it), GETs and POSTs with their own X-Request-Id, against a
# token bucket and a concurrency cap.  Without the shim some answers are
# 429; under it every body is exact, only the final headers reach the
# program, and the server saw no POST twice.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -f "$BUILD/libbackoff.so" ] || fail "build $BUILD/libbackoff.so first"
LIB="$(cd "$BUILD" && pwd)/libbackoff.so"
$PY -c 'import pycurl' 2>/dev/null || fail "python3-pycurl is not installed (apt-get install python3-pycurl)"

cat >"$TMP/client.py" <<'PYEOF'
import io, select, sys, time
import pycurl

url, mode, n, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def want(i):
    return (("item=%d;" % i) * 64)[:64].encode()

def make(i):
    c = pycurl.Curl()
    c.body, c.heads, c.i = io.BytesIO(), [], i
    c.setopt(pycurl.WRITEFUNCTION, c.body.write)
    c.setopt(pycurl.HEADERFUNCTION, c.heads.append)
    if i % 4 == 0:
        c.setopt(pycurl.URL, "%s/post/%d" % (url, i))
        c.setopt(pycurl.POSTFIELDS, "n=%d" % i)
        c.setopt(pycurl.HTTPHEADER, ["X-Request-Id: %s-%d" % (tag, i)])
    else:
        c.setopt(pycurl.URL, "%s/item/%d" % (url, i))
    return c

m = pycurl.CurlMulti()
handles = [make(i) for i in range(1, n + 1)]
done = []

if mode == "perform":
    for c in handles:
        m.add_handle(c)
    running = n
    while running:
        while True:
            ret, running = m.perform()
            if ret != pycurl.E_CALL_MULTI_PERFORM:
                break
        while True:
            q, ok, err = m.info_read()
            for c in ok:
                done.append((c, 0))
            for c, e, msg in err:
                done.append((c, e))
            if q == 0:
                break
        if running:
            m.select(1.0)
else:
    # An event loop: socket callbacks register interest, the timer callback
    # sets one deadline, socket_action is called for events and timeouts.
    socks, deadline = {}, [None]
    def on_socket(what, fd, multi, data):
        if what == pycurl.POLL_REMOVE:
            socks.pop(fd, None)
        else:
            socks[fd] = what
    def on_timer(ms):
        deadline[0] = None if ms < 0 else time.monotonic() + ms / 1000.0
    m.setopt(pycurl.M_SOCKETFUNCTION, on_socket)
    m.setopt(pycurl.M_TIMERFUNCTION, on_timer)
    for c in handles:
        m.add_handle(c)
    running = n
    def collect():
        while True:
            q, ok, err = m.info_read()
            for c in ok:
                done.append((c, 0))
            for c, e, msg in err:
                done.append((c, e))
            if q == 0:
                break
    t_end = time.monotonic() + 50
    while len(done) < n and time.monotonic() < t_end:
        timeout = 1.0
        if deadline[0] is not None:
            timeout = max(0.0, min(timeout, deadline[0] - time.monotonic()))
        r = [fd for fd, w in socks.items() if w in (pycurl.POLL_IN, pycurl.POLL_INOUT)]
        w = [fd for fd, x in socks.items() if x in (pycurl.POLL_OUT, pycurl.POLL_INOUT)]
        if r or w:
            rr, ww, _ = select.select(r, w, [], timeout)
        else:
            time.sleep(timeout)
            rr, ww = [], []
        acted = False
        for fd in set(rr) | set(ww):
            ev = (pycurl.CSELECT_IN if fd in rr else 0) | (pycurl.CSELECT_OUT if fd in ww else 0)
            ret, running = m.socket_action(fd, ev)
            acted = True
        if deadline[0] is not None and time.monotonic() >= deadline[0]:
            deadline[0] = None
            ret, running = m.socket_action(pycurl.SOCKET_TIMEOUT, 0)
            acted = True
        if acted:
            collect()

bad = 0
for c, e in done:
    code = c.getinfo(pycurl.RESPONSE_CODE)
    body = c.body.getvalue()
    status_lines = [h for h in c.heads if h.startswith(b"HTTP/")]
    if c.i % 4 == 0:
        good = e == 0 and code == 200 and body.startswith(b"fnv1a64=")
    else:
        good = e == 0 and code == 200 and body == want(c.i)
    good = good and len(status_lines) == 1
    bad += not good
    m.remove_handle(c)
    c.close()
m.close()
print("done %d bad %d" % (len(done), bad + (n - len(done))))
PYEOF

run_case() { # NAME MODE server-flags...
    name=$1 mode=$2; shift 2
    start_server "$name" "$@"
    U="http://127.0.0.1:$PORT"
    setsid timeout -k 2 60 $PY "$TMP/client.py" "$U" "$mode" 60 plain >"$TMP/$name.plain" 2>&1 ||
        fail "$name: the plain client failed: $(cat "$TMP/$name.plain")"
    grep -q '^done 60 bad [1-9]' "$TMP/$name.plain" ||
        fail "$name: without the shim nothing was throttled (this test could not fail): $(cat "$TMP/$name.plain")"
    setsid timeout -k 2 90 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$name.stats" \
        $PY "$TMP/client.py" "$U" "$mode" 60 shim >"$TMP/$name.shim" 2>&1 ||
        fail "$name: the client under the shim failed: $(cat "$TMP/$name.shim")"
    grep -q '^done 60 bad 0$' "$TMP/$name.shim" || fail "$name: under the shim: $(cat "$TMP/$name.shim")"
    stop_server
    [ "$(summary_field "$TMP/$name.out" duplicate_posts)" = 0 ] || fail "$name: a POST reached the server twice"
    note "$name: plain $(cat "$TMP/$name.plain"); under the shim $(cat "$TMP/$name.shim"), $(stats_sum "$TMP/$name.stats" retries) retries, $(summary_field "$TMP/$name.out" posts) POSTs, none twice"
}

run_case perform-bucket perform --rate 30 --burst 10 --bucket-hints none
run_case perform-cap perform --max-busy 4 --service-ms 30
run_case socket-bucket socket --rate 30 --burst 10
run_case socket-cap socket --max-busy 4 --service-ms 30
echo "PASS"
