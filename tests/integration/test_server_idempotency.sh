#!/bin/sh
# ratelimit-server --idempotency (draft-ietf-httpapi-idempotency-key-header):
#  - a request with an Idempotency-Key is processed once per key: a repeat
#    with the same method, path, query and body gets the stored answer
#    (Idempotent-Replayed: true), for POST, PATCH and GET alike;
#  - 409 while the key's first request is still being processed (two
#    concurrent curls, --post-delay-ms), 422 for the key with another request,
#    400 for an empty, repeated or too long key, and under
#    --idempotency-required for a POST or PATCH without one;
#  - duplicate_posts counts the POSTs processed again (no key, or another
#    key), never a replay; without --idempotency keys are ignored;
#  - a rejection (429) and --fault-drop come before the key: a later repeat
#    is processed; --fault-reset-post processes a POST, stores its answer and
#    resets the connection before any answer byte: the retry with the key is
#    replayed that answer, one without a key is processed again;
#  - --idempotency-keys bounds the table: the oldest key is dropped.
. "$(dirname "$0")/lib.sh"

# post URL KEY DATA [curl args...]: POST DATA with "Idempotency-Key: KEY" (none
# when KEY is -); headers in $TMP/h, body in $TMP/b; prints the status.
post() {
    _u=$1 _k=$2 _d=$3
    shift 3
    rm -f "$TMP/h" "$TMP/b" # curl writes neither when no answer byte comes
    if [ "$_k" = - ]; then
        curl -s -m 10 -D "$TMP/h" -o "$TMP/b" -w '%{http_code}' --data-binary "$_d" "$@" "$_u"
    else
        curl -s -m 10 -D "$TMP/h" -o "$TMP/b" -w '%{http_code}' --data-binary "$_d" \
            -H "Idempotency-Key: $_k" "$@" "$_u"
    fi
}
replayed() { grep -qi '^Idempotent-Replayed: true' "$TMP/h"; }
digest_of() { printf '%s' "$1" >"$TMP/d"; fnv1a64 "$TMP/d"; }
field() { summary_field "$TMP/$1.out" "$2"; }
expect() { # NAME COLUMN VALUE
    [ "$(field "$1" "$2")" = "$3" ] || fail "$1: $2 is $(field "$1" "$2"), expected $3: $(cat "$TMP/$1.out")"
}

note "bad flags: one line, exit 2"
for args in "--idempotency=1" "--idempotency-keys 0" "--fault-reset-post x"; do
    rc=0
    # shellcheck disable=SC2086
    "$BUILD/ratelimit-server" $args >/dev/null 2>"$TMP/bad.err" || rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/bad.err")" -eq 1 ] &&
        grep -q "^ratelimit-server: ${args%%[ =]*} \".*\" is not valid: expected" "$TMP/bad.err" ||
        fail "$args: exit $rc, stderr: $(cat "$TMP/bad.err")"
done

note "processed once, replayed identically; PATCH and GET too"
start_server once --idempotency
U="http://127.0.0.1:$PORT/item/1"
want=$(digest_of 'order=1')
[ "$(post "$U" '"k-1"' 'order=1' -H 'X-Request-Id: o1')" = 200 ] || fail "first POST: $(cat "$TMP/b")"
[ "$(cat "$TMP/b")" = "$want" ] && ! replayed || fail "first POST: '$(cat "$TMP/b")', replayed: $(cat "$TMP/h")"
for i in 1 2 3; do
    [ "$(post "$U" '"k-1"' 'order=1' -H 'X-Request-Id: o1')" = 200 ] || fail "repeat $i: $(cat "$TMP/b")"
    [ "$(cat "$TMP/b")" = "$want" ] && replayed || fail "repeat $i: '$(cat "$TMP/b")' $(cat "$TMP/h")"
done
[ "$(post "$U" '"k-p"' 'x=2' -X PATCH)" = 200 ] && [ "$(cat "$TMP/b")" = "$(digest_of 'x=2')" ] ||
    fail "PATCH: $(cat "$TMP/b")"
[ "$(post "$U" '"k-p"' 'x=2' -X PATCH)" = 200 ] && replayed || fail "PATCH repeat not replayed"
code=$(curl -s -m 10 -D "$TMP/h" -o "$TMP/b" -w '%{http_code}' -H 'Idempotency-Key: g' "$U?size=10")
[ "$code" = 200 ] && [ "$(cat "$TMP/b")" = "$(item_body 1 10)" ] && ! replayed || fail "GET: $code"
code=$(curl -s -m 10 -D "$TMP/h" -o "$TMP/b" -w '%{http_code}' -H 'Idempotency-Key: g' "$U?size=10")
[ "$code" = 200 ] && [ "$(cat "$TMP/b")" = "$(item_body 1 10)" ] && replayed || fail "GET repeat"
note "422: the key with another body, path, query or method"
[ "$(post "$U" '"k-1"' 'order=2')" = 422 ] || fail "another body: not 422"
[ "$(post "http://127.0.0.1:$PORT/item/2" '"k-1"' 'order=1')" = 422 ] || fail "another path"
[ "$(post "$U?a=1" '"k-1"' 'order=1')" = 422 ] || fail "another query"
[ "$(post "$U" '"k-1"' 'order=1' -X PUT)" = 422 ] || fail "another method"
code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H 'Idempotency-Key: g' "$U?size=11")
[ "$code" = 422 ] || fail "GET with another size: $code"
note "400: an empty, repeated or over-255-byte key; 255 bytes are fine"
[ "$(post "$U" '' 'e' -H 'Idempotency-Key;')" = 400 ] || fail "empty key"
[ "$(post "$U" 'a' 'e' -H 'Idempotency-Key: b')" = 400 ] || fail "two keys"
long=$(printf '%0255d' 7)
[ "$(post "$U" "$long" 'e')" = 200 ] || fail "a 255-byte key"
[ "$(post "$U" "${long}8" 'e')" = 400 ] || fail "a 256-byte key"
[ "$(post "$U" - 'free')" = 200 ] || fail "no key, not required"
note "duplicate_posts: processed again without a key or under another key, never a replay"
[ "$(post "$U" - 'order=1' -H 'X-Request-Id: o1')" = 200 ] && ! replayed || fail "no key"
[ "$(post "$U" '"k-2"' 'order=1' -H 'X-Request-Id: o1')" = 200 ] && ! replayed || fail "new key"
stop_server
expect once posts 5 # k-1, 255-byte key, "free", and o1 twice more
expect once duplicate_posts 2
expect once patches 1
expect once idem_replays 5
expect once idem_mismatches 5
expect once idem_bad 3

note "409 while the key's first request is processed; then the replay"
start_server slow --idempotency --post-delay-ms 1500
U="http://127.0.0.1:$PORT/item/1"
curl -s -m 10 -o "$TMP/c1" -w '%{http_code}' --data-binary 'pay' -H 'Idempotency-Key: "c"' "$U" >"$TMP/s1" &
c1=$!
curl -s -m 10 -o "$TMP/c2" -w '%{http_code}' --data-binary 'pay' -H 'Idempotency-Key: "c"' "$U" >"$TMP/s2" &
c2=$!
wait $c1 || fail "the first concurrent curl failed"
wait $c2 || fail "the second concurrent curl failed"
codes=$(printf '%s\n%s\n' "$(cat "$TMP/s1")" "$(cat "$TMP/s2")" | sort | tr '\n' ' ')
[ "$codes" = "200 409 " ] || fail "two concurrent POSTs of one key: $codes"
for i in 1 2; do
    [ "$(cat "$TMP/s$i")" = 409 ] || [ "$(cat "$TMP/c$i")" = "$(digest_of pay)" ] ||
        fail "the processed one answered '$(cat "$TMP/c$i")'"
done
[ "$(post "$U" '"c"' 'pay')" = 200 ] && replayed && [ "$(cat "$TMP/b")" = "$(digest_of pay)" ] ||
    fail "after both: not the replay"
stop_server
expect slow posts 1
expect slow idem_conflicts 1
expect slow idem_replays 1

note "--idempotency-required: 400 for a POST or PATCH without a key"
start_server req --idempotency-required
U="http://127.0.0.1:$PORT/item/1"
[ "$(post "$U" - 'a')" = 400 ] || fail "POST without a key"
[ "$(post "$U" - 'a' -X PATCH)" = 400 ] || fail "PATCH without a key"
[ "$(post "$U" - 'a' -X PUT)" = 200 ] || fail "PUT without a key"
[ "$(http_code "$U" -m 10)" = 200 ] || fail "GET without a key"
[ "$(post "$U" k 'a')" = 200 ] || fail "POST with a key"
stop_server
expect req posts 1
expect req idem_bad 2

note "without --idempotency keys are ignored: processed twice"
start_server off
U="http://127.0.0.1:$PORT/item/1"
[ "$(post "$U" k 'a' -H 'X-Request-Id: r')" = 200 ] || fail "POST"
[ "$(post "$U" k 'a' -H 'X-Request-Id: r')" = 200 ] && ! replayed || fail "replayed without --idempotency"
[ "$(post "$U" k 'b')" = 200 ] || fail "another body: not processed"
stop_server
expect off posts 3
expect off duplicate_posts 1
expect off idem_replays 0

note "--fault-reset-post: processed, stored, reset; the retry with the key is replayed"
start_server reset --idempotency --fault-reset-post 1
U="http://127.0.0.1:$PORT/item/1"
rc=0; code=$(post "$U" '"r-1"' 'charge=5' -H 'X-Request-Id: c5') || rc=$?
[ $rc -eq 56 ] || [ $rc -eq 52 ] || fail "the reset POST: curl exit $rc, expected 56 or 52"
[ ! -s "$TMP/b" ] && [ ! -s "$TMP/h" ] || fail "bytes of an answer came: $(cat "$TMP/h" "$TMP/b")"
[ "$(post "$U" '"r-1"' 'charge=5' -H 'X-Request-Id: c5')" = 200 ] && replayed &&
    [ "$(cat "$TMP/b")" = "$(digest_of charge=5)" ] || fail "the retry: $(cat "$TMP/h" "$TMP/b")"
rc=0; post "$U" - 'charge=6' -H 'X-Request-Id: c6' >/dev/null || rc=$?
[ $rc -ne 0 ] || fail "a POST without a key was not reset"
rc=0; post "$U" - 'charge=6' -H 'X-Request-Id: c6' >/dev/null || rc=$?
[ $rc -ne 0 ] || fail "its retry was not reset"
stop_server
expect reset posts 3
expect reset post_resets 3
expect reset idem_replays 1
expect reset duplicate_posts 1 # c6 processed twice, c5 once
expect reset dropped 3

note "--fault-reset-post 2: every 2nd POST processed is reset, replays do not count"
start_server reset2 --idempotency --fault-reset-post 2
U="http://127.0.0.1:$PORT/item/1"
[ "$(post "$U" a 1)" = 200 ] || fail "1st POST"
rc=0; post "$U" b 2 >/dev/null || rc=$?
[ $rc -ne 0 ] || fail "2nd POST not reset"
[ "$(post "$U" b 2)" = 200 ] && replayed || fail "2nd POST's retry"
[ "$(post "$U" a 1)" = 200 ] && replayed || fail "1st POST's repeat"
[ "$(post "$U" c 3)" = 200 ] && ! replayed || fail "3rd POST"
stop_server
expect reset2 post_resets 1

note "a rejection and --fault-drop come before the key: the repeat is processed"
start_server drop --idempotency --fault-drop 2
U="http://127.0.0.1:$PORT/item/1"
[ "$(post "$U" d 1)" = 200 ] || fail "1st request"
rc=0; post "$U" e 2 >/dev/null || rc=$?
[ $rc -eq 52 ] || fail "the dropped POST: curl exit $rc, expected 52"
[ "$(post "$U" e 2)" = 200 ] && ! replayed || fail "after the drop: not processed"
stop_server
expect drop posts 2
# The capacity is 0 for the first 3 s: a 429, then the same key is processed.
start_server cap --idempotency --max-busy 100 --capacity 0:0,3:100
U="http://127.0.0.1:$PORT/item/1"
[ "$(post "$U" z 1)" = 429 ] || fail "not rejected in the first 3 s: $(cat "$TMP/b")"
i=0
while [ "$(post "$U" z 1)" = 429 ]; do
    i=$((i + 1))
    [ $i -lt 100 ] || fail "still rejected after 10 s"
    sleep 0.1
done
[ "$(cat "$TMP/b")" = "$(digest_of 1)" ] && ! replayed || fail "after the rejections: $(cat "$TMP/b")"
stop_server
expect cap posts 1

note "--idempotency-keys 2: the oldest key is dropped"
start_server keys --idempotency --idempotency-keys 2
U="http://127.0.0.1:$PORT/item/1"
for k in k1 k2 k3; do [ "$(post "$U" $k x)" = 200 ] || fail "$k"; done
[ "$(post "$U" k3 x)" = 200 ] && replayed || fail "k3 was dropped"
[ "$(post "$U" k1 x)" = 200 ] && ! replayed || fail "k1 was kept with 2 keys"
[ "$(post "$U" k1 x)" = 200 ] && replayed || fail "k1 again"
stop_server
expect keys posts 4
echo "ok"
