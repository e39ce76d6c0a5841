#!/bin/sh
# POST safety and upload rewind, with the curl command through `backoff --`:
# - `curl -d` rejected with 429 is retried and the server counts one
#   processed POST;
# - a POST that timed out after the server received it is not retried (the
#   server counts one) unless BACKOFF_UNSAFE_RETRY=1 (then it counts two, one
#   of them a duplicate X-Request-Id); the timeout is curl's low-speed
#   limit, not --max-time, whose deadline bounds the whole retried call and
#   leaves no time for a retry after its first attempt used it all;
# - `curl -T FILE` through a 429 uploads the whole file again: the server's
#   digest matches the file's.
# The 429s come from a bucket of one token refilled every 4 s, taken just
# before: a faster refill (2/s) gave the token back before the call's first
# attempt on a busy machine (ASan beside a parallel run), and the test saw
# no 429 to retry.  The upload from a pipe needs no timing at all: that
# server rejects everything (--max-busy 0).
. "$(dirname "$0")/lib.sh"

BO="$BUILD/backoff"
[ -x "$BO" ] && [ -f "$BUILD/libbackoff.so" ] || fail "build $BO and $BUILD/libbackoff.so first"
CURL=/usr/bin/curl

note "curl -d through a 429"
start_server post429 --rate 0.25 --burst 1
URL="http://127.0.0.1:$PORT"
$CURL -s -o /dev/null "$URL/item/0"   # take the only token
printf 'a=1&b=2' >"$TMP/form"
"$BO" --stats "$TMP/p.json" -- $CURL -s -d @"$TMP/form" -H 'X-Request-Id: post-1' \
    "$URL/item/1" >"$TMP/p.out" || fail "curl -d exited $?"
[ "$(cat "$TMP/p.out")" = "$(fnv1a64 "$TMP/form")" ] || fail "POST answer: $(cat "$TMP/p.out")"
[ "$(stats_sum "$TMP/p.json" attempts)" -ge 2 ] || fail "the 429'd POST was not retried"
stop_server
posts=$(summary_field "$TMP/post429.out" posts)
dups=$(summary_field "$TMP/post429.out" duplicate_posts)
note "server: posts=$posts duplicate_posts=$dups"
[ "$posts" = 1 ] || fail "server processed $posts POSTs, expected 1"
[ "$dups" = 0 ] || fail "server saw $dups duplicate POSTs"

note "a POST that timed out after the server received it is not retried"
start_server slowpost --post-delay-ms 3000
URL="http://127.0.0.1:$PORT"
rc=0
"$BO" --stats "$TMP/t.json" -- $CURL -s --speed-limit 100 --speed-time 1 -d 'x=1' -H 'X-Request-Id: post-2' \
    "$URL/item/2" >/dev/null || rc=$?
[ $rc -eq 28 ] || fail "curl --speed-time 1 exited $rc, expected 28 (timeout)"
[ "$(stats_sum "$TMP/t.json" attempts)" -eq 1 ] || fail "the timed-out POST was retried"
stop_server
posts=$(summary_field "$TMP/slowpost.out" posts)
note "server: posts=$posts"
[ "$posts" = 1 ] || fail "server processed $posts POSTs, expected 1"

note "... unless BACKOFF_UNSAFE_RETRY=1"
start_server slowpost2 --post-delay-ms 3000
URL="http://127.0.0.1:$PORT"
rc=0
BACKOFF_UNSAFE_RETRY=1 "$BO" -n 2 --stats "$TMP/u.json" -- $CURL -s --speed-limit 100 --speed-time 1 -d 'x=1' \
    -H 'X-Request-Id: post-3' "$URL/item/3" >/dev/null || rc=$?
[ $rc -eq 28 ] || fail "curl --speed-time 1 exited $rc, expected 28 (timeout)"
[ "$(stats_sum "$TMP/u.json" attempts)" -eq 2 ] || fail "the timed-out POST was not retried with BACKOFF_UNSAFE_RETRY=1"
sleep 0.5
stop_server
posts=$(summary_field "$TMP/slowpost2.out" posts)
dups=$(summary_field "$TMP/slowpost2.out" duplicate_posts)
note "server: posts=$posts duplicate_posts=$dups"
[ "$posts" = 2 ] || fail "server processed $posts POSTs, expected 2"
[ "$dups" = 1 ] || fail "server counted $dups duplicate POSTs, expected 1"

note "curl -T FILE through a 429 uploads the whole file again"
start_server put429 --rate 0.25 --burst 1
URL="http://127.0.0.1:$PORT"
head -c 300000 /dev/urandom >"$TMP/upload.bin"
$CURL -s -o /dev/null "$URL/item/0"   # take the only token
"$BO" --stats "$TMP/u2.json" -- $CURL -s -T "$TMP/upload.bin" "$URL/item/4" >"$TMP/put.out" ||
    fail "curl -T exited $?"
[ "$(stats_sum "$TMP/u2.json" attempts)" -ge 2 ] || fail "the 429'd upload was not retried"
want=$(fnv1a64 "$TMP/upload.bin")
[ "$(cat "$TMP/put.out")" = "$want" ] || fail "PUT answer $(cat "$TMP/put.out"), expected $want"
stop_server

note "an upload from a pipe cannot be rewound: not retried"
start_server put429b --max-busy 0
URL="http://127.0.0.1:$PORT"
head -c 1000 "$TMP/upload.bin" | "$BO" --stats "$TMP/u3.json" -- $CURL -s -T - "$URL/item/5" \
    >"$TMP/pipe.out" || true
[ "$(stats_sum "$TMP/u3.json" attempts)" -eq 1 ] || fail "an unrewindable upload was retried"
grep -q rejected "$TMP/pipe.out" || fail "the final (429) answer was not handed to curl: $(cat "$TMP/pipe.out")"
stop_server
echo "ok"
