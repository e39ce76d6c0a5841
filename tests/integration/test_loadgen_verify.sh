#!/bin/sh
# loadgen --verify checks every body: it counts exactly the bodies the server
# deliberately altered (--corrupt-every, inline and streamed sizes), none on a
# clean server, and POST digests match what it sent.
. "$(dirname "$0")/lib.sh"

start_server corrupt --corrupt-every 3
for size in 100 200000; do
    "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}?size=$size" --requests 9 --threads 3 \
        --verify >"$TMP/lg$size.tsv"
    cat "$TMP/lg$size.tsv"
    [ "$(summary_field "$TMP/lg$size.tsv" ok)" = 9 ] || fail "size $size: not all requests succeeded"
    [ "$(summary_field "$TMP/lg$size.tsv" body_mismatch)" = 3 ] || fail "size $size: --verify missed corrupted bodies"
    [ "$(summary_field "$TMP/lg$size.tsv" bytes)" = $((9 * size)) ] || fail "size $size: wrong byte count"
done
# Without --verify nothing is checked (so the column is honest about it).
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 9 --threads 1 >"$TMP/nov.tsv"
[ "$(summary_field "$TMP/nov.tsv" body_mismatch)" = 0 ] || fail "body_mismatch counted without --verify"
# The corruption is real: curl sees it too.
for n in 1 2 3; do curl -s "http://127.0.0.1:$PORT/item/$n" >"$TMP/c$n"; done
item_body 1 >"$TMP/expect1"; item_body 2 >"$TMP/expect2"; item_body 3 >"$TMP/expect3"
bad=0
for n in 1 2 3; do cmp -s "$TMP/c$n" "$TMP/expect$n" || bad=$((bad + 1)); done
[ $bad = 1 ] || fail "expected 1 of 3 curl bodies altered, got $bad"
stop_server

start_server clean
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}?size=5000" --requests 50 --threads 4 --verify >"$TMP/clean.tsv"
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 20 --threads 2 --method POST \
    --data-size 3000 --verify >"$TMP/post.tsv"
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 20 --threads 2 --method PUT \
    --data-size 10 --verify >"$TMP/put.tsv"
cat "$TMP/clean.tsv" "$TMP/post.tsv" "$TMP/put.tsv"
for f in clean post put; do
    [ "$(summary_field "$TMP/$f.tsv" body_mismatch)" = 0 ] || fail "$f: mismatch on a clean server"
    [ "$(summary_field "$TMP/$f.tsv" failed)" = 0 ] || fail "$f: failed requests"
done
stop_server
cat "$TMP/clean.out"
[ "$(summary_field "$TMP/clean.out" posts)" = 20 ] || fail "server saw $(summary_field "$TMP/clean.out" posts) POSTs, not 20"
[ "$(summary_field "$TMP/clean.out" puts)" = 20 ] || fail "server saw $(summary_field "$TMP/clean.out" puts) PUTs, not 20"
note "--verify: 3 of 9 altered bodies caught at both sizes; clean runs 0"
