#!/bin/sh
# The token bucket (--rate 0.2 --burst 3) lets a burst of 3 through, then
# answers 429 with a whole-seconds Retry-After and RateLimit-Limit/Remaining/
# Reset headers (--ratelimit-headers ratelimit); waiting the Retry-After it gave is enough to get through again.
. "$(dirname "$0")/lib.sh"

start_server tb --rate 0.2 --burst 3 --ratelimit-headers ratelimit
# 10 back-to-back requests: 3 from the burst, at most one more from refill
# (one token per 5 s), the rest 429.
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 10 --threads 1 >"$TMP/lg.tsv"
cat "$TMP/lg.tsv"
ok=$(summary_field "$TMP/lg.tsv" ok)
r429=$(summary_field "$TMP/lg.tsv" status_429)
[ "$ok" -ge 3 ] && [ "$ok" -le 4 ] || fail "expected 3 (or 4) admitted by the burst, got $ok"
[ $((ok + r429)) = 10 ] || fail "expected every other answer to be 429: ok $ok, 429 $r429"

# One rejected answer in full.
curl -s -i "http://127.0.0.1:$PORT/item/1" | tr -d '\r' >"$TMP/resp" || fail "curl failed"
cat "$TMP/resp"
head -n 1 "$TMP/resp" | grep -q '^HTTP/1.1 429' || fail "expected a 429 once the bucket is empty"
hdr() { awk -F': ' -v h="$1" 'tolower($1) == tolower(h) { print $2; exit }' "$TMP/resp"; }
ra=$(hdr Retry-After)
echo "$ra" | grep -Eq '^[0-9]+$' || fail "Retry-After '$ra' is not whole seconds"
[ "$ra" -ge 1 ] && [ "$ra" -le 5 ] || fail "Retry-After $ra outside 1..5 s for a 0.2/s bucket"
[ "$(hdr RateLimit-Limit)" = 3 ] || fail "RateLimit-Limit '$(hdr RateLimit-Limit)', expected 3"
[ "$(hdr RateLimit-Remaining)" = 0 ] || fail "RateLimit-Remaining '$(hdr RateLimit-Remaining)', expected 0"
reset=$(hdr RateLimit-Reset)
echo "$reset" | grep -Eq '^[0-9]+$' && [ "$reset" -ge 1 ] || fail "RateLimit-Reset '$reset' is not whole seconds >= 1"
[ "$(tail -n 1 "$TMP/resp")" = rejected ] || fail "expected the body 'rejected'"

# Honour the hint: after Retry-After seconds a token is there.
sleep "$ra"
code=$(http_code "http://127.0.0.1:$PORT/item/2") || fail "curl failed after the wait"
[ "$code" = 200 ] || fail "after waiting Retry-After=$ra s the server still answered $code"
stop_server
cat "$TMP/tb.out"
[ "$(summary_field "$TMP/tb.out" rejected)" = $((r429 + 1)) ] || fail "server's rejected count disagrees"

# Many concurrent clients on both event-loop threads must not get more than
# the burst from a bucket that refills one token per 1000 s (a refill race
# once let a few extra through).
start_server tb2 --rate 0.001 --burst 5
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 50000 --threads 8 >"$TMP/lg2.tsv"
cat "$TMP/lg2.tsv"
[ "$(summary_field "$TMP/lg2.tsv" ok)" = 5 ] || fail "concurrent clients got $(summary_field "$TMP/lg2.tsv" ok) successes from a burst of 5"
[ "$(summary_field "$TMP/lg2.tsv" status_429)" = 49995 ] || fail "expected 49995 429s"
stop_server
note "token bucket: burst $ok, Retry-After $ra s honoured, no extra tokens under concurrency"
