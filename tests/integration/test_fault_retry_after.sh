#!/bin/sh
# Absurd and garbage Retry-After values (ratelimit-server --retry-after-raw
# sends them verbatim on every 429).  Under the shim, with BACKOFF_CAP_MS=300
# and 3 attempts, every call returns the final 429 to the program, every
# wait in the trace is at most the cap, and the whole call stays within
# 2 waits x cap (+ 2 s of slack).  Values libcurl reads as a positive
# number of seconds (CURLINFO_RETRY_AFTER: huge numbers up to 2^63-1, a
# date in the year 9999, "1e9" as 1, " 5 ", "+7") are a hint past the cap,
# however large the number (no overflow may turn it into "no hint"): the
# server said "not before then", so the 429 is the program's at once, one
# attempt, no wait (it was retried every cap); so are numbers that overflow
# (libcurl reads them as 0, the shim's own reading of the line saturates, as
# RFC 9110 says a cache must).  Values read as 0 or negative (words, signs,
# past dates, empty) are no hint: the policy's own delay, 3 attempts.  A sane Retry-After of 2 s with a 5 s cap
# is waited 2 s.
. "$(dirname "$0")/lib.sh"

BO="$BUILD/backoff"
[ -x "$BO" ] && [ -f "$BUILD/libbackoff.so" ] || fail "build $BO and $BUILD/libbackoff.so first"
CURL=/usr/bin/curl

# max_delay TRACE: the largest delay_ms in the trace.
max_delay() {
    awk -F, 'NR > 1 && $10 + 0 > m { m = $10 + 0 } END { print m + 0 }' "$1"
}

# try_value HINT VALUE: HINT is "far" (past the cap: one attempt, no wait)
# or "none" (3 attempts, each wait at most the cap).
n=0
try_value() {
    hint=$1 value=$2
    n=$((n + 1))
    start_server "ra$n" --max-busy 0 --retry-after-raw "$value"
    for policy in aimd exponential; do
        t0=$(date +%s%N)
        rc=0
        BACKOFF_POLICY=$policy BACKOFF_CAP_MS=300 BACKOFF_BASE_MS=10 BACKOFF_MAX_ATTEMPTS=3 \
            "$BO" --trace "$TMP/t$n.$policy.csv" --stats "$TMP/s$n.$policy.json" -- $CURL -s "http://127.0.0.1:$PORT/item/1" \
            >"$TMP/o$n" 2>"$TMP/e$n" || rc=$?
        ms=$((($(date +%s%N) - t0) / 1000000))
        [ $rc -eq 0 ] || fail "Retry-After \"$value\" ($policy): curl exited $rc: $(cat "$TMP/e$n")"
        [ "$(cat "$TMP/o$n")" = rejected ] || fail "Retry-After \"$value\": the final 429's body was not returned"
        rows=$(($(wc -l <"$TMP/t$n.$policy.csv") - 1))
        md=$(max_delay "$TMP/t$n.$policy.csv")
        slept=$(stats_sum "$TMP/s$n.$policy.json" wait_ms)
        note "Retry-After \"$value\" ($policy): $rows attempts, longest wait $md ms, slept $slept ms, call $ms ms"
        [ "$md" -le 300 ] || fail "Retry-After \"$value\": a wait of $md ms exceeds the 300 ms cap"
        if [ "$hint" = far ]; then
            [ "$rows" -eq 1 ] && [ "$slept" -eq 0 ] ||
                fail "Retry-After \"$value\" ($policy): $rows attempts, slept $slept ms (expected the 429 at once: a wait past the cap is not waited for; 3 attempts: the hint was lost)"
        else
            [ "$rows" -eq 3 ] || fail "Retry-After \"$value\": $rows attempts, expected 3"
        fi
        # The time the shim slept (its wait_ms), not the wall clock, which a
        # busy machine stretches: two waits of at most 300 ms, plus wake-up slack.
        [ "$slept" -le 1000 ] || fail "Retry-After \"$value\": the shim slept $slept ms (call $ms ms)"
        [ "$ms" -lt 30000 ] || fail "Retry-After \"$value\": the call took $ms ms"
    done
    stop_server
}

for value in 99999999999 10000000000 9223372036854775807 "Fri, 31 Dec 9999 23:59:59 GMT" \
    1e9 "   5   " "5; garbage" 1.5 +7 18446744073709551616 99999999999999999999999999999999; do
    try_value far "$value"
done
for value in -1 -9223372036854775808 \
    abc 0x7fffffff "Thu, 01 Jan 1970 00:00:00 GMT" "Sun, 06 Nov 1994" 0 ""; do
    try_value none "$value"
done

note "a sane Retry-After: 2 s with a 5 s cap is waited"
start_server sane --max-busy 0 --retry-after 2
BACKOFF_CAP_MS=5000 BACKOFF_MAX_ATTEMPTS=2 "$BO" --trace "$TMP/sane.csv" -- \
    $CURL -s "http://127.0.0.1:$PORT/item/1" >/dev/null || fail "curl failed"
md=$(max_delay "$TMP/sane.csv")
note "longest wait $md ms"
[ "$md" -ge 2000 ] && [ "$md" -le 5000 ] || fail "Retry-After: 2 gave a wait of $md ms"
stop_server
echo "ok"
