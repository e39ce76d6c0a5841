#!/bin/sh
# 10,000 destinations from one process, every one managed (the table once
# held 256 and let the rest pass through with no retry).  One
# ratelimit-server that drops every second request; the helper sends one
# GET to each of "d0.test" .. "d9999.test" (all routed to it with
# CURLOPT_CONNECT_TO), so after the first call each call's first attempt is
# dropped and only a retry can answer it.  The table keeps 16,384 idle
# destinations: a second run with 20,000 evicts the least recently used on
# the way (their counters still count in the stats at exit).
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
H="$BUILD/tests/helpers/many_dests"
[ -f "$LIB" ] && [ -x "$H" ] || fail "build $LIB and $H first"
N=${MANY_DESTS:-10000}
N_EVICT=${MANY_DESTS_EVICT:-20000}

start_server drop --fault-drop 2 --threads 1
note "without the shim the drops reach the program"
rc=0
timeout -k 2 60 setsid "$H" "$PORT" 4 0 >"$TMP/plain.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "many_dests without the shim exited $rc, expected 1: $(cat "$TMP/plain.out")"
stop_server

run_dests() {
    n=$1
    start_server drop --fault-drop 2 --threads 1
    note "under the shim: $n destinations, each retried once"
    rm -f "$TMP/stats.json" "$TMP/trace.csv"
    rc=0
    BACKOFF_BASE_MS=1 BACKOFF_CAP_MS=5 BACKOFF_STATS="$TMP/stats.json" \
        BACKOFF_TRACE="$TMP/trace.csv" LD_PRELOAD="$LIB" \
        timeout -k 2 240 setsid "$H" "$PORT" "$n" 0 >"$TMP/shim.out" 2>&1 || rc=$?
    cat "$TMP/shim.out"
    [ $rc -eq 0 ] || fail "many_dests under the shim exited $rc: $(tail -n 3 "$TMP/shim.out")"
    calls=$(stats_sum "$TMP/stats.json" calls)
    retries=$(stats_sum "$TMP/stats.json" retries)
    gave_up=$(stats_sum "$TMP/stats.json" gave_up)
    note "calls=$calls retries=$retries gave_up=$gave_up"
    [ "$calls" -eq "$n" ] || fail "stats count $calls calls, expected $n"
    [ "$retries" -ge $((n - 1)) ] || fail "only $retries retries for $n destinations"
    [ "$gave_up" -eq 0 ] || fail "$gave_up calls given up"
    # Every destination but the first was retried: the trace names each.
    retried=$(awk -F, '$7 == "retry" { print $4 }' "$TMP/trace.csv" | sort -u | wc -l)
    note "destinations with a retry in the trace: $retried"
    [ "$retried" -ge $((n - 1)) ] || fail "only $retried of $n destinations were retried"
    stop_server
}
run_dests "$N"
run_dests "$N_EVICT"
echo "ok"
