#!/bin/sh
# The http room (shim/http/): programs that speak HTTP/1.x themselves over
# plain TCP sockets get the libcurl programs' retries.  Each client (Python's
# requests Session and requests.get, urllib.request, http.client and its
# POSTs, httpie, Ruby's net/http, Perl's LWP and HTTP::Tiny, PHP's
# file_get_contents, wget) fetches /item/1..N from ratelimit-server and
# counts the right bodies (item_body), plain and under the shim (LD_PRELOAD;
# `backoff --` for httpie), each in its own session under a hard timeout
# (tests/integration/http_lib.sh):
#   - a token bucket without Retry-After (every client), one with it (the
#     waits are the server's; Node's http.get and fetch too, 40 items on a
#     kept-alive connection: all right, their sends paced), a server that closes every connection
#     (--close; Node's epoll loop too, when installed), a concurrency cap
#     with three processes at once (their first requests held at the
#     server's gate until all three are there, then admitted at one instant,
#     so that they meet the cap on any machine): plain some answers are
#     429s, under the shim every body is right, the shim retried, no POST
#     reached the server twice;
#   - nothing throttled: the output and the server's log of requests are
#     the same plain and under the shim, which followed every call (stats)
#     and retried none;
#   - pip download from a throttling PEP 503 index (plain: a 429 error);
#   - BACKOFF_HTTP=0: the family passes everything through;
#   - the program's limits: a read's SO_RCVTIMEO bounds the retry's wait, a
#     signal whose handler lacks SA_RESTART ends it (the 429 is handed back
#     at once), a non-blocking socket's read is never held but for the wait;
#     a POST over the 64 KiB kept is sent once.
# test_http_tls.sh does the same over https.
. "$(dirname "$0")/lib.sh"

. "$(dirname "$0")/http_lib.sh"

# ---- a token bucket, keep-alive; with Retry-After; closing; a cap --------------

SEC=bucket
start_server bucket --rate 10 --burst 3 --bucket-hints none
B="http://127.0.0.1:$PORT"
for c in session get urllib client post ruby lwp tiny php wget; do
    throttled $c "$B" $N 0.4
done
stop_server
[ "$(summary_field "$TMP/bucket.out" duplicate_posts)" = 0 ] || fail "a POST reached the server twice"
[ "$(summary_field "$TMP/bucket.out" posts)" -ge $N ] || fail "the POSTs did not reach the server"

# GitHub's primary rate limit: a 403 with x-ratelimit-remaining: 0 and no
# Retry-After is a throttle in every room (bo_answer_quota_spent: the one
# judgment), for requests and for PyGithub on it (Github(base_url=...)).
# Under the library the quota the headers tell is paced on its own, so the
# 403 is made certain: before each run a plain curl spends the window (40
# requests on one connection) with at least 3.5 s of it left, and the
# client starts at once: plain it gets 403s, under the library it meets one
# at its first call, waits for the window's reset, and gets every answer.
SEC=quota403
mkdir -p "$TMP/gh/repos/octo"
printf '{"id": 1, "name": "hello", "full_name": "octo/hello"}' >"$TMP/gh/repos/octo/hello"
start_server quota403 --window-requests 40 --window-s 5 --ratelimit-headers x-ratelimit \
    --reject-status 403 --retry-after-form none --serve-dir "$TMP/gh"
Q="http://127.0.0.1:$PORT"
spend_window() {
    _left=$((5000 - $(date +%s%3N) % 5000))
    [ $_left -ge 3500 ] || sleep "$(awk -v l=$_left 'BEGIN { printf "%.3f", l / 1000 + 0.05 }')"
    # shellcheck disable=SC2046
    curl -s $(_i=0; while [ $_i -lt 40 ]; do echo "-o /dev/null $Q/item/1"; _i=$((_i + 1)); done)
}
BEFORE_RUN=spend_window
for c in session github; do
    throttled $c "$Q" 40 0
    [ "$(stats_sum "$TMP/quota403.$c.shim.stats" throttled)" -ge 1 ] ||
        fail "quota403 $c: no 403 was met under the library: the case proves nothing"
done
BEFORE_RUN=""
stop_server

# Retry-After: 1 on every 429: each retry waited for it
SEC=hints
start_server hints --rate 10 --burst 3
for c in client php wget; do
    throttled $c "http://127.0.0.1:$PORT" $N 0.4
    r=$(stats_sum "$TMP/hints.$c.shim.stats" retries) w=$(stats_sum "$TMP/hints.$c.shim.stats" wait_ms)
    [ "$w" -ge $((r * 900)) ] || fail "$c: $r retries waited $w ms in all: Retry-After: 1 not kept"
done
# Node's event loop (http.get and fetch, 40 items on one kept-alive
# connection): its retries live across the loop's turns (undici's 1 s tick
# never leaves room for a Retry-After: 1 inside one wait), and its sends are
# paced (no EPOLLOUT before the pace's time): all 40, and few 429s met (one
# in four unpaced: the bucket's burst of 3, then a 429)
if command -v node >/dev/null && ! ldd "$LIB" | grep -q 'lib[at]san'; then
    for c in node fetch; do
        throttled $c "http://127.0.0.1:$PORT" 40 0.4
        r=$(stats_sum "$TMP/hints.$c.shim.stats" retries)
        [ "$r" -le 6 ] || fail "$c: $r retries of 40 requests: its sends were not paced"
    done
fi
stop_server

# httpie starts a process per request (0.4 s each, over 1 s on a busy
# machine): a bucket slow enough that plain meets its throttle however slow
# the processes start (a token every 4 s), and the wrapper instead of
# LD_PRELOAD.
SEC=httpie
start_server httpie --rate 0.25 --burst 2 --bucket-hints none
throttled httpie "http://127.0.0.1:$PORT" 4 8.1 wrapper
stop_server

# a server that ends every connection after its answer: each retry is a new
# socket in place of the program's
SEC=close
start_server close --rate 10 --burst 3 --bucket-hints none --close
for c in client ruby; do throttled $c "http://127.0.0.1:$PORT" $N 0.4; done
# Node (libuv under epoll, if installed): the new socket joins the epoll set.
# Not with a sanitized library: node names ld.so among its own dependencies,
# ahead of the sanitizer runtime the library brings, whose start-up then
# finds no _dl_get_tls_static_info behind it and crashes (without the shim's
# code running at all).
if command -v node >/dev/null && ! ldd "$LIB" | grep -q 'lib[at]san'; then
    throttled node "http://127.0.0.1:$PORT" $N 0.4
fi
stop_server

# three processes at once against one slot held 100 ms: plain some are 429s
# (the gate holds their first requests until all three are there, then
# admits them at one instant: one in, two refused, however slowly the
# machine started them; it closes again for the next round)
start_server cap --max-busy 1 --service-ms 100 --gate
# gate_says PATTERN N: waits (at most 60 s) for the Nth line of the cap's
# stderr matching PATTERN
gate_says() {
    _w=0
    until [ "$(grep -c "$1" "$TMP/cap.err")" -ge "$2" ]; do
        _w=$((_w + 1))
        [ $_w -gt 600 ] && fail "the cap's gate never said '$1' ($2 times): $(tail -n 3 "$TMP/cap.err")"
        sleep 0.1
    done
}
B="http://127.0.0.1:$PORT"
round=0
for how in plain shim; do
    pids=""
    for i in 1 2 3; do
        # shellcheck disable=SC2046
        run "$TMP/cap.$how.$i" $how $(client client "$B" 4 cap) &
        pids="$pids $!"
    done
    round=$((round + 1))
    gate_says "^ratelimit-server: gate: 3 held\$" $round
    kill -USR1 "$SERVER_PID"
    for p in $pids; do wait "$p" || fail "a client against the cap failed ($how)"; done
    kill -USR2 "$SERVER_PID"
    gate_says '^ratelimit-server: gate closed$' $round
    sleep 0.3
done
bp=0 bs=0
for i in 1 2 3; do
    bp=$((bp + $(bad_of "$TMP/cap.plain.$i"))) bs=$((bs + $(bad_of "$TMP/cap.shim.$i")))
done
note "cap of one slot, 3 processes x 4 GETs: plain $((12 - bp))/12 right, under the shim $((12 - bs))/12"
[ $bp -gt 0 ] || fail "the cap rejected nothing plain"
[ $bs = 0 ] || fail "the cap under the shim: $bs wrong"
stop_server

# ---- pip download from a throttling index (a bucket of one, no Retry-After) ----

$PY "$PROGS/http_pip_index.py" "$TMP/index"
start_server pip --serve-dir "$TMP/index" --rate 1 --burst 1 --bucket-hints none
PIP="$PY -m pip download tinypkg --index-url http://127.0.0.1:$PORT/simple/ --trusted-host 127.0.0.1
     --no-deps --no-cache-dir --disable-pip-version-check --progress-bar off"
rc=0
# shellcheck disable=SC2086
setsid timeout -k 2 60 $PIP -d "$TMP/pip.plain" >"$TMP/pip.plain.log" 2>&1 || rc=$?
[ $rc != 0 ] && grep -q "HTTP error 429" "$TMP/pip.plain.log" ||
    fail "pip download plain: exit $rc without a 429: $(tail -3 "$TMP/pip.plain.log")"
sleep 1.1
# shellcheck disable=SC2086
run "$TMP/pip.shim.log" shim $PIP -d "$TMP/pip.shim"
cmp -s "$TMP/pip.shim/tinypkg-1.0-py3-none-any.whl" \
    "$TMP/index/simple/tinypkg/tinypkg-1.0-py3-none-any.whl" ||
    fail "pip download under the shim: $(tail -3 "$TMP/pip.shim.log")"
stop_server
note "pip download: plain fails on a 429, under the shim the wheel came whole" \
    "($(stats_sum "$TMP/pip.shim.log.stats" retries) retries)"

# ---- nothing throttled: the same bytes, the same requests ---------------------

start_server open --log "$TMP/open.csv"
B="http://127.0.0.1:$PORT"
unthrottled "$B" session get urllib client ruby lwp tiny php wget
stop_server
unthrottled_requests 9
note "unthrottled: 9 clients byte-exact with their plain runs, the same requests, none retried"

# ---- BACKOFF_HTTP=0 -------------------------------------------------------------

start_server off --rate 10 --burst 3
# shellcheck disable=SC2046
run "$TMP/off" off $(client client "http://127.0.0.1:$PORT" $N off)
stop_server
[ "$(bad_of "$TMP/off")" -gt 0 ] && [ "$(stats_sum "$TMP/off.stats" retries)" = 0 ] ||
    fail "BACKOFF_HTTP=0: $(cat "$TMP/off"), $(stats_sum "$TMP/off.stats" retries) retries"
note "BACKOFF_HTTP=0: passed through ($(cat "$TMP/off"))"

# ---- the program's limits ---------------------------------------------------------

# every request is refused with Retry-After: 3 (a bucket that never fills)
start_server limits --rate 0.01 --burst 1 --bucket-hints fixed --retry-after 3
B="http://127.0.0.1:$PORT"
curl -s -o /dev/null "$B/item/0" # spend the one token
for t in rcvtimeo signal nonblocking; do
    setsid timeout -k 2 30 env LD_PRELOAD="$LIB" BACKOFF_SHARE=process BACKOFF_MAX_TIME_MS=4000 \
        $PY "$PROGS/http_limits.py" $t "$B" >"$TMP/limits.$t" 2>&1 ||
        fail "limits $t: $(cat "$TMP/limits.$t")"
    note "limits $t: $(cat "$TMP/limits.$t")"
done
# a POST over the 64 KiB a request is kept to is sent once, its 429 handed back
# shellcheck disable=SC2046
run "$TMP/bigpost" shim $(client bigpost "$B" 1 big)
grep -qx 'status 429 body rejected' "$TMP/bigpost" || fail "a 100 kB POST: $(cat "$TMP/bigpost")"
[ "$(stats_sum "$TMP/bigpost.stats" attempts)" = 1 ] && [ "$(stats_sum "$TMP/bigpost.stats" calls)" = 1 ] ||
    fail "a 100 kB POST was sent $(stats_sum "$TMP/bigpost.stats" attempts) times"
stop_server
note "a POST of 100 kB (over the 64 KiB kept): followed, sent once, its 429 handed back"
echo "ok"
