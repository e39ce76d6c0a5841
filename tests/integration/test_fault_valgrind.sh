#!/bin/sh
# memcheck over the shim in real programs: the curl command retrying 429s
# and reading a body reset half way, and loadgen (8 threads,
# one shared window) against a concurrency cap, all under valgrind with
# the shim preloaded.  Any invalid read/write, use of uninitialised memory
# or definite leak in the run makes valgrind exit 99.  Run by `make test`
# and `make check-valgrind`.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
[ -f "$LIB" ] && [ -x "$BUILD/loadgen" ] || fail "build $LIB and $BUILD/loadgen first"
command -v valgrind >/dev/null || fail "valgrind is not installed (apt-get install valgrind)"
VG="valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
CURL=/usr/bin/curl

start_server all429 --max-busy 0
URL="http://127.0.0.1:$PORT"
note "curl under memcheck, retrying 429s (3 attempts each, then the 429 is returned)"
for i in 1 2; do
    rc=0
    BACKOFF_MAX_ATTEMPTS=3 BACKOFF_BASE_MS=10 BACKOFF_STATS="$TMP/c.json" LD_PRELOAD="$LIB" \
        $VG $CURL -s "$URL/item/$i" >"$TMP/c$i.out" 2>"$TMP/c$i.err" || rc=$?
    [ $rc -eq 0 ] || fail "curl $i under valgrind exited $rc: $(tail -n 30 "$TMP/c$i.err")"
    [ "$(cat "$TMP/c$i.out")" = rejected ] || fail "curl $i: not the final 429's body"
done
note "attempts $(stats_sum "$TMP/c.json" attempts) for $(stats_sum "$TMP/c.json" calls) calls"
[ "$(stats_sum "$TMP/c.json" attempts)" -eq 6 ] || fail "expected 3 attempts per call"
stop_server

start_server reset --fault-reset 1
note "curl under memcheck, body reset half way"
rc=0
BACKOFF_STATS="$TMP/r.json" LD_PRELOAD="$LIB" $VG $CURL -s "http://127.0.0.1:$PORT/item/3?size=100000" \
    >/dev/null 2>"$TMP/r.err" || rc=$?
[ $rc -eq 56 ] || [ $rc -eq 18 ] || fail "reset under valgrind: exit $rc: $(tail -n 30 "$TMP/r.err")"
stop_server

start_server busy --max-busy 4 --service-ms 5
note "loadgen, 8 threads, under memcheck"
rc=0
BACKOFF_STATS="$TMP/l.json" LD_PRELOAD="$LIB" $VG "$BUILD/loadgen" \
    --url "http://127.0.0.1:$PORT/item/{n}" --requests 200 --threads 8 --verify \
    >"$TMP/l.tsv" 2>"$TMP/l.err" || rc=$?
[ $rc -eq 0 ] || fail "loadgen under valgrind exited $rc: $(tail -n 40 "$TMP/l.err")"
cat "$TMP/l.tsv" "$TMP/l.json"
[ "$(summary_field "$TMP/l.tsv" ok)" = 200 ] || fail "not every request ended 200"
[ "$(summary_field "$TMP/l.tsv" body_mismatch)" = 0 ] || fail "body mismatches"
# Default 8 attempts: no call gives up (a throttle waits an RTO).
[ "$(stats_sum "$TMP/l.json" gave_up)" = 0 ] || fail "$(stats_sum "$TMP/l.json" gave_up) calls gave up"
stop_server
echo "ok"
