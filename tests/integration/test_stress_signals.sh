#!/bin/sh
# A storm of signals while threads sleep in backoff: stress_signals takes
# SIGALRM every millisecond (with SA_RESTART off, then on) while 8 threads
# make calls that the server keeps failing (every 3rd request closed
# without a response: retried after a fixed 30 ms; then a concurrency cap
# answering 429: aimd waits for its window).
# With SA_RESTART every call must end 200 with its body (EINTR never
# surfaces: every wait resumes with the time left).  Without SA_RESTART a
# signal interrupts the wait as it would have interrupted the program's own
# call: calls may end early, but only with their last real result (the
# dropped request's error, the 429), never with an extra attempt after the
# signal, and the process never hangs on a lock (bounded by timeout).  In
# both cases in the trace every retry came no sooner than the delay the
# shim announced before it (a wait cut short and followed by an attempt
# would show), nor absurdly later (bound: delay + 2 s).  Without the shim
# the same helper fails (so the test can fail).  A storm is at least
# MIN_SIGNALS handler runs per run (30; STRESS_MIN_SIGNALS): calls that end
# early make the SA_RESTART=0 runs short, and ThreadSanitizer delivers a
# signal only when the thread next enters its runtime, so a 1 ms timer runs
# fewer handlers there.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
H="$BUILD/tests/helpers/stress_signals"
[ -f "$LIB" ] && [ -x "$H" ] || fail "build $LIB and $H first"
THREADS=${STRESS_SIGNAL_THREADS:-8}
CALLS=${STRESS_SIGNAL_CALLS:-60}
MIN_SIGNALS=${STRESS_MIN_SIGNALS:-30}

# check_trace FILE [MIN]: at least MIN (default 1) retries checked, and
# every retry waited at least half its announced delay_ms and at most
# delay_ms + 2000; prints the count.  Why half: a row's t_ms is stamped when
# the row is written, after the shim read the time its delay counts from, so
# a thread preempted in between (a busy machine) shows a gap a few ms short
# of the delay (seen: 27 ms for 30); a sleep cut short by the 1-ms SIGALRM
# storm would end about 1 ms after it began, far below half.
check_trace() {
    awk -F, -v min="${2:-1}" 'NR > 1 { k = $2 "," $3 "," $5; t[k, $6] = $1; d[k, $6] = $10; n[k] = $6 > n[k] ? $6 : n[k] }
        END {
            bad = 0; checked = 0; worst = 0
            for (k in n) for (a = 1; a < n[k]; a++) {
                if (!((k, a + 1) in t)) continue
                gap = t[k, a + 1] - t[k, a]; want = d[k, a]; checked++
                if (gap < want / 2 || gap > want + 2000) {
                    bad++; printf "call %s attempt %d: waited %d ms, delay was %d ms\n", k, a, gap, want
                }
                if (gap - want > worst) worst = gap - want
                if (want - gap > early) early = want - gap
            }
            printf "retries checked %d, out of bounds %d, worst lateness %d ms, most early %d ms\n", checked, bad, worst, early
            exit bad > 0 || checked < min
        }' "$1"
}

start_server drops --fault-drop 3
URL="http://127.0.0.1:$PORT"

note "without the shim: dropped requests fail the calls"
if "$H" "$URL" 4 10 0 >"$TMP/plain.out" 2>"$TMP/plain.err"; then
    fail "stress_signals succeeded without the shim: the test proves nothing"
fi
cat "$TMP/plain.out"

# run_storm RESTART LAST_RESULT_PATTERN ENV...: runs the helper under the
# shim, bounded; with SA_RESTART every call must succeed; without it every
# failed call must have ended with its last real result (stderr lines
# matching the pattern) and every call is accounted for.
run_storm() {
    _r=$1 _pat=$2; shift 2
    _rc=0
    setsid timeout -k 2 120 env "$@" LD_PRELOAD="$LIB" \
        "$H" "$URL" "$THREADS" "$CALLS" "$_r" >"$TMP/out" 2>"$TMP/err" || _rc=$?
    cat "$TMP/out"
    [ "$_rc" -le 1 ] || fail "the helper died or hung (exit $_rc, SA_RESTART=$_r): $(tail -n 5 "$TMP/err")"
    if [ "$_r" = 1 ]; then
        [ "$_rc" = 0 ] || fail "a call failed under the signal storm (SA_RESTART=1): $(tail -n 5 "$TMP/err")"
        return 0
    fi
    set -- $(cat "$TMP/out")
    [ "$(($4 + $6))" -eq "$(($THREADS * $CALLS))" ] || fail "calls unaccounted for: $(cat "$TMP/out")"
    if grep -Ev "$_pat" "$TMP/err" | grep -q .; then
        fail "a call ended with something else than its last result: $(grep -Ev "$_pat" "$TMP/err" | head -n 3)"
    fi
    note "$6 calls came back early with their last result"
}

for restart in 0 1; do
    note "fixed 30 ms backoff, SIGALRM every ms, SA_RESTART=$restart"
    rm -f "$TMP/trace.csv"
    run_storm "$restart" 'Server returned nothing|Failed sending data to the peer|Failure when receiving data from the peer' BACKOFF_POLICY=fixed BACKOFF_BASE_MS=30 \
        BACKOFF_MAX_ATTEMPTS=0 BACKOFF_TRACE="$TMP/trace.csv" BACKOFF_STATS="$TMP/stats.$restart"
    signals=$(sed -n 's/.* signals \([0-9]*\)$/\1/p' "$TMP/out")
    [ "$signals" -ge "$MIN_SIGNALS" ] || fail "only $signals signals arrived: no storm"
    [ "$(stats_sum "$TMP/stats.$restart" retries)" -gt 0 ] || fail "nothing was retried: no thread slept"
    check_trace "$TMP/trace.csv" "$restart" || fail "a wait broke its bounds (SA_RESTART=$restart)"
done
stop_server

start_server cap --max-busy 2 --service-ms 5 --retry-after 0
URL="http://127.0.0.1:$PORT"
for restart in 0 1; do
    note "aimd against a cap of 2 (429s), SIGALRM every ms, SA_RESTART=$restart"
    run_storm "$restart" ': status 429, ' BACKOFF_MAX_ATTEMPTS=0 \
        BACKOFF_STATS="$TMP/astats.$restart"
    cat "$TMP/astats.$restart"
    signals=$(sed -n 's/.* signals \([0-9]*\)$/\1/p' "$TMP/out")
    [ "$signals" -ge "$MIN_SIGNALS" ] || fail "only $signals signals arrived: no storm"
done
stop_server
echo "ok"
