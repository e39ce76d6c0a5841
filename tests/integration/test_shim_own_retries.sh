#!/bin/sh
# A program that retries on its own and the shim never multiply.
# Counted at the server (or, for a closed port, in the shim's trace, one row
# per attempt that reached connect).  The retry budget says when a retry
# goes, never whether, so a call to a server that is down for good rides it
# out to the logical request's 8 attempts before the program's own retry can
# be seen; the program's retries then continue that logical request with
# their own attempts only:
#   curl --retry 3 on an always-503 server        <= 8 + 3 requests (not 4 x 8)
#   curl --retry 3 --retry-connrefused, closed port <= 8 + 3 attempts
#   a pycurl loop retrying 3 times (new handle each) <= 8 + 3 requests
# each no later than plain + the lone call's own bound (8 attempts: under
# aimd 503s are retried after 0.1 s doubling, x [1, 1.5): 19.05 s at most;
# refused connects are probed 0.1 s doubling up to 1 s apart: 4.5 s) + 3 s;
# with BACKOFF_MAX_TIME_MS=1000 (the shim's part handed back after a
# second) the first two keep the old figures: <= 8, within plain + 3 s;
#   a server down 10 s (503) that comes back, curl --retry 10 on top:
#   done no later than plain curl --retry 10 (+ tolerance, below).
# Counts are asserted strictly; times with a generous margin (a busy 2-core
# machine), the exact figures are make bench's (demo/bench-own-retries.sh).
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
[ -f "$LIB" ] || fail "build $LIB first"
PY=/usr/bin/python3
LONE_503_MS=19050    # 8 attempts on 503s: 0.1 + 0.2 + ... + 6.4 s, x 1.5 at most
LONE_REFUSED_MS=4500 # 8 refused connects: probes 0.1, 0.2, 0.4, 0.8, 1, 1, 1 s apart

# run LIMIT CMD...: CMD in its own process group, killed whole after LIMIT s.
run() {
    _lim=$1; shift
    setsid timeout -k 2 "$_lim" "$@"
}
now_ms() { date +%s%3N; }

# --- 1. curl --retry 3, always 503 -----------------------------------------
start_server plain503
t0=$(now_ms); run 60 curl -s -o "$TMP/p.out" --retry 3 "http://127.0.0.1:$PORT/status/503" || true
plain_ms=$(($(now_ms) - t0))
stop_server
plain_n=$(summary_field "$TMP/plain503.out" requests)
[ "$plain_n" = 4 ] || fail "plain curl --retry 3 sent $plain_n requests, expected 4"

start_server shim503
t0=$(now_ms)
BACKOFF_STATS="$TMP/c503.json" LD_PRELOAD="$LIB" run 90 curl -s -o "$TMP/s.out" --retry 3 \
    "http://127.0.0.1:$PORT/status/503" || true
shim_ms=$(($(now_ms) - t0))
stop_server
shim_n=$(summary_field "$TMP/shim503.out" requests)
note "curl --retry 3, always 503: plain $plain_n requests ${plain_ms} ms; shim $shim_n requests ${shim_ms} ms"
[ "$shim_n" -ge 8 ] && [ "$shim_n" -le 11 ] || fail "under the shim: $shim_n requests, expected 8..11"
[ "$shim_ms" -le $((plain_ms + LONE_503_MS + 3000)) ] || fail "under the shim ${shim_ms} ms, plain ${plain_ms} ms"
[ "$(cat "$TMP/s.out")" = status ] || fail "the program did not get the last answer's body"
[ "$(stats_sum "$TMP/c503.json" calls)" = 4 ] || fail "expected the program's 4 calls in the stats"
[ "$(stats_sum "$TMP/c503.json" budget_delayed)" = 0 ] ||
    fail "a lone call was held by the retry budget: $(cat "$TMP/c503.json")"

# With the shim's part bounded to a second, the program's retries lead: the old figures.
start_server quick503
t0=$(now_ms)
BACKOFF_MAX_TIME_MS=1000 LD_PRELOAD="$LIB" run 60 curl -s -o "$TMP/s.out" --retry 3 \
    "http://127.0.0.1:$PORT/status/503" || true
quick_ms=$(($(now_ms) - t0))
stop_server
quick_n=$(summary_field "$TMP/quick503.out" requests)
note "... with BACKOFF_MAX_TIME_MS=1000: $quick_n requests ${quick_ms} ms"
[ "$quick_n" -ge 4 ] && [ "$quick_n" -le 8 ] || fail "BACKOFF_MAX_TIME_MS=1000: $quick_n requests, expected 4..8"
[ "$quick_ms" -le $((plain_ms + 3000)) ] || fail "BACKOFF_MAX_TIME_MS=1000: ${quick_ms} ms, plain ${plain_ms} ms"

# Without recognition (a budget off and no logical requests) it would be 4 x 8:
# BACKOFF_RETRY_BUDGET=0 still keeps the logical request's 8 attempts.
start_server nobudget
BACKOFF_RETRY_BUDGET=0 BACKOFF_BASE_MS=10 BACKOFF_CAP_MS=40 LD_PRELOAD="$LIB" run 60 \
    curl -s -o "$TMP/s.out" --retry 3 "http://127.0.0.1:$PORT/status/503" || true
stop_server
nb_n=$(summary_field "$TMP/nobudget.out" requests)
note "BACKOFF_RETRY_BUDGET=0: $nb_n requests (the logical request's 8 + the program's 3)"
[ "$nb_n" -le 11 ] || fail "with the budget off: $nb_n requests, expected <= 8 + 3"

# --- 2. closed port, --retry-connrefused -------------------------------------
CPORT=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
t0=$(now_ms); rc=0; run 60 curl -s -o /dev/null --retry 3 --retry-connrefused "http://127.0.0.1:$CPORT/" || rc=$?
plain_ms=$(($(now_ms) - t0))
[ "$rc" = 7 ] || fail "plain curl on a closed port: exit $rc, expected 7"
# BACKOFF_HOSTS names it, so the shim retries the refusals itself.
for quick in 0 1000; do
    t0=$(now_ms); rc=0
    rm -f "$TMP/closed.csv"
    BACKOFF_MAX_TIME_MS=$quick BACKOFF_HOSTS=127.0.0.1 BACKOFF_TRACE="$TMP/closed.csv" \
        LD_PRELOAD="$LIB" run 60 \
        curl -s -o /dev/null --retry 3 --retry-connrefused "http://127.0.0.1:$CPORT/" || rc=$?
    shim_ms=$(($(now_ms) - t0))
    [ "$rc" = 7 ] || fail "curl under the shim on a closed port: exit $rc, expected 7"
    n=$(($(wc -l <"$TMP/closed.csv") - 1))
    note "curl --retry 3 --retry-connrefused, closed port: plain 4 attempts ${plain_ms} ms; shim (BACKOFF_MAX_TIME_MS=$quick) $n attempts ${shim_ms} ms"
    if [ "$quick" = 0 ]; then
        [ "$n" -ge 8 ] && [ "$n" -le 11 ] || fail "under the shim: $n attempts, expected 8..11"
        [ "$shim_ms" -le $((plain_ms + LONE_REFUSED_MS + 3000)) ] || fail "under the shim ${shim_ms} ms, plain ${plain_ms} ms"
    else
        [ "$n" -ge 4 ] && [ "$n" -le 8 ] || fail "BACKOFF_MAX_TIME_MS=1000: $n attempts, expected 4..8"
        [ "$shim_ms" -le $((plain_ms + 3000)) ] || fail "BACKOFF_MAX_TIME_MS=1000: ${shim_ms} ms, plain ${plain_ms} ms"
    fi
done

# --- 3. a pycurl loop with its own 3 retries, a new handle each time ---------
start_server pyplain
t0=$(now_ms); run 60 $PY "$TOP/tests/programs/pycurl_retry.py" "http://127.0.0.1:$PORT/status/503" >"$TMP/py.out"
plain_ms=$(($(now_ms) - t0))
stop_server
start_server pyshim
t0=$(now_ms)
LD_PRELOAD="$LIB" run 90 $PY "$TOP/tests/programs/pycurl_retry.py" "http://127.0.0.1:$PORT/status/503" >"$TMP/py.out"
shim_ms=$(($(now_ms) - t0))
stop_server
[ "$(cat "$TMP/py.out")" = 503 ] || fail "the pycurl loop under the shim ended with $(cat "$TMP/py.out")"
plain_n=$(summary_field "$TMP/pyplain.out" requests)
shim_n=$(summary_field "$TMP/pyshim.out" requests)
note "pycurl loop, 3 retries: plain $plain_n requests ${plain_ms} ms; shim $shim_n requests ${shim_ms} ms"
[ "$plain_n" = 4 ] || fail "the plain loop sent $plain_n requests"
[ "$shim_n" -ge 8 ] && [ "$shim_n" -le 11 ] || fail "under the shim: $shim_n requests, expected 8..11"
[ "$shim_ms" -le $((plain_ms + LONE_503_MS + 3000)) ] || fail "under the shim ${shim_ms} ms, plain ${plain_ms} ms"

# --- 4. down 10 s (503), then back; curl --retry 10 on top -------------------
# Both runs at once, each against its own server started just before, so
# that the machine's load hits both alike.  Plain curl retries after 1, 2, 4
# and 8 s and gets through at about 15 s.  Under the shim the first call
# rides the outage out itself: its retries wait 0.1 s doubling, each up to
# 1.5x with jitter, so its eighth attempt comes after 12.7 to 19 s (15.9 s
# on average) and finds the server back.  Tolerance: 1.5 s for the jitter
# over plain's 15 s, plus 1.5 s for the machine's noise between the two runs.
start_server downplain --outage-at 0 --outage-for 10 --outage-mode 503
PORT_PLAIN=$PORT
start_server downshim --outage-at 0 --outage-for 10 --outage-mode 503
PORT_SHIM=$PORT
(t0=$(now_ms); run 60 curl -s -o "$TMP/dp.out" --retry 10 "http://127.0.0.1:$PORT_PLAIN/item/1"
 echo "$? $(($(now_ms) - t0))" >"$TMP/dp.res") &
p1=$!
(t0=$(now_ms); LD_PRELOAD="$LIB" run 60 curl -s -o "$TMP/ds.out" --retry 10 "http://127.0.0.1:$PORT_SHIM/item/1"
 echo "$? $(($(now_ms) - t0))" >"$TMP/ds.res") &
p2=$!
wait $p1 $p2
read -r prc plain_ms <"$TMP/dp.res"
read -r src shim_ms <"$TMP/ds.res"
[ "$prc" = 0 ] && [ "$src" = 0 ] || fail "after the outage: plain exit $prc, shim exit $src"
[ "$(cat "$TMP/ds.out")" = "$(item_body 1)" ] || fail "under the shim the body is not item 1's"
note "down 10 s then back, curl --retry 10: plain ${plain_ms} ms, shim ${shim_ms} ms"
[ "$shim_ms" -le $((plain_ms + 3000)) ] || fail "under the shim ${shim_ms} ms, plain ${plain_ms} ms"
note "own retries: counts within the logical request's budget, no slower than the program alone"
