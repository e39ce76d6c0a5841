#!/bin/sh
# ratelimit-server over TLS (--tls-cert/--tls-key, libmicrohttpd's GnuTLS):
# curl over https gets the right bodies (GET, a POST's digest, a --serve-dir
# file, a directory's index.html as text/html) and the same token-bucket throttling as over http (the same
# statuses, a 429 with Retry-After and the RateLimit-* headers); python3's
# urllib.request verifies the generated certificate through SSL_CERT_FILE
# (and refuses it without); plain http to the TLS port fails at once and
# leaves the server serving; the server exits 0 with its summary; bad TLS
# flags are one line each, exit 2.  The certificate is made here
# (make_test_cert), never committed.
. "$(dirname "$0")/lib.sh"

make_test_cert "$TMP/tls"
CERT=$TMP/tls/cert.pem
KEY=$TMP/tls/key.pem

# Bad flags: one line naming the flag, exit 2.
bad_flag() { # expected message start, args...
    want=$1; shift
    rc=0; "$BUILD/ratelimit-server" --port 0 --duration 5 "$@" >"$TMP/bad.out" 2>"$TMP/bad.err" || rc=$?
    [ "$rc" = 2 ] || fail "ratelimit-server $*: exit $rc, expected 2 ($(cat "$TMP/bad.err"))"
    [ "$(wc -l <"$TMP/bad.err")" = 1 ] || fail "ratelimit-server $*: expected one stderr line: $(cat "$TMP/bad.err")"
    case $(cat "$TMP/bad.err") in
    "$want"*) ;;
    *) fail "ratelimit-server $*: '$(cat "$TMP/bad.err")' does not start with '$want'" ;;
    esac
    [ ! -s "$TMP/bad.out" ] || fail "ratelimit-server $*: listened anyway: $(cat "$TMP/bad.out")"
}
bad_flag 'ratelimit-server: --tls-cert and --tls-key go together' --tls-cert "$CERT"
bad_flag "ratelimit-server: --tls-key \"$TMP/none.pem\" is not valid: expected a readable PEM file" \
    --tls-cert "$CERT" --tls-key "$TMP/none.pem"
echo "not a certificate" >"$TMP/junk.pem"
bad_flag 'ratelimit-server: --tls-cert "' --tls-cert "$TMP/junk.pem" --tls-key "$KEY"
mkdir -p "$TMP/other"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=x \
    -keyout "$TMP/other/key.pem" -out "$TMP/other/cert.pem" >/dev/null 2>&1 || fail "openssl"
bad_flag 'ratelimit-server: --tls-cert "' --tls-cert "$CERT" --tls-key "$TMP/other/key.pem"

# The same token bucket over http and over https: 3 from the burst, then 429s.
mkdir -p "$TMP/files/simple"
head -c 100000 /dev/urandom >"$TMP/files/simple/blob.bin"
echo '<a href="blob.bin">blob.bin</a>' >"$TMP/files/simple/index.html"
mkdir -p "$TMP/files/nothing"
statuses() { # URL-base [curl args]: the statuses of 6 GETs in a row
    _b=$1; shift
    for i in 1 2 3 4 5 6; do
        curl -s -o /dev/null -w '%{http_code} ' "$@" "$_b/item/$i" || true
    done
}
start_server plain --rate 0.2 --burst 3 --ratelimit-headers ratelimit
plain=$(statuses "http://127.0.0.1:$PORT")
stop_server
start_server tls --tls-cert "$CERT" --tls-key "$KEY" --rate 0.2 --burst 3 \
    --ratelimit-headers ratelimit --serve-dir "$TMP/files"
TLS_PID=$SERVER_PID
U="https://127.0.0.1:$PORT"
tls=$(statuses "$U" --cacert "$CERT")
note "statuses over http: $plain; over https: $tls"
[ "$plain" = "200 200 200 429 429 429 " ] || fail "http: $plain (expected 3 x 200, then 429s)"
[ "$tls" = "$plain" ] || fail "https statuses '$tls' differ from http's '$plain'"

# A throttled answer in full over https.
curl -s -i --cacert "$CERT" "$U/item/9" | tr -d '\r' >"$TMP/resp" || fail "curl https failed"
head -n 1 "$TMP/resp" | grep -q '^HTTP/1.1 429' || fail "expected a 429: $(head -n 1 "$TMP/resp")"
hdr() { awk -F': ' -v h="$1" 'tolower($1) == tolower(h) { print $2; exit }' "$TMP/resp"; }
ra=$(hdr Retry-After)
echo "$ra" | grep -Eq '^[0-9]+$' && [ "$ra" -ge 1 ] && [ "$ra" -le 5 ] ||
    fail "Retry-After '$ra' over https is not 1..5 s"
[ "$(hdr RateLimit-Limit)" = 3 ] && [ "$(hdr RateLimit-Remaining)" = 0 ] ||
    fail "RateLimit-* headers over https: $(cat "$TMP/resp")"
[ "$(tail -n 1 "$TMP/resp")" = rejected ] || fail "429 body: $(tail -n 1 "$TMP/resp")"
stop_server

# Bodies: an item, a POST's digest, a file of --serve-dir, over one https server.
start_server tls2 --tls-cert "$CERT" --tls-key "$KEY" --serve-dir "$TMP/files"
TLS_PID=$SERVER_PID
U="https://127.0.0.1:$PORT"
curl -sf --cacert "$CERT" "$U/item/7?size=5000" >"$TMP/item" || fail "GET over https failed"
item_body 7 5000 >"$TMP/item.want"
cmp -s "$TMP/item" "$TMP/item.want" || fail "GET /item/7 over https: wrong body"
head -c 30000 /dev/urandom >"$TMP/up.bin"
got=$(curl -sf --cacert "$CERT" --data-binary @"$TMP/up.bin" "$U/item/8") || fail "POST over https failed"
[ "$got" = "$(fnv1a64 "$TMP/up.bin")" ] || fail "POST over https: '$got', expected '$(fnv1a64 "$TMP/up.bin")'"
curl -sf --cacert "$CERT" "$U/simple/blob.bin" -o "$TMP/blob" || fail "--serve-dir over https failed"
cmp -s "$TMP/blob" "$TMP/files/simple/blob.bin" || fail "--serve-dir over https: wrong bytes"
# a path ending in / is its index.html, sent as text/html (a PEP 503 index for pip)
ctype=$(curl -sf --cacert "$CERT" -o "$TMP/index" -w '%{content_type}' "$U/simple/") ||
    fail "--serve-dir index over https failed"
cmp -s "$TMP/index" "$TMP/files/simple/index.html" && [ "$ctype" = text/html ] ||
    fail "GET /simple/: content type '$ctype', body $(head -c 80 "$TMP/index")"
[ "$(curl -s --cacert "$CERT" -o /dev/null -w '%{http_code}' "$U/nothing/")" = 404 ] ||
    fail "a directory without index.html is not 404"
# localhost is in the certificate too
curl -sf --cacert "$CERT" "https://localhost:$PORT/item/1" >/dev/null || fail "https://localhost failed"
# without the certificate, curl refuses the server (a real verification)
rc=0; curl -s -o /dev/null "$U/item/1" || rc=$?
[ "$rc" = 60 ] || fail "curl without --cacert: exit $rc, expected 60 (certificate not trusted)"

# python3's urllib.request (Debian's python3) trusts the server through SSL_CERT_FILE only.
PY='import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())'
got=$(SSL_CERT_FILE=$CERT timeout -k 2 20 /usr/bin/python3 -c "$PY" "$U/item/3?size=100") ||
    fail "python3 urllib.request over https failed"
[ "$got" = "$(item_body 3 100)" ] || fail "urllib.request body: '$got'"
rc=0; SSL_CERT_FILE=/dev/null timeout -k 2 20 /usr/bin/python3 -c "$PY" "$U/item/3" \
    >"$TMP/py.out" 2>&1 || rc=$?
[ "$rc" != 0 ] && grep -q CERTIFICATE_VERIFY_FAILED "$TMP/py.out" ||
    fail "python3 without the certificate: exit $rc: $(tail -n 2 "$TMP/py.out")"

# Plain http to the TLS port fails at once, and the server goes on serving.
t0=$(date +%s%N)
rc=0; code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/item/1") || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
note "plain http to the TLS port: curl exit $rc, status $code, after $ms ms"
[ "$rc" != 0 ] && [ "$code" = 000 ] || fail "plain http to the TLS port: exit $rc, status $code"
[ "$rc" != 28 ] && [ "$ms" -lt 5000 ] || fail "plain http to the TLS port hung ($ms ms, exit $rc)"
curl -sf --cacert "$CERT" "$U/item/2" >/dev/null || fail "https after a plain request failed"

# Clean exit: status 0 and the summary (the plain request is not an answer).
kill -TERM "$TLS_PID"
rc=0; wait "$TLS_PID" || rc=$?
[ "$rc" = 0 ] || fail "the TLS server exited $rc"
cat "$TMP/tls2.out"
[ "$(summary_field "$TMP/tls2.out" ok)" = 7 ] || fail "ok $(summary_field "$TMP/tls2.out" ok), expected 7"
[ "$(summary_field "$TMP/tls2.out" posts)" = 1 ] || fail "posts: $(summary_field "$TMP/tls2.out" posts)"
note "https: same throttling as http, bodies right (item, POST digest, file), curl and urllib verify the test certificate, plain http refused at once, clean exit"
