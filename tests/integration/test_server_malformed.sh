#!/bin/sh
# Malformed requests get 400 (or, for bytes that are not HTTP at all, a closed
# connection) and the server keeps serving everyone else.
. "$(dirname "$0")/lib.sh"

start_server bad
rc=0
python3 - "$PORT" >"$TMP/py.out" <<'PY' || rc=$?
import socket, sys
port = int(sys.argv[1])
def ask(raw):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(raw)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except socket.timeout:
        data = b"TIMEOUT"
    s.close()
    return data.split(b"\r\n")[0].decode("latin-1")
cases = [
    ("header without colon", b"GET /item/1 HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n", "400"),
    ("bad Content-Length", b"POST /item/1 HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", "400"),
    ("bad size argument", b"GET /item/1?size=abc HTTP/1.1\r\nHost: x\r\n\r\n", "400"),
    ("unknown HTTP version", b"GET /item/1 HTTP/9.9\r\nHost: x\r\n\r\n", "505"),
]
bad = 0
for name, raw, want in cases:
    line = ask(raw)
    ok = line.startswith("HTTP/1.1 " + want)
    print("%-22s -> %s" % (name, line))
    bad += not ok
# Not HTTP at all: the server may close without an answer, but must not
# answer it as a request.
line = ask(b"GARBAGE\r\n\r\n")
print("%-22s -> %r" % ("garbage request line", line))
bad += line.startswith("HTTP/1.1 2")
sys.exit(bad)
PY
cat "$TMP/py.out"
[ "$rc" = 0 ] || fail "$rc malformed requests were not refused as expected"
kill -0 "$SERVER_PID" || fail "the server died"
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 100 --threads 4 --verify >"$TMP/lg.tsv"
cat "$TMP/lg.tsv"
[ "$(summary_field "$TMP/lg.tsv" ok)" = 100 ] || fail "the server stopped serving after malformed requests"
[ "$(summary_field "$TMP/lg.tsv" body_mismatch)" = 0 ] || fail "wrong bodies after malformed requests"
stop_server
note "malformed requests refused; 100 good ones served after them"
