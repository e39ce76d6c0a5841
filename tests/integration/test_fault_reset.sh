#!/bin/sh
# Faults in the middle of an answer, under the shim:
#  - the connection reset (RST) half way through a body: the program gets
#    the error (curl exit 56), exactly the bytes that arrived, once, and
#    the call is not retried after bytes were delivered (one attempt, one
#    request at the server);
#  - the connection closed without any response: a GET is retried and gets
#    its body; a POST (it may have reached the server) is not, unless
#    BACKOFF_UNSAFE_RETRY=1, and the server never sees a duplicate POST.
. "$(dirname "$0")/lib.sh"

BO="$BUILD/backoff"
[ -x "$BO" ] && [ -f "$BUILD/libbackoff.so" ] || fail "build $BO and $BUILD/libbackoff.so first"
CURL=/usr/bin/curl

start_server reset --fault-reset 1
URL="http://127.0.0.1:$PORT"
for size in 64 100000 1000000; do
    note "reset half way through a $size-byte body"
    rc=0
    "$BO" --stats "$TMP/r$size.json" -- $CURL -s "$URL/item/7?size=$size" >"$TMP/r$size.out" || rc=$?
    got=$(wc -c <"$TMP/r$size.out")
    note "curl exit $rc, $got bytes, attempts $(stats_sum "$TMP/r$size.json" attempts)"
    [ $rc -eq 56 ] || [ $rc -eq 18 ] || fail "curl exited $rc, expected the reset (56) or a short body (18)"
    [ "$got" -gt 0 ] && [ "$got" -lt "$size" ] || fail "$got bytes delivered of $size: not a cut body"
    item_body 7 "$got" | cmp -s - "$TMP/r$size.out" || fail "the delivered bytes are not the body's first $got bytes"
    [ "$(stats_sum "$TMP/r$size.json" attempts)" -eq 1 ] || fail "retried after body bytes were delivered"
done
stop_server
[ "$(summary_field "$TMP/reset.out" requests)" -eq 3 ] ||
    fail "the server answered $(summary_field "$TMP/reset.out" requests) requests for 3 calls"

start_server drop --fault-drop 2
URL="http://127.0.0.1:$PORT"
note "every 2nd request closed without a response: GETs are retried"
i=1
while [ $i -le 10 ]; do
    "$BO" --stats "$TMP/d.json" -- $CURL -s "$URL/item/$i" >"$TMP/d.out" || fail "GET $i failed: exit $?"
    item_body $i | cmp -s - "$TMP/d.out" || fail "GET $i: body differs"
    i=$((i + 1))
done
note "10 GETs: attempts $(stats_sum "$TMP/d.json" attempts), retries $(stats_sum "$TMP/d.json" retries)"
[ "$(stats_sum "$TMP/d.json" retries)" -ge 4 ] || fail "the dropped GETs were not retried"

note "POST dropped: not retried (it may have reached the server)"
echo "payload" >"$TMP/body"
# Make the next request (the POST) the dropped one: a plain GET takes the odd turn.
next_dropped() {
    while :; do
        c=$(http_code "$URL/item/1") || true
        [ "$c" = 200 ] && return 0
    done
}
next_dropped
rc=0
"$BO" --stats "$TMP/p.json" -- $CURL -s -X POST --data-binary @"$TMP/body" \
    -H "X-Request-Id: p1" "$URL/item/1" >/dev/null || rc=$?
[ $rc -eq 52 ] || fail "the dropped POST: curl exited $rc, expected 52 (empty reply)"
[ "$(stats_sum "$TMP/p.json" attempts)" -eq 1 ] || fail "the POST was retried"
note "POST dropped with BACKOFF_UNSAFE_RETRY=1: retried"
next_dropped
BACKOFF_UNSAFE_RETRY=1 "$BO" --stats "$TMP/u.json" -- $CURL -s -X POST --data-binary @"$TMP/body" \
    -H "X-Request-Id: p2" "$URL/item/1" >"$TMP/u.out" || fail "unsafe retry: curl failed"
fnv1a64 "$TMP/body" | cmp -s - "$TMP/u.out" || fail "unsafe retry: wrong digest $(cat "$TMP/u.out")"
[ "$(stats_sum "$TMP/u.json" attempts)" -eq 2 ] || fail "the POST was not retried once"
stop_server
cat "$TMP/drop.out"
[ "$(summary_field "$TMP/drop.out" duplicate_posts)" -eq 0 ] || fail "duplicate POSTs at the server"
[ "$(summary_field "$TMP/drop.out" dropped)" -ge 7 ] || fail "the server dropped too few requests"
echo "ok"
