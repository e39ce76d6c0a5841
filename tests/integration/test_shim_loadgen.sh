#!/bin/sh
# loadgen --verify with 200 threads against a --max-busy server under the
# shim: every request ends 200, no body mismatch, and the window in the
# trace settles near the server's capacity.  The same run without the shim
# shows the server rejecting (so this test can fail).
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/loadgen" ] || fail "build libbackoff.so and loadgen first"
CAP=20
REQ=2000
start_server busy --max-busy $CAP --service-ms 20 --error-ms 2
URL="http://127.0.0.1:$PORT/item/{n}"

note "without the shim"
"$BUILD/loadgen" --url "$URL" --requests 400 --threads 200 --verify >"$TMP/plain.tsv"
cat "$TMP/plain.tsv"
plain_429=$(summary_field "$TMP/plain.tsv" status_429)
[ "$plain_429" -gt 0 ] || fail "the server did not reject anything without the shim: the test proves nothing"

note "with the shim"
BACKOFF_TRACE="$TMP/trace.csv" BACKOFF_STATS="$TMP/stats.json" LD_PRELOAD="$BUILD/libbackoff.so" \
    "$BUILD/loadgen" --url "$URL" --requests $REQ --threads 200 --verify >"$TMP/shim.tsv"
cat "$TMP/shim.tsv"
cat "$TMP/stats.json"
ok=$(summary_field "$TMP/shim.tsv" ok)
mism=$(summary_field "$TMP/shim.tsv" body_mismatch)
[ "$ok" = $REQ ] || fail "$ok of $REQ requests ended 200 under the shim"
[ "$mism" = 0 ] || fail "$mism body mismatches"

# The window over the second half of the run (attempts in completion order).
rows=$(($(wc -l <"$TMP/trace.csv") - 1))
[ "$rows" -ge $REQ ] || fail "trace has $rows rows for $REQ requests"
median=$(awk -F, -v half=$((rows / 2)) 'NR > 1 + half { print $11 }' "$TMP/trace.csv" | sort -n |
    awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
note "capacity $CAP, median cwnd over the second half of the run: $median"
awk -v m="$median" -v c=$CAP 'BEGIN { exit !(m >= c * 0.5 && m <= c * 2) }' ||
    fail "the window did not settle near the capacity $CAP (median cwnd $median)"
stop_server
echo "ok"
