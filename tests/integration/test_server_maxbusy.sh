#!/bin/sh
# A --max-busy 5 server under 20 concurrent requests admits 5 and rejects the
# other 15 with the configured status (503 here, not the default 429), and its
# TSV summary agrees with loadgen's row.  A max-busy 0 server shows the exact
# rejection: status, Retry-After and the "rejected" body.
. "$(dirname "$0")/lib.sh"

# 20 threads each send one request; the 5 admitted ones hold their slot 4 s,
# far longer than it takes the other 15 to arrive.
start_server cap --max-busy 5 --service-ms 4000 --error-ms 0 --reject-status 503
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 20 --threads 20 \
    --verify >"$TMP/lg.tsv"
stop_server
cat "$TMP/lg.tsv" "$TMP/cap.out"
lg() { summary_field "$TMP/lg.tsv" "$1"; }
sv() { summary_field "$TMP/cap.out" "$1"; }
[ "$(lg requests)" = 20 ] || fail "loadgen made $(lg requests) requests, not 20"
[ "$(lg ok)" = 5 ] || fail "loadgen got $(lg ok) successes, expected exactly max-busy = 5"
[ "$(lg status_503)" = 15 ] || fail "loadgen got $(lg status_503) 503s, expected 15"
[ "$(lg status_429)" = 0 ] || fail "the configured status is 503, loadgen saw $(lg status_429) 429s"
[ "$(lg body_mismatch)" = 0 ] || fail "admitted bodies were wrong"
[ "$(sv requests)" = "$(lg requests)" ] || fail "server counted $(sv requests) requests, loadgen $(lg requests)"
[ "$(sv ok)" = "$(lg ok)" ] || fail "server counted $(sv ok) ok, loadgen $(lg ok)"
[ "$(sv rejected)" = "$(lg status_503)" ] || fail "server counted $(sv rejected) rejected, loadgen $(lg status_503)"
[ "$(sv max_concurrency)" -ge 5 ] || fail "max_concurrency $(sv max_concurrency) < 5"

# Every request is rejected by a max-busy 0 server: check one answer in full.
start_server zero --max-busy 0 --reject-status 429 --retry-after 7
curl -s -i "http://127.0.0.1:$PORT/item/1" | tr -d '\r' >"$TMP/resp" || fail "curl failed"
cat "$TMP/resp"
head -n 1 "$TMP/resp" | grep -q '^HTTP/1.1 429' || fail "expected 429"
grep -qi '^Retry-After: 7$' "$TMP/resp" || fail "expected Retry-After: 7"
[ "$(tail -n 1 "$TMP/resp")" = rejected ] || fail "expected the body 'rejected'"
stop_server
[ "$(summary_field "$TMP/zero.out" rejected)" = 1 ] || fail "server did not count the rejection"
note "max-busy: 5 of 20 admitted, 15 rejected with 503; summaries agree"
