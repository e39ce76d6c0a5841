#!/bin/sh
# The http room over https (shim/http/ssl.c): programs whose OpenSSL object
# is bound to a socket get the libcurl programs' retries.  Against
# ratelimit-server --tls-cert (a make_test_cert certificate the clients
# trust), plain and under the shim (tests/integration/http_lib.sh):
#   - every OpenSSL client (requests Session and get, urllib, http.client
#     and its POSTs, Ruby's net/http, Perl's LWP and HTTP::Tiny, PHP's
#     file_get_contents) and wget (GnuTLS: same-connection retries) against
#     a token bucket: plain some answers are 429s, under the shim every body
#     is right, no POST twice;
#   - a server that closes every connection, with Retry-After: each retry is
#     a new TCP connection onto the program's fd and a new handshake of the
#     program's own SSL object;
#   - the new connection's certificate does not verify (a server that
#     changes certificates): the program gets the original 429, whole;
#   - libssl called from a dependency of a module dlopen()ed RTLD_LOCAL is
#     found (a wheel's bundled libpq);
#   - curl (libcurl on OpenSSL) is the libcurl room's: its SSL_* calls pass
#     through the hooks untouched, one layer of retries;
#   - wget against a server that closes every connection: its 429s stand at
#     once (GnuTLS cannot handshake its session again), as plain;
#   - not reached, and unchanged: an asyncio client (memory BIOs): the same
#     answers plain and under the shim, no call followed;
#   - nothing throttled: byte-exact with plain, the same requests, none
#     retried.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/http_lib.sh"

make_test_cert "$TMP/tls"
CERT=$TMP/tls/cert.pem
SSL_CERT_FILE=$CERT
PERL_LWP_SSL_CA_FILE=$CERT
export SSL_CERT_FILE PERL_LWP_SSL_CA_FILE
TLS="--tls-cert $CERT --tls-key $TMP/tls/key.pem"

# ---- a token bucket; a closing server with Retry-After -------------------------

SEC=bucket
# shellcheck disable=SC2086
start_server bucket $TLS --rate 10 --burst 3 --bucket-hints none
for c in session get urllib client post ruby lwp tiny php wget; do
    throttled $c "https://127.0.0.1:$PORT" $N 0.4
done
stop_server
[ "$(summary_field "$TMP/bucket.out" duplicate_posts)" = 0 ] || fail "a POST reached the server twice"

SEC=close
# shellcheck disable=SC2086
start_server close $TLS --rate 10 --burst 3 --close
for c in client ruby; do throttled $c "https://127.0.0.1:$PORT" $N 0.4; done
stop_server

# ---- the new connection's certificate does not verify --------------------------

mkdir -p "$TMP/other"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/other/key.pem" \
    -out "$TMP/other/cert.pem" >/dev/null 2>&1 || fail "openssl could not make a second certificate"
for how in plain shim; do
    start_py_server flip.$how "$PROGS/tls_flip_server.py" "$CERT" "$TMP/tls/key.pem" \
        "$TMP/other/cert.pem" "$TMP/other/key.pem"
    # shellcheck disable=SC2046
    run "$TMP/flip.$how" $how $(client once "https://127.0.0.1:$PORT" 1 flip)
    stop_server
    grep -qx 'status 429 body rejected' "$TMP/flip.$how" || fail "flip ($how): $(cat "$TMP/flip.$how")"
done
grep -q 'conn 2 handshake failed' "$TMP/flip.shim.out" ||
    fail "the shim's retry did not meet the second certificate: $(cat "$TMP/flip.shim.out")"
[ "$(stats_sum "$TMP/flip.shim.stats" retries)" = 1 ] || fail "flip: the shim did not retry"
note "a retry whose new connection does not verify hands back the 429 it replaced, whole"

# ---- GnuTLS on a closing server: no retry, the 429 at once ----------------------

# wget's GnuTLS session cannot handshake again on a new connection: a 429
# that closes its connection stands, handed over at once (no wait)
# shellcheck disable=SC2086
start_server gclose $TLS --rate 1 --burst 2 --close
# shellcheck disable=SC2046
run "$TMP/gclose.plain" plain $(client wget "https://127.0.0.1:$PORT" 6 gclose)
sleep 2.1
# shellcheck disable=SC2046
run "$TMP/gclose.shim" shim $(client wget "https://127.0.0.1:$PORT" 6 gclose)
stop_server
[ "$(bad_of "$TMP/gclose.plain")" -gt 0 ] || fail "wget on a closing server: nothing was throttled"
cmp -s "$TMP/gclose.plain" "$TMP/gclose.shim" ||
    fail "wget on a closing server: $(cat "$TMP/gclose.plain" "$TMP/gclose.shim")"
[ "$(stats_sum "$TMP/gclose.shim.stats" retries)" = 0 ] &&
    [ "$(stats_sum "$TMP/gclose.shim.stats" wait_ms)" -lt 500 ] ||
    fail "wget on a closing server: the shim waited or retried: $(cat "$TMP/gclose.shim.stats")"
note "wget (GnuTLS) on a closing server: $(cat "$TMP/gclose.shim"), as plain, no retry, no wait"

# ---- not reached: memory BIOs ------------------------------------------------------

# shellcheck disable=SC2086
start_server nr $TLS --rate 10 --burst 3 --bucket-hints none
for c in asyncio; do
    # shellcheck disable=SC2046
    run "$TMP/nr.$c.plain" plain $(client $c "https://127.0.0.1:$PORT" 6 nr)
    sleep 0.4
    # shellcheck disable=SC2046
    run "$TMP/nr.$c.shim" shim $(client $c "https://127.0.0.1:$PORT" 6 nr)
    sleep 0.4
    cmp -s "$TMP/nr.$c.plain" "$TMP/nr.$c.shim" ||
        fail "$c over https: not the same under the shim: $(cat "$TMP/nr.$c.plain" "$TMP/nr.$c.shim")"
    [ "$(bad_of "$TMP/nr.$c.plain")" -gt 0 ] || fail "$c: nothing was throttled"
    [ "$(stats_sum "$TMP/nr.$c.shim.stats" calls)" = 0 ] || fail "$c over https was followed"
done
stop_server
note "asyncio (memory BIOs) over https: not reached, the same answers as plain"

# ---- libcurl's own TLS is the libcurl room's: retried once, not twice ----------

# shellcheck disable=SC2086
start_server curl $TLS --rate 10 --burst 3
urls=""
for i in 1 2 3 4 5 6; do urls="$urls -o /dev/null https://127.0.0.1:$PORT/item/$i"; done
# shellcheck disable=SC2086
setsid timeout -k 2 60 env LD_PRELOAD="$LIB" BACKOFF_SHARE=process BACKOFF_STATS="$TMP/curl.stats" \
    curl -s --cacert "$CERT" -w '%{http_code} ' $urls >"$TMP/curl.codes" 2>&1 ||
    fail "curl over https: $(cat "$TMP/curl.codes")"
stop_server
[ "$(cat "$TMP/curl.codes")" = "200 200 200 200 200 200 " ] || fail "curl over https: $(cat "$TMP/curl.codes")"
[ "$(summary_field "$TMP/curl.out" requests)" = "$(stats_sum "$TMP/curl.stats" attempts)" ] ||
    fail "curl over https: the server answered $(summary_field "$TMP/curl.out" requests) requests, the shim made $(stats_sum "$TMP/curl.stats" attempts) attempts"
note "curl over https: every answer 200, one retry layer ($(stats_sum "$TMP/curl.stats" retries) retries)"

# ---- libssl called from an object that was not dlopen()ed itself -------------

# A module dlopen()ed RTLD_LOCAL whose dependency calls libssl (as Python
# wheels bundle libpq with its libssl): the hooks find that libssl through
# the dependency (a dlsym through its link map crashed in glibc).
cat >"$TMP/mid.c" <<'C'
#include <openssl/ssl.h>
int mid(void);
int mid(void)
{
    SSL_CTX *c = SSL_CTX_new(TLS_client_method());
    SSL *s = c != NULL ? SSL_new(c) : NULL;
    return s != NULL ? SSL_pending(s) + 7 : -1;
}
C
cat >"$TMP/mod.c" <<'C'
int mid(void);
int modx(void);
int modx(void) { return mid(); }
C
cat >"$TMP/main.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    int (*f)(void) = h != NULL ? (int (*)(void))dlsym(h, "modx") : NULL;
    (void)argc;
    printf("%d\n", f != NULL ? f() : -2);
    return 0;
}
C
cc -shared -fPIC -o "$TMP/libmid.so" "$TMP/mid.c" -lssl -lcrypto &&
    cc -shared -fPIC -o "$TMP/libmodx.so" "$TMP/mod.c" -L"$TMP" -lmid -Wl,-rpath,"$TMP" &&
    cc -o "$TMP/dlmain" "$TMP/main.c" -ldl || fail "cannot build the dependency layout"
out=$(setsid timeout -k 2 20 env LD_PRELOAD="$LIB" "$TMP/dlmain" "$TMP/libmodx.so" 2>&1) ||
    fail "libssl through a dlopen()ed module's dependency: $out"
[ "$out" = 7 ] || fail "libssl through a dlopen()ed module's dependency: $out"
note "libssl called from a dependency of a module dlopen()ed RTLD_LOCAL: found"

# ---- nothing throttled: the same bytes, the same requests ---------------------

# shellcheck disable=SC2086
start_server open $TLS --log "$TMP/open.csv"
B="https://127.0.0.1:$PORT"
OPEN="session client ruby lwp tiny php"
# shellcheck disable=SC2086
unthrottled "$B" $OPEN
stop_server
unthrottled_requests 6
note "unthrottled over https: 6 clients byte-exact with their plain runs, the same requests"
echo "ok"
