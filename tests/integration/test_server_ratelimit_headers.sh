#!/bin/sh
# --ratelimit-headers chooses the quota headers the token bucket and the
# fixed window send on every answer: none, x-ratelimit-* (reset as epoch
# seconds), RateLimit-* (seconds), or the draft's structured RateLimit /
# RateLimit-Policy fields.  The default is none: the other tests' throttling
# servers do not get paced away by the shim.
. "$(dirname "$0")/lib.sh"

get() { curl -s -D "$TMP/h" -o /dev/null "http://127.0.0.1:$PORT/item/1" || fail "curl failed"; tr -d '\r' <"$TMP/h" >"$TMP/hh"; cat "$TMP/hh"; }
hdr() { awk -F': ' -v h="$1" 'tolower($1) == tolower(h) { print $2; exit }' "$TMP/hh"; }
has() { grep -qi "^$1:" "$TMP/hh"; }

start_server a --rate 10 --burst 20
get
has RateLimit-Remaining && fail "none sent RateLimit-Remaining"
has x-ratelimit-remaining && fail "none sent x-ratelimit-remaining"
has RateLimit && fail "none sent RateLimit"
stop_server
start_server a2 --window-requests 5 --window-s 5 --ratelimit-headers none
get
grep -qi "^x-ratelimit\|^ratelimit" "$TMP/hh" && fail "none sent a rate-limit header"
stop_server

start_server b --rate 10 --burst 20 --ratelimit-headers ratelimit
get
[ "$(hdr RateLimit-Limit)" = 20 ] && [ "$(hdr RateLimit-Remaining)" = 19 ] || fail "RateLimit-* wrong"
[ "$(hdr RateLimit-Reset)" = 1 ] || fail "RateLimit-Reset '$(hdr RateLimit-Reset)', expected 1"
stop_server

start_server c --rate 10 --burst 20 --ratelimit-headers x-ratelimit
get
[ "$(hdr x-ratelimit-limit)" = 20 ] && [ "$(hdr x-ratelimit-remaining)" = 19 ] || fail "x-ratelimit-* wrong"
reset=$(hdr x-ratelimit-reset); now=$(date +%s)
[ "$reset" -ge "$now" ] && [ "$reset" -le $((now + 3)) ] || fail "x-ratelimit-reset $reset is not epoch seconds near $now"
has RateLimit-Remaining && fail "x-ratelimit also sent RateLimit-Remaining"
stop_server

start_server d --rate 10 --burst 20 --ratelimit-headers draft
get
[ "$(hdr RateLimit-Policy)" = '"bucket";q=20;w=2' ] || fail "RateLimit-Policy '$(hdr RateLimit-Policy)'"
[ "$(hdr RateLimit)" = '"bucket";r=19;t=1' ] || fail "RateLimit '$(hdr RateLimit)'"
stop_server

start_server e --window-requests 100 --window-s 5 --ratelimit-headers draft
get
[ "$(hdr RateLimit-Policy)" = '"window";q=100;w=5' ] || fail "RateLimit-Policy '$(hdr RateLimit-Policy)'"
hdr RateLimit | grep -Eq '^"window";r=99;t=[1-5]$' || fail "RateLimit '$(hdr RateLimit)'"
stop_server
note "dialects: none (default), RateLimit-*, x-ratelimit-* (epoch reset), draft RateLimit/RateLimit-Policy"
