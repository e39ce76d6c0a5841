#!/bin/sh
# The quota dialects and wait forms of ratelimit-server: x-rate-limit-* (X,
# epoch reset), OpenAI's x-ratelimit-{limit,remaining,reset}-{requests,tokens}
# (resets as durations), Discord's X-RateLimit-* (epoch and Reset-After with
# 3 decimals, Bucket); --reject-status 403 with x-ratelimit-remaining: 0 and
# no hint (GitHub's primary limit); a rejection's wait as whole seconds, an
# HTTP-date with the answer's Date, retry-after-ms, x-ms-retry-after-ms or
# nothing; 503 for a bucket (S3's SlowDown); --quota-spent's 200s that say
# no request is left until a reset far ahead.  Every value checked against
# the server's own state (a bucket of 1 token a second, a window of 3).
. "$(dirname "$0")/lib.sh"

# get NAME: one answer's status line and headers in $TMP/NAME (CR removed).
get() {
    curl -s -m 5 -D - -o /dev/null "http://127.0.0.1:$PORT/item/1" | tr -d '\r' >"$TMP/$1" ||
        fail "curl failed"
}
hdr() { awk -F': ' -v h="$1" 'tolower($1) == tolower(h) { print $2; exit }' "$TMP/$2"; }
count() { grep -ci "^$1:" "$TMP/$2" || true; }
status() { head -n 1 "$TMP/$1" | cut -d' ' -f2; }
# epoch seconds of an IMF-fixdate (GNU date)
epoch_of() { date -u -d "$1" +%s; }

# --- X: x-rate-limit-*, reset as epoch seconds ------------------------------
start_server x --rate 10 --burst 20 --ratelimit-headers x-rate-limit
get x1
[ "$(hdr x-rate-limit-limit x1)" = 20 ] && [ "$(hdr x-rate-limit-remaining x1)" = 19 ] ||
    fail "x-rate-limit-* wrong: $(cat "$TMP/x1")"
reset=$(hdr x-rate-limit-reset x1) now=$(date +%s)
[ "$reset" -ge "$now" ] && [ "$reset" -le $((now + 2)) ] || fail "x-rate-limit-reset $reset is not epoch seconds near $now"
[ "$(count x-ratelimit-remaining x1)" = 0 ] || fail "x-rate-limit also sent x-ratelimit-*"
stop_server

# --- OpenAI: requests and tokens, resets as durations -----------------------
start_server oa --window-requests 3 --window-s 2 --ratelimit-headers openai
get oa1
get oa2
[ "$(hdr x-ratelimit-limit-requests oa2)" = 3 ] && [ "$(hdr x-ratelimit-limit-tokens oa2)" = 600 ] ||
    fail "OpenAI limits wrong: $(cat "$TMP/oa2")"
r1=$(hdr x-ratelimit-remaining-requests oa1) r2=$(hdr x-ratelimit-remaining-requests oa2)
[ "$r2" -lt 3 ] && { [ "$r2" -lt "$r1" ] || [ "$r2" = 2 ]; } || fail "remaining-requests $r1 then $r2"
[ "$(hdr x-ratelimit-remaining-tokens oa2)" = $((600 - 100 * (3 - r2))) ] ||
    fail "remaining-tokens $(hdr x-ratelimit-remaining-tokens oa2) for $r2 requests left"
d=$(hdr x-ratelimit-reset-requests oa2)
echo "$d" | grep -Eq '^([0-9]{1,3}ms|1(\.[0-9]*[1-9])?s|2s)$' || fail "reset-requests '$d' is not a duration within 2 s"
[ "$(hdr x-ratelimit-reset-tokens oa2)" = "$d" ] || fail "reset-tokens differs from reset-requests"
stop_server

# --- Discord: decimals, Reset-After, Bucket -----------------------------------
start_server dc --rate 10 --burst 10 --ratelimit-headers discord
get dc1
[ "$(hdr X-RateLimit-Limit dc1)" = 10 ] && [ "$(hdr X-RateLimit-Remaining dc1)" = 9 ] ||
    fail "Discord counts wrong: $(cat "$TMP/dc1")"
[ "$(hdr X-RateLimit-Reset-After dc1)" = 0.100 ] || fail "Reset-After '$(hdr X-RateLimit-Reset-After dc1)', expected 0.100 (one token at 10/s)"
reset=$(hdr X-RateLimit-Reset dc1) now=$(date +%s)
echo "$reset" | grep -Eq '^[0-9]+\.[0-9]{3}$' || fail "X-RateLimit-Reset '$reset' has not 3 decimals"
[ "${reset%.*}" -ge $((now - 1)) ] && [ "${reset%.*}" -le $((now + 1)) ] || fail "X-RateLimit-Reset $reset not near $now"
[ "$(hdr X-RateLimit-Bucket dc1)" = bucket ] || fail "no X-RateLimit-Bucket"
stop_server

# --- GitHub's primary limit: 403, x-ratelimit-remaining: 0, no hint ---------
start_server gh --window-requests 1 --window-s 60 --ratelimit-headers x-ratelimit \
    --reject-status 403 --retry-after-form none
w=0 # not in a window's last 5 s: both requests in one window
while [ $(( $(date +%s) % 60 )) -ge 55 ]; do
    w=$((w + 1)); [ $w -le 60 ] || fail "the clock never left a window's end"
    sleep 0.1
done
get gh1
get gh2
[ "$(status gh1)" = 200 ] && [ "$(status gh2)" = 403 ] || fail "statuses $(status gh1) $(status gh2), expected 200 403"
[ "$(hdr x-ratelimit-remaining gh2)" = 0 ] || fail "the 403 says remaining '$(hdr x-ratelimit-remaining gh2)'"
[ "$(count retry-after gh2)$(count retry-after-ms gh2)" = 00 ] || fail "a hint with --retry-after-form none"
stop_server
[ "$(summary_field "$TMP/gh.out" rejected)" = 1 ] || fail "the 403 was not counted as a rejection"

# --- the wait of a rejection, in each form (a bucket of 1 token a second) ---
# form NAME FLAGS...: the second answer (rejected, ~1 s to the next token) in $TMP/NAME2
form() {
    _n=$1; shift
    start_server "$_n" --rate 1 --burst 1 "$@"
    get "${_n}1"
    get "${_n}2"
    stop_server
    [ "$(status "${_n}1")" = 200 ] || fail "$_n: first answer $(status "${_n}1")"
}
form sec --retry-after-form seconds
[ "$(status sec2)" = 429 ] && [ "$(hdr Retry-After sec2)" = 1 ] || fail "seconds: $(cat "$TMP/sec2")"
form ms --retry-after-form ms
v=$(hdr retry-after-ms ms2)
[ "$v" -ge 800 ] && [ "$v" -le 1000 ] || fail "retry-after-ms '$v', expected the ~1000 ms to the next token"
[ "$(count retry-after ms2)" = 0 ] || fail "ms: a Retry-After beside retry-after-ms"
form az --retry-after-form ms-azure --reject-status 429
v=$(hdr x-ms-retry-after-ms az2)
[ "$v" -ge 800 ] && [ "$v" -le 1000 ] || fail "x-ms-retry-after-ms '$v'"
[ "$(count retry-after az2)$(count retry-after-ms az2)" = 00 ] || fail "ms-azure: another hint beside it"
form dt --retry-after-form date
ra=$(hdr Retry-After dt2) dd=$(hdr Date dt2)
echo "$ra" | grep -Eq '^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT$' ||
    fail "Retry-After '$ra' is not an IMF-fixdate"
diff=$(( $(epoch_of "$ra") - $(epoch_of "$dd") ))
[ "$diff" -ge 1 ] && [ "$diff" -le 2 ] || fail "Retry-After $ra is $diff s after Date $dd, expected 1 or 2"
[ "$(count date dt2)" = 1 ] && [ "$(count date dt1)" = 1 ] || fail "date: not one Date per answer"
form no --retry-after-form none --reject-status 503
[ "$(status no2)" = 503 ] || fail "--reject-status 503 on a bucket: $(status no2)"
[ "$(count retry-after no2)$(count retry-after-ms no2)$(count x-ms-retry-after-ms no2)" = 000 ] ||
    fail "none: a hint was sent"
# --- --quota-spent: headers that predict a refusal never made ---------------
# Every answer says none of 60 is left until a reset an hour ahead, and is a
# 200 all the same; a rejection (here --max-busy 0, 403) carries it too.
start_server sp --quota-spent 3600 --ratelimit-headers x-ratelimit
get sp1
get sp2
now=$(date +%s) reset=$(hdr x-ratelimit-reset sp2)
[ "$(status sp1)$(status sp2)" = 200200 ] || fail "quota-spent: $(status sp1) then $(status sp2), expected 200s"
[ "$(hdr x-ratelimit-remaining sp2)" = 0 ] && [ "$(hdr x-ratelimit-limit sp2)" = 60 ] ||
    fail "quota-spent: $(cat "$TMP/sp2")"
[ "$reset" -ge $((now + 3598)) ] && [ "$reset" -le $((now + 3601)) ] ||
    fail "quota-spent: x-ratelimit-reset $reset, expected about $((now + 3600))"
stop_server
start_server sp403 --quota-spent 60 --ratelimit-headers ratelimit --max-busy 0 --reject-status 403 \
    --retry-after-form none
get sq
[ "$(status sq)" = 403 ] && [ "$(hdr RateLimit-Remaining sq)" = 0 ] && [ "$(hdr RateLimit-Reset sq)" = 60 ] ||
    fail "quota-spent on a rejection: $(cat "$TMP/sq")"
[ "$(count retry-after sq)" = 0 ] || fail "quota-spent, --retry-after-form none: a Retry-After"
stop_server
note "x-rate-limit, openai, discord dialects; 403 with remaining 0; waits as seconds, date + Date, ms, ms-azure, none; --quota-spent"
echo "ok"
