#!/bin/sh
# Pacing from the server's rate-limit headers, through the shim: loadgen (8
# threads) against a fixed window of 20 requests per 2 s.  With the headers
# (GitHub's x-ratelimit-* and the draft's structured fields) the shim
# spreads the quota so that at most 1% of attempts are answered 429, and
# the run takes about requests / (20 / 2 s).  With BACKOFF_RATELIMIT_HEADERS=0
# the same run is throttled (so this test can fail), and so is a run whose
# answers carry no headers.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/loadgen" ] || fail "build libbackoff.so and loadgen first"
REQ=100

# run NAME DIALECT [VAR=VALUE...]: writes "throttled attempts elapsed_ms" to $TMP/NAME.res
run() {
    _name=$1 _dialect=$2; shift 2
    start_server "$_name" --window-requests 20 --window-s 2 --ratelimit-headers "$_dialect"
    _t0=$(date +%s%3N)
    env "$@" BACKOFF_MAX_ATTEMPTS=0 BACKOFF_STATS="$TMP/$_name.json" LD_PRELOAD="$BUILD/libbackoff.so" \
        setsid timeout -k 2 60 "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" \
        --requests $REQ --threads 8 >"$TMP/$_name.tsv" || fail "$_name: loadgen failed or timed out"
    _t1=$(date +%s%3N)
    stop_server
    [ "$(summary_field "$TMP/$_name.tsv" ok)" = $REQ ] || fail "$_name: not every request ended 200"
    echo "$(stats_sum "$TMP/$_name.json" throttled) $(stats_sum "$TMP/$_name.json" attempts) $((_t1 - _t0))" >"$TMP/$_name.res"
}

run off x-ratelimit BACKOFF_RATELIMIT_HEADERS=0
off=$(cat "$TMP/off.res")
note "headers off: throttled/attempts/ms $off"
[ "${off%% *}" -ge 2 ] || fail "without pacing the window throttled only ${off%% *} attempts: the test proves nothing"

for d in x-ratelimit draft ratelimit; do
    run "on-$d" "$d"
    got=$(cat "$TMP/on-$d.res")
    note "$d: throttled/attempts/ms $got"
    set -- $got
    # at most 1% of attempts 429 (1 of 100)
    [ $(($1 * 100)) -le $(($2 + 99)) ] || fail "$d: $1 of $2 attempts throttled with the headers read"
    # 100 requests at 10/s: the first (partial) window may go faster, the pace
    # must not be much slower (1.5x: the machine is shared; make bench has the figures)
    [ "$3" -le 15000 ] || fail "$d: the run took $3 ms, expected about 10000"
done
echo "ok"
