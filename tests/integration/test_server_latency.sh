#!/bin/sh
# The latency model (article 003): past --latency-limit concurrent requests
# the hold time is service-ms x factor^((c - limit)/k).  With limit 1, factor
# 2, k 1 and service 1000 ms, a request arriving as the c-th in flight must
# take at least 1000 x 2^(c-1) ms, as measured by the client.
. "$(dirname "$0")/lib.sh"

start_server lat --latency-limit 1 --latency-factor 2 --latency-k 1 --service-ms 1000 \
    --log "$TMP/lat.csv"
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 3 --threads 3 \
    --csv "$TMP/lg.csv" >"$TMP/lg.tsv"
stop_server
cat "$TMP/lg.tsv" "$TMP/lat.csv" "$TMP/lg.csv"
[ "$(summary_field "$TMP/lg.tsv" ok)" = 3 ] || fail "not all requests succeeded"
# Join the server's concurrency on arrival (by path) with loadgen's latency (by n).
awk -F, '
    FNR == 1 { next }
    FILENAME ~ /lat.csv$/ { n = $3; sub(/.*\//, "", n); conc[n] = $5; next }
    { n = $2; if (!(n in conc)) { print "no server row for", n; bad++; next }
      want = 1000 * 2 ^ (conc[n] - 1)
      printf "n=%s concurrency=%s model=%d ms client=%.0f ms\n", n, conc[n], want, $5
      if ($5 < want - 20) bad++
      if (conc[n] > maxc) maxc = conc[n] }
    END { if (maxc < 2) { print "never more than one request in flight"; bad++ }
          exit bad > 0 }' "$TMP/lat.csv" "$TMP/lg.csv" || fail "latency below the model"

# Below the limit the model is flat: 3 concurrent requests at limit 10 all
# take about service-ms, i.e. far less than the 4000 ms the model gave above.
start_server flat --latency-limit 10 --latency-factor 2 --latency-k 1 --service-ms 300
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 3 --threads 3 >"$TMP/flat.tsv"
stop_server
cat "$TMP/flat.tsv"
p99=$(summary_field "$TMP/flat.tsv" p99_ms)
awk -v p="$p99" 'BEGIN { exit !(p >= 299 && p < 3000) }' || fail "flat region p99 $p99 ms"
note "latency grows as the model says past the limit"
