#!/bin/sh
# Server faults, under the shim:
#  - slower than the client's low-speed limit: a GET is retried up to
#    BACKOFF_MAX_ATTEMPTS and the program gets curl's timeout (28); a POST
#    (it may have reached the server) is tried once; with --max-time, the
#    program's deadline, the first attempt has the whole budget: 28 on time,
#    no retry;
#  - a refusing port: connect failures are retried up to the bound and the
#    program gets curl's 7; when the server comes back on that port while
#    the call backs off, the call succeeds;
#  - capacity flapping every second between 8 and 0: loadgen --verify gets
#    every body, the server answers each request 200 exactly once;
#  - a 100 MB response: delivered byte for byte, and the shim adds no
#    memory that grows with the body (max RSS with and without it).
. "$(dirname "$0")/lib.sh"

BO="$BUILD/backoff"
LIB="$BUILD/libbackoff.so"
[ -x "$BO" ] && [ -f "$LIB" ] && [ -x "$BUILD/loadgen" ] || fail "build backoff, libbackoff.so and loadgen first"
CURL=/usr/bin/curl

start_server slow --delay-ms 3000
URL="http://127.0.0.1:$PORT"
note "server 3 s late, client low-speed limit 1 s, 3 attempts"
rc=0
BACKOFF_POLICY=fixed BACKOFF_BASE_MS=50 BACKOFF_MAX_ATTEMPTS=3 "$BO" --stats "$TMP/t.json" -- \
    $CURL -s --speed-limit 100 --speed-time 1 "$URL/item/1" >/dev/null || rc=$?
[ $rc -eq 28 ] || fail "GET: curl exited $rc, expected its timeout 28"
[ "$(stats_sum "$TMP/t.json" attempts)" -eq 3 ] || fail "GET: $(stats_sum "$TMP/t.json" attempts) attempts, expected 3"
rc=0
BACKOFF_POLICY=fixed BACKOFF_BASE_MS=50 BACKOFF_MAX_ATTEMPTS=3 "$BO" --stats "$TMP/tp.json" -- \
    $CURL -s --speed-limit 100 --speed-time 1 -d x "$URL/item/1" >/dev/null || rc=$?
[ $rc -eq 28 ] || fail "POST: curl exited $rc, expected 28"
[ "$(stats_sum "$TMP/tp.json" attempts)" -eq 1 ] || fail "POST timed out and was retried"
rc=0
BACKOFF_POLICY=fixed BACKOFF_BASE_MS=50 BACKOFF_MAX_ATTEMPTS=3 "$BO" --stats "$TMP/tm.json" -- \
    $CURL -s -m 0.5 "$URL/item/1" >/dev/null || rc=$?
[ $rc -eq 28 ] || fail "GET -m 0.5: curl exited $rc, expected 28"
[ "$(stats_sum "$TMP/tm.json" attempts)" -eq 1 ] || fail "GET -m 0.5: retried past the program's deadline"
stop_server

note "a refusing port"
start_server gone
GONE=$PORT
stop_server
rc=0
BACKOFF_POLICY=fixed BACKOFF_BASE_MS=20 BACKOFF_MAX_ATTEMPTS=4 "$BO" --stats "$TMP/c.json" -- \
    $CURL -s "http://127.0.0.1:$GONE/item/1" >/dev/null || rc=$?
[ $rc -eq 7 ] || fail "refused: curl exited $rc, expected 7"
[ "$(stats_sum "$TMP/c.json" attempts)" -eq 4 ] || fail "refused: $(stats_sum "$TMP/c.json" attempts) attempts, expected 4"
note "the server comes back on that port while the call backs off"
# One call riding out an outage alone: the destination's retry budget (3
# retries per 10 s while nothing succeeds) is turned off for it.
BACKOFF_POLICY=fixed BACKOFF_BASE_MS=100 BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=20000 BACKOFF_RETRY_BUDGET=0 \
    "$BO" --stats "$TMP/back.json" --trace "$TMP/back.csv" -- $CURL -s "http://127.0.0.1:$GONE/item/5" \
    >"$TMP/back.out" 2>&1 &
CPID=$!
PIDS="$PIDS $CPID"
# The server comes back once three connects were refused (the trace has a row
# per attempt), not after a guessed second.
i=0
while [ "$(cat "$TMP/back.csv" 2>/dev/null | grep -c ',retry,')" -lt 3 ]; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "fewer than 3 refused attempts in 30 s: $(cat "$TMP/back.csv" "$TMP/back.out")"
    kill -0 "$CPID" 2>/dev/null || fail "the call ended while the port refused: $(cat "$TMP/back.out")"
    sleep 0.1
done
start_server comeback --port "$GONE"
wait $CPID || fail "the call did not succeed once the server was back"
item_body 5 | cmp -s - "$TMP/back.out" || fail "body after the comeback differs"
note "attempts while the port refused: $(stats_sum "$TMP/back.json" attempts)"
[ "$(stats_sum "$TMP/back.json" attempts)" -ge 3 ] || fail "the refused connects were not retried"
stop_server

note "capacity flapping every second between 8 and 0"
CAP="0:8,1:0,2:8,3:0,4:8,5:0,6:8,7:0,8:8,9:0,10:8,11:0,12:8,13:0,14:8,15:0,16:8"
start_server flap --capacity "$CAP" --service-ms 5
BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=60000 BACKOFF_STATS="$TMP/f.json" LD_PRELOAD="$LIB" \
    "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 3000 --threads 32 \
    --verify >"$TMP/flap.tsv"
stop_server
cat "$TMP/flap.tsv" "$TMP/f.json" "$TMP/flap.out"
[ "$(summary_field "$TMP/flap.tsv" ok)" = 3000 ] || fail "not every request ended 200 through the flapping"
[ "$(summary_field "$TMP/flap.tsv" body_mismatch)" = 0 ] || fail "body mismatches"
[ "$(summary_field "$TMP/flap.out" ok)" = 3000 ] || fail "the server answered $(summary_field "$TMP/flap.out" ok) requests 200 for 3000 calls"
[ "$(summary_field "$TMP/flap.out" rejected)" -gt 0 ] || fail "the capacity never dropped to 0: nothing flapped"

note "a 100 MB response"
SIZE=104857600
start_server big
want=$(item_body 9 $SIZE | md5sum)
/usr/bin/time -f %M -o "$TMP/plain.rss" $CURL -s "http://127.0.0.1:$PORT/item/9?size=$SIZE" | md5sum >"$TMP/plain.md5"
BACKOFF_STATS="$TMP/big.json" /usr/bin/time -f %M -o "$TMP/shim.rss" env LD_PRELOAD="$LIB" \
    $CURL -s "http://127.0.0.1:$PORT/item/9?size=$SIZE" | md5sum >"$TMP/shim.md5"
stop_server
[ "$(cat "$TMP/plain.md5")" = "$want" ] || fail "100 MB without the shim: wrong bytes"
[ "$(cat "$TMP/shim.md5")" = "$want" ] || fail "100 MB under the shim: wrong bytes"
plain_kb=$(tail -n 1 "$TMP/plain.rss")
shim_kb=$(tail -n 1 "$TMP/shim.rss")
note "max RSS of curl fetching 100 MB: $plain_kb kB without the shim, $shim_kb kB with it"
[ $((shim_kb - plain_kb)) -lt 8192 ] || fail "the shim grew curl by $((shim_kb - plain_kb)) kB on a 100 MB body"
[ "$(stats_sum "$TMP/big.json" calls)" -eq 1 ] || fail "the 100 MB call was not managed by the shim"
echo "ok"
