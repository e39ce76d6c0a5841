#!/bin/sh
# make demo: the policies side by side against a real throttling server.
#
# 1. The burst scenario of article 000 in real time, scaled down five times to
#    fit a coffee break: loadgen (a plain libcurl program) sends OPS requests
#    through `backoff -p POLICY --` to a ratelimit-server that admits 50 at
#    once; for each policy a table row and request-rate plots.
# 2. Attempts against operations for exponential backoff and aimd (000's
#    "total requests" figure).
# 3. A shell loop of the `curl` command against a token bucket, with and
#    without `backoff --`.
# 4. The real retry tools beside it (the peers bench's first workload, one run
#    each, demo/bench-peers.sh: one process x 40 items against a token bucket
#    of 10/s burst 3 with Retry-After: 1); DEMO_PEERS=0 leaves it out.
# Plots (PNG, gnuplot) go to demo/out/; summary.png is the main picture.
# Everything runs on 127.0.0.1 and every process started here is stopped on
# exit.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
OUT="$top/demo/out"
mkdir -p "$OUT"
rm -f "$OUT"/*.png "$OUT"/*.csv "$OUT"/*.tsv "$OUT"/*.json "$OUT"/*.dat

# Scenario, 000's settings divided by five in time (rates multiplied by five).
OPS=${DEMO_OPS:-2000}
RATE=5000          # 000: 1000/s
MAX_BUSY=50        # 000: 50
SERVICE_MS=100     # 000: 500 ms per success
ERROR_MS=10        # 000: 50 ms per rejection
TRAVEL_MS=20       # 000: 100 ms travel (the server answers this much later)
THREADS=${DEMO_THREADS:-250}
POLICIES=${DEMO_POLICIES:-"none fixed exponential full-jitter decorrelated-jitter responsive aimd"}
# Delay schedules scaled like the server: base 50 ms and cap 30 s in 000 -> 10 ms, 6 s.
# Every call may retry until it succeeds (as in 000), bounded at 60 s per call.
export BACKOFF_BASE_MS=10 BACKOFF_CAP_MS=6000 BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=60000

SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill -CONT "$SERVER_PID" 2>/dev/null || true
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT INT TERM

. "$top/demo/lib.sh"

# run_burst POLICY OPS TAG: one real-time burst run; leaves its files in $OUT.
run_burst() {
    policy=$1; ops=$2; tag=$3
    start_server "$OUT/server-$tag.tsv" --max-busy $MAX_BUSY --service-ms $SERVICE_MS \
        --error-ms $ERROR_MS --delay-ms $TRAVEL_MS --log "$OUT/requests-$tag.csv"
    trace=""
    [ "$policy" = aimd ] && trace="$OUT/trace-$tag.csv"
    BACKOFF_TRACE=$trace "$BUILD/backoff" -p "$policy" --stats "$OUT/stats-$tag.json" -- \
        "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests "$ops" \
        --threads $THREADS --rate $RATE --verify >"$OUT/loadgen-$tag.tsv"
    stop_server
}

optimum=$(awk -v o="$OPS" -v m=$MAX_BUSY -v s=$SERVICE_MS 'BEGIN { printf "%.2f", o / m * s / 1000 }')
echo "== burst (article 000), real time, times scaled down 5x =="
echo "   $OPS requests arriving at $RATE/s from $THREADS loadgen threads; the server admits"
echo "   $MAX_BUSY at once, a success holds a slot ${SERVICE_MS} ms, a rejection ${ERROR_MS} ms (429),"
echo "   answers travel ${TRAVEL_MS} ms.  Optimum: $OPS / $MAX_BUSY x ${SERVICE_MS} ms = ${optimum} s."
echo "   Delay policies: base ${BACKOFF_BASE_MS} ms, cap ${BACKOFF_CAP_MS} ms, retry until success (60 s bound)."
echo
table="$OUT/demo.tsv"
printf 'policy\tcompletion_s\tratio\tattempts\twasted_pct\tp99_ms\tall_ok\tfailed\n' >"$table"
for p in $POLICIES; do
    run_burst "$p" "$OPS" "$p"
    attempts=$(col "$OUT/server-$p.tsv" requests)
    rejected=$(col "$OUT/server-$p.tsv" rejected)
    comp=$(col "$OUT/loadgen-$p.tsv" completion_s)
    ok=$(col "$OUT/loadgen-$p.tsv" ok)
    mism=$(col "$OUT/loadgen-$p.tsv" body_mismatch)
    p99=$(col "$OUT/loadgen-$p.tsv" p99_ms)
    allok=no
    [ "$ok" = "$OPS" ] && [ "$mism" = 0 ] && allok=yes
    awk -v p="$p" -v c="$comp" -v o="$optimum" -v a="$attempts" -v r="$rejected" \
        -v q="$p99" -v k="$allok" -v okc="$ok" -v n="$OPS" 'BEGIN {
        printf "%s\t%.2f\t%.2f\t%d\t%.1f\t%.0f\t%s\t%d\n", p, c, c / o, a,
               (a > 0 ? 100 * r / a : 0), q, (k == "yes" ? "yes" : sprintf("no (%d/%d)", okc, n)), n - okc }' >>"$table"
done
column -t -s "$(printf '\t')" "$table"
echo

# Request rate over time, per policy: successes and rejections per second in
# 100 ms buckets, from the server's request log (000's first two figures).
# Time counts from the arrival of the first request the server answered
# (t_ms is logged at the answer, latency_ms before it), not from its start.
for p in $POLICIES; do
    awk -F, 'NR == 2 { t0 = $1 - $6 }
             NR > 1 { b = int(($1 - t0) / 100); if ($4 == 200) ok[b]++; else rej[b]++; if (b > m) m = b }
             END { for (i = 0; i <= m; i++) printf "%.1f %d %d\n", i / 10, 10 * ok[i], 10 * rej[i] }' \
        "$OUT/requests-$p.csv" >"$OUT/rate-$p.dat"
done

echo "== attempts against operations (article 000's third figure) =="
printf 'policy\tops\tattempts\n' >"$OUT/attempts.tsv"
for p in exponential aimd; do
    for n in 250 500 1000 2000; do
        if [ "$n" = "$OPS" ] && [ -f "$OUT/server-$p.tsv" ]; then
            a=$(col "$OUT/server-$p.tsv" requests)
        else
            run_burst "$p" "$n" "$p-$n"
            a=$(col "$OUT/server-$p-$n.tsv" requests)
        fi
        printf '%s\t%s\t%s\n' "$p" "$n" "$a" >>"$OUT/attempts.tsv"
    done
done
column -t -s "$(printf '\t')" "$OUT/attempts.tsv"
echo

echo "== the curl command in a shell loop against a token bucket (10 requests/s) =="
loop() { # label, command prefix...: 30 sequential curls, as fast as the loop goes
    label=$1; shift
    start_server "$OUT/server-curl-$label.tsv" --rate 10 --burst 10
    ok=0; bad=0
    t0=$(date +%s.%N)
    i=1
    while [ $i -le 30 ]; do
        body=$("$@" curl -s "http://127.0.0.1:$PORT/item/$i") || true
        case "$body" in
        "item=$i;item=$i;"*) right=1 ;;
        *) right=0 ;;
        esac
        if [ $right = 1 ]; then
            ok=$((ok + 1))
        else
            bad=$((bad + 1))
        fi
        i=$((i + 1))
    done
    t1=$(date +%s.%N)
    stop_server
    attempts=$(col "$OUT/server-curl-$label.tsv" requests)
    printf '%-22s %2d of 30 bodies right, %2d wrong (429 "rejected"), %3d requests sent, %.1f s\n' \
        "$label" "$ok" "$bad" "$attempts" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}
loop "curl" env
loop "backoff -- curl" "$BUILD/backoff" --
echo

if [ "${DEMO_PEERS:-1}" != 0 ]; then
    echo "== the real retry tools beside it (demo/bench-peers.sh, workload 1, one run each) =="
    echo "   one process fetches 40 items from a token bucket of 10/s burst 3 (Retry-After: 1);"
    echo "   each peer as its documentation recommends, the plain clients under backoff --"
    PEERS_RUNS=1 PEERS_WORKLOADS=1 PEERS_TSV="$OUT/peers.tsv" BUILD="$BUILD" sh "$top/demo/bench-peers.sh" ||
        echo "peers: demo/bench-peers.sh failed; the summary has no peers panel"
    echo
fi

if command -v gnuplot >/dev/null 2>&1; then
    OUT="$OUT" POLICIES="$POLICIES" OPTIMUM="$optimum" OPS="$OPS" sh "$top/demo/plots.sh"
    echo "plots: $(cd "$OUT" && ls *.png | tr '\n' ' ')"
    echo "       in $OUT"
else
    echo "gnuplot is not installed: no plots (apt-get install gnuplot-nox)"
fi
