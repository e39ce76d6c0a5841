#!/bin/sh
# The fixed window (--window-requests 5 --window-s 30): at most 5 answers 200
# per 30 s window (windows aligned to the epoch), the rest 429 with a
# Retry-After that reaches the window's end; the x-ratelimit-* headers count
# down and give the window's end as epoch seconds; the next window admits
# again.  Bad flag values are refused in one line.
. "$(dirname "$0")/lib.sh"

out=$("$BUILD/ratelimit-server" --window-requests 5 2>&1) && fail "--window-requests alone was accepted"
echo "$out" | grep -q 'window-requests and --window-s go together' || fail "unclear message: $out"
out=$("$BUILD/ratelimit-server" --window-requests 0 --window-s 4 2>&1) && fail "--window-requests 0 accepted"
echo "$out" | grep -q '"0" is not valid' || fail "unclear message: $out"
out=$("$BUILD/ratelimit-server" --ratelimit-headers github 2>&1) && fail "--ratelimit-headers github accepted"
echo "$out" | grep -q 'none, x-ratelimit, ratelimit, draft, x-rate-limit, openai, discord or openai-s' || fail "unclear message: $out"

start_server fw --window-requests 5 --window-s 30 --ratelimit-headers x-ratelimit
hdr() { awk -F': ' -v h="$1" 'tolower($1) == tolower(h) { print $2; exit }' "$2"; }
# Not in a window's last 10 s, so that 8 quick requests fall in one window.
# (bounded: at most 11 s of 0.1 s polls)
w=0
while [ $(( $(date +%s) % 30 )) -ge 20 ]; do
    w=$((w + 1)); [ $w -le 110 ] || fail "the clock never left a window's end"
    sleep 0.1
done
ok=0; n429=0; prev=6
for i in 1 2 3 4 5 6 7 8; do
    curl -s -i "http://127.0.0.1:$PORT/item/$i" | tr -d '\r' >"$TMP/r$i" || fail "curl failed"
    code=$(head -n 1 "$TMP/r$i" | cut -d' ' -f2)
    rem=$(hdr x-ratelimit-remaining "$TMP/r$i")
    reset=$(hdr x-ratelimit-reset "$TMP/r$i")
    [ "$(hdr x-ratelimit-limit "$TMP/r$i")" = 5 ] || fail "x-ratelimit-limit is not 5 in answer $i"
    [ $((reset % 30)) = 0 ] || fail "x-ratelimit-reset $reset is not a window boundary"
    now=$(date +%s)
    [ "$reset" -gt "$now" ] && [ "$reset" -le $((now + 30)) ] || fail "reset $reset not within the window after $now"
    if [ "$code" = 200 ]; then
        ok=$((ok + 1))
        [ "$rem" -lt "$prev" ] || fail "remaining did not count down: $rem after $prev"
        prev=$rem
    else
        [ "$code" = 429 ] || fail "answer $i: status $code"
        n429=$((n429 + 1))
        [ "$rem" = 0 ] || fail "a 429 says remaining $rem"
        ra=$(hdr Retry-After "$TMP/r$i")
        [ "$ra" -ge 1 ] && [ "$ra" -le 30 ] && [ $((now + ra)) -ge "$reset" ] ||
            fail "Retry-After $ra does not reach the window's end $reset from $now"
    fi
done
cat "$TMP/r8"
[ "$ok" = 5 ] && [ "$n429" = 3 ] || fail "expected 5 admitted and 3 rejected in one window, got $ok and $n429"
stop_server
# the next window admits again (1 request per 2 s)
start_server fw2 --window-requests 1 --window-s 2
[ "$(http_code "http://127.0.0.1:$PORT/item/1")" = 200 ] || fail "first request of a window refused"
first429=0
for i in 1 2 3; do [ "$(http_code "http://127.0.0.1:$PORT/item/2")" = 429 ] && first429=1 && break; done
[ $first429 = 1 ] || fail "a second request in one 2 s window was admitted three times"
w=0
while [ "$(http_code "http://127.0.0.1:$PORT/item/9")" != 200 ]; do
    w=$((w + 1)); [ $w -le 60 ] || fail "the next window did not admit within 6 s"
    sleep 0.1
done
stop_server
note "fixed window: 5 per 30 s admitted, 3 rejected with Retry-After, x-ratelimit-* count down, next window admits"
