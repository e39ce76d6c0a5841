#!/bin/sh
# BACKOFF_SHARE=host: fresh `backoff -- curl` processes, one
# after another and 8 at once (xargs -P 8), share what they learn about a
# destination.  Against a token bucket that sends no Retry-After (5/s, burst
# 5: slow enough that this machine's curl loop outruns it) and a
# concurrency cap (4 slots, 200 ms each): every call ends 200, none gives
# up, and the attempts per request stay low.  The same 8-at-once run with
# BACKOFF_SHARE=process is the control: without sharing, the bucket throttles
# it many times over (so this test can fail).  Figures: attempts/request
# and completion against the optimum, printed as notes.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/backoff" ] || fail "build libbackoff.so and backoff first"
command -v curl >/dev/null || fail "curl is not installed"

# run NAME MODE P N OPTIMUM_MS: N calls, P at a time, against $PORT; writes
# "attempts calls gave_up elapsed_ms ok" to $TMP/NAME.res and a note.
run() {
    _n=$1 _mode=$2 _p=$3 _c=$4 _opt=$5
    _t0=$(date +%s%3N)
    seq 1 "$_c" | BACKOFF_SHARE=$_mode BACKOFF_STATS="$TMP/$_n.json" BACKOFF_MAX_ATTEMPTS=8 \
        setsid timeout -k 2 200 xargs -P "$_p" -I{} "$BUILD/backoff" -- \
        curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT/item/{}" \
        >"$TMP/$_n.codes" || fail "$_n: xargs failed or timed out"
    _t1=$(date +%s%3N)
    _ok=$(grep -c '^200$' "$TMP/$_n.codes" || true)
    _a=$(stats_sum "$TMP/$_n.json" attempts)
    _calls=$(stats_sum "$TMP/$_n.json" calls)
    _g=$(stats_sum "$TMP/$_n.json" gave_up)
    echo "$_a $_calls $_g $((_t1 - _t0)) $_ok" >"$TMP/$_n.res"
    note "$_n ($_mode, $_p at once): $_ok/$_c ok, $_a attempts ($(awk -v a="$_a" -v c="$_c" 'BEGIN { printf "%.2f", a / c }')/request), gave up $_g, $((_t1 - _t0)) ms ($(awk -v t="$((_t1 - _t0))" -v o="$_opt" 'BEGIN { printf "%.2f", t / o }')x the optimum $_opt ms)"
}

# check NAME CALLS MAX_ATTEMPTS_X100: every call 200, no give-up, attempts bounded.
check() {
    set -- "$1" "$2" "$3" $(cat "$TMP/$1.res")
    [ "$8" = "$2" ] || fail "$1: $8 of $2 calls ended 200"
    [ "$6" = 0 ] || fail "$1: $6 calls gave up"
    [ "$5" = "$2" ] || fail "$1: the stats count $5 calls, expected $2"
    [ $(($4 * 100)) -le $(($2 * $3)) ] || fail "$1: $4 attempts for $2 calls (at most $3/100 per call expected)"
}

# Token bucket without hints.  Optimum: (calls - burst) / rate.
start_server bucket --rate 5 --burst 5 --bucket-hints none
run bucket-seq host 1 100 19000
check bucket-seq 100 150
stop_server
# A new server (a full bucket) and a new state directory for each run.
start_server bucket2 --rate 5 --burst 5 --bucket-hints none
XDG_RUNTIME_DIR=$TMP/x8 && mkdir -m 700 "$XDG_RUNTIME_DIR"
run bucket-x8 host 8 200 39000
check bucket-x8 200 150
# --status names the destination, nothing in flight, nobody attached
"$BUILD/backoff" --status >"$TMP/status" || fail "--status failed: $(cat "$TMP/status")"
cat "$TMP/status"
grep -q "^http://127.0.0.1:$PORT " "$TMP/status" || fail "--status does not list the destination"
awk -v k="http://127.0.0.1:$PORT" '$1 == k && ($4 != 0 || $5 != 0) { bad = 1 } END { exit bad }' "$TMP/status" ||
    fail "--status shows attempts in flight or processes attached after every process ended"
stop_server
start_server bucket3 --rate 5 --burst 5 --bucket-hints none
run bucket-x8-process process 8 100 19000
set -- $(cat "$TMP/bucket-x8-process.res")
[ "$1" -ge 150 ] ||
    fail "control: process-local state made only $1 attempts for 100 calls: the bucket did not throttle, the test proves nothing"
stop_server

# Concurrency cap: 4 slots, 200 ms each.  Optimum: calls x 200 ms / 4.
start_server cap --max-busy 4 --service-ms 200
XDG_RUNTIME_DIR=$TMP/cap && mkdir -m 700 "$XDG_RUNTIME_DIR"
run cap-seq host 1 30 6000
check cap-seq 30 125
run cap-x8 host 8 200 10000
check cap-x8 200 150
stop_server
echo "ok"
