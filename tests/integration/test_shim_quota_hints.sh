#!/bin/sh
# Quota headers through the shim (libcurl/held.c, libcurl/xfer.c): a 403
# with x-ratelimit-remaining: 0 (GitHub's primary limit) is retried after the
# reset and the program gets its 200; a 403 without it is final (one
# attempt, curl -f's 22); a 429's x-ms-retry-after-ms or retry-after-ms is
# waited as the server says (libcurl reads neither: without them the wait
# would be aimd's RTO, 100-150 ms); a Retry-After date is waited against the
# answer's Date.  Each case spends the quota with a plain curl first, so the
# shim meets the rejection.
. "$(dirname "$0")/lib.sh"

[ -x "$BUILD/backoff" ] && [ -f "$BUILD/libbackoff.so" ] || fail "build backoff and libbackoff.so first"
CURL=/usr/bin/curl

# shimmed NAME URL: one backoff -- curl -sf, its trace in $TMP/NAME.csv, exit in $TMP/NAME.rc
shimmed() {
    _rc=0
    BACKOFF_MAX_ATTEMPTS=4 setsid timeout -k 2 30 "$BUILD/backoff" --trace "$TMP/$1.csv" -- \
        $CURL -sf -o /dev/null "$2" || _rc=$?
    echo $_rc >"$TMP/$1.rc"
}
# rows NAME: attempts in the trace; delay MS of the first retry; status of the first attempt
rows() { awk -F, 'NR > 1 { n++ } END { print n + 0 }' "$TMP/$1.csv"; }
first_delay() { awk -F, 'NR == 2 { print $10 }' "$TMP/$1.csv"; }
first_status() { awk -F, 'NR == 2 { print $8 }' "$TMP/$1.csv"; }

# --- GitHub's 403: retried after the reset --------------------------------
start_server gh --window-requests 2 --window-s 2 --ratelimit-headers x-ratelimit \
    --reject-status 403 --retry-after-form none
w=0 # not in a window's last 0.6 s: the plain curls and the shim's first attempt in one window
while [ $(( $(date +%s%3N) % 2000 )) -ge 1400 ]; do
    w=$((w + 1)); [ $w -le 40 ] || fail "the clock never left a window's end"
    sleep 0.05
done
$CURL -s -o /dev/null "http://127.0.0.1:$PORT/item/1"
$CURL -s -o /dev/null "http://127.0.0.1:$PORT/item/2"
shimmed gh "http://127.0.0.1:$PORT/item/3"
stop_server
note "403 spent: exit $(cat "$TMP/gh.rc"), $(rows gh) attempts, first status $(first_status gh), waited $(first_delay gh) ms"
[ "$(cat "$TMP/gh.rc")" = 0 ] || fail "a 403 with x-ratelimit-remaining: 0 was not retried to a 200 (curl exit $(cat "$TMP/gh.rc"))"
[ "$(first_status gh)" = 403 ] || fail "the shim's first attempt was not answered 403 ($(first_status gh)): the test proves nothing"
[ "$(rows gh)" -ge 2 ] || fail "one attempt only"

# --- a 403 that is not a spent quota: final ------------------------------
start_server no --window-requests 1 --window-s 60 --reject-status 403 --retry-after-form none
$CURL -s -o /dev/null "http://127.0.0.1:$PORT/item/1"
shimmed no "http://127.0.0.1:$PORT/item/2"
stop_server
note "403 plain: exit $(cat "$TMP/no.rc"), $(rows no) attempts"
[ "$(cat "$TMP/no.rc")" = 22 ] && [ "$(rows no)" = 1 ] || fail "a 403 without a spent quota was retried or not returned"

# --- millisecond hints, read from the lines ------------------------------
for form in ms-azure ms; do
    start_server "$form" --rate 1 --burst 1 --retry-after-form "$form"
    $CURL -s -o /dev/null "http://127.0.0.1:$PORT/item/1"
    shimmed "h$form" "http://127.0.0.1:$PORT/item/2"
    stop_server
    d=$(first_delay "h$form")
    note "$form: exit $(cat "$TMP/h$form.rc"), first status $(first_status "h$form"), waited $d ms"
    [ "$(cat "$TMP/h$form.rc")" = 0 ] || fail "$form: the call failed"
    [ "$(first_status "h$form")" = 429 ] || fail "$form: the first attempt was not a 429: the test proves nothing"
    # the token was ~1 s away: waited at least most of it (aimd's RTO alone: 100-150 ms)
    [ "$d" -ge 700 ] && [ "$d" -le 1100 ] || fail "$form: waited $d ms, not the hint of ~1000 ms"
done

# --- Retry-After as an HTTP-date, against the answer's Date --------------
start_server date --rate 1 --burst 1 --retry-after-form date
$CURL -s -o /dev/null "http://127.0.0.1:$PORT/item/1"
shimmed hdate "http://127.0.0.1:$PORT/item/2"
stop_server
d=$(first_delay hdate)
note "date: exit $(cat "$TMP/hdate.rc"), waited $d ms"
[ "$(cat "$TMP/hdate.rc")" = 0 ] && [ "$(first_status hdate)" = 429 ] || fail "date: the call failed or met no 429"
[ "$d" -ge 1000 ] && [ "$d" -le 2000 ] || fail "date: waited $d ms, not the 1-2 s between the date and the Date"
echo "ok"
