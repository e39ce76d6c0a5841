#!/bin/sh
# The curl command, unmodified, through `backoff --` against a token bucket
# three times too slow for it: every curl exits 0, stdout holds exactly the
# expected bytes (no 429 body leaked), the stats show more attempts than
# calls, the trace has its header once and a row per attempt, -v prints one
# line per retry; -i and -D - show the final response's headers only; -f exits 0
# after retries (and fails without the shim, so the test can fail).
. "$(dirname "$0")/lib.sh"

BO="$BUILD/backoff"
[ -x "$BO" ] && [ -f "$BUILD/libbackoff.so" ] || fail "build $BO and $BUILD/libbackoff.so first"
CURL=/usr/bin/curl

# 4 tokens/s, burst 1: sequential curls run at 30+/s on an idle machine; one
# of the 30 coming within 250 ms of the one before meets a 429, however busy.
start_server bucket --rate 4 --burst 1
BUCKET_PID=$SERVER_PID
URL="http://127.0.0.1:$PORT"
STATS="$TMP/stats.jsonl"

# drain: point URL at a fresh flip server (lib.sh) that answers each path 429
# first and 200 after, so the next request meets a 429 for certain and its
# retry a 200, with no clock involved.  (Emptying the token bucket left a
# fractional token that refilled before the next call; a server closed for
# its first second reopened before a busy machine ran curl.)
GATE_PID=""
drain() {
    if [ -n "$GATE_PID" ]; then
        kill "$GATE_PID" 2>/dev/null || true
        wait "$GATE_PID" 2>/dev/null || true
    fi
    start_flip_server gate
    GATE_PID=$SERVER_PID
    URL="http://127.0.0.1:$PORT"
}

note "30 sequential requests through backoff --"
i=1
while [ $i -le 30 ]; do
    rc=0
    "$BO" --stats "$STATS" --trace "$TMP/trace.csv" -v -- $CURL -s "$URL/item/$i" \
        >"$TMP/out.$i" 2>"$TMP/err.$i" || rc=$?
    [ $rc -eq 0 ] || fail "curl $i exited $rc: $(cat "$TMP/err.$i")"
    item_body $i >"$TMP/want.$i"
    cmp -s "$TMP/out.$i" "$TMP/want.$i" || fail "curl $i stdout differs: $(head -c 200 "$TMP/out.$i")"
    i=$((i + 1))
done
grep -l rejected "$TMP"/out.* 2>/dev/null && fail "a 429 body leaked to stdout"
calls=$(stats_sum "$STATS" calls)
attempts=$(stats_sum "$STATS" attempts)
throttled=$(stats_sum "$STATS" throttled)
note "calls=$calls attempts=$attempts throttled=$throttled"
[ "$calls" -eq 30 ] || fail "stats count $calls calls, expected 30"
[ "$attempts" -gt "$calls" ] || fail "no retries: attempts $attempts, calls $calls"
[ "$throttled" -gt 0 ] || fail "no throttled attempt counted"
retries=$(stats_sum "$STATS" retries)
[ "$(wc -l <"$STATS")" -eq 30 ] || fail "expected one stats line per process"
# -v: one "backoff: " line per retry, nothing else on stderr.
vlines=$(cat "$TMP"/err.* | grep -c '^backoff: ' || true)
[ "$vlines" -eq "$retries" ] || fail "$vlines verbose lines for $retries retries"
[ "$(cat "$TMP"/err.* | grep -vc '^backoff: ' || true)" -eq 0 ] || fail "other stderr output: $(cat "$TMP"/err.*)"
# The trace: DESIGN's header once (30 processes appended to it), one row per attempt.
[ "$(head -n 1 "$TMP/trace.csv")" = "t_ms,pid,tid,dest,call,attempt,outcome,status,curl_code,delay_ms,cwnd,ssthresh,inflight" ] ||
    fail "trace header: $(head -n 1 "$TMP/trace.csv")"
[ "$(grep -c '^t_ms,' "$TMP/trace.csv")" -eq 1 ] || fail "the trace header was written more than once"
[ "$(($(wc -l <"$TMP/trace.csv") - 1))" -eq "$attempts" ] || fail "trace rows differ from attempts ($attempts)"
awk -F, 'NR > 1 && (NF != 13 || $4 != "http://127.0.0.1:'"$PORT"'") { bad++ } END { exit bad > 0 }' "$TMP/trace.csv" ||
    fail "malformed trace rows"
[ "$(awk -F, '$7 == "retry" && $8 == 429' "$TMP/trace.csv" | wc -l)" -eq "$retries" ] || fail "trace retries are not the 429s"

kill -TERM "$BUCKET_PID" 2>/dev/null || true
wait "$BUCKET_PID" 2>/dev/null || true
note "bucket server: $(tail -n 2 "$TMP/bucket.out" | tr '\t\n' ' ')"

# one_call_retried STATSFILE: the single call in the file took 2+ attempts.
one_call_retried() {
    [ "$(stats_sum "$1" calls)" -eq 1 ] || fail "$1: expected 1 call"
    [ "$(stats_sum "$1" attempts)" -ge 2 ] || fail "$1: the request was not retried"
}

note "curl -i: only the final response's headers"
drain
"$BO" --stats "$TMP/i.json" -- $CURL -s -i "$URL/item/41" >"$TMP/i.out" || fail "curl -i failed"
one_call_retried "$TMP/i.json"
[ "$(grep -c '^HTTP/' "$TMP/i.out")" -eq 1 ] || fail "curl -i shows $(grep -c '^HTTP/' "$TMP/i.out") status lines"
grep -q '^HTTP/1.1 200' "$TMP/i.out" || fail "curl -i: the status line is not 200: $(head -n 1 "$TMP/i.out")"
grep -qi '^retry-after' "$TMP/i.out" && fail "curl -i shows the 429's Retry-After"
# The body follows the blank line, exactly.
sed '1,/^\r$/d' "$TMP/i.out" >"$TMP/i.body"
item_body 41 >"$TMP/i.want"
cmp -s "$TMP/i.body" "$TMP/i.want" || fail "curl -i body differs: $(cat "$TMP/i.body")"

note "curl -D -: only the final response's headers"
drain
"$BO" --stats "$TMP/d.json" -- $CURL -s -D - "$URL/item/42" >"$TMP/d.out" || fail "curl -D - failed"
one_call_retried "$TMP/d.json"
[ "$(grep -c '^HTTP/' "$TMP/d.out")" -eq 1 ] || fail "curl -D - shows several status lines"
grep -q '^HTTP/1.1 200' "$TMP/d.out" || fail "curl -D -: status is not 200"
sed '1,/^\r$/d' "$TMP/d.out" >"$TMP/d.body"
item_body 42 >"$TMP/d.want"
cmp -s "$TMP/d.body" "$TMP/d.want" || fail "curl -D - body differs"

note "curl -f: fails with 22 without the shim, exits 0 after retries with it"
drain
rc=0
$CURL -s -f -o /dev/null "$URL/item/43" || rc=$?
[ $rc -eq 22 ] || fail "without the shim curl -f exited $rc on a drained bucket, expected 22"
drain
"$BO" --stats "$TMP/f.json" -- $CURL -s -f "$URL/item/43" >"$TMP/f.out" || fail "curl -f under the shim exited $?"
one_call_retried "$TMP/f.json"
item_body 43 >"$TMP/f.want"
cmp -s "$TMP/f.out" "$TMP/f.want" || fail "curl -f body differs"

note "curl -o FILE gets the final body"
drain
"$BO" -- $CURL -s -o "$TMP/o.out" "$URL/item/44" || fail "curl -o failed"
item_body 44 | cmp -s - "$TMP/o.out" || fail "curl -o file differs"

note "BACKOFF_HOSTS: an unlisted destination passes straight through, a listed one is managed"
drain
BACKOFF_HOSTS=example.org "$BO" --stats "$TMP/h1.json" -- $CURL -s "$URL/item/45" >"$TMP/h1.out" || true
[ "$(cat "$TMP/h1.out")" = rejected ] || fail "unlisted host: expected the 429's body, got $(cat "$TMP/h1.out")"
[ "$(stats_sum "$TMP/h1.json" calls)" -eq 0 ] || fail "unlisted host: the call was managed"
drain
BACKOFF_HOSTS="example.org,127.0.0.1:$PORT" "$BO" --stats "$TMP/h2.json" -- $CURL -s "$URL/item/45" >"$TMP/h2.out" ||
    fail "listed host: curl failed"
item_body 45 | cmp -s - "$TMP/h2.out" || fail "listed host: body differs"
[ "$(stats_sum "$TMP/h2.json" attempts)" -ge 2 ] || fail "listed host: not retried"

echo "ok"
