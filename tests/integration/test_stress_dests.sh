#!/bin/sh
# Threads that look destinations up while others are created, released and
# evicted: 8 threads, each with its own handle, round-robin over DESTS
# destinations from their own offsets (so they meet on the same blocks),
# against a server that drops every fourth request, so calls retry while the
# table churns (up to 50 attempts a call: threads in step can meet the drops
# several times running, seen 8 times under TSan; the destinations' retry
# budget, which would give a fresh destination's first call 3 retries, is off).  Every call must end with a 200, and the stats at exit must
# count each one (evicted blocks fold their counters in).  The sanitizer
# builds keep only 2 idle blocks per shard: there this evicts constantly.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
H="$BUILD/tests/helpers/many_dests"
[ -f "$LIB" ] && [ -x "$H" ] || fail "build $LIB and $H first"
DESTS=${STRESS_DESTS:-500}
CALLS=${STRESS_CALLS:-500}
THREADS=8

start_server drop --fault-drop 4
note "$THREADS threads x ($DESTS + $CALLS) calls over $DESTS destinations"
rc=0
BACKOFF_BASE_MS=1 BACKOFF_CAP_MS=5 BACKOFF_MAX_ATTEMPTS=50 BACKOFF_RETRY_BUDGET=0 BACKOFF_STATS="$TMP/stats.json" LD_PRELOAD="$LIB" \
    timeout -k 2 240 setsid "$H" "$PORT" "$DESTS" "$CALLS" "$THREADS" >"$TMP/out" 2>&1 || rc=$?
cat "$TMP/out"
[ $rc -eq 0 ] || fail "many_dests exited $rc: $(tail -n 3 "$TMP/out")"
calls=$(stats_sum "$TMP/stats.json" calls)
retries=$(stats_sum "$TMP/stats.json" retries)
want=$((THREADS * (DESTS + CALLS)))
note "calls=$calls retries=$retries"
[ "$calls" -eq "$want" ] || fail "stats count $calls calls, expected $want"
[ "$retries" -gt 0 ] || fail "no retries: the server's drops never reached the shim"
stop_server
echo "ok"
