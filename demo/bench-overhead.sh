#!/bin/sh
# The shim's cost when nothing needs a retry, against an unthrottled
# ratelimit-server on 127.0.0.1 (a benchmark: it prints figures and whether
# the targets are met; it does not fail on them).
#
#   per_call   tests/helpers/shim_bench: N sequential GETs on one handle, with
#              and without LD_PRELOAD; ROUNDS interleaved rounds, medians of
#              the microseconds per call; plus, when valgrind is installed,
#              callgrind's instruction count per call (the difference of two
#              run lengths cancels start-up), which does not depend on the
#              machine's load.  Target: <= 1 us more per call.
#   per_call_dests  tests/helpers/many_dests: DESTS destinations (d0.test ..
#              routed to the server by CURLOPT_CONNECT_TO), one warm-up call
#              to each, then CALLS_DESTS calls round-robin over them, one
#              handle, so each call sets a new URL (a table lookup) and opens
#              a new connection (the connect() hook's lookup); with and
#              without the shim, medians over ROUNDS_DESTS.  Beside the
#              1-destination per_call row; target: <= 1 us more per call.
#   per_transfer_multi  tests/helpers/shim_bench in multi mode: each GET
#              one transfer of a multi handle (add, curl_multi_perform +
#              curl_multi_poll until done, info_read, remove), with and
#              without the shim, medians over ROUNDS; plus, with valgrind,
#              the instructions per transfer: the difference of two run
#              lengths (CALLS_IR and 6 x CALLS_IR transfers) with the shim,
#              minus the same without, so start-up cancels; all of it, the
#              retry bookkeeping of the managed transfer included.  Target:
#              <= 1 us more per transfer.
#   loadgen8   loadgen, 8 threads, with and without the shim; median
#              requests/s over ROUNDS; target: >= 98% of the unshimmed rate.
#
# Output: TSV with a header.  Environment: BUILD (default build), ROUNDS (7),
# CALLS (2000), LOADGEN_REQUESTS (20000), DESTS (10000), CALLS_DESTS (10000),
# ROUNDS_DESTS (3).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-2000}
LG_REQ=${LOADGEN_REQUESTS:-20000}
DESTS=${DESTS:-10000}
CALLS_DESTS=${CALLS_DESTS:-10000}
ROUNDS_DESTS=${ROUNDS_DESTS:-3}
MANY="$BUILD/tests/helpers/many_dests"
LIB="$BUILD/libbackoff.so"
BENCH="$BUILD/tests/helpers/shim_bench"
for f in "$LIB" "$BENCH" "$MANY" "$BUILD/ratelimit-server" "$BUILD/loadgen"; do
    [ -e "$f" ] || { echo "backoff: $f is missing: run make all test-programs first" >&2; exit 2; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-bench.XXXXXX")
# The shim runs in its default BACKOFF_SHARE=host mode (a destination's
# state in a shared-memory file), with a state directory of its own.
XDG_RUNTIME_DIR=$TMP
export XDG_RUNTIME_DIR
SERVER_PID=""
cleanup() {
    [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# Pinning (when taskset exists and there are 2+ CPUs) removes most of the
# scheduler's noise: the server and the sequential client share CPU 0 (so a
# call costs both sides' CPU time, nothing else), loadgen runs on CPU 1.
PIN0="" PIN1=""
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
    PIN0="taskset -c 0"
    PIN1="taskset -c 1"
fi
$PIN0 "$BUILD/ratelimit-server" --port 0 --threads 2 >"$TMP/server.out" 2>/dev/null &
SERVER_PID=$!
i=0
until grep -q '^listening on 127.0.0.1:' "$TMP/server.out" 2>/dev/null; do
    i=$((i + 1))
    [ $i -gt 100 ] && { echo "backoff: ratelimit-server did not start" >&2; exit 1; }
    sleep 0.05
done
PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/server.out" | head -n 1)
URL="http://127.0.0.1:$PORT/item/1"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "nan" }'; }

# (a) per call, wall clock; the unshimmed runs also give the CPU time per
# call (user + system), used below to turn instructions into time.
: >"$TMP/plain.us"
: >"$TMP/shim.us"
: >"$TMP/plain.cpu"
r=0
while [ $r -lt "$ROUNDS" ]; do
    /usr/bin/time -f '%U %S' -o "$TMP/time" $PIN0 "$BENCH" "$URL" "$CALLS" | awk '{ print $4 }' >>"$TMP/plain.us"
    awk -v n="$CALLS" '{ printf "%.6f\n", ($1 + $2) / (n + 20) * 1e6 }' "$TMP/time" >>"$TMP/plain.cpu"
    LD_PRELOAD="$LIB" $PIN0 "$BENCH" "$URL" "$CALLS" | awk '{ print $4 }' >>"$TMP/shim.us"
    r=$((r + 1))
done
plain_us=$(median <"$TMP/plain.us")
shim_us=$(median <"$TMP/shim.us")
plain_us_best=$(sort -g "$TMP/plain.us" | head -n 1)
shim_us_best=$(sort -g "$TMP/shim.us" | head -n 1)
plain_cpu_us=$(median <"$TMP/plain.cpu")

# (a') per call, instructions (callgrind), when valgrind is installed.  The
# shim's own cost is exact: its curl_easy_perform hook minus libcurl's,
# plus its write/header callbacks minus the program's callback (shim_bench's
# sink).  The unshimmed run's instructions per call and its CPU time per call
# give the time of one instruction in this workload (an over-estimate: the
# CPU time includes the kernel's work, which callgrind does not count).
ir_shim=nan
ir_plain=nan
if command -v valgrind >/dev/null 2>&1 && command -v callgrind_annotate >/dev/null 2>&1; then
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.plain" "$BENCH" "$URL" "$CALLS" >/dev/null 2>&1
    LD_PRELOAD="$LIB" valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.shim" \
        "$BENCH" "$URL" "$CALLS" >/dev/null 2>&1
    ir_plain=$(sed -n 's/^summary: *//p' "$TMP/cg.plain" | awk -v n="$CALLS" '{ printf "%.0f", $1 / (n + 20) }')
    ir_shim=$(callgrind_annotate --inclusive=yes --threshold=100 "$TMP/cg.shim" 2>/dev/null |
        awk -v n="$CALLS" '
            { v = $1; gsub(",", "", v) }
            /shim_curl.c:curl_easy_perform / && !hp { hp = 1; total += v }
            /[?][?][?]:curl_easy_perform / && !lp { lp = 1; total -= v }
            /shim_curl.c:shim_write / && !w { w = 1; total += v }
            /shim_curl.c:shim_header / && !h { h = 1; total += v }
            /shim_bench.c:sink / && !s { s = 1; total -= v }
            END { printf "%.0f", total / (n + 20) }')
fi

# (a'') per call at DESTS destinations, wall clock, interleaved rounds.
: >"$TMP/plain_d.us"
: >"$TMP/shim_d.us"
r=0
while [ $r -lt "$ROUNDS_DESTS" ]; do
    $PIN0 "$MANY" "$PORT" "$DESTS" "$CALLS_DESTS" | awk '{ print $6 }' >>"$TMP/plain_d.us"
    LD_PRELOAD="$LIB" $PIN0 "$MANY" "$PORT" "$DESTS" "$CALLS_DESTS" | awk '{ print $6 }' >>"$TMP/shim_d.us"
    r=$((r + 1))
done
plain_d_us=$(median <"$TMP/plain_d.us")
shim_d_us=$(median <"$TMP/shim_d.us")
# The same under callgrind, IR_DESTS destinations: runs with 0 and with
# IR_DESTS timed calls after the warm-up, with and without the shim; the
# differences of the two run lengths give the cost of one call to a known
# destination (start-up and the first call to each cancel out): all of the
# shim's, and the destination table's part (shim_table.c, inclusive).
IR_DESTS=${IR_DESTS:-10000}
ir_d_total=nan
ir_d_table=nan
cg_run() { # OUT PRELOAD CALLS
    LD_PRELOAD="$2" valgrind --tool=callgrind --callgrind-out-file="$1" \
        "$MANY" "$PORT" "$IR_DESTS" "$3" >/dev/null 2>&1
}
cg_sum() { sed -n 's/^summary: *//p' "$1"; }
cg_table() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null | awk '
        { v = $1; gsub(",", "", v) }
        /shim_table.c:bo_shim_dest_(get|put|ref) / { total += v }
        END { printf "%.0f", total }'
}
if command -v valgrind >/dev/null 2>&1 && command -v callgrind_annotate >/dev/null 2>&1; then
    cg_run "$TMP/cgd.plain0" "" 0
    cg_run "$TMP/cgd.plain1" "" "$IR_DESTS"
    cg_run "$TMP/cgd.shim0" "$LIB" 0
    cg_run "$TMP/cgd.shim1" "$LIB" "$IR_DESTS"
    ir_d_total=$(awk -v a0="$(cg_sum "$TMP/cgd.plain0")" -v a1="$(cg_sum "$TMP/cgd.plain1")" \
        -v b0="$(cg_sum "$TMP/cgd.shim0")" -v b1="$(cg_sum "$TMP/cgd.shim1")" -v n="$IR_DESTS" \
        'BEGIN { printf "%.0f", ((b1 - b0) - (a1 - a0)) / n }')
    ir_d_table=$(awk -v t0="$(cg_table "$TMP/cgd.shim0")" -v t1="$(cg_table "$TMP/cgd.shim1")" \
        -v n="$IR_DESTS" 'BEGIN { printf "%.0f", (t1 - t0) / n }')
fi

# (a''') per transfer through a multi handle, wall clock and instructions.
: >"$TMP/plain_m.us"
: >"$TMP/shim_m.us"
r=0
while [ $r -lt "$ROUNDS" ]; do
    $PIN0 "$BENCH" "$URL" "$CALLS" multi | awk '{ print $4 }' >>"$TMP/plain_m.us"
    LD_PRELOAD="$LIB" $PIN0 "$BENCH" "$URL" "$CALLS" multi | awk '{ print $4 }' >>"$TMP/shim_m.us"
    r=$((r + 1))
done
plain_m_us=$(median <"$TMP/plain_m.us")
shim_m_us=$(median <"$TMP/shim_m.us")
CALLS_IR=${CALLS_IR:-200}
ir_m=nan
if command -v valgrind >/dev/null 2>&1; then
    cg_m() { # PRELOAD N: total instructions of a run of N transfers
        LD_PRELOAD="$1" valgrind --tool=callgrind --callgrind-out-file="$TMP/cgm" \
            "$BENCH" "$URL" "$2" multi >/dev/null 2>&1
        sed -n 's/^summary: *//p' "$TMP/cgm"
    }
    ir_m=$(awk -v a0="$(cg_m "" "$CALLS_IR")" -v a1="$(cg_m "" $((CALLS_IR * 6)))" \
        -v b0="$(cg_m "$LIB" "$CALLS_IR")" -v b1="$(cg_m "$LIB" $((CALLS_IR * 6)))" -v n=$((CALLS_IR * 5)) \
        'BEGIN { printf "%.0f", ((b1 - b0) - (a1 - a0)) / n }')
fi

# (b) loadgen, 8 threads
: >"$TMP/plain.rps"
: >"$TMP/shim.rps"
r=0
rps() { awk -F'\t' '$1 == "requests" { next } { if ($4 > 0) printf "%.1f\n", $2 / $4 }'; }
while [ $r -lt "$ROUNDS" ]; do
    $PIN1 "$BUILD/loadgen" --url "$URL" --requests "$LG_REQ" --threads 8 | rps >>"$TMP/plain.rps"
    LD_PRELOAD="$LIB" $PIN1 "$BUILD/loadgen" --url "$URL" --requests "$LG_REQ" --threads 8 | rps >>"$TMP/shim.rps"
    r=$((r + 1))
done
plain_rps=$(median <"$TMP/plain.rps")
shim_rps=$(median <"$TMP/shim.rps")
best() { sort -g | tail -n 1; }
plain_best=$(best <"$TMP/plain.rps")
shim_best=$(best <"$TMP/shim.rps")

printf 'scenario\tpolicy\tmetric\twithout_shim\twith_shim\tdifference\tratio\ttarget\tmet\n'
awk -v a="$plain_us" -v b="$shim_us" -v n="$ROUNDS" -v c="$CALLS" 'BEGIN {
    d = b - a
    printf "per_call\taimd\tus_per_call(median of %d x %d)\t%.3f\t%.3f\t%.3f\t%.4f\t<= 1 us more\t%s\n",
        n, c, a, b, d, b / a, (d <= 1) ? "yes" : "no" }'
awk -v a="$plain_us_best" -v b="$shim_us_best" -v n="$ROUNDS" -v c="$CALLS" 'BEGIN {
    d = b - a
    printf "per_call\taimd\tus_per_call(best of %d x %d)\t%.3f\t%.3f\t%.3f\t%.4f\t<= 1 us more\t%s\n",
        n, c, a, b, d, b / a, (d <= 1) ? "yes" : "no" }'
awk -v a="$plain_d_us" -v b="$shim_d_us" -v n="$ROUNDS_DESTS" -v c="$CALLS_DESTS" -v d="$DESTS" 'BEGIN {
    x = b - a
    printf "per_call_dests\taimd\tus_per_call(%d destinations, new connection each; median of %d x %d)\t%.3f\t%.3f\t%.3f\t%.4f\t<= 1 us more\t%s\n",
        d, n, c, a, b, x, b / a, (x <= 1) ? "yes" : "no" }'
if [ "$ir_d_total" != nan ] && [ "$ir_shim" != nan ]; then
    awk -v t="$ir_d_total" -v tb="$ir_d_table" -v p="$ir_plain" -v cpu="$plain_cpu_us" -v d="$IR_DESTS" 'BEGIN {
        ns = cpu * 1000 / p
        printf "per_call_dests\taimd\tinstructions_per_call(callgrind, call to one of %d known destinations, new URL each; shim = all of it)\t-\t-\t%d\t-\t<= 1 us more (%d instr x %.3f ns = %.3f us, of which the table %d instr = %.3f us)\t%s\n",
            d, t, t, ns, t * ns / 1000, tb, tb * ns / 1000, (t * ns / 1000 <= 1) ? "yes" : "no" }'
fi
if [ "$ir_shim" != nan ]; then
    awk -v ir="$ir_shim" -v p="$ir_plain" -v cpu="$plain_cpu_us" 'BEGIN {
        ns = cpu * 1000 / p; us = ir * ns / 1000
        printf "per_call\taimd\tinstructions_per_call(callgrind; shim = its own code)\t%d\t%d\t%d\t%.4f\t<= 1 us more (%d instr x %.3f ns = %.3f us)\t%s\n",
            p, p + ir, ir, (p + ir) / p, ir, ns, us, (us <= 1) ? "yes" : "no" }'
fi
awk -v a="$plain_m_us" -v b="$shim_m_us" -v n="$ROUNDS" -v c="$CALLS" 'BEGIN {
    d = b - a
    printf "per_transfer_multi\taimd\tus_per_transfer(median of %d x %d)\t%.3f\t%.3f\t%.3f\t%.4f\t<= 1 us more\t%s\n",
        n, c, a, b, d, b / a, (d <= 1) ? "yes" : "no" }'
if [ "$ir_m" != nan ] && [ "$ir_shim" != nan ]; then
    awk -v ir="$ir_m" -v p="$ir_plain" -v cpu="$plain_cpu_us" 'BEGIN {
        ns = cpu * 1000 / p; us = ir * ns / 1000
        printf "per_transfer_multi\taimd\tinstructions_per_transfer(callgrind; shim = all of the difference)\t-\t-\t%d\t-\t<= 1 us more (%d instr x %.3f ns = %.3f us)\t%s\n",
            ir, ir, ns, us, (us <= 1) ? "yes" : "no" }'
fi
awk -v a="$plain_rps" -v b="$shim_rps" -v n="$ROUNDS" -v q="$LG_REQ" 'BEGIN {
    r = b / a
    printf "loadgen8\taimd\trequests_per_s(median of %d x %d)\t%.1f\t%.1f\t%.1f\t%.4f\t>= 0.98\t%s\n",
        n, q, a, b, b - a, r, (r >= 0.98) ? "yes" : "no" }'
awk -v a="$plain_best" -v b="$shim_best" -v n="$ROUNDS" -v q="$LG_REQ" 'BEGIN {
    r = b / a
    printf "loadgen8\taimd\trequests_per_s(best of %d x %d)\t%.1f\t%.1f\t%.1f\t%.4f\t>= 0.98\t%s\n",
        n, q, a, b, b - a, r, (r >= 0.98) ? "yes" : "no" }'
echo "# wall-clock figures on a shared machine move between runs (pinned: ${PIN0:-no});" \
    "the instruction count is the stable one" >&2
