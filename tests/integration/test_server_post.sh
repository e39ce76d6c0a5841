#!/bin/sh
# POST and PUT answer the FNV-1a digest and length of the body received; the
# server counts each X-Request-Id it processed, so a repeated POST shows as a
# duplicate_post; --post-delay-ms answers late but counts the POST as processed
# as soon as the body is in (a client that times out has still "posted").
. "$(dirname "$0")/lib.sh"

start_server post
url="http://127.0.0.1:$PORT/item/1"
head -c 5000 /dev/urandom >"$TMP/data"
want=$(fnv1a64 "$TMP/data")
got=$(curl -s --data-binary @"$TMP/data" -H 'X-Request-Id: one' "$url") || fail "POST failed"
[ "$got" = "$want" ] || fail "POST digest '$got', expected '$want'"
got=$(curl -s --data-binary @"$TMP/data" -H 'X-Request-Id: one' "$url") || fail "POST failed"
[ "$got" = "$want" ] || fail "repeated POST digest '$got'"
curl -s --data-binary @"$TMP/data" -H 'X-Request-Id: two' "$url" >/dev/null || fail "POST failed"
got=$(curl -s -T "$TMP/data" -H 'X-Request-Id: one' "$url") || fail "PUT failed"
[ "$got" = "$want" ] || fail "PUT digest '$got', expected '$want'"
# Empty body, no id: digest of nothing, not counted as a duplicate.
printf '' >"$TMP/empty"
got=$(curl -s -X POST -d '' "$url") || fail "empty POST failed"
[ "$got" = "$(fnv1a64 "$TMP/empty")" ] || fail "empty POST answered '$got'"
got=$(curl -s -X POST -d '' "$url") || fail "empty POST failed"
# 30 loadgen POSTs carry unique ids: no new duplicates.
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --method POST --data-size 100 \
    --requests 30 --threads 3 --verify >"$TMP/lg.tsv"
cat "$TMP/lg.tsv"
[ "$(summary_field "$TMP/lg.tsv" ok)" = 30 ] || fail "loadgen POSTs failed"
stop_server
cat "$TMP/post.out"
[ "$(summary_field "$TMP/post.out" posts)" = 35 ] || fail "posts $(summary_field "$TMP/post.out" posts), expected 35"
[ "$(summary_field "$TMP/post.out" duplicate_posts)" = 1 ] || fail "duplicate_posts $(summary_field "$TMP/post.out" duplicate_posts), expected 1"
[ "$(summary_field "$TMP/post.out" puts)" = 1 ] || fail "puts $(summary_field "$TMP/post.out" puts), expected 1"
[ "$(summary_field "$TMP/post.out" duplicate_puts)" = 0 ] || fail "a PUT is not a duplicate of a POST"

# --post-delay-ms: the client gives up after 300 ms, the server still processed
# every POST (and answers GETs without that delay).
start_server late --post-delay-ms 2000
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --method POST --requests 4 --threads 4 \
    --timeout-ms 300 >"$TMP/late.tsv"
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 4 --threads 1 \
    --timeout-ms 1500 >"$TMP/get.tsv"
cat "$TMP/late.tsv" "$TMP/get.tsv"
[ "$(summary_field "$TMP/late.tsv" timeouts)" = 4 ] || fail "POSTs did not time out on the client"
[ "$(summary_field "$TMP/get.tsv" ok)" = 4 ] || fail "GETs were delayed by --post-delay-ms"
stop_server
cat "$TMP/late.out"
[ "$(summary_field "$TMP/late.out" posts)" = 4 ] || fail "the server did not count the timed-out POSTs as processed"
note "digests match, 1 duplicate POST counted, late POSTs processed"
