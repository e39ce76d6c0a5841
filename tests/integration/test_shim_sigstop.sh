#!/bin/sh
# While the server is stopped (SIGSTOP) for 5 s, a 50-thread loadgen with a
# 1 s timeout under the shim has, once its first timeout is seen, at most
# one attempt at a time in flight (the trace's inflight column, counted at
# admission), and after SIGCONT it resumes within the probe interval (at
# most 1 s, see policies/bo_engine.c) of the server answering again.
#
# "The server answers again" is measured in the same run, not guessed: a
# plain curl (no shim) sent while the server is stopped waits in its listen
# backlog and is answered when the resumed server gets to it (on a busy
# machine that can take a second or more: the server first drains the
# connections of the timed-out attempts); a second plain curl then measures
# one round trip on this machine at this moment.  The shim's first success
# must come at most the probe interval plus two such round trips after the
# reference's answer, with at most one failed attempt (the probe in flight
# when the server came back) in between: a shim that oversleeps after the
# outage (a hold longer than the probe interval) fails, however busy or idle
# the machine is.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/loadgen" ] || fail "build libbackoff.so and loadgen first"
now_ms() { date +%s%3N; }

start_server stopped --service-ms 5
URL="http://127.0.0.1:$PORT/item/{n}"
TRACE="$TMP/trace.csv"

BACKOFF_TRACE="$TRACE" BACKOFF_STATS="$TMP/stats.json" BACKOFF_MAX_ATTEMPTS=0 \
    LD_PRELOAD="$BUILD/libbackoff.so" \
    "$BUILD/loadgen" --url "$URL" --requests 0 --duration-s 9 --threads 50 --timeout-ms 1000 \
    --think-ms 20 >"$TMP/lg.tsv" 2>"$TMP/lg.err" &
LG=$!
PIDS="$PIDS $LG"
# The outage starts once loadgen is served (not after a guessed 2 s: a busy
# machine may take longer to start 50 threads), then lasts 5 s.
wait_for "$TRACE" ',success,200,' 30
sleep 0.5
stop_ms=$(now_ms)
kill -STOP "$SERVER_PID"
wait_state "$SERVER_PID" T 10
# The reference request, queued behind the shim's attempts while the server is stopped.
( curl -s -o /dev/null --max-time 60 -w '%{http_code}' "http://127.0.0.1:$PORT/item/1" \
      >"$TMP/ref.code" 2>/dev/null; now_ms >"$TMP/ref.ms" ) &
REF=$!
PIDS="$PIDS $REF"
sleep 5
cont_ms=$(now_ms)
kill -CONT "$SERVER_PID"
wait_for "$TMP/ref.ms" '^[0-9]+$' 60
grep -qx 200 "$TMP/ref.code" || fail "the reference request got '$(cat "$TMP/ref.code")', want 200"
ref_ms=$(cat "$TMP/ref.ms")
t0=$(now_ms)
rtt_code=$(curl -s -o /dev/null --max-time 30 -w '%{http_code}' "http://127.0.0.1:$PORT/item/2") || true
rtt_ms=$(($(now_ms) - t0))
[ "$rtt_code" = 200 ] || fail "the round-trip reference got '$rtt_code', want 200"
note "the server answered the reference $((ref_ms - cont_ms)) ms after SIGCONT; one round trip now takes $rtt_ms ms"
# loadgen ends by itself: 9 s of requests, then the ones in flight.
i=0
while kill -0 "$LG" 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 300 ] && fail "loadgen did not finish within 30 s"
    sleep 0.1
done
wait "$LG" || fail "loadgen exited $?: $(cat "$TMP/lg.err")"
cat "$TMP/lg.tsv"
cat "$TMP/stats.json"
stop_server

# Columns: 1 t_ms, 7 outcome, 8 status, 9 curl_code, 13 inflight.
awk -F, -v stop="$stop_ms" -v cont="$cont_ms" -v ref="$ref_ms" -v rtt="$rtt_ms" '
    NR == 1 { next }
    $9 == 28 && $1 >= stop && (first == "" || $1 < first) { first = $1 }
    { t[NR] = $1; inf[NR] = $13; code[NR] = $9; st[NR] = $8 }
    END {
        if (first == "") { print "FAIL: no timeout seen while the server was stopped"; exit 1 }
        # Every attempt lasts at most the 1 s timeout: rows ending 1.5 s after the
        # first timeout were admitted after it.
        n = 0; maxinf = 0
        for (i in t) if (t[i] >= first + 1500 && t[i] <= cont) {
            n++; if (inf[i] + 0 > maxinf) maxinf = inf[i] + 0
        }
        resumed = ""
        for (i in t) if (t[i] >= cont && code[i] == 0 && st[i] == 200 && (resumed == "" || t[i] < resumed)) resumed = t[i]
        if (resumed == "") { print "FAIL: no success after SIGCONT"; exit 1 }
        after = 0
        for (i in t) if (t[i] >= resumed && t[i] <= resumed + 2000 && code[i] == 0 && st[i] == 200) after++
        # Failed attempts that ended after the server answered the reference
        # and before the first success of the shim.
        missed = 0
        for (i in t) if (t[i] > ref && t[i] < resumed && code[i] != 0) missed++
        bound = 1000 + 2 * rtt
        printf "# first timeout %d ms after SIGSTOP; %d attempts ended during the outage after it, max in flight %d\n", first - stop, n, maxinf
        printf "# first success %d ms after SIGCONT, %d ms after the reference (bound %d: probe interval 1000 + 2 round trips), %d failed attempts between; %d successes in the 2 s after it\n", resumed - cont, resumed - ref, bound, missed, after
        if (n < 1) { print "FAIL: no probe during the outage"; exit 1 }
        if (maxinf > 1) { print "FAIL: more than one attempt in flight during the outage"; exit 1 }
        if (resumed - ref > bound) { print "FAIL: did not resume within the probe interval of the server answering"; exit 1 }
        if (missed > 1) { print "FAIL: " missed " failed attempts after the server answered again"; exit 1 }
        if (after < 50) { print "FAIL: only " after " successes after the probe succeeded"; exit 1 }
    }' "$TRACE" || fail "see above"
echo "ok"
