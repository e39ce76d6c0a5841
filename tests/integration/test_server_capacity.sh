#!/bin/sh
# --capacity "0:1,6:3": the cap is 1 for the first 6 s, then 3.  Three
# concurrent requests get 1 success early and 3 later.
. "$(dirname "$0")/lib.sh"

start_server capa --capacity "0:1,6:3" --service-ms 1500 --log "$TMP/capa.csv"
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 3 --threads 3 >"$TMP/early.tsv"
wait_for "$TMP/capa.err" 't=6s' 20
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 3 --threads 3 >"$TMP/late.tsv"
stop_server
cat "$TMP/early.tsv" "$TMP/late.tsv" "$TMP/capa.out" "$TMP/capa.csv"
# The early batch must really have run in the first window (else the test
# proves nothing): its answers are logged before 6000 ms.
awk -F, 'NR > 1 && NR <= 4 && $1 >= 6000 { exit 1 }' "$TMP/capa.csv" || fail "early batch ran too late to test the first window"
[ "$(summary_field "$TMP/early.tsv" ok)" = 1 ] || fail "cap 1: $(summary_field "$TMP/early.tsv" ok) admitted"
[ "$(summary_field "$TMP/early.tsv" status_429)" = 2 ] || fail "cap 1: expected 2 rejections"
[ "$(summary_field "$TMP/late.tsv" ok)" = 3 ] || fail "cap 3: $(summary_field "$TMP/late.tsv" ok) admitted"
note "capacity schedule: 1 then 3"
