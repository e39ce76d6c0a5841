#!/bin/sh
# python3-pycurl (Debian's package, run by Debian's own /usr/bin/python3,
# whose libcurl is the GnuTLS flavour that pycurl dlopen()s) works under the
# shim: through 429s it gets the exact body and only the final headers, a
# duplicated handle keeps its own state, and a handle reset and reused
# works.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
LIB="$BUILD/libbackoff.so"
[ -f "$LIB" ] || fail "build $LIB first"
$PY -c 'import pycurl' 2>/dev/null || fail "python3-pycurl is not installed (apt-get install python3-pycurl)"

start_server bucket --rate 5 --burst 1
URL="http://127.0.0.1:$PORT"

cat >"$TMP/client.py" <<'EOF'
import io, sys
import pycurl

url = sys.argv[1]

def get(c, n):
    body, heads = io.BytesIO(), []
    c.setopt(pycurl.URL, "%s/item/%d" % (url, n))
    c.setopt(pycurl.WRITEFUNCTION, body.write)
    c.setopt(pycurl.HEADERFUNCTION, heads.append)
    c.perform()
    return c.getinfo(pycurl.RESPONSE_CODE), body.getvalue(), heads

def want(n):
    return (("item=%d;" % n) * 64)[:64].encode()

c = pycurl.Curl()
for n in range(1, 7):
    code, body, heads = get(c, n)
    status_lines = [h for h in heads if h.startswith(b"HTTP/")]
    assert code == 200, (n, code)
    assert body == want(n), (n, body)
    assert len(status_lines) == 1 and b" 200" in status_lines[0], status_lines

# A duplicated handle: its own record, its own callbacks.
c.setopt(pycurl.URL, "%s/item/7" % url)
d = c.duphandle()
b1, b2 = io.BytesIO(), io.BytesIO()
c.setopt(pycurl.WRITEFUNCTION, b1.write)
d.setopt(pycurl.WRITEFUNCTION, b2.write)
d.setopt(pycurl.URL, "%s/item/8" % url)
c.perform()
d.perform()
assert b1.getvalue() == want(7), b1.getvalue()
assert b2.getvalue() == want(8), b2.getvalue()
d.close()

# reset, then reuse.
c.reset()
code, body, heads = get(c, 9)
assert code == 200 and body == want(9), (code, body)

# POST with in-memory fields through a 429.
c.reset()
out = io.BytesIO()
c.setopt(pycurl.URL, "%s/item/10" % url)
c.setopt(pycurl.POSTFIELDS, "k=v")
c.setopt(pycurl.WRITEFUNCTION, out.write)
c.perform()
assert c.getinfo(pycurl.RESPONSE_CODE) == 200, c.getinfo(pycurl.RESPONSE_CODE)
assert out.getvalue().startswith(b"fnv1a64="), out.getvalue()
c.close()
print("pycurl ok")
EOF

note "without the shim the same client meets 429s (so this test can fail)"
rc=0
$PY "$TMP/client.py" "$URL" >"$TMP/plain.out" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "the client passed without the shim: the bucket is not throttling"

note "under the shim"
BACKOFF_STATS="$TMP/stats.json" LD_PRELOAD="$LIB" $PY "$TMP/client.py" "$URL" >"$TMP/shim.out" 2>&1 ||
    fail "pycurl under the shim: $(cat "$TMP/shim.out")"
cat "$TMP/shim.out" "$TMP/stats.json"
grep -q '^pycurl ok$' "$TMP/shim.out" || fail "no 'pycurl ok'"
[ "$(stats_sum "$TMP/stats.json" calls)" -eq 10 ] || fail "expected 10 managed calls"
[ "$(stats_sum "$TMP/stats.json" attempts)" -gt 10 ] || fail "no retries"
stop_server
echo "ok"
