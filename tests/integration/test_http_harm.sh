#!/bin/sh
# The harm suite: the http room's hooks reach programs that must never wait
# inside a call, servers, half-closes and TLS peers; none of them may be
# slowed, stalled, misled or handed another peer's answer.  Each case runs a
# real program plain and under the library (LD_PRELOAD, or backoff --),
# default BACKOFF_* unless said, each run in its own session under a hard
# timeout, against loopback servers that answer as real ones do
# (tests/programs/harm_server.py: slow answers, 429s, 1xx, WebSocket...;
# harm_tls_server.py: a certificate that changes after the first
# connection).  The outputs (lines starting "time " left out) must be the
# same as plain, except where a throttle legitimately became a clean answer:
#    1. aiohttp, one loop, 30 concurrent GETs of a 2 s answer: the time about
#       plain's, the loop's ticker never stalled 0.5 s;
#    2. 20 processes hold a long poll on one destination: another process's
#       quick GET to it takes under 1 s;
#    3. nginx (one worker) as a reverse proxy started under the library,
#       upstream answers 429: the 429 passed on as plain, one upstream request
#       each, the static files it serves meanwhile never stalled;
#    4. TLS identity: requests (CA bundle; by address and by name) and PHP
#       against a server whose next connection shows a certificate of the
#       same CA for another host name, a pinning client (CERT_NONE and a
#       sha256 pin) against a self-signed next peer: the 429, never a 200 from
#       the wrong peer, no request ever reaching it; a requests.Session whose
#       kept-alive connection the server drops: ConnectionError, as plain;
#    5. http.client pipelining 25 requests (25 writes; one write): the same
#       bytes, about as fast as plain, each request sent once;
#    6. nc -N (a half-close) and a python shutdown(SHUT_WR) against an
#       always-429 server: the same 429, no hang;
#    7. a retried request whose next answer takes 3 s, read on a blocking
#       socket without a timeout: it waits for it;
#    8. 103 Early Hints and 102 Processing: the first read at once, a
#       non-blocking recv() never long;
#    9. Node: 20 http.get abandoned with req.destroy(), then one more (about
#       plain's time, the loop's ticker never frozen), `backoff -- curl` from
#       another process meanwhile not delayed, the next 40 requests on the
#       reused fds all followed; 3 runs of 8 fetch() with
#       AbortSignal.timeout(3000): none hangs, no abort where plain has none;
#   10. aiohttp, 8 requests each under wait_for(3 s), 429s with Retry-After 1
#       and 5: no TimeoutError where plain has none, the loop never frozen;
#       the same for 3 of them beside a long poll, without a ticker;
#   11. an epoll loop in C (tests/helpers/harm_epoll.c), 8 GETs on
#       non-blocking sockets answered 429 with Retry-After 1: with a 10 ms
#       ticker (a retry lives across its turns) a 200 or the 429, the ticker
#       never stalled 0.5 s; with its next timer 3 s away, all 8 made clean
#       before it;
#   12. a 429 whose body comes 0.3 s after its head, read by urllib with a
#       timeout (poll) and by http.client blocking: retried, a 200;
#   13. a 200 whose quota headers (each dialect) say none is left until a
#       reset an hour (a minute) ahead, then another request, by curl and
#       python (http.client, urllib, requests); a reset within the cap past
#       curl --max-time 5: as plain, within 2 s (ratelimit-server
#       --quota-spent);
#   14. a 429 whose Retry-After (86400, an HTTP-date in 9999, retry-after-ms,
#       x-ms-retry-after-ms) or quota reset lies an hour or a day ahead,
#       GitHub's 403 so: the answer at once, one request;
#   15. the host-wide state file's instants (hold, pace, quota) and the
#       fleet's next send in Redis set an hour ahead (and 10^16 us): as
#       plain;
#   16. curl over HTTP/2 without TLS (h2c, prior knowledge) against nginx:
#       an always-429 gives the 429 as plain (not a framing error), and a
#       1/s limit's refusal is retried over HTTP/2 into a 200;
#   17. curl --unix-socket to a socket file nobody listens on: exit 7 at
#       once as plain, under a destination of its own (unix:PATH);
#   18. nginx that never throttles, 200 sequential keep-alive GETs, then
#       25 connections that each write a GET before any answer is read:
#       the same answers, the burst under 0.5 s (plain 0.01 s; it waited
#       1.05-1.11 s for the window while a fresh destination took 0.02 s);
#   19. a redial after a 429 that closed the connection, whose new peer
#       never answers or resets at once (requests with no timeout, LWP,
#       curl; http and https), or shows another host's certificate (curl):
#       the 429 as plain (curl: its status, size, type and body, exit 0),
#       within BACKOFF_CAP_MS; requests through a CONNECT proxy
#       (HTTPS_PROXY): never redialled straight to the proxy;
#   20. 2,000 kept-alive connections of http.client: resident memory
#       within 1.3x of plain's;
#   and redis-benchmark (client and server under the library), an SMTP-style
#   line protocol, a WebSocket upgrade, Expect: 100-continue, HEAD, a chunked
#   upload, a 10 MB 429 body.
# Every case runs to its end, and the failures are listed together at the
# end; an optional program that is missing skips its case with a note.
# Bounds are generous (a frozen loop is 10x slower, not 1.2x); the exact
# figures are demo/bench-harm.sh's.
#
# $CLI is two words (the interpreter and the clients' script), split on
# purpose wherever it is used.
# shellcheck disable=SC2086
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/nginx_lib.sh"

BUILD_ABS=$(cd "$BUILD" && pwd)
LIB="$BUILD_ABS/libbackoff.so"
WRAP="$BUILD_ABS/backoff"
PROGS="$TOP/tests/programs"
PY=/usr/bin/python3
CLI="$PY $PROGS/harm_clients.py"
for f in "$LIB" "$WRAP"; do [ -e "$f" ] || fail "$f is missing (make test-programs)"; done
FAILED=""
NFAILED=0
T0=$(date +%s)
: >"$TMP/table"

# harm WHAT: a case failed (the others still run; the test fails at the end).
harm() {
    echo "FAIL: $*" >&2
    FAILED="$FAILED
    $*"
    NFAILED=$((NFAILED + 1))
}
# row CASE PLAIN LIB: a line of the table printed at the end.
row() { printf '%-46s | %-26s | %s\n' "$1" "$2" "$3" >>"$TMP/table"; }
# lt A B: A < B (decimal numbers); plus A B: A + B.
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
plus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a + b }'; }
# tfield FILE KEY: the number after KEY on FILE's "time ..." lines (the last).
tfield() {
    awk -v k="$2" '$1 == "time" { for (i = 2; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$1"
}
# free_port: a port of 127.0.0.1 nobody listens on now.
free_port() {
    $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# hserver NAME [line]: a fresh harm_server.py (every destination's shared
# state reset first: a case never inherits another's throttles); sets PORT,
# SERVER_PID and B, its base URL.
hserver() {
    "$WRAP" --reset >/dev/null 2>&1
    # shellcheck disable=SC2086
    start_py_server "$1" "$PROGS/harm_server.py" ${2:-}
    B="http://127.0.0.1:$PORT"
}
# reqs NAME PATTERN: how many requests server NAME logged whose line matches
# the grep -E PATTERN.
reqs() { grep -Ec "^req $2" "$TMP/$1.out" || true; }

# go OUT HOW SECS CMD...: CMD in its own session, killed with its process
# group after SECS; stdout in OUT, stderr in OUT.err, its wall time in
# seconds in OUT.secs.  HOW: plain, lib (LD_PRELOAD; BACKOFF_STATS in
# OUT.stats, BACKOFF_TRACE in OUT.trace) or wrap (backoff --stats OUT.stats
# --).  Sets RC to CMD's status (124: killed).
go() {
    _o=$1 _h=$2 _s=$3
    shift 3
    RC=0
    _t0=$(date +%s%N)
    rm -f "$_o.stats" "$_o.trace"
    case $_h in
    plain) setsid timeout -k 2 "$_s" "$@" >"$_o" 2>"$_o.err" || RC=$? ;;
    lib)
        setsid timeout -k 2 "$_s" env LD_PRELOAD="$LIB" BACKOFF_STATS="$_o.stats" \
            BACKOFF_TRACE="$_o.trace" "$@" >"$_o" 2>"$_o.err" || RC=$? ;;
    wrap) setsid timeout -k 2 "$_s" "$WRAP" --stats "$_o.stats" -- "$@" >"$_o" 2>"$_o.err" || RC=$? ;;
    esac
    awk -v a="$_t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }' >"$_o.secs"
    grep -v '^time ' "$_o" >"$_o.cmp" || true
}
# pair NAME SECS CMD...: CMD plain ($TMP/NAME.plain) then under the library
# ($TMP/NAME.lib); sets RCP and RCL.  A plain run that fails or is killed
# ends the test (the case itself is broken); a run under the library that
# is killed is a harm ("hung").
pair() {
    _n=$1 _s=$2
    shift 2
    go "$TMP/$_n.plain" plain "$_s" "$@"
    RCP=$RC
    [ $RCP = 0 ] || fail "$_n: the plain run failed (exit $RCP): $(tail -3 "$TMP/$_n.plain" "$TMP/$_n.plain.err")"
    go "$TMP/$_n.lib" lib "$_s" "$@"
    RCL=$RC
    case $RCL in
    0) ;;
    124 | 137) harm "$_n: hung under the library (killed after $_s s): $(tail -3 "$TMP/$_n.lib" | tr '\n' ' ')" ;;
    *) harm "$_n: exit $RCL under the library (plain 0): $(tail -3 "$TMP/$_n.lib.err" | tr '\n' ' ')" ;;
    esac
}
# same NAME: the outputs of NAME's two runs (time lines left out) are the
# same; a harm otherwise.
same() {
    cmp -s "$TMP/$1.plain.cmp" "$TMP/$1.lib.cmp" && return 0
    harm "$1: not the output of plain: $(diff "$TMP/$1.plain.cmp" "$TMP/$1.lib.cmp" | head -6 | tr '\n' ' ')"
    return 1
}
# same_or_clean NAME THROTTLE CLEAN: as same, but a line that is a throttle
# plain (matches the awk regex THROTTLE) may be a clean answer under the
# library (matches CLEAN).
same_or_clean() {
    awk -v tp="$2" -v cl="$3" 'NR == FNR { p[FNR] = $0; np = FNR; next }
        { nl = FNR; if ($0 != p[FNR] && !(p[FNR] ~ tp && $0 ~ cl)) bad++ }
        END { exit (bad > 0 || np != nl) }' "$TMP/$1.plain.cmp" "$TMP/$1.lib.cmp" && return 0
    harm "$1: not the output of plain (but for throttles made clean): $(diff "$TMP/$1.plain.cmp" "$TMP/$1.lib.cmp" | head -8 | tr '\n' ' ')"
    return 1
}

# ---- 1. aiohttp: 30 concurrent slow answers on one loop --------------------------

case_aio_slow() {
    $PY -c 'import aiohttp' 2>/dev/null || { note "1: python3-aiohttp is not installed: skipped"; return 0; }
    hserver aio
    pair aio 60 $PY "$PROGS/harm_aio.py" concurrent "$B" 30 /slow/2
    stop_server
    tp=$(tfield "$TMP/aio.plain" total) tl=$(tfield "$TMP/aio.lib" total)
    sp=$(tfield "$TMP/aio.plain" maxstall) sl=$(tfield "$TMP/aio.lib" maxstall)
    row "1 aiohttp, 30 concurrent GETs of 2 s" "$tp s, stall $sp s" "$tl s, stall $sl s"
    same aio || return 0
    lt "$tl" "$(plus "$tp" 2)" || harm "aio: 30 concurrent slow GETs took $tl s under the library, $tp s plain"
    lt "$sl" 0.5 || harm "aio: the event loop stalled $sl s under the library (plain $sp s)"
}

# ---- 2. long polls hold a destination ----------------------------------------------

case_long_poll() {
    hserver pollp
    bp=$B sp=$SERVER_PID
    hserver polll
    bl=$B sl=$SERVER_PID
    pids=""
    i=0
    while [ $i -lt 20 ]; do
        i=$((i + 1))
        go "$TMP/poll.p.$i" plain 40 $CLI get "$bp/slow/10" &
        pids="$pids $!"
        go "$TMP/poll.l.$i" lib 40 $CLI get "$bl/slow/10" &
        pids="$pids $!"
    done
    w=0
    while [ "$(reqs pollp 'GET /slow/10')" -lt 20 ] || [ "$(reqs polll 'GET /slow/10')" -lt 20 ]; do
        w=$((w + 1))
        [ $w -gt 300 ] && break
        sleep 0.1
    done
    np=$(reqs pollp 'GET /slow/10') nl=$(reqs polll 'GET /slow/10')
    [ "$np" = 20 ] || fail "long poll: the plain pollers sent $np requests in 30 s"
    [ "$nl" = 20 ] || harm "long poll: 20 pollers under the library sent $nl requests in 30 s (plain 20)"
    go "$TMP/poll.quick.plain" plain 30 $CLI get "$bp/quick"
    go "$TMP/poll.quick.lib" lib 30 $CLI get "$bl/quick"
    for p in $pids; do wait "$p" || true; done
    SERVER_PID=$sp
    stop_server
    SERVER_PID=$sl
    stop_server
    qp=$(tfield "$TMP/poll.quick.plain" total) ql=$(tfield "$TMP/poll.quick.lib" total)
    row "2 quick GET beside 20 long polls" "$qp s" "$ql s"
    grep -qx '200 quick' "$TMP/poll.quick.lib" || harm "long poll: the quick GET under the library: $(cat "$TMP/poll.quick.lib")"
    lt "$ql" 1 || harm "long poll: the quick GET beside 20 held requests took $ql s under the library (plain $qp s)"
    bad=0
    i=0
    while [ $i -lt 20 ]; do
        i=$((i + 1))
        grep -qx '200 slow 10' "$TMP/poll.p.$i" || fail "long poll: a plain poller: $(cat "$TMP/poll.p.$i")"
        grep -qx '200 slow 10' "$TMP/poll.l.$i" || bad=$((bad + 1))
    done
    [ "$bad" = 0 ] || harm "long poll: $bad of the 20 pollers under the library did not get their answer"

    # The same with blocking clients (http.client without a timeout: a
    # first attempt that waits for the window when the window is full): 20
    # long polls are requests the server is working on, not a throttle,
    # and keep nobody out.
    hserver pollb
    pids=""
    i=0
    while [ $i -lt 20 ]; do
        i=$((i + 1))
        go "$TMP/pollb.$i" lib 40 $CLI blocking "$B/slow/10" &
        pids="$pids $!"
    done
    w=0
    while [ "$(reqs pollb 'GET /slow/10')" -lt 20 ]; do
        w=$((w + 1))
        [ $w -gt 300 ] && break
        sleep 0.1
    done
    go "$TMP/pollb.quick" lib 30 $CLI blocking "$B/quick"
    for p in $pids; do wait "$p" || true; done
    stop_server
    qb=$(tfield "$TMP/pollb.quick" total)
    row "2 the same, blocking clients" "-" "$qb s"
    grep -qx '200 quick' "$TMP/pollb.quick" && lt "${qb:-99}" 1 ||
        harm "long poll: a blocking quick GET beside 20 held blocking requests: $(cat "$TMP/pollb.quick") (under 1 s expected)"
}

# ---- 3. nginx as a reverse proxy under the library ---------------------------------

# nginx_conf, nginx_start...: nginx_lib.sh.

case_nginx() {
    nginx_find || { note "3: nginx is not installed (Debian: nginx-light): skipped"; return 0; }
    hserver ngup
    for how in plain lib; do
        d=$TMP/nginx.$how
        np=$(free_port)
        nginx_conf "$d" "$np" "$PORT" "$how"
        NGX_PRE=""
        [ $how = lib ] && NGX_PRE="env LD_PRELOAD=$LIB BACKOFF_STATS=$d/stats"
        nginx_start "$d" 120 nginx_serves_static "$np" || fail "nginx ($how): $NGX_WHY"
        go "$TMP/ngx.$how" plain 60 $CLI nginx "http://127.0.0.1:$np" 3
        nginx_stop
    done
    stop_server
    up_p=$(reqs ngup 'GET /always429.*run=plain') up_l=$(reqs ngup 'GET /always429.*run=lib')
    smp=$(tfield "$TMP/ngx.plain" static_max) sml=$(tfield "$TMP/ngx.lib" static_max)
    ap=$(tfield "$TMP/ngx.plain" api_max) al=$(tfield "$TMP/ngx.lib" api_max)
    row "3 nginx proxy, upstream 429 (x3)" "$up_p upstream, api $ap s" "$up_l upstream, api $al s"
    row "3 nginx static file meanwhile (slowest)" "$smp s" "$sml s"
    [ "$up_p" = 3 ] && grep -c '^api [0-9] 429 2 rejected$' "$TMP/ngx.plain" | grep -qx 3 ||
        fail "nginx plain: $(cat "$TMP/ngx.plain") ($up_p upstream requests)"
    cmp -s "$TMP/ngx.plain.cmp" "$TMP/ngx.lib.cmp" ||
        harm "nginx under the library: its clients got $(tr '\n' ' ' <"$TMP/ngx.lib.cmp")(plain: $(tr '\n' ' ' <"$TMP/ngx.plain.cmp"))"
    [ "$up_l" = 3 ] || harm "nginx under the library: $up_l upstream requests for 3 client requests (plain $up_p)"
    lt "$sml" 0.5 || harm "nginx under the library: a static file took $sml s while the proxy met a 429 (plain $smp s)"
}

# ---- 4. TLS: a redial talks only to the peer the program verified ---------------

# tls_certs: a CA, A (127.0.0.1, localhost) and B (other.example) signed by it,
# C self-signed for 127.0.0.1, in $TMP/ca; made now, never committed.
tls_certs() {
    command -v openssl >/dev/null || fail "openssl is not installed (Debian: openssl)"
    c=$TMP/ca
    mkdir -p "$c"
    ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    # shellcheck disable=SC2086
    openssl req -x509 $ec -days 1 -subj "/CN=backoff harm test CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$c/ca.key" -out "$c/ca.pem" >"$c/log" 2>&1 || fail "openssl: the CA: $(cat "$c/log")"
    for n in a b; do
        if [ $n = a ]; then cn=127.0.0.1 san="IP:127.0.0.1,DNS:localhost"; else cn=other.example san="DNS:other.example"; fi
        printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$san" >"$c/$n.ext"
        # shellcheck disable=SC2086
        openssl req -new $ec -subj "/CN=$cn" -keyout "$c/$n.key" -out "$c/$n.csr" >>"$c/log" 2>&1 &&
            openssl x509 -req -in "$c/$n.csr" -CA "$c/ca.pem" -CAkey "$c/ca.key" -CAcreateserial \
                -days 1 -extfile "$c/$n.ext" -out "$c/$n.pem" >>"$c/log" 2>&1 ||
            fail "openssl: certificate $n: $(tail -3 "$c/log")"
    done
    # shellcheck disable=SC2086
    openssl req -x509 $ec -days 1 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
        -keyout "$c/c.key" -out "$c/c.pem" >>"$c/log" 2>&1 || fail "openssl: the self-signed certificate"
}

# tls_case NAME MODE NEXT WANT CMD...: CMD (its @PORT@ the server's port)
# plain and under the library against harm_tls_server.py MODE, whose later
# connections show certificate NEXT (b or c); plain must print WANT (its
# first line), under the library the same, and no request may reach a
# later connection.
tls_case() {
    _n=$1 _m=$2 _x=$3 _want=$4
    shift 4
    for how in plain lib; do
        start_py_server "$_n.srv.$how" "$PROGS/harm_tls_server.py" "$_m" "$TMP/ca/a.pem" "$TMP/ca/a.key" \
            "$TMP/ca/$_x.pem" "$TMP/ca/$_x.key"
        # shellcheck disable=SC2046
        go "$TMP/$_n.$how" $how 40 $(echo "$@" | sed "s/@PORT@/$PORT/g")
        [ $how = plain ] && [ $RC != 0 ] && fail "$_n plain: exit $RC: $(cat "$TMP/$_n.plain.err")"
        [ $how = lib ] && [ $RC != 0 ] && harm "$_n under the library: exit $RC: $(tail -3 "$TMP/$_n.lib.err" | tr '\n' ' ')"
        stop_server
    done
    [ "$(head -n 1 "$TMP/$_n.plain")" = "$_want" ] || fail "$_n plain: '$(cat "$TMP/$_n.plain")', expected '$_want'"
    redial=no
    grep -q '^conn 2 handshake' "$TMP/$_n.srv.lib.out" && redial=yes
    row "4 $_n" "$(head -n 1 "$TMP/$_n.plain")" "$(head -n 1 "$TMP/$_n.lib"), redial $redial"
    ! grep -q 'wrong host' "$TMP/$_n.lib" || harm "$_n: the library handed the program the answer of a peer it did not verify: $(cat "$TMP/$_n.lib")"
    ! grep -q '^conn [2-9] request' "$TMP/$_n.srv.lib.out" ||
        harm "$_n: the library sent the program's request to a peer it did not verify: $(tr '\n' ' ' <"$TMP/$_n.srv.lib.out")"
    same "$_n" || true
}

case_tls() {
    tls_certs
    fp=$(openssl x509 -in "$TMP/ca/a.pem" -outform der | sha256sum | cut -d' ' -f1)
    ca=$TMP/ca/ca.pem
    if $PY -c 'import requests' 2>/dev/null; then
        tls_case tls-requests flip b "429 rejected" $CLI tls "https://127.0.0.1:@PORT@/x" "$ca"
        tls_case tls-requests-name flip b "429 rejected" $CLI tls "https://localhost:@PORT@/x" "$ca"
        tls_case tls-dropped-keepalive drop b "200 first" $CLI tls-session "https://127.0.0.1:@PORT@/x" "$ca"
        grep -q '^error ConnectionError' "$TMP/tls-dropped-keepalive.plain" ||
            fail "tls-dropped-keepalive plain: $(cat "$TMP/tls-dropped-keepalive.plain")"
    else
        note "4: python3-requests is not installed: its TLS cases skipped"
    fi
    if command -v php >/dev/null; then
        tls_case tls-php flip b "HTTP/1.1 429 Too Many Requests" php "$PROGS/harm_tls.php" \
            "https://127.0.0.1:@PORT@/x" "$ca"
    else
        note "4: php is not installed (Debian: php-cli): its TLS case skipped"
    fi
    tls_case tls-pinned flip c "429 rejected" $CLI pin 127.0.0.1 @PORT@ "$fp"
}

# ---- 5. pipelining ----------------------------------------------------------------

case_pipeline() {
    hserver pipe
    pair pipe 30 $CLI pipeline 127.0.0.1 "$PORT" 25
    pair pipe1 30 $CLI pipeline 127.0.0.1 "$PORT" 25 one
    stop_server
    for n in pipe pipe1; do
        bp=$(sed -n 's/^done 25 bad //p' "$TMP/$n.plain") bl=$(sed -n 's/^done 25 bad //p' "$TMP/$n.lib")
        w="25 writes"
        [ $n = pipe1 ] && w="one write"
        row "5 http.client pipelining 25 ($w)" "$(tfield "$TMP/$n.plain" total) s, $((25 - bp)) of 25 right" \
            "$(tfield "$TMP/$n.lib" total) s, $((25 - ${bl:-25})) of 25 right"
    done
    for n in pipe pipe1; do
        grep -qx 'done 25 bad 0' "$TMP/$n.plain" || fail "$n plain: $(tail -3 "$TMP/$n.plain")"
        same $n || true
        t=$(tfield "$TMP/$n.lib" total)
        [ -z "$t" ] || lt "$t" "$(plus "$(tfield "$TMP/$n.plain" total)" 2)" ||
            harm "$n: 25 pipelined requests took $t s under the library"
    done
    [ "$(reqs pipe 'GET /item/')" = 100 ] || harm "pipelining: the server got $(reqs pipe 'GET /item/') requests for 4 x 25"
}

# ---- 6. half-close: nc -N, shutdown(SHUT_WR) --------------------------------------

case_halfclose() {
    hserver half
    if command -v nc >/dev/null; then
        printf 'GET /always429?ra=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >"$TMP/nc.req"
        go "$TMP/nc.plain" plain 20 nc -N 127.0.0.1 "$PORT" <"$TMP/nc.req"
        [ $RC = 0 ] || fail "nc plain: exit $RC"
        n0=$(reqs half 'GET /always429')
        go "$TMP/nc.lib" wrap 30 env BACKOFF_MAX_ATTEMPTS=3 nc -N 127.0.0.1 "$PORT" <"$TMP/nc.req"
        [ $RC = 0 ] || harm "nc -N under backoff --: exit $RC (124: hung)"
        grep -q '^HTTP/1.1 429' "$TMP/nc.plain" || fail "nc plain: $(cat "$TMP/nc.plain")"
        same nc || true
        row "6 nc -N, always 429" "429, $n0 request" \
            "429, $(($(reqs half 'GET /always429') - n0)) requests (BACKOFF_MAX_ATTEMPTS=3)"
    else
        note "6: nc is not installed (Debian: netcat-openbsd): its case skipped"
    fi
    n0=$(reqs half 'GET /always429')
    pair shutwr 30 env BACKOFF_MAX_ATTEMPTS=3 $CLI halfclose 127.0.0.1 "$PORT" '/always429?ra=0'
    same shutwr || true
    row "6 shutdown(SHUT_WR), always 429" "$(head -n 1 "$TMP/shutwr.plain" | cut -c1-12), 1 request" \
        "$(head -n 1 "$TMP/shutwr.lib" | cut -c1-12), $(($(reqs half 'GET /always429') - n0 - 1)) requests"
    go "$TMP/shutwr2.plain" plain 30 $CLI halfclose 127.0.0.1 "$PORT" '/first429/hc-plain?ra=0'
    go "$TMP/shutwr2.lib" lib 30 $CLI halfclose 127.0.0.1 "$PORT" '/first429/hc-lib?ra=0'
    [ $RC = 0 ] || harm "shutdown(SHUT_WR), a 429 then a 200: exit $RC under the library (124: hung)"
    printf 'HTTP/1.1 200 OK\\r\nContent-Type: text/plain\\r\nContent-Length: 3\\r\n\\r\nok\n' >"$TMP/shutwr2.clean"
    cmp -s "$TMP/shutwr2.plain" "$TMP/shutwr2.lib" || cmp -s "$TMP/shutwr2.clean" "$TMP/shutwr2.lib" ||
        harm "shutdown(SHUT_WR), a 429 then a 200: neither plain's 429 nor the 200: $(tr '\n' ' ' <"$TMP/shutwr2.lib")"
    stop_server
}

# ---- 7. a retry's slow answer, read on a blocking socket without a timeout ----

case_slow_retry() {
    hserver slowr
    go "$TMP/slowr.plain" plain 30 $CLI blocking "$B/first429/p?ra=0&slow=3"
    go "$TMP/slowr.lib" lib 30 $CLI blocking "$B/first429/l?ra=0&slow=3"
    [ $RC = 0 ] || harm "slow retry: exit $RC under the library"
    stop_server
    row "7 429 then a 3 s answer, blocking read" "$(head -n 1 "$TMP/slowr.plain"), $(tfield "$TMP/slowr.plain" total) s" \
        "$(head -n 1 "$TMP/slowr.lib"), $(tfield "$TMP/slowr.lib" total) s"
    grep -qx '429 rejected' "$TMP/slowr.plain" || fail "slow retry plain: $(cat "$TMP/slowr.plain")"
    grep -qx '200 ok' "$TMP/slowr.lib" || harm "slow retry: the retried request's 3 s answer was not waited for: $(cat "$TMP/slowr.lib")"
}

# ---- 8. 1xx interim answers ---------------------------------------------------------

case_interim() {
    hserver early
    for c in 103 102; do
        for m in block nonblock; do
            n=early$c$m
            go "$TMP/$n.plain" plain 30 $CLI early 127.0.0.1 "$PORT" "/early/$c" $m &
            p1=$!
            go "$TMP/$n.lib" lib 30 $CLI early 127.0.0.1 "$PORT" "/early/$c" $m &
            p2=$!
            wait $p1 || true
            wait $p2 || true
            grep -q "^after $c" "$TMP/$n.plain" || fail "$n plain: $(cat "$TMP/$n.plain")"
            same $n || true
            fp=$(tfield "$TMP/$n.plain" first) fl=$(tfield "$TMP/$n.lib" first)
            mp=$(tfield "$TMP/$n.plain" maxcall) ml=$(tfield "$TMP/$n.lib" maxcall)
            if [ $m = block ]; then
                row "8 $c then the answer 1 s later, first read" "$fp s" "${fl:-none} s"
            else
                row "8 $c, non-blocking: first read, longest recv" "$fp s, $mp s" "${fl:-none} s, ${ml:-none} s"
                [ -n "$ml" ] && lt "$ml" 0.3 || harm "$n: a non-blocking recv() lasted ${ml:-?} s under the library (plain $mp s)"
            fi
            [ -n "$fl" ] && lt "$fl" 0.5 || harm "$n: the first read came after ${fl:-?} s under the library (plain $fp s)"
        done
    done
    stop_server
}

# ---- 9. Node: sockets closed by the system call, fetch with an abort ------------

case_node() {
    command -v node >/dev/null || { note "9: node is not installed (Debian: nodejs): skipped"; return 0; }
    # node names ld.so among its own dependencies, ahead of a sanitizer's
    # runtime, which then crashes at start (test_http_clients.sh)
    if ldd "$LIB" | grep -q 'lib[at]san'; then
        note "9: a sanitized library cannot run under node: skipped"
        return 0
    fi
    hserver node
    for how in plain lib; do
        rm -f "$TMP/node.go"
        go "$TMP/node.$how" $how 60 node "$PROGS/harm_node.js" destroy "$B" "$TMP/node.go" &
        nj=$!
        w=0
        until grep -q '^ready' "$TMP/node.$how" 2>/dev/null; do
            w=$((w + 1))
            [ $w -gt 400 ] && break
            kill -0 $nj 2>/dev/null || break
            sleep 0.1
        done
        cw=plain
        [ $how = lib ] && cw=wrap
        go "$TMP/node.curl.$how" $cw 30 curl -s -o /dev/null -w '%{http_code} %{time_total}\n' "$B/quick"
        touch "$TMP/node.go"
        wait $nj || true
    done
    grep -q '^reused 40 bad 0' "$TMP/node.plain" || fail "node plain: $(cat "$TMP/node.plain" "$TMP/node.plain.err")"
    grep -q '^time total' "$TMP/node.lib" ||
        harm "node destroy: did not end under the library: $(tr '\n' ' ' <"$TMP/node.lib") $(tail -2 "$TMP/node.lib.err")"
    same node || true
    op=$(tfield "$TMP/node.plain" one) ol=$(tfield "$TMP/node.lib" one)
    sp=$(tfield "$TMP/node.plain" maxstall) sl=$(tfield "$TMP/node.lib" maxstall)
    cp=$(cut -d' ' -f2 "$TMP/node.curl.plain") cl=$(cut -d' ' -f2 "$TMP/node.curl.lib")
    followed=$(awk -F, '$8 == 200' "$TMP/node.lib.trace" 2>/dev/null | wc -l)
    row "9 node: 20 destroyed, then one more (1 s)" "$op s, stall $sp s" "${ol:-none} s, stall ${sl:-none} s"
    row "9 backoff -- curl meanwhile" "$cp s" "$cl s"
    row "9 node: the next 40 on reused fds, followed" "-" "$((followed - 1)) of 40"
    [ -n "$ol" ] && lt "$ol" "$(plus "$op" 2)" || harm "node: the request after 20 destroyed ones took ${ol:-?} s under the library (plain $op s)"
    [ -n "$sl" ] && lt "$sl" 0.5 || harm "node: the event loop stalled ${sl:-?} s under the library (plain $sp s)"
    grep -q '^200 ' "$TMP/node.curl.lib" && lt "$cl" 1 ||
        harm "node: backoff -- curl beside it: $(cat "$TMP/node.curl.lib") (plain $cp s)"
    [ "$followed" = 41 ] || harm "node: the library followed $followed answers of 41 (the one after the destroyed and the 40 on reused fds)"

    stop_server
    # fetch: a destination that has seen nothing yet (the runs above grew its window)
    hserver fetch
    go "$TMP/fetch.plain" plain 30 node "$PROGS/harm_node.js" fetch "$B" plain
    [ $RC = 0 ] || fail "node fetch plain: exit $RC"
    grep -c '^[1-6] 429 rejected$' "$TMP/fetch.plain" | grep -qx 6 || fail "node fetch plain: $(cat "$TMP/fetch.plain")"
    for r in 1 2 3; do
        go "$TMP/fetch$r.lib" lib 30 node "$PROGS/harm_node.js" fetch "$B" lib$r
        cp "$TMP/fetch.plain" "$TMP/fetch$r.plain"
        cp "$TMP/fetch.plain.cmp" "$TMP/fetch$r.plain.cmp"
        [ $RC = 0 ] || harm "node fetch run $r: exit $RC under the library (124: hung)"
        same_or_clean fetch$r ' 429 rejected$' ' 200 ok$' || true
        s=$(tfield "$TMP/fetch$r.lib" maxstall)
        [ -n "$s" ] && lt "$s" 0.5 || harm "node fetch run $r: the loop stalled ${s:-?} s"
    done
    stop_server
    row "9 node: 8 fetch, AbortSignal.timeout(3000), x3" "$(grep -v '^time' "$TMP/fetch.plain" | cut -d' ' -f2 | sort | uniq -c | tr -s ' \n' ' ')" \
        "$(cat "$TMP"/fetch[123].lib.cmp | cut -d' ' -f2 | sort | uniq -c | tr -s ' \n' ' ')"
}

# ---- 10. aiohttp: wait_for(3 s) of throttled requests -----------------------------

case_aio_waitfor() {
    $PY -c 'import aiohttp' 2>/dev/null || { note "10: python3-aiohttp is not installed: skipped"; return 0; }
    hserver aiow
    for ra in 1 5; do
        n=aiowait$ra
        go "$TMP/$n.plain" plain 30 $PY "$PROGS/harm_aio.py" waitfor "$B" 8 "/first429/p$ra-?ra=$ra&i=" 3
        go "$TMP/$n.lib" lib 30 $PY "$PROGS/harm_aio.py" waitfor "$B" 8 "/first429/l$ra-?ra=$ra&i=" 3
        [ $RC = 0 ] || harm "$n: exit $RC under the library (124: hung)"
        grep -c '^[0-9] 429 rejected$' "$TMP/$n.plain" | grep -qx 8 || fail "$n plain: $(cat "$TMP/$n.plain")"
        same_or_clean $n ' 429 rejected$' ' 200 ok$' || true
        sp=$(tfield "$TMP/$n.plain" maxstall) sl=$(tfield "$TMP/$n.lib" maxstall)
        row "10 aiohttp 8 x wait_for(3), Retry-After $ra" "$(tfield "$TMP/$n.plain" total) s, stall $sp s" \
            "$(grep -c 'TimeoutError' "$TMP/$n.lib") timeouts, $(tfield "$TMP/$n.lib" total) s, stall ${sl:-none} s"
        [ -n "$sl" ] && lt "$sl" 0.5 || harm "$n: the event loop stalled ${sl:-?} s under the library (plain $sp s)"
    done
    stop_server
    # no ticker, and a long poll beside the throttled requests (each under
    # wait_for(3 s) too): the window a throttle cut is held by the poll
    hserver aiob
    go "$TMP/aiobeside.plain" plain 30 $PY "$PROGS/harm_aio.py" beside "$B" 3 "/first429/p-?ra=1&i=" 3 /slow/5 &
    p1=$!
    go "$TMP/aiobeside.lib" lib 30 $PY "$PROGS/harm_aio.py" beside "$B" 3 "/first429/l-?ra=1&i=" 3 /slow/5 &
    p2=$!
    wait $p1 || true
    wait $p2 || true
    stop_server
    grep -c '^[0-9] 429 rejected$' "$TMP/aiobeside.plain" | grep -qx 3 || fail "aiobeside plain: $(cat "$TMP/aiobeside.plain")"
    grep -q '^time total' "$TMP/aiobeside.lib" || harm "aiobeside: did not end under the library: $(tail -3 "$TMP/aiobeside.lib.err")"
    same_or_clean aiobeside ' 429 rejected$' ' 200 ok$' || true
    row "10 3 x wait_for(3), Retry-After 1, beside a 5 s poll" "answers after $(tfield "$TMP/aiobeside.plain" answered) s" \
        "$(grep -c '^[0-9] TimeoutError' "$TMP/aiobeside.lib" || true) timeouts, answers after $(tfield "$TMP/aiobeside.lib" answered) s"
}

# ---- 11. an epoll loop in C: throttled GETs on non-blocking sockets ---------------

case_epoll() {
    hserver epoll
    pair epoll 30 "$BUILD_ABS/tests/helpers/harm_epoll" "$PORT" 8 "/first429/ep?ra=1&k="
    # the same loop whose next timer is 3 s away: room for the retries
    pair epollt 30 "$BUILD_ABS/tests/helpers/harm_epoll" "$PORT" 8 "/first429/et?ra=1&k=" 3000
    stop_server
    for n in epoll epollt; do
        grep -c ' 429$' "$TMP/$n.plain" | grep -qx 8 || fail "$n plain: $(cat "$TMP/$n.plain")"
        same_or_clean $n ' 429$' ' 200$' || true
    done
    sp=$(tfield "$TMP/epoll.plain" maxstall) sl=$(tfield "$TMP/epoll.lib" maxstall)
    row "11 C epoll loop, 10 ms ticker, 8 x 429 (1 s)" \
        "$(tfield "$TMP/epoll.plain" elapsed) s, stall $sp s" \
        "$(grep -c ' 200$' "$TMP/epoll.lib") x 200, $(tfield "$TMP/epoll.lib" elapsed) s, stall ${sl:-none} s"
    [ -n "$sl" ] && lt "$sl" 0.5 || harm "epoll: the C event loop stalled ${sl:-?} s under the library (plain $sp s)"
    el=$(tfield "$TMP/epollt.lib" elapsed)
    row "11 the same, next timer 3 s away" "$(tfield "$TMP/epollt.plain" elapsed) s" \
        "$(grep -c ' 200$' "$TMP/epollt.lib") x 200, ${el:-none} s"
    # a retry waits within the loop's own bound: all clean before its timer
    grep -c ' 200$' "$TMP/epollt.lib" | grep -qx 8 || harm "epollt: not every 429 made clean under the library: $(tr '\n' ' ' <"$TMP/epollt.lib")"
    [ -n "$el" ] && lt "$el" 3 || harm "epollt: the loop's answers took ${el:-?} s, past its 3 s timer"
}

# ---- 12. a 429 whose body comes after its head --------------------------------------

# A server writes a throttle's head and its body apart (Python's http.server
# does; a busy one leaves time between them): the throttle is judged whole,
# where the program polls (urllib with a timeout) as where it blocks.
case_split() {
    hserver split
    for how in get blocking; do
        n=split$how
        go "$TMP/$n.plain" plain 30 $CLI $how "$B/first429/p$how?ra=0&split=0.3"
        go "$TMP/$n.lib" lib 30 $CLI $how "$B/first429/l$how?ra=0&split=0.3"
        [ $RC = 0 ] || harm "$n: exit $RC under the library (124: hung)"
        grep -q '^429 ' "$TMP/$n.plain.cmp" || fail "$n plain: $(cat "$TMP/$n.plain")"
        grep -q '^200 ok' "$TMP/$n.lib.cmp" ||
            harm "$n: a 429 whose body came 0.3 s after its head was not retried: $(cat "$TMP/$n.lib")"
        row "12 429 body 0.3 s after its head ($how)" "$(head -1 "$TMP/$n.plain.cmp")" "$(head -1 "$TMP/$n.lib.cmp")"
    done
    stop_server
}

# ---- 13-15. a wait the program did not ask for is bounded ---------------------------

# rserver NAME FLAGS...: a fresh ratelimit-server (every destination's shared
# state reset first); sets PORT, SERVER_PID and U, the URL of an item.
rserver() {
    "$WRAP" --reset >/dev/null 2>&1
    start_server "$@"
    U="http://127.0.0.1:$PORT/item/1"
}
# asplain NAME SECS SERVER TOTAL CMD...: CMD plain then under the library
# (pair), against ratelimit-server SERVER (stopped after); the outputs must be
# the same, the run under the library within 2 s of plain's (a wait it did
# not ask for is a harm), and the server must have seen TOTAL requests in
# all, as many from each run as the program sends (a retry every cap is a
# harm, and so is a request held back).
asplain() {
    _n=$1 _s=$2 _srv=$3 _want=$4
    shift 4
    pair "$_n" "$_s" "$@"
    stop_server
    _np=$(summary_field "$TMP/$_srv.out" requests)
    _tp=$(cat "$TMP/$_n.plain.secs") _tl=$(cat "$TMP/$_n.lib.secs")
    same "$_n" || true
    lt "$_tl" "$(plus "$_tp" 2)" || harm "$_n: $_tl s under the library, $_tp s plain"
    [ "$_np" = "$_want" ] || harm "$_n: the server saw $_np requests, $_want expected"
}

# 13. A 200 whose quota headers say none is left until a reset an hour (or a
# minute) ahead, in each dialect, and the program's next request: the server
# never refuses, and a reset past BACKOFF_CAP_MS or the program's own
# deadline is a prediction not waited for (it hung; python took 54.8 s for a
# minute, curl --max-time 5 failed at 5.1 s, exit 28).
case_far_reset() {
    for d in x-ratelimit ratelimit draft openai discord x-rate-limit; do
        rserver "frs.$d" --quota-spent 3600 --ratelimit-headers $d
        asplain "fr.$d" 30 "frs.$d" 4 curl -s -o /dev/null -o /dev/null -w '%{http_code}\n' "$U" "$U"
        row "13 200, reset 1 h ahead ($d), curl x2" "$(cat "$TMP/fr.$d.plain.secs") s" \
            "$(tr '\n' ' ' <"$TMP/fr.$d.lib")$(cat "$TMP/fr.$d.lib.secs") s"
    done
    for how in blocking urllib requests; do
        rserver "frps.$how" --quota-spent 3600 --ratelimit-headers x-ratelimit
        asplain "frp.$how" 30 "frps.$how" 4 $CLI seq "$U" 2 $how
        row "13 the same, python $how x2" "$(cat "$TMP/frp.$how.plain.secs") s" \
            "$(cat "$TMP/frp.$how.lib.secs") s"
    done
    rserver frms --quota-spent 60 --ratelimit-headers discord
    asplain frm 30 frms 4 $CLI seq "$U" 2 requests 20
    row "13 reset 1 min ahead, requests (timeout 20) x2" "$(cat "$TMP/frm.plain.secs") s" \
        "$(cat "$TMP/frm.lib.secs") s"
    # a reset within the cap but past the program's deadline: its own
    # request goes (another process spent the quota before)
    rserver frds --quota-spent 15 --ratelimit-headers ratelimit
    # shellcheck disable=SC2016
    asplain frd 30 frds 4 sh -c 'curl -s -o /dev/null "$1"; curl --max-time 5 -s -w " %{http_code}\n" "$1"; echo "exit $?"' sh "$U"
    row "13 reset 15 s ahead, curl --max-time 5" "$(tail -1 "$TMP/frd.plain"), $(cat "$TMP/frd.plain.secs") s" \
        "$(tail -1 "$TMP/frd.lib"), $(cat "$TMP/frd.lib.secs") s"
    # ...and python's socket timeout of 5 s (its poll's deadline)
    for how in requests urllib; do
        rserver "frts.$how" --quota-spent 15 --ratelimit-headers ratelimit
        asplain "frt.$how" 30 "frts.$how" 4 $CLI seq "$U" 2 $how 5
        row "13 reset 15 s ahead, $how (timeout 5) x2" "$(cat "$TMP/frt.$how.plain.secs") s" \
            "$(cat "$TMP/frt.$how.lib.secs") s"
    done
}

# 14. A refusal whose wait lies past BACKOFF_CAP_MS (Retry-After: 86400, an
# HTTP-date in 9999, retry-after-ms, x-ms-retry-after-ms; GitHub's 403 and a
# 429 whose quota resets in an hour): the server's answer at once, one
# request, as plain (8 attempts over 140 s, asked every 20 s).
case_far_retry_after() {
    i=0
    for srv in "--retry-after-raw 86400" "--retry-after-raw|Fri, 31 Dec 9999 23:59:59 GMT" \
        "--retry-after 86400 --retry-after-form ms" "--retry-after 86400 --retry-after-form ms-azure" \
        "--reject-status 403 --ratelimit-headers x-ratelimit --quota-spent 3600 --retry-after-form none" \
        "--ratelimit-headers ratelimit --quota-spent 3600 --retry-after-form none"; do
        i=$((i + 1))
        case $srv in
        *"|"*) set -- "${srv%%|*}" "${srv#*|}" ;;
        *) set -- $srv ;;
        esac
        for how in curl blocking urllib; do
            rserver "fas.$i.$how" --max-busy 0 "$@"
            if [ $how = curl ]; then
                asplain "fa.$i.$how" 60 "fas.$i.$how" 2 curl -s -o /dev/null -w '%{http_code}\n' "$U"
            elif [ $how = blocking ]; then # no timeout: nothing else bounds the waits
                asplain "fa.$i.$how" 60 "fas.$i.$how" 2 $CLI seq "$U" 1 blocking
            else
                asplain "fa.$i.$how" 60 "fas.$i.$how" 2 $CLI seq "$U" 1 urllib 20
            fi
        done
        row "14 $(echo "$*" | cut -c1-44)" "$(cat "$TMP/fa.$i.curl.plain"), $(cat "$TMP/fa.$i.curl.plain.secs") s" \
            "curl $(cat "$TMP/fa.$i.curl.lib.secs") s, python $(cat "$TMP/fa.$i.blocking.lib.secs") s, $(cat "$TMP/fa.$i.urllib.lib.secs") s"
    done
}

# 15. The destination's state that others wrote, with instants an hour ahead:
# the host-wide file (its hold, the window's pace, a spent quota:
# tests/helpers/share_poison) and the fleet's pace in Redis; nothing is
# waited for past the cap.
case_far_state() {
    for how in curl blocking; do
        rserver "fss.$how"
        go "$TMP/fss.$how.seed" lib 20 curl -s -o /dev/null "$U"
        "$BUILD_ABS/tests/helpers/share_poison" "http://127.0.0.1:$PORT" 3600 >/dev/null ||
            fail "share_poison failed"
        if [ $how = curl ]; then
            asplain "fs.$how" 30 "fss.$how" 5 curl -s -o /dev/null -o /dev/null -w '%{http_code}\n' "$U" "$U"
        else
            asplain "fs.$how" 30 "fss.$how" 5 $CLI seq "$U" 2 blocking
        fi
        row "15 host-wide state 1 h ahead, $how x2" "$(cat "$TMP/fs.$how.plain.secs") s" \
            "$(cat "$TMP/fs.$how.lib.secs") s"
    done
    command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
        { note "15: redis-server or redis-cli is not installed (Debian: redis-server): skipped"; return 0; }
    REDIS_PORT=""
    start_redis fsr
    r="redis://127.0.0.1:$REDIS_PORT?timeout_ms=200"
    # an hour ahead, and 10^16 us (its nanoseconds overflow: it hung)
    for ahead in 3600000000 10000000000000000; do
        rserver "fsrs.$ahead"
        go "$TMP/fsr.seed" lib 20 env BACKOFF_SHARE="$r" curl -s -o /dev/null "$U"
        key="backoff:default:{http://127.0.0.1:$PORT}"
        [ "$(rcli exists "$key" | tr -d '\r')" = 1 ] || fail "fleet: no key $key after a call"
        now_us=$(rcli time | tr -d '\r' | awk 'NR == 1 { s = $1 } NR == 2 { printf "%d%06d", s, $1 }')
        rcli hset "$key" rate 0.001 next "$(awk -v a="$now_us" -v b="$ahead" 'BEGIN { printf "%.0f", a + b }')" >/dev/null
        asplain "fsr.$ahead" 30 "fsrs.$ahead" 5 env BACKOFF_SHARE="$r" \
            curl -s -o /dev/null -o /dev/null -w '%{http_code}\n' "$U" "$U"
        row "15 the fleet's next send $ahead us ahead, curl x2" "$(cat "$TMP/fsr.$ahead.plain.secs") s" \
            "$(cat "$TMP/fsr.$ahead.lib.secs") s"
    done
    stop_redis
}

# ---- plus: programs that are not HTTP clients, and HTTP's corners --------------

case_redis() {
    command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null ||
        { note "redis-server or redis-benchmark is not installed (Debian: redis-server): skipped"; return 0; }
    for how in plain lib; do
        REDIS_PORT=""
        if [ $how = lib ]; then
            LD_PRELOAD=$LIB
            export LD_PRELOAD
        fi
        start_redis "rsrv.$how"
        unset LD_PRELOAD
        go "$TMP/redis.$how" $how 60 redis-benchmark -p "$REDIS_PORT" -n 10000 -c 10 -t set,get,incr,lpush,lrange_100 --csv
        [ $RC = 0 ] || { [ $how = lib ] && harm "redis-benchmark under the library: exit $RC"; } ||
            fail "redis-benchmark plain: exit $RC"
        go "$TMP/rcli.$how" $how 20 redis-cli -p "$REDIS_PORT" set k 'GET / HTTP/1.1'
        go "$TMP/rcli2.$how" $how 20 redis-cli -p "$REDIS_PORT" get k
        cat "$TMP/rcli2.$how" >>"$TMP/rcli.$how.cmp"
        stop_redis
    done
    same rcli || true
    cut -d, -f1 "$TMP/redis.plain" >"$TMP/rtests.plain.cmp"
    cut -d, -f1 "$TMP/redis.lib" >"$TMP/rtests.lib.cmp"
    same rtests || true
    worst=$(awk -F, 'NR == FNR { gsub(/"/, ""); p[$1] = $2; next } { gsub(/"/, "") }
        FNR > 1 && ($1 in p) { r = $2 / p[$1]; if (w == "" || r < w) w = r } END { printf "%.2f\n", w }' \
        "$TMP/redis.plain" "$TMP/redis.lib")
    row "redis-benchmark (server and client)" "$(sed -n 's/^"GET","\([0-9.]*\)".*/GET \1 rps/p' "$TMP/redis.plain")" \
        "$(sed -n 's/^"GET","\([0-9.]*\)".*/GET \1 rps/p' "$TMP/redis.lib"), worst ratio $worst"
    lt 0.25 "$worst" || harm "redis-benchmark under the library: a test at $worst x plain's rate"
}

case_corners() {
    hserver line line
    pair line 20 $CLI line 127.0.0.1 "$PORT"
    stop_server
    grep -qx '250 queued 6 lines' "$TMP/line.plain" || fail "line protocol plain: $(cat "$TMP/line.plain")"
    same line && row "SMTP-style line protocol" "same" "same"

    hserver corner
    pair ws 20 $CLI ws 127.0.0.1 "$PORT"
    grep -q '^frame 8' "$TMP/ws.plain" || fail "websocket plain: $(cat "$TMP/ws.plain")"
    same ws && row "WebSocket upgrade, frames both ways" "same" "same"
    pair expect 20 $CLI expect 127.0.0.1 "$PORT"
    grep -q '^interim HTTP/1.1 100 Continue' "$TMP/expect.plain" || fail "expect plain: $(cat "$TMP/expect.plain")"
    same expect && row "Expect: 100-continue POST" "same" "same"
    go "$TMP/head.plain" plain 20 $CLI head "$B" hp
    go "$TMP/head.lib" lib 20 $CLI head "$B" hl
    [ $RC = 0 ] || harm "HEAD: exit $RC under the library: $(tail -2 "$TMP/head.lib.err")"
    same_or_clean head ' HEAD 429 8 ' " HEAD 200 3 b''" && row "HEAD (and a 429 HEAD)" "$(sed -n 2p "$TMP/head.plain")" "$(sed -n 2p "$TMP/head.lib")"
    pair chunked 20 $CLI chunked "$B" /echo
    same chunked && row "chunked upload" "same" "same"
    go "$TMP/chunk429.plain" plain 20 $CLI chunked "$B" '/first429/cp?ra=0'
    go "$TMP/chunk429.lib" lib 20 $CLI chunked "$B" '/first429/cl?ra=0'
    [ $RC = 0 ] || harm "chunked upload, a 429 first: exit $RC under the library"
    want=$(sed -n 's/.*(sent \(sha256=[0-9a-f]*\)).*/\1/p' "$TMP/chunk429.plain")
    same_or_clean chunk429 '^429 rejected' "^200 $want length=73900 " &&
        row "chunked upload, a 429 first" "$(cut -d' ' -f1,2 "$TMP/chunk429.plain")" \
            "$(cut -d' ' -f1,2 "$TMP/chunk429.lib" | cut -c1-20)"
    bad=$(grep '^post /first429/c' "$TMP/corner.out" | grep -vc "$want" || true)
    [ "$bad" = 0 ] || harm "chunked upload: the server received $bad bodies that were not the one sent"
    pair big429 60 env BACKOFF_MAX_ATTEMPTS=3 $CLI big "$B" '/always429?ra=0&size=10000000'
    same big429 && row "a 10 MB 429 body, always" "$(cut -c1-12 "$TMP/big429.plain")" "$(cut -c1-12 "$TMP/big429.lib")"
    go "$TMP/big1.plain" plain 60 $CLI big "$B" '/first429/bp?ra=0&size=10000000'
    go "$TMP/big1.lib" lib 60 $CLI big "$B" '/first429/bl?ra=0&size=10000000'
    [ $RC = 0 ] || harm "a 10 MB 429 then a 200: exit $RC under the library"
    same_or_clean big1 '^429 10000000 ' '^200 3 ' &&
        row "a 10 MB 429 body, then a 200" "$(cut -c1-12 "$TMP/big1.plain")" "$(cut -c1-12 "$TMP/big1.lib")"
    stop_server
}

# ---- 16. HTTP/2 without TLS (h2c, prior knowledge): a retry keeps its framing --

# An nginx of its own that speaks h2c only: /always answers 429, /limited
# lets one request through a second (limit_req, 429 beyond it).
case_h2c() {
    nginx_find || { note "16: nginx is not installed (Debian: nginx-light): skipped"; return 0; }
    d=$TMP/h2c
    mkdir -p "$d/tmp" "$d/www"
    echo ok >"$d/www/limited" # a file: limit_req does not hold back a return
    hp=$(free_port)
    cat >"$d/nginx.conf" <<EOF
worker_processes 1;
master_process off;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log;
events { worker_connections 64; }
http {
    access_log $d/access.log;
    client_body_temp_path $d/tmp/body;
    proxy_temp_path $d/tmp/proxy;
    fastcgi_temp_path $d/tmp/fastcgi;
    uwsgi_temp_path $d/tmp/uwsgi;
    scgi_temp_path $d/tmp/scgi;
    limit_req_zone \$binary_remote_addr zone=one:1m rate=1r/s;
    server {
        listen 127.0.0.1:$hp http2;
        location /always { return 429 "slow down\n"; }
        location /limited { limit_req zone=one; limit_req_status 429; root $d/www; }
    }
}
EOF
    NGX_PRE=""
    nginx_start "$d" 120 curl -s -m 2 --http2-prior-knowledge -o /dev/null \
        "http://127.0.0.1:$hp/always" || fail "h2c $NGX_WHY"
    "$WRAP" --reset >/dev/null 2>&1
    h2c="curl -s -o /dev/null -w %{http_code}/%{http_version} --http2-prior-knowledge"
    # always 429: plain's 429 over HTTP/2, and under the library the same after its retries
    go "$TMP/h2a.plain" plain 30 $h2c "http://127.0.0.1:$hp/always"
    rp=$RC
    go "$TMP/h2a.lib" lib 30 env BACKOFF_MAX_ATTEMPTS=3 $h2c "http://127.0.0.1:$hp/always"
    rl=$RC
    row "16 h2c, always 429 (code/version exit)" "$(cat "$TMP/h2a.plain") $rp" "$(cat "$TMP/h2a.lib") $rl"
    [ "$(cat "$TMP/h2a.plain") $rp" = "429/2 0" ] || fail "h2c plain: $(cat "$TMP/h2a.plain") exit $rp"
    [ "$(cat "$TMP/h2a.lib") $rl" = "429/2 0" ] ||
        harm "h2c, always 429: $(cat "$TMP/h2a.lib") exit $rl under the library (plain 429/2 0)"
    n=$(grep -c '"GET /always HTTP/2.0" 429' "$d/access.log" || true)
    # the waiting loop's requests, then 1 plain and 3 attempts under the library
    [ "$n" -ge 4 ] || harm "h2c, always 429: nginx saw $n requests (the 3 attempts missing)"
    # one request a second: the second of two quick ones is refused plain, retried under the library
    two="$h2c http://127.0.0.1:$hp/limited; echo; $h2c http://127.0.0.1:$hp/limited"
    go "$TMP/h2l.plain" plain 30 sh -c "$two"
    sleep 1.1
    go "$TMP/h2l.lib" lib 30 sh -c "$two"
    rl=$RC
    two_p=$(tr '\n' ' ' <"$TMP/h2l.plain") two_l=$(tr '\n' ' ' <"$TMP/h2l.lib")
    row "16 h2c, 1/s: two at once" "$two_p" "$two_l, exit $rl"
    [ "$two_p" = "200/2 429/2" ] || fail "h2c 1/s plain: $two_p"
    [ "$two_l $rl" = "200/2 200/2 0" ] ||
        harm "h2c, 1/s: $two_l exit $rl under the library (the 429 retried over HTTP/2 expected)"
    nginx_stop
}

# ---- 17. curl --unix-socket to a stale socket file -------------------------------

# Nobody listens on the socket file: curl's exit 7 at once, as plain, under
# a destination of its own (unix:PATH), never the URL's localhost:80.
case_unix() {
    sock=$TMP/stale.sock
    $PY -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.close()' "$sock"
    u=http://localhost/item/1
    go "$TMP/unix.plain" plain 20 curl -s -o /dev/null -w '%{http_code}' --unix-socket "$sock" $u
    rp=$RC
    "$WRAP" --reset >/dev/null 2>&1
    t0=$(date +%s%3N)
    go "$TMP/unix.lib" lib 20 curl -s -o /dev/null -w '%{http_code}' --unix-socket "$sock" $u
    rl=$RC t=$(($(date +%s%3N) - t0))
    att=$(grep -vc '^t_ms' "$TMP/unix.lib.trace" 2>/dev/null || true)
    dests=$(awk -F, 'NR > 1 { print $4 }' "$TMP/unix.lib.trace" 2>/dev/null | sort -u | tr '\n' ' ')
    row "17 curl --unix-socket, nobody listening" "exit $rp" "exit $rl, $t ms, $att attempt(s)"
    [ $rp = 7 ] || fail "unix socket plain: exit $rp"
    [ $rl = 7 ] || harm "curl --unix-socket to a stale socket: exit $rl under the library (plain 7)"
    [ $t -lt 500 ] || harm "curl --unix-socket to a stale socket: $t ms under the library (at once plain)"
    [ "$att" = 1 ] || harm "curl --unix-socket to a stale socket: $att attempts under the library (1 plain)"
    [ "$dests" = "unix:$sock " ] ||
        harm "curl --unix-socket: the attempts' destination is '$dests', not unix:$sock"
}

# ---- 18. a keep-alive burst after sequential use (issue 46) ------------------------
# Held requests are not a window: 25 requests written before any answer is
# read, on a destination used one request at a time before (its successes
# proved 1 in flight), go out at once, as on a fresh destination.
case_keepalive_burst() {
    nginx_find || { note "18: nginx is not installed (Debian: nginx-light): skipped"; return 0; }
    "$WRAP" --reset >/dev/null 2>&1
    d=$TMP/nginx.ka
    np=$(free_port)
    nginx_conf "$d" "$np" 1 ka # its static file; nothing goes upstream
    NGX_PRE=""
    nginx_start "$d" 120 nginx_serves_static "$np" || fail "$NGX_WHY"
    pair kaburst 60 $PY "$PROGS/keepalive_burst.py" 127.0.0.1 "$np" /static/f.txt 200 25
    nginx_stop
    tp=$(tfield "$TMP/kaburst.plain" burst) tl=$(tfield "$TMP/kaburst.lib" burst)
    row "18 25 keep-alive GETs after 200 sequential" "$tp s" "$tl s"
    same kaburst || true
    lt "$tl" 0.5 || harm "keep-alive burst after sequential use: $tl s under the library (plain $tp s)"
}

# ---- 19. a redial goes where the first connection went, and fails harmlessly ------

# redial_case NAME MODE TRANSPORT [NEXT [CLIENTS]]: CLIENTS (requests with
# no timeout, Perl's LWP, curl; default all three) against
# harm_tls_server.py MODE (stall: later connections take the request and
# never answer; reset: they are reset at once; flip: they only show their
# certificate), over TRANSPORT (plain or tls; later connections show
# certificate NEXT, default a: the same), plain and under the library
# (BACKOFF_CAP_MS=3000: the bound of a retry's answer when the program set
# none): the 429 that closed the first connection, as plain, the same exit
# code, within the bound.
redial_case() {
    _n=$1 _m=$2 _t=$3 _x=${4:-a} _cls=${5:-requests lwp curl}
    if [ "$_t" = tls ]; then
        u=https _pl="" _v="$TMP/ca/ca.pem"
    else
        u=http _pl=plain _v=""
    fi
    lwp='use LWP::UserAgent; my $ua = LWP::UserAgent->new(ssl_opts => {SSL_ca_file => $ARGV[1]});
        my $r = $ua->get($ARGV[0]); print $r->code, " ", $r->decoded_content, "\n";'
    for cl in $_cls; do
        for how in plain lib; do
            start_py_server "$_n.$cl.srv.$how" "$PROGS/harm_tls_server.py" "$_m" "$TMP/ca/a.pem" \
                "$TMP/ca/a.key" "$TMP/ca/$_x.pem" "$TMP/ca/$_x.key" $_pl
            url="$u://127.0.0.1:$PORT/x"
            t0=$(date +%s%3N)
            # shellcheck disable=SC2086
            case $cl in
            requests) go "$TMP/$_n.$cl.$how" $how 40 env BACKOFF_CAP_MS=3000 $CLI notimeout "$url" $_v ;;
            lwp) go "$TMP/$_n.$cl.$how" $how 40 env BACKOFF_CAP_MS=3000 perl -e "$lwp" "$url" "$_v" ;;
            # the libcurl room: status, size and type as curl's getinfo says, the body apart
            curl) go "$TMP/$_n.$cl.$how" $how 40 env BACKOFF_CAP_MS=3000 curl -sS ${_v:+--cacert "$_v"} \
                -o "$TMP/$_n.$cl.$how.body" -w '%{http_code} %{size_download} %{content_type}\n' "$url" ;;
            esac
            eval "t_$how=\$((\$(date +%s%3N) - t0)) rc_$how=\$RC"
            stop_server
        done
        got_p=$(head -n 1 "$TMP/$_n.$cl.plain") got_l=$(head -n 1 "$TMP/$_n.$cl.lib")
        if [ $cl = curl ]; then
            b=$(cat "$TMP/$_n.$cl.lib.body" 2>/dev/null || true)
            [ "$(cat "$TMP/$_n.$cl.plain.body")" = "$b" ] || got_l="$got_l, body '$b'"
        fi
        _w=$_m
        [ "$_x" = b ] && _w="$_m to another host's certificate"
        row "19 redial $_w ($_t), $cl" "$got_p, ${t_plain} ms, exit $rc_plain" "$got_l, ${t_lib} ms, exit $rc_lib"
        case $got_p in 429*) ;; *) fail "$_n $cl plain: '$got_p' (exit $rc_plain)" ;; esac
        [ "$rc_lib" = "$rc_plain" ] || harm "redial $_w ($_t), $cl: exit $rc_lib under the library (plain $rc_plain; 124: a hang)"
        [ "$got_l" = "$got_p" ] || harm "redial $_w ($_t), $cl: '$got_l' under the library (plain '$got_p')"
        [ "$t_lib" -lt 12000 ] || harm "redial $_w ($_t), $cl: ${t_lib} ms under the library (bound 3 s)"
    done
}

case_redial_fail() {
    tls_certs
    redial_case redial-stall stall plain
    redial_case redial-reset reset plain
    redial_case redial-stall-tls stall tls
    # curl's retry is its own new connection (the libcurl room): the peer
    # there shows another host's certificate (curl exit 60) or resets the
    # handshake (exit 35); the 429 it had, as plain
    redial_case redial-cert flip tls b curl
    redial_case redial-reset-tls reset tls a curl
}

# A TLS connection through a CONNECT proxy (requests with HTTPS_PROXY): its
# origin answers 429 and closes; never redialled straight to the proxy (a
# TLS ClientHello without its CONNECT): the 429, the proxy seeing CONNECTs
# only.
case_proxy() {
    $PY -c 'import requests' 2>/dev/null || { note "19: python3-requests is not installed: skipped"; return 0; }
    tls_certs
    for how in plain lib; do
        start_py_server "proxy.origin.$how" "$PROGS/harm_tls_server.py" flip "$TMP/ca/a.pem" \
            "$TMP/ca/a.key" "$TMP/ca/a.pem" "$TMP/ca/a.key"
        op=$PORT osrv=$SERVER_PID
        start_py_server "proxy.$how" "$PROGS/connect_proxy.py"
        pp=$PORT
        go "$TMP/proxy.$how" $how 40 env HTTPS_PROXY="http://127.0.0.1:$pp" NO_PROXY= no_proxy= \
            $CLI tls "https://127.0.0.1:$op/x" "$TMP/ca/ca.pem"
        stop_server
        SERVER_PID=$osrv
        stop_server
    done
    got_p=$(head -n 1 "$TMP/proxy.plain") got_l=$(head -n 1 "$TMP/proxy.lib")
    bad=$(grep -c '^bad' "$TMP/proxy.lib.out" || true)
    row "19 HTTPS_PROXY (CONNECT), origin 429 + close" "$got_p" "$got_l, $bad non-CONNECT at the proxy"
    [ "$got_p" = "429 rejected" ] || fail "proxy plain: '$got_p': $(cat "$TMP/proxy.plain.err")"
    [ "$got_l" = "429 rejected" ] || harm "HTTPS_PROXY under the library: '$got_l' (plain '$got_p')"
    [ "$bad" = 0 ] || harm "HTTPS_PROXY under the library: the proxy got $(grep '^bad' "$TMP/proxy.lib.out" | head -2 | tr '\n' ' ')"
}

# ---- 20. many kept-alive connections cost their records alone --------------------

# 2,000 http.client connections, one GET each, all kept open: the process's
# resident memory under the library within 1.3x of plain's (a connection
# between exchanges holds no buffer: shim/http/lend.c).
case_memory() {
    rserver memory --rate 100000 --burst 100000
    pair kamany 90 $PY "$PROGS/keepalive_many.py" 127.0.0.1 "$PORT" /item/1 2000
    stop_server
    same kamany || true
    mp=$(tfield "$TMP/kamany.plain" rss_kb) ml=$(tfield "$TMP/kamany.lib" rss_kb)
    n=$(tfield "$TMP/kamany.plain" conns)
    r=$(awk -v a="$ml" -v b="$mp" 'BEGIN { printf "%.2f", a / b }')
    row "20 $n kept-alive connections (resident)" "$((mp / 1024)) MB" "$((ml / 1024)) MB, ${r}x"
    lt "$r" 1.3 || harm "$n kept-alive connections: $ml kB resident under the library, plain $mp kB (${r}x; 1.3x at most)"
}

# HARM_CASES: the cases to run (names without case_; default: all), to look
# into one by hand.
for c in ${HARM_CASES:-aio_slow long_poll nginx tls pipeline halfclose slow_retry interim node \
    aio_waitfor epoll split far_reset far_retry_after far_state redis corners h2c unix \
    keepalive_burst redial_fail proxy memory}; do
    case_$c
done

note "case | plain | under the library ($(($(date +%s) - T0)) s in all)"
while IFS= read -r l; do note "$l"; done <"$TMP/table"
[ $NFAILED = 0 ] || fail "$NFAILED harm(s):$FAILED"
echo "ok"
