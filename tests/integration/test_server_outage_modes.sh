#!/bin/sh
# --outage-mode 503 answers 503 (with the rejection body) during the outage and
# 200 after it; --outage-mode stall holds requests unanswered until the outage
# ends, then answers them.
. "$(dirname "$0")/lib.sh"

start_server o503 --outage-at 1 --outage-for 2 --outage-mode 503 --retry-after 3
url="http://127.0.0.1:$PORT/item/1"
seen503=0; after=0; i=0
while [ $i -lt 100 ]; do
    rc=0; code=$(http_code "$url" -m 5) || rc=$?
    [ "$rc" = 0 ] || fail "curl exit $rc in 503 mode (connections must keep working)"
    case $code in
    503) seen503=$((seen503 + 1)) ;;
    200) [ $seen503 -gt 0 ] && { after=1; break; } ;;
    *) fail "unexpected status $code" ;;
    esac
    i=$((i + 1)); sleep 0.1
done
[ $seen503 -gt 0 ] || fail "never saw a 503"
[ $after = 1 ] || fail "never saw a 200 after the outage"
stop_server
cat "$TMP/o503.out"
[ "$(summary_field "$TMP/o503.out" rejected)" = $seen503 ] || fail "server rejected count disagrees ($seen503 seen)"

start_server stall --outage-at 1 --outage-for 3 --outage-mode stall --log "$TMP/stall.csv"
# A client with a few keep-alive threads at 20 req/s through the whole outage.
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --rate 20 --duration-s 5 \
    --threads 100 --timeout-ms 20000 --verify >"$TMP/lg.tsv"
stop_server
cat "$TMP/lg.tsv" "$TMP/stall.out"
[ "$(summary_field "$TMP/lg.tsv" failed)" = 0 ] || fail "stall mode must not fail requests"
[ "$(summary_field "$TMP/lg.tsv" body_mismatch)" = 0 ] || fail "wrong bodies"
# Every request that arrived during the outage (arrival = t_ms - latency_ms in
# [1000, 4000)) was answered only at its end.
awk -F, 'NR > 1 { arr = $1 - $6
    if (arr >= 1000 && arr < 4000) { held++; if ($1 < 4000 || $4 != 200) bad++ } }
    END { printf "held %d early %d\n", held, bad; exit !(held >= 10 && bad == 0) }' "$TMP/stall.csv" \
    || fail "stalled requests were answered before the outage ended (or too few were held)"
[ "$(summary_field "$TMP/stall.out" max_concurrency)" -ge 10 ] || fail "stalled requests did not pile up"
note "503 and stall outage modes behave"
