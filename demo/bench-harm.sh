#!/bin/sh
# The harm table's figures (a benchmark: it prints figures and whether the
# targets are met; it does not fail on them).  The cases of
# tests/integration/test_http_harm.sh, which asserts them with generous
# bounds, measured here exactly, plain and under `backoff --` (or
# LD_PRELOAD), default BACKOFF_* unless said, against the same loopback
# servers (tests/programs/harm_server.py, harm_tls_server.py):
#
#   1  aiohttp, one loop, 30 concurrent GETs of a 2 s answer: time, the
#      loop ticker's largest stall            target: within 1.10x, no stall > 0.5 s
#   2  20 processes in a long poll (POLL_S, 25 s), another process's quick GET
#                                             target: under 1 s
#   3  nginx (one worker) as a reverse proxy under the library, upstream
#      429: upstream requests, the answer's time, the slowest static file
#      fetched meanwhile                      target: 1 upstream each, as plain
#   4  TLS: requests (CA bundle) and PHP against a next peer with another
#      host's certificate from the same CA, a pinning client against a
#      self-signed one, a dropped keep-alive  target: never a 200 from that peer
#   5  http.client pipelining 25 requests     target: as plain
#   6  nc -N (half-close) against an always-429, python shutdown(SHUT_WR)
#                                             target: the 429, no hang
#   7  a retried request whose next answer takes SLOW_S (3 s; BENCH_LONG=1:
#      65 s, the issue's case), blocking, no timeout   target: waits
#   8  103 / 102 before the answer: the first read, the longest non-blocking recv()
#   9  Node: 20 requests destroyed, then one more; `backoff -- curl` meanwhile;
#      the next 40 on reused fds followed; FETCH_RUNS runs (10) of 8 fetch with
#      AbortSignal.timeout(3000)             target: as plain, none hangs
#   10 aiohttp, 8 concurrent under wait_for(3 s), Retry-After 1 and 5; 3 of
#      them beside a 5 s long poll (no ticker); 40 concurrent throttles
#      (Retry-After 1) on one loop
#                                             target: no timeout; 40 in about 1 s
#   13 a 200 whose quota headers say none is left until a reset 1 h ahead
#      (each dialect; ratelimit-server --quota-spent), 1 min, 15 s past
#      curl --max-time 5 or a Python timeout of 5 s, then another request
#   14 a 429 whose Retry-After (86400, a date in 9999, retry-after-ms,
#      x-ms-retry-after-ms) lies a day ahead, GitHub's 403 with a reset 1 h
#      ahead: curl and http.client
#   15 the host-wide state file's instants set 1 h ahead (share_poison)
#                                             target: as plain, the same requests
#   16 curl over h2c against nginx: an always-429, a 1/s limit   (the harm
#   17 curl --unix-socket, nobody listening                        suite's own
#   19 a redial whose new peer stalls or resets; HTTPS_PROXY         cases,
#   20 2,000 kept-alive connections' resident memory             SUITE_CASES)
#                                             target: as plain (20: within 1.3x)
#   18 nginx that never throttles: 200 sequential keep-alive GETs, then 25
#      written before any answer is read (tests/programs/keepalive_burst.py)
#                                             target: at once (0.1 s), as a fresh destination
#   46 what the library holds (issue 46): programs (libcurl, a plain socket,
#      http.client) that close every fd (close_range) and open 4 files of their
#      own, then call a new destination, host-wide and with Redis; the state
#      file truncated between two calls; the fleet's keys poisoned (cwnd 0,
#      -1e308, 50 eternal leases) and the host-wide state poisoned (window 0,
#      pace NaN, holds an hour ahead), calls to a server that never throttles
#                                             target: files and answers as plain,
#                                             no signal, a call about plain's time
#   and the costs: 300 x /bin/true under LD_PRELOAD in turn with plain,
#   target <= 1.05x, beside the floor (an empty library) and the wrapper
#   (demo/bench-startup.sh); 100 x curl, a figure.
#
# Output: one table, "case | plain | under backoff | target | met".
# Environment: BUILD (default build), ROUNDS (5: medians of the quick cases),
# POLL_S (25), FETCH_RUNS (10), BENCH_LONG (0).
# $CLI is two words (the interpreter and the clients' script), split on purpose.
# shellcheck disable=SC2086
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
ROUNDS=${ROUNDS:-5}
POLL_S=${POLL_S:-25}
FETCH_RUNS=${FETCH_RUNS:-10}
BENCH_LONG=${BENCH_LONG:-0}
LIB="$BUILD/libbackoff.so"
WRAP="$BUILD/backoff"
for f in "$LIB" "$WRAP"; do
    [ -e "$f" ] || { echo "backoff: $f is missing: run make first" >&2; exit 2; }
done
PY=/usr/bin/python3
PROGS="$top/tests/programs"
CLI="$PY $PROGS/harm_clients.py"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-bench-harm.XXXXXX")
XDG_RUNTIME_DIR=$TMP
export XDG_RUNTIME_DIR
PIDS=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
. "$top/tests/integration/nginx_lib.sh"

# row CASE PLAIN LIB TARGET MET
row() { printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5"; }
# yes CONDITION-AWK: "yes" or "**no**" from an awk expression
yes_if() { awk "BEGIN { print ($1) ? \"yes\" : \"**no**\" }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "nan" }'; }
tfield() {
    awk -v k="$2" '$1 == "time" { for (i = 2; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$1"
}
# run OUT HOW SECS CMD...: as the test's go (HOW plain, lib or wrap); RC is
# CMD's status (124: killed at SECS).
run() {
    _o=$1 _h=$2 _s=$3
    shift 3
    RC=0
    case $_h in
    plain) setsid timeout -k 2 "$_s" "$@" >"$_o" 2>"$_o.err" || RC=$? ;;
    lib) setsid timeout -k 2 "$_s" env LD_PRELOAD="$LIB" BACKOFF_STATS="$_o.stats" "$@" >"$_o" 2>"$_o.err" || RC=$? ;;
    wrap) setsid timeout -k 2 "$_s" "$WRAP" --stats "$_o.stats" -- "$@" >"$_o" 2>"$_o.err" || RC=$? ;;
    esac
}
# server NAME [ARG]: a fresh harm_server.py, every destination reset; sets
# PORT, SPID and B.
server() {
    "$WRAP" --reset >/dev/null 2>&1
    : >"$TMP/$1.out"
    # shellcheck disable=SC2086
    $PY "$PROGS/harm_server.py" ${2:-} >"$TMP/$1.out" 2>"$TMP/$1.err" &
    SPID=$!
    PIDS="$PIDS $SPID"
    _i=0
    until grep -q '^listening on' "$TMP/$1.out"; do
        _i=$((_i + 1))
        [ $_i -gt 200 ] && { echo "backoff: harm_server.py did not start: $(cat "$TMP/$1.err")" >&2; exit 1; }
        sleep 0.05
    done
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/$1.out")
    B="http://127.0.0.1:$PORT"
}
stop() { kill "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; }
reqs() { grep -Ec "^req $2" "$TMP/$1.out" || true; }
free_port() { $PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# rounds NAME KEY HOW CMD...: the median of KEY over ROUNDS runs of CMD.
rounds() {
    _n=$1 _k=$2 _h=$3
    shift 3
    _r=0
    while [ $_r -lt "$ROUNDS" ]; do
        _r=$((_r + 1))
        run "$TMP/$_n.$_r" "$_h" 60 "$@"
        tfield "$TMP/$_n.$_r" "$_k"
    done | median
}

echo "# harm table: plain against under backoff, $(nproc) CPUs, $(date -u +%Y-%m-%d)"
echo
echo "| case | plain | under backoff | target | met |"
echo "| --- | --- | --- | --- | --- |"

# ---- 1 ------------------------------------------------------------------------------
if $PY -c 'import aiohttp' 2>/dev/null; then
    server aio
    run "$TMP/aio.p" plain 60 $PY "$PROGS/harm_aio.py" concurrent "$B" 30 /slow/2
    run "$TMP/aio.l" wrap 300 $PY "$PROGS/harm_aio.py" concurrent "$B" 30 /slow/2
    stop
    tp=$(tfield "$TMP/aio.p" total) tl=$(tfield "$TMP/aio.l" total)
    sp=$(tfield "$TMP/aio.p" maxstall) sl=$(tfield "$TMP/aio.l" maxstall)
    row "1 aiohttp, 30 concurrent GETs of 2 s, one loop" "$tp s, stall $sp s" "$tl s, stall $sl s" \
        "within 1.10x, no stall > 0.5 s" "$(yes_if "$tl <= 1.10 * $tp && $sl <= 0.5")"
else
    row "1 aiohttp" "-" "-" "-" "python3-aiohttp missing"
fi

# ---- 2 ------------------------------------------------------------------------------
for how in plain wrap; do
    server poll.$how
    i=0
    pids=""
    while [ $i -lt 20 ]; do
        i=$((i + 1))
        run "$TMP/poll.$how.$i" $how $((POLL_S + 30)) $CLI get "$B/slow/$POLL_S" &
        pids="$pids $!"
    done
    w=0
    while [ "$(reqs poll.$how "GET /slow/$POLL_S")" -lt 20 ] && [ $w -lt 300 ]; do
        w=$((w + 1))
        sleep 0.1
    done
    run "$TMP/poll.$how.q" $how 60 $CLI get "$B/quick"
    for p in $pids; do wait "$p" || true; done
    stop
done
qp=$(tfield "$TMP/poll.plain.q" total) ql=$(tfield "$TMP/poll.wrap.q" total)
row "2 quick GET beside 20 long polls of $POLL_S s" "$qp s" "$ql s" "under 1 s" "$(yes_if "$ql < 1")"

# ---- 3 ------------------------------------------------------------------------------
# an nginx of the row's own: tests/integration/nginx_lib.sh
if nginx_find; then
    server ngup
    up=$PORT
    for how in plain lib; do
        d=$TMP/nginx.$how
        np=$(free_port)
        nginx_conf "$d" "$np" "$up" "$how"
        NGX_PRE=""
        [ $how = lib ] && NGX_PRE="env LD_PRELOAD=$LIB"
        nginx_start "$d" 300 nginx_serves_static "$np" || echo "backoff: $NGX_WHY" >&2
        run "$TMP/ngx.$how" plain 60 $CLI nginx "http://127.0.0.1:$np" 3
        nginx_stop
    done
    stop
    ua=$(reqs ngup 'GET /always429.*run=plain') ub=$(reqs ngup 'GET /always429.*run=lib')
    gp=$(grep -c '^api [0-9] 429' "$TMP/ngx.plain" || true) gl=$(grep -c '^api [0-9] 429' "$TMP/ngx.lib" || true)
    row "3 nginx proxy, upstream 429 (3 requests)" \
        "$gp of 3 passed on, $ua upstream, slowest $(tfield "$TMP/ngx.plain" api_max) s" \
        "$gl of 3 passed on, $ub upstream, slowest $(tfield "$TMP/ngx.lib" api_max) s" \
        "the 429 passed on, 1 upstream each" "$(yes_if "$gl == 3 && $ub == 3")"
    smp=$(tfield "$TMP/ngx.plain" static_max) sml=$(tfield "$TMP/ngx.lib" static_max)
    row "3 nginx: slowest static file meanwhile" "$smp s" "$sml s" "no stall (< 0.05 s)" "$(yes_if "$sml < 0.05")"
else
    row "3 nginx" "-" "-" "-" "nginx missing"
fi

# ---- 4 ------------------------------------------------------------------------------
c=$TMP/ca
mkdir -p "$c"
ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
# shellcheck disable=SC2086
openssl req -x509 $ec -days 1 -subj "/CN=backoff harm bench CA" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -keyout "$c/ca.key" -out "$c/ca.pem" >"$c/log" 2>&1
for n in a b; do
    if [ $n = a ]; then cn=127.0.0.1 san="IP:127.0.0.1,DNS:localhost"; else cn=other.example san="DNS:other.example"; fi
    printf 'subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$san" >"$c/$n.ext"
    # shellcheck disable=SC2086
    openssl req -new $ec -subj "/CN=$cn" -keyout "$c/$n.key" -out "$c/$n.csr" >>"$c/log" 2>&1
    openssl x509 -req -in "$c/$n.csr" -CA "$c/ca.pem" -CAkey "$c/ca.key" -CAcreateserial -days 1 \
        -extfile "$c/$n.ext" -out "$c/$n.pem" >>"$c/log" 2>&1
done
# shellcheck disable=SC2086
openssl req -x509 $ec -days 1 -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$c/c.key" -out "$c/c.pem" >>"$c/log" 2>&1
fp=$(openssl x509 -in "$c/a.pem" -outform der | sha256sum | cut -d' ' -f1)
# tls NAME MODE NEXT CMD... (@PORT@: the server's port): the first line of each run
tls() {
    _n=$1 _m=$2 _x=$3
    shift 3
    for how in plain wrap; do
        : >"$TMP/$_n.srv"
        $PY "$PROGS/harm_tls_server.py" "$_m" "$c/a.pem" "$c/a.key" "$c/$_x.pem" "$c/$_x.key" >"$TMP/$_n.srv" 2>&1 &
        tp=$!
        PIDS="$PIDS $tp"
        until grep -q '^listening' "$TMP/$_n.srv"; do sleep 0.05; done
        port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/$_n.srv")
        # shellcheck disable=SC2046
        run "$TMP/$_n.$how" $how 60 $(echo "$@" | sed "s/@PORT@/$port/g")
        kill $tp
        wait $tp 2>/dev/null || true
    done
    _p=$(head -n 1 "$TMP/$_n.plain") _l=$(head -n 1 "$TMP/$_n.wrap")
    row "4 $_n" "$_p" "$_l" "never a 200 from that peer" "$(if grep -q 'wrong host' "$TMP/$_n.wrap"; then echo '**no**'; else echo yes; fi)"
}
if $PY -c 'import requests' 2>/dev/null; then
    tls "requests, next peer another host (same CA)" flip b $CLI tls "https://127.0.0.1:@PORT@/x" "$c/ca.pem"
    tls "requests.Session, kept-alive dropped, next peer another host" drop b \
        $CLI tls-session "https://127.0.0.1:@PORT@/x" "$c/ca.pem"
fi
command -v php >/dev/null &&
    tls "PHP file_get_contents, next peer another host" flip b php "$PROGS/harm_tls.php" "https://127.0.0.1:@PORT@/x" "$c/ca.pem"
tls "pin over CERT_NONE, next peer self-signed" flip c $CLI pin 127.0.0.1 @PORT@ "$fp"

# ---- 5 ------------------------------------------------------------------------------
server pipe
pp=$(rounds pipe.p total plain $CLI pipeline 127.0.0.1 "$PORT" 25)
pl=$(rounds pipe.l total wrap $CLI pipeline 127.0.0.1 "$PORT" 25)
okl=$(grep -c 'done 25 bad 0' "$TMP"/pipe.l.[0-9]* | awk -F: '{ s += $2 } END { print s }')
stop
row "5 http.client pipelining 25 requests (median)" "$pp s" "$pl s, $okl of $ROUNDS runs right" \
    "as plain" "$(yes_if "$okl == $ROUNDS && $pl <= $pp + 0.01")"

# ---- 6 ------------------------------------------------------------------------------
server half
printf 'GET /always429?ra=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' >"$TMP/nc.req"
if command -v nc >/dev/null; then
    t=$(date +%s.%N)
    run "$TMP/nc.p" plain 30 nc -N 127.0.0.1 "$PORT" <"$TMP/nc.req"
    t1=$(date +%s.%N)
    run "$TMP/nc.l" wrap 60 nc -N 127.0.0.1 "$PORT" <"$TMP/nc.req"
    t2=$(date +%s.%N)
    row "6 nc -N, always 429 (default attempts)" \
        "$(head -c 12 "$TMP/nc.p"), $(awk -v a="$t" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') s" \
        "$(head -c 12 "$TMP/nc.l"), $(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.3f", b - a }') s, $(($(reqs half 'GET /always429') - 1)) requests" \
        "the same 429" "$(if cmp -s "$TMP/nc.p" "$TMP/nc.l"; then echo yes; else echo '**no**'; fi)"
fi
run "$TMP/sw.p" plain 30 $CLI halfclose 127.0.0.1 "$PORT" '/always429?ra=0'
run "$TMP/sw.l" wrap 120 $CLI halfclose 127.0.0.1 "$PORT" '/always429?ra=0'
row "6 python shutdown(SHUT_WR), always 429" "$(head -c 12 "$TMP/sw.p")" "$(head -c 12 "$TMP/sw.l") (exit $RC)" \
    "the same 429, no hang" "$(if cmp -s "$TMP/sw.p" "$TMP/sw.l" && [ $RC = 0 ]; then echo yes; else echo '**no**'; fi)"
stop

# ---- 7 ------------------------------------------------------------------------------
slow=3
[ "$BENCH_LONG" = 1 ] && slow=65
server slowr
run "$TMP/slow.p" plain 30 $CLI blocking "$B/first429/p?ra=0&slow=$slow"
run "$TMP/slow.l" wrap $((slow + 60)) $CLI blocking "$B/first429/l?ra=0&slow=$slow"
stop
row "7 429, then a $slow s answer, blocking, no timeout" "$(head -n 1 "$TMP/slow.p"), $(tfield "$TMP/slow.p" total) s" \
    "$(head -n 1 "$TMP/slow.l"), $(tfield "$TMP/slow.l" total) s" "waits (200)" \
    "$(if grep -qx '200 ok' "$TMP/slow.l"; then echo yes; else echo '**no**'; fi)"

# ---- 8 ------------------------------------------------------------------------------
server early
for code in 103 102; do
    fp1=$(rounds e$code.p first plain $CLI early 127.0.0.1 "$PORT" "/early/$code" block)
    fl1=$(rounds e$code.l first wrap $CLI early 127.0.0.1 "$PORT" "/early/$code" block)
    row "8 $code before the answer: first read (median)" "$fp1 s" "$fl1 s" "as plain (~0.01 s)" "$(yes_if "$fl1 < 0.05")"
    mp=$(rounds n$code.p maxcall plain $CLI early 127.0.0.1 "$PORT" "/early/$code" nonblock)
    ml=$(rounds n$code.l maxcall wrap $CLI early 127.0.0.1 "$PORT" "/early/$code" nonblock)
    row "8 $code: longest non-blocking recv() (median)" "$mp s" "$ml s" "never long (< 0.05 s)" "$(yes_if "$ml < 0.05")"
done
stop

# ---- 9 ------------------------------------------------------------------------------
if command -v node >/dev/null; then
    server node
    for how in plain lib; do
        rm -f "$TMP/node.go"
        run "$TMP/node.$how" $how 120 node "$PROGS/harm_node.js" destroy "$B" "$TMP/node.go" &
        nj=$!
        w=0
        until grep -q '^ready' "$TMP/node.$how" 2>/dev/null || [ $w -gt 600 ]; do
            w=$((w + 1))
            sleep 0.1
        done
        cw=plain
        [ $how = lib ] && cw=wrap
        run "$TMP/curl.$how" $cw 60 curl -s -o /dev/null -w '%{time_total}\n' "$B/slow/1"
        touch "$TMP/node.go"
        wait $nj || true
    done
    stop
    row "9 node: 20 destroyed, then one more (a 1 s answer)" \
        "$(tfield "$TMP/node.plain" one) s, stall $(tfield "$TMP/node.plain" maxstall) s" \
        "$(tfield "$TMP/node.lib" one) s, stall $(tfield "$TMP/node.lib" maxstall) s" "about plain's" \
        "$(yes_if "$(tfield "$TMP/node.lib" one) < $(tfield "$TMP/node.plain" one) + 0.1")"
    row "9 backoff -- curl meanwhile (a 1 s answer)" "$(cat "$TMP/curl.plain") s" "$(cat "$TMP/curl.lib") s" \
        "about plain's" "$(yes_if "$(cat "$TMP/curl.lib") < $(cat "$TMP/curl.plain") + 0.1")"
    f=$(sed -n 's/.*"calls":\([0-9]*\).*/\1/p' "$TMP/node.lib.stats" | sort -n | tail -n 1)
    row "9 node: calls followed (20 + 1 + 40 on reused fds)" "-" "$f" "61" "$(yes_if "$f == 61")"
    hung=0 aborted=0 answered=0 r=0
    while [ $r -lt "$FETCH_RUNS" ]; do
        r=$((r + 1))
        server fetch$r
        run "$TMP/fetch.p$r" plain 30 node "$PROGS/harm_node.js" fetch "$B" p
        run "$TMP/fetch.l$r" lib 30 node "$PROGS/harm_node.js" fetch "$B" l
        stop
        [ $RC = 124 ] && hung=$((hung + 1))
        aborted=$((aborted + $(grep -c '^[1-6] TimeoutError' "$TMP/fetch.l$r" || true)))
        answered=$((answered + $(grep -c '^[1-6] [0-9]' "$TMP/fetch.p$r" || true)))
    done
    row "9 node: 8 fetch, AbortSignal.timeout(3000), $FETCH_RUNS runs" "0 hung, $answered of $((FETCH_RUNS * 6)) answered" \
        "$hung hung, $aborted of $((FETCH_RUNS * 6)) aborted instead" "none hangs, no abort plain has not" \
        "$(yes_if "$hung == 0 && $aborted == 0")"
else
    row "9 node" "-" "-" "-" "node missing"
fi

# ---- 10 -----------------------------------------------------------------------------
if $PY -c 'import aiohttp' 2>/dev/null; then
    for ra in 1 5; do
        server aiow$ra
        run "$TMP/aw$ra.p" plain 30 $PY "$PROGS/harm_aio.py" waitfor "$B" 8 "/first429/p?ra=$ra&i=" 3
        run "$TMP/aw$ra.l" wrap 60 $PY "$PROGS/harm_aio.py" waitfor "$B" 8 "/first429/l?ra=$ra&i=" 3
        stop
        to=$(grep -c TimeoutError "$TMP/aw$ra.l" || true)
        row "10 aiohttp, 8 x wait_for(3 s), Retry-After $ra" \
            "0 timeouts, $(tfield "$TMP/aw$ra.p" total) s, stall $(tfield "$TMP/aw$ra.p" maxstall) s" \
            "$to timeouts, $(tfield "$TMP/aw$ra.l" total) s, stall $(tfield "$TMP/aw$ra.l" maxstall) s" \
            "no timeout, no stall" "$(yes_if "$to == 0 && $(tfield "$TMP/aw$ra.l" maxstall) < 0.05")"
    done
    server beside
    run "$TMP/bs.p" plain 30 $PY "$PROGS/harm_aio.py" beside "$B" 3 "/first429/p?ra=1&i=" 3 /slow/5
    run "$TMP/bs.l" wrap 60 $PY "$PROGS/harm_aio.py" beside "$B" 3 "/first429/l?ra=1&i=" 3 /slow/5
    stop
    to=$(grep -c '^[0-9] TimeoutError' "$TMP/bs.l" || true)
    al=$(tfield "$TMP/bs.l" answered)
    row "10 aiohttp, 3 x wait_for(3 s), Retry-After 1, beside a 5 s poll" \
        "3 x 429 after $(tfield "$TMP/bs.p" answered) s" \
        "$to timeouts; $(grep -c ' 200 ' "$TMP/bs.l") x 200, $(grep -c ' 429 ' "$TMP/bs.l") x 429, after $al s" \
        "no timeout; retried (about 1 s) or at once" "$(yes_if "$to == 0 && $al < 2")"
    server many
    run "$TMP/many.p" plain 30 $PY "$PROGS/harm_aio.py" many "$B" 40 "/first429/p?ra=1&i="
    run "$TMP/many.l" wrap 120 $PY "$PROGS/harm_aio.py" many "$B" 40 "/first429/l?ra=1&i="
    stop
    row "10 aiohttp, 40 concurrent throttles, Retry-After 1" \
        "$(grep -c ' 429 ' "$TMP/many.p") x 429, $(tfield "$TMP/many.p" total) s" \
        "$(grep -c ' 200 ' "$TMP/many.l") x 200, $(tfield "$TMP/many.l" total) s" "in parallel (about 1 s, not 27 s)" \
        "$(yes_if "$(tfield "$TMP/many.l" total) < 2")"
fi

# ---- 18: a keep-alive burst after sequential use (issue 46) ---------------------------
# nginx that never throttles: 200 sequential keep-alive GETs, then 25
# connections each writing a GET before any answer is read; the same burst
# on a fresh destination (no sequential GETs) beside it.
if nginx_find; then
    d=$TMP/nginx.ka
    np=$(free_port)
    nginx_conf "$d" "$np" 1 ka # its static file; nothing goes upstream
    NGX_PRE=""
    nginx_start "$d" 300 nginx_serves_static "$np" || echo "backoff: $NGX_WHY" >&2
    KA="$PY $PROGS/keepalive_burst.py 127.0.0.1 $np /static/f.txt"
    kap=$(rounds ka.p burst plain $KA 200 25)
    kal=$(for r in $(seq "$ROUNDS"); do
        "$WRAP" --reset >/dev/null 2>&1
        run "$TMP/ka.l.$r" wrap 60 $KA 200 25
        tfield "$TMP/ka.l.$r" burst
    done | median)
    kaf=$(for r in $(seq "$ROUNDS"); do
        "$WRAP" --reset >/dev/null 2>&1
        run "$TMP/ka.f.$r" wrap 60 $KA 0 25
        tfield "$TMP/ka.f.$r" burst
    done | median)
    nginx_stop
    row "18 nginx never throttling: 25 keep-alive GETs at once after 200 sequential (median of $ROUNDS)" \
        "$kap s" "$kal s (fresh destination: $kaf s)" "at once: within 0.1 s, as a fresh destination" \
        "$(yes_if "$kal < 0.1")"
else
    row "18 keep-alive burst after sequential use" "-" "-" "-" "nginx missing"
fi
# ---- 13-15: waits the program did not ask for -------------------------------------
server_die() { echo "backoff: $*" >&2; exit 1; }
. "$top/demo/server-lib.sh"
# far NAME SECS FLAGS SCRIPT: `sh -c SCRIPT` (U: an item's URL, P: the port,
# CLI: the Python clients) plain, then under backoff (LD_PRELOAD), each
# against a fresh ratelimit-server with FLAGS (one string, the flags split at
# "|"), every destination reset first; sets FP and FL (seconds; "killed at
# SECS s" when it was), OP and OL (its output on one line, "exit N" added
# when not 0), NP and NL (the requests the server saw).
far() {
    _n=$1 _s=$2 _flags=$3 _script=$4
    for _h in plain lib; do
        "$WRAP" --reset >/dev/null 2>&1
        _ifs=$IFS
        IFS='|'
        # shellcheck disable=SC2086
        server_launch "$TMP/$_n.$_h.srv" "$TMP/$_n.$_h.srverr" $_flags
        IFS=$_ifs
        PIDS="$PIDS $SERVER_PID"
        _t0=$(date +%s.%N)
        run "$TMP/$_n.$_h" "$_h" "$_s" env U="http://127.0.0.1:$PORT/item/1" P="$PORT" CLI="$CLI" \
            POISON="$BUILD/tests/helpers/share_poison" sh -c "$_script"
        _t=$(awk -v a="$_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
        [ $RC = 124 ] && _t="killed at $_s"
        [ $RC = 0 ] || echo "exit $RC" >>"$TMP/$_n.$_h"
        server_stop
        _o=$(grep -v '^time' "$TMP/$_n.$_h" | sed 's/ item=.*//; s/ rejected$//' | tr '\n' ' ' | sed 's/ *$//')
        _r=$(awk -F'\t' '$1 == "requests" { getline; print $1 }' "$TMP/$_n.$_h.srv")
        if [ $_h = plain ]; then FP=$_t OP=$_o NP=$_r; else FL=$_t OL=$_o NL=$_r; fi
    done
}
# farrow CASE TARGET: the row of the last far, met when the output and the
# requests are plain's and the time within 1 s of it.
farrow() {
    _met='**no**'
    if [ "$OP" = "$OL" ] && [ "$NP" = "$NL" ] &&
        awk -v a="$FP" -v b="$FL" 'BEGIN { exit !(b !~ /killed/ && b + 0 < a + 1) }'; then
        _met=yes
    fi
    row "$1" "$OP; $NP requests, $FP s" "$OL; $NL requests, $FL s" "$2" "$_met"
}
# shellcheck disable=SC2016
{
    curl2='curl -s -o /dev/null -o /dev/null -w "%{http_code}\n" "$U" "$U"'
    for d in x-ratelimit ratelimit draft openai discord x-rate-limit; do
        far "fr.$d" 30 "--quota-spent|3600|--ratelimit-headers|$d" "$curl2"
        farrow "13 200, none left, reset 1 h ahead ($d): curl, 2 GETs" "as plain (it hung)"
    done
    for how in blocking urllib requests; do
        far "frp.$how" 30 "--quota-spent|3600|--ratelimit-headers|x-ratelimit" "\$CLI seq \"\$U\" 2 $how"
        farrow "13 the same, python $how, 2 GETs" "as plain (20 s)"
    done
    far frm 90 "--quota-spent|60|--ratelimit-headers|x-ratelimit" '$CLI seq "$U" 2 requests 20'
    farrow "13 reset 1 min ahead: requests (timeout 20), 2 GETs" "as plain (20 s)"
    far frd 30 "--quota-spent|15|--ratelimit-headers|ratelimit" \
        'curl -s -o /dev/null "$U"; curl --max-time 5 -s -o /dev/null -w "%{http_code}\n" "$U"'
    farrow "13 reset 15 s ahead: curl, then curl --max-time 5" "as plain (exit 28 at 5 s)"
    far frt 30 "--quota-spent|15|--ratelimit-headers|ratelimit" '$CLI seq "$U" 2 requests 5'
    farrow "13 reset 15 s ahead: requests (timeout 5), 2 GETs" "as plain (5 s)"
    for ra in "--retry-after-raw|86400" "--retry-after-raw|Fri, 31 Dec 9999 23:59:59 GMT" \
        "--retry-after|86400|--retry-after-form|ms" "--retry-after|86400|--retry-after-form|ms-azure" \
        "--reject-status|403|--ratelimit-headers|x-ratelimit|--quota-spent|3600|--retry-after-form|none"; do
        what=$(echo "$ra" | tr '|' ' ' |
            sed 's/--ratelimit-headers x-ratelimit --quota-spent 3600 --retry-after-form none/(GitHub, reset 1 h ahead)/')
        far fa 200 "--max-busy|0|$ra" 'curl -s -o /dev/null -w "%{http_code}\n" "$U"'
        farrow "14 $what: curl" "the answer at once (8 attempts, 140 s)"
        far fa 200 "--max-busy|0|$ra" '$CLI seq "$U" 1 blocking'
        farrow "14 $what: python http.client" "the answer at once"
    done
    # (plain has no state file to write: its poisoning fails, on stderr)
    far fs 30 "" \
        'curl -s -o /dev/null "$U"; "$POISON" "http://127.0.0.1:$P" 3600 >&2
         curl -s -o /dev/null -o /dev/null -w "%{http_code}\n" "$U" "$U"'
    farrow "15 host-wide state (hold, pace, quota) 1 h ahead: curl, 2 GETs" "as plain"
}
# ---- the harm suite's own cases ---------------------------------------------------
# Cases the suite measures itself (tests/integration/test_http_harm.sh, run
# with HARM_CASES=one case at a time): its table rows, "met" its verdict
# (every assertion of the case held: as plain).
for c in ${SUITE_CASES:-h2c unix redial_fail proxy memory}; do
    rc=0
    HARM_CASES=$c BUILD=$BUILD sh "$top/tests/integration/test_http_harm.sh" \
        >"$TMP/suite.$c" 2>&1 || rc=$?
    met=yes
    [ $rc = 0 ] || met="**no**: $(grep -m 1 '^FAIL: ' "$TMP/suite.$c" | cut -c7-)"
    awk -F' [|] ' -v met="$met" '/^# [0-9]+ / && NF == 3 {
            sub(/^# /, "", $1); sub(/ +$/, "", $1); sub(/ +$/, "", $2)
            t = $1 ~ /^20 / ? "within 1.3x of plain" : "as plain"
            printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, t, met }' "$TMP/suite.$c"
done
# ---- 46: what the library holds ---------------------------------------------------
OWNED="$BUILD/tests/helpers/harm_owned"
POISON="$BUILD/tests/helpers/share_poison"
make --no-print-directory -C "$top" BUILD="$BUILD" "$OWNED" "$POISON" >/dev/null 2>&1 || true
SHM="$XDG_RUNTIME_DIR/backoff.shm"
RPID=""
if command -v redis-server >/dev/null 2>&1; then
    RPORT=$(free_port)
    mkdir -p "$TMP/redis"
    setsid redis-server --bind 127.0.0.1 --port "$RPORT" --save '' --appendonly no --dir "$TMP/redis" \
        >"$TMP/redis/log" 2>&1 &
    RPID=$!
    PIDS="$PIDS $RPID"
    _w=0
    until [ "$(timeout -k 1 2 redis-cli -p "$RPORT" ping 2>/dev/null)" = PONG ] || [ $_w -gt 100 ]; do
        _w=$((_w + 1))
        sleep 0.1
    done
fi
rcli() { timeout -k 1 5 redis-cli -p "$RPORT" "$@"; }
# owned OUT HOW SECS SHARE CMD...: run (HOW plain or lib) with BACKOFF_SHARE=SHARE.
owned() {
    _o=$1 _h=$2 _s=$3 _sh=$4
    shift 4
    rm -f "$SHM"
    if [ "$_h" = plain ]; then
        run "$_o" plain "$_s" "$@"
    else
        run "$_o" plain "$_s" env LD_PRELOAD="$LIB" BACKOFF_SHARE="$_sh" "$@"
    fi
}
# sizes DIR: the four files' sizes and the program's closes that failed.
sizes() {
    printf '%s' "$(wc -c <"$1/f1") $(wc -c <"$1/f2") $(wc -c <"$1/f3") $(wc -c <"$1/f4") bytes"
    _e=$(grep -c 'EBADF' "$1.out" || true)
    [ "$_e" = 0 ] || printf ', %s close() EBADF' "$_e"
}
if [ -x "$OWNED" ]; then
    server own1
    B1=$B
    S1=$SPID
    server own2
    B2=$B
    for sh in host redis; do
        share=host
        if [ $sh = redis ]; then
            [ -n "$RPID" ] || { row "46 the same with BACKOFF_SHARE=redis" "-" "-" "-" "redis-server missing"; continue; }
            share="redis://127.0.0.1:$RPORT"
        fi
        for k in curl sock py; do
            for how in plain lib; do
                d="$TMP/own.$sh.$k.$how"
                mkdir -p "$d"
                if [ $k = py ]; then
                    owned "$d.out" $how 30 "$share" $PY "$PROGS/harm_owned.py" fds range "$B1/quick" "$B2/quick" "$d"
                else
                    owned "$d.out" $how 30 "$share" "$OWNED" fds $k range "$B1/quick" "$B2/quick" "$d"
                fi
            done
            pl=$(sizes "$TMP/own.$sh.$k.plain") ll=$(sizes "$TMP/own.$sh.$k.lib")
            row "46 close_range, 4 files of its own, a new destination ($k, $sh)" "$pl" "$ll" \
                "each file its own 6 bytes" "$(yes_if "\"$ll\" == \"6 6 6 6 bytes\"")"
        done
    done
    for k in curl sock; do
        owned "$TMP/tr.$k.p" plain 30 host "$OWNED" trunc $k "$B1/quick" "$B2/quick" "$SHM"
        rp=$RC
        owned "$TMP/tr.$k.l" lib 30 host "$OWNED" trunc $k "$B1/quick" "$B2/quick" "$SHM"
        row "46 the state file truncated between two calls ($k)" \
            "exit $rp, $(grep -c ' 200$' "$TMP/tr.$k.p") x 200" "exit $RC, $(grep -c ' 200$' "$TMP/tr.$k.l") x 200" \
            "no signal, the answers" "$(yes_if "$RC == 0 && $(grep -c ' 200$' "$TMP/tr.$k.l") == 3")"
    done
    if [ -n "$RPID" ]; then
        for kind in zero negative leases; do
            for k in curl sock; do
                rcli flushall >/dev/null
                sh "$PROGS/fleet_poison.sh" "$RPORT" $kind "$B1" "tcp://127.0.0.1:${B1##*:}"
                owned "$TMP/pz.$kind.$k.p" plain 120 host "$OWNED" calls $k 3 "$B1/quick"
                owned "$TMP/pz.$kind.$k.l" lib 120 "redis://127.0.0.1:$RPORT" "$OWNED" calls $k 3 "$B1/quick"
                tl=$(tfield "$TMP/pz.$kind.$k.l" per_call)
                row "46 Redis keys poisoned ($kind), 3 calls ($k)" "$(tfield "$TMP/pz.$kind.$k.p" per_call) s a call" \
                    "${tl:-killed} s a call" "about plain (< 0.1 s)" "$(yes_if "${tl:-99} < 0.1")"
            done
        done
    fi
    for k in curl sock; do
        owned "$TMP/ps.$k.seed" lib 30 host "$OWNED" calls $k 1 "$B1/quick"
        "$POISON" "$B1" 3600 window >/dev/null 2>&1 || true
        run "$TMP/ps.$k.l" plain 120 env LD_PRELOAD="$LIB" "$OWNED" calls $k 3 "$B1/quick"
        rl=$RC
        owned "$TMP/ps.$k.p" plain 120 host "$OWNED" calls $k 3 "$B1/quick"
        tl=$(tfield "$TMP/ps.$k.l" per_call)
        row "46 host-wide state poisoned, 3 calls ($k)" "$(tfield "$TMP/ps.$k.p" per_call) s a call" \
            "${tl:-killed (exit $rl)} s a call" "about plain (< 0.1 s)" "$(yes_if "${tl:-99} < 0.1")"
    done
    stop
    kill "$S1" 2>/dev/null || true
    wait "$S1" 2>/dev/null || true
else
    row "46 what the library holds" "-" "-" "-" "$OWNED missing: make test-programs"
fi

# ---- costs kept as figures --------------------------------------------------------
per() { # per N CMD...: seconds for N runs of CMD
    _n=$1
    shift
    _t=$(date +%s.%N)
    _i=0
    while [ $_i -lt "$_n" ]; do _i=$((_i + 1)); "$@" >/dev/null 2>&1 || true; done
    awk -v a="$_t" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'
}
BUILD="$BUILD" sh "$top/demo/bench-startup.sh"
server curl
cp=$(per 100 curl -s -o /dev/null "$B/quick")
cl=$(per 100 "$WRAP" -- curl -s -o /dev/null "$B/quick")
stop
row "cost: 100 x curl (keep-alive server)" "$cp s" "$cl s" "a figure (issue: 1.11x)" \
    "$(awk -v a="$cp" -v b="$cl" 'BEGIN { printf "%.2fx", b / a }')"
