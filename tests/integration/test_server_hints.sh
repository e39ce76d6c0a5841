#!/bin/sh
# Servers that throttle differently from ours: a token bucket
# whose 429 carries no Retry-After and no RateLimit-* headers
# (--bucket-hints none), one whose Retry-After is a constant that says
# nothing about the bucket (--bucket-hints fixed: 1, or --retry-after), and
# a concurrency cap answering 429 at once (--error-ms 0) with a fixed
# Retry-After: 1 (--max-busy 0: full).  The buckets are still metered as before.
. "$(dirname "$0")/lib.sh"

SRV="$BUILD/ratelimit-server"
hdr() { awk -F': ' -v h="$1" 'tolower($1) == tolower(h) { print $2; exit }' "$2"; }

# --- bucket, no hints -----------------------------------------------------
start_server none --rate 0.2 --burst 2 --bucket-hints none --ratelimit-headers ratelimit
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 6 --threads 1 >"$TMP/n.tsv"
ok=$(summary_field "$TMP/n.tsv" ok)
[ "$ok" -ge 2 ] && [ "$ok" -le 3 ] || fail "bucket none: expected the burst of 2 (or 3) through, got $ok"
curl -s -i "http://127.0.0.1:$PORT/item/1" | tr -d '\r' >"$TMP/n.resp" || fail "curl failed"
head -n 1 "$TMP/n.resp" | grep -q '^HTTP/1.1 429' || fail "bucket none: expected 429 once empty: $(head -n 1 "$TMP/n.resp")"
grep -qi '^Retry-After:' "$TMP/n.resp" && fail "bucket none: a Retry-After was sent: $(cat "$TMP/n.resp")"
grep -qi '^RateLimit-' "$TMP/n.resp" && fail "bucket none: RateLimit-* headers were sent: $(cat "$TMP/n.resp")"
stop_server

# --- bucket, a constant Retry-After ----------------------------------------
# (One token per 20 s: the check after the hinted second stays true on a
# machine too busy to run the next curl within a few seconds.)
start_server fixed --rate 0.05 --burst 1 --bucket-hints fixed --ratelimit-headers ratelimit
code=$(http_code "http://127.0.0.1:$PORT/item/1") || fail "curl failed"
[ "$code" = 200 ] || fail "bucket fixed: the first request got $code"
curl -s -i "http://127.0.0.1:$PORT/item/2" | tr -d '\r' >"$TMP/f.resp" || fail "curl failed"
head -n 1 "$TMP/f.resp" | grep -q '^HTTP/1.1 429' || fail "bucket fixed: expected 429"
# The next token is 20 s away; a fixed hint still says 1.
[ "$(hdr Retry-After "$TMP/f.resp")" = 1 ] || fail "bucket fixed: Retry-After '$(hdr Retry-After "$TMP/f.resp")', expected 1"
grep -qi '^RateLimit-' "$TMP/f.resp" && fail "bucket fixed: RateLimit-* headers were sent"
sleep 1
code=$(http_code "http://127.0.0.1:$PORT/item/3") || fail "curl failed"
[ "$code" = 429 ] || fail "bucket fixed: after the 1 s it said, the bucket (one token per 20 s) answered $code"
stop_server
start_server fixed7 --rate 0.2 --burst 1 --bucket-hints fixed --retry-after 7
http_code "http://127.0.0.1:$PORT/item/1" >/dev/null || fail "curl failed"
curl -s -i "http://127.0.0.1:$PORT/item/2" | tr -d '\r' >"$TMP/f7.resp" || fail "curl failed"
[ "$(hdr Retry-After "$TMP/f7.resp")" = 7 ] || fail "bucket fixed --retry-after 7: Retry-After '$(hdr Retry-After "$TMP/f7.resp")'"
stop_server

# --- bucket, accurate (the default) still sends its headers ----------------
start_server acc --rate 0.2 --burst 1 --ratelimit-headers ratelimit
http_code "http://127.0.0.1:$PORT/item/1" >/dev/null || fail "curl failed"
curl -s -i "http://127.0.0.1:$PORT/item/2" | tr -d '\r' >"$TMP/a.resp" || fail "curl failed"
ra=$(hdr Retry-After "$TMP/a.resp")
[ "$ra" -ge 4 ] && [ "$ra" -le 5 ] || fail "bucket accurate: Retry-After '$ra', expected 4..5 for a 0.2/s bucket"
[ "$(hdr RateLimit-Limit "$TMP/a.resp")" = 1 ] || fail "bucket accurate: no RateLimit-Limit"
stop_server

# --- concurrency cap, 429 at once with a fixed Retry-After: 1 ----------------
# --max-busy 0: every slot is taken, as a full cap looks to a newcomer.
start_server cap --max-busy 0 --error-ms 0 --retry-after 1
curl -s -i -o "$TMP/c.resp" -w '%{time_total}\n' "http://127.0.0.1:$PORT/item/3" >"$TMP/c.time" || fail "curl failed"
tr -d '\r' <"$TMP/c.resp" >"$TMP/c2.resp"
head -n 1 "$TMP/c2.resp" | grep -q '^HTTP/1.1 429' || fail "cap: expected 429 from a full cap"
[ "$(hdr Retry-After "$TMP/c2.resp")" = 1 ] || fail "cap: Retry-After '$(hdr Retry-After "$TMP/c2.resp")', expected 1"
grep -qi '^RateLimit-' "$TMP/c2.resp" && fail "cap: RateLimit-* headers were sent"
awk '{ exit !($1 < 0.5) }' "$TMP/c.time" || fail "cap: the 429 took $(cat "$TMP/c.time") s, expected at once"
stop_server

# --- S3: 503 SlowDown, its error XML (--reject-body s3) ----------------------
# What botocore reads as a throttle (the error code, from the XML body); the
# items themselves are unchanged.
start_server s3 --rate 0.05 --burst 1 --reject-status 503 --bucket-hints none --reject-body s3
[ "$(curl -s "http://127.0.0.1:$PORT/item/1")" = \
  "$(awk 'BEGIN { while (length(w) < 64) w = w "item=1;"; print substr(w, 1, 64) }')" ] ||
    fail "s3: the first item's body changed"
curl -s -i "http://127.0.0.1:$PORT/item/2" | tr -d '\r' >"$TMP/s3.resp" || fail "curl failed"
head -n 1 "$TMP/s3.resp" | grep -q '^HTTP/1.1 503' || fail "s3: expected 503: $(head -n 1 "$TMP/s3.resp")"
[ "$(hdr Content-Type "$TMP/s3.resp")" = application/xml ] || fail "s3: Content-Type '$(hdr Content-Type "$TMP/s3.resp")'"
grep -q '^<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message>' "$TMP/s3.resp" ||
    fail "s3: no SlowDown error XML: $(cat "$TMP/s3.resp")"
grep -qi '^Retry-After:' "$TMP/s3.resp" && fail "s3: a Retry-After was sent"
stop_server

# --- a bad value: one line naming it ---------------------------------------
rc=0
"$SRV" --rate 1 --bucket-hints sometimes >"$TMP/bad.out" 2>"$TMP/bad.err" || rc=$?
[ "$rc" = 2 ] || fail "--bucket-hints sometimes: exit $rc, expected 2"
[ "$(wc -l <"$TMP/bad.err")" = 1 ] && grep -q -- '--bucket-hints "sometimes"' "$TMP/bad.err" &&
    grep -q 'accurate, fixed or none' "$TMP/bad.err" || fail "bad --bucket-hints: $(cat "$TMP/bad.err")"
echo "ok: bucket without hints, with a constant Retry-After, accurate; cap with a fixed Retry-After at once; S3's SlowDown XML"
