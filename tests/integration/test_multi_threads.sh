#!/bin/sh
# Threads each driving their own multi handle (tests/helpers/multi_threads)
# against one throttled destination: under the shim they share its window
# through the multi hooks and every body is exact; without it some are 429.
# In check-tsan's list: the multi hooks' table and the destination's lock
# under concurrent threads.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
HELPER="$BUILD/tests/helpers/multi_threads"
[ -f "$LIB" ] && [ -x "$HELPER" ] || fail "build $LIB and $HELPER first (make test-programs)"
THREADS=${MULTI_THREADS:-4}
N=${MULTI_TRANSFERS:-40}

start_server bucket --rate 100 --burst 10 --bucket-hints none
URL="http://127.0.0.1:$PORT"
if setsid timeout -k 2 60 "$HELPER" "$URL" "$THREADS" "$N" >"$TMP/plain.out" 2>&1; then
    fail "without the shim every transfer succeeded: the server does not throttle (this test could not fail)"
fi
note "without the shim: $(cat "$TMP/plain.out")"
setsid timeout -k 2 120 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/stats" "$HELPER" "$URL" "$THREADS" "$N" \
    >"$TMP/shim.out" 2>&1 || fail "under the shim: $(cat "$TMP/shim.out")"
grep -q "^transfers $((THREADS * N)) bad 0$" "$TMP/shim.out" || fail "under the shim: $(cat "$TMP/shim.out")"
[ "$(stats_sum "$TMP/stats" calls)" = $((THREADS * N)) ] ||
    fail "$(stats_sum "$TMP/stats" calls) calls counted, expected $((THREADS * N))"
[ "$(stats_sum "$TMP/stats" retries)" -gt 0 ] || fail "the shim retried nothing"
note "under the shim: $(cat "$TMP/shim.out"), $(stats_sum "$TMP/stats" retries) retries"
echo "PASS"
