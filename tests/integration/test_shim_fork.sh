#!/bin/sh
# A program that forks while other threads are inside the shim (waiting
# for a slot of a one-request window, or transferring): every child can use
# curl (the shim's locks are held across fork() and initialised anew in the
# child, whose in-flight counts start from zero).
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
H="$BUILD/tests/helpers/stress_fork"
[ -f "$LIB" ] && [ -x "$H" ] || fail "build $LIB and $H first"

start_server forkee --service-ms 10
URL="http://127.0.0.1:$PORT"

note "without the shim (the helper itself works)"
"$H" "$URL" 4 5 || fail "stress_fork fails without the shim"

note "under the shim, window of one: threads queue inside the shim while the main thread forks"
BACKOFF_WINDOW=1 BACKOFF_WINDOW_MAX=1 BACKOFF_STATS="$TMP/stats.json" LD_PRELOAD="$LIB" \
    "$H" "$URL" 8 30 || fail "a forked child could not use curl under the shim"
cat "$TMP/stats.json"
# One object for the parent, one per child.
[ "$(wc -l <"$TMP/stats.json")" -ge 1 ] || fail "no stats"
stop_server
echo "ok"
