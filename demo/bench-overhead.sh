#!/bin/sh
# The shim's cost when nothing needs a retry, against an unthrottled
# ratelimit-server on 127.0.0.1 (a benchmark: it prints figures and whether
# the targets are met; it does not fail on them).
#
#   per_call   tests/helpers/shim_bench: N sequential GETs on one handle, with
#              and without LD_PRELOAD; ROUNDS interleaved rounds, medians of
#              the microseconds per call; plus, when valgrind is installed,
#              callgrind's instruction count per call, which does not depend
#              on the machine's load: the shim's own code (below), the
#              difference of two run lengths (CALLS / 4 and CALLS calls) so
#              that start-up cancels.  Target: <= 1 us more per call.
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
#              the instructions per transfer (two run lengths, CALLS_IR and
#              6 x CALLS_IR transfers).  Target: <= 1 us more per transfer.
#   loadgen8   loadgen, 8 threads, with and without the shim; median
#              requests/s over ROUNDS; target: >= 98% of the unshimmed rate.
#
# Instructions, two ways for each path:
#   the shim's own code  what runs in libbackoff.so per call, and in the
#              libc and ld.so functions it calls (locks, clock, malloc,
#              TLS), counted from callgrind's call graph: not libcurl's work
#              nor the program's callbacks.  It includes the exported multi
#              hooks that libcurl's own curl_easy_perform calls (its private
#              multi handle reaches them ~7 times a call).
#   all of the difference  (with the shim) - (without), each a difference
#              of two run lengths.  It also holds libcurl's own work when
#              it runs differently: how many curl_multi_perform/poll passes
#              a call takes depends on when the server's answer arrives,
#              which moves from run to run under valgrind (1.3 to 3.2 passes
#              a call seen with and without the shim), so this figure is
#              noisy by a few thousand instructions at 10,000 destinations;
#              the passes per call of both runs are printed beside it.
#
# Instructions to time: the unshimmed run's USER CPU time per call divided
# by its instructions per call (callgrind counts user-space instructions
# only; the shim adds user-space work only: no system call on a call that
# needs no retry, but for one fcntl() in the connect() hook per new
# connection (per_call_dests), which this count leaves out; the kernel's
# share of a plain call, its sockets and polls, is large here and is not
# the cost of an instruction).  Dividing user + system time by the user-space count, as
# before, charged every shim instruction with the kernel's work too (0.467
# ns on 2026-11-24 against about 0.27 ns this way).  Both the instructions
# and the user time of a plain call come from two run lengths (start-up
# cancels); the user time from CPU_CALLS / 4 and CPU_CALLS (20000) pinned
# calls, median of CPU_ROUNDS (3), far above the clock tick.  Every
# instruction row names the conversion it used.
#
# Output: TSV with a header.  Environment: BUILD (default build), ROUNDS (7),
# CALLS (2000), LOADGEN_REQUESTS (20000), DESTS (10000), CALLS_DESTS (10000),
# ROUNDS_DESTS (3), IR_DESTS (10000), CALLS_IR (200), CPU_CALLS (20000),
# CPU_ROUNDS (3).
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

# (a) per call, wall clock, interleaved rounds.
: >"$TMP/plain.us"
: >"$TMP/shim.us"
r=0
while [ $r -lt "$ROUNDS" ]; do
    $PIN0 "$BENCH" "$URL" "$CALLS" | awk '{ print $4 }' >>"$TMP/plain.us"
    LD_PRELOAD="$LIB" $PIN0 "$BENCH" "$URL" "$CALLS" | awk '{ print $4 }' >>"$TMP/shim.us"
    r=$((r + 1))
done
plain_us=$(median <"$TMP/plain.us")
shim_us=$(median <"$TMP/shim.us")
plain_us_best=$(sort -g "$TMP/plain.us" | head -n 1)
shim_us_best=$(sort -g "$TMP/shim.us" | head -n 1)

# The unshimmed call's user CPU time (the header says why user time), from
# two run lengths as the instruction counts are, so that start-up cancels.
CPU_CALLS=${CPU_CALLS:-20000}
CPU_ROUNDS=${CPU_ROUNDS:-3}
: >"$TMP/plain.user"
r=0
while [ $r -lt "$CPU_ROUNDS" ]; do
    /usr/bin/time -f '%U' -o "$TMP/time0" $PIN0 "$BENCH" "$URL" $((CPU_CALLS / 4)) >/dev/null
    /usr/bin/time -f '%U' -o "$TMP/time1" $PIN0 "$BENCH" "$URL" "$CPU_CALLS" >/dev/null
    awk -v a="$(tail -n 1 "$TMP/time0")" -v b="$(tail -n 1 "$TMP/time1")" \
        -v n=$((CPU_CALLS - CPU_CALLS / 4)) 'BEGIN { printf "%.6f\n", (b - a) / n * 1e6 }' >>"$TMP/plain.user"
    r=$((r + 1))
done
plain_user_us=$(median <"$TMP/plain.user")

# A name of callgrind's compressed form, in table t ("o" objects, "f"
# functions): "(id) name" the first time, "(id)" after.
CG_NAME_AWK='
function name(s, t,   id, rest) {
    if (s !~ /^\([0-9]+\)/) return s
    id = s; sub(/\).*/, "", id); sub(/^\(/, "", id)
    rest = s; sub(/^\([0-9]+\) ?/, "", rest)
    if (rest != "") tab[t, id] = rest
    return tab[t, id]
}'
# The shim's own code in a callgrind output file: the self cost of
# libbackoff.so's functions plus the inclusive cost of their calls into
# other objects (libc, ld.so, hiredis), but not into libcurl nor into the
# program (its callbacks) nor a hook's call of the real function it stands
# for (libcurl's poll() through the http room's hook: libc's poll is the
# program's cost, with or without the library; until 2026-11-27 it counted).  Callgrind's format: ob= names the current
# object, cob= the callee's object of the next calls= line, whose next
# cost line is the call's inclusive cost; every other cost line is the
# current function's own.
OWN_AWK="$CG_NAME_AWK"'
function mine(o) { return index(o, lib) > 0 }
# A hook calling the real function it stands for (poll -> the libc poll):
# the call of the program itself, made with or without the library.
function forwarded(f, c) { sub(/^(__libc_|__)/, "", c); sub(/@.*/, "", c); return f == c }
/^cmd:/ { exe = $2; next }
/^ob=/ { cur = name(substr($0, 4), "o"); cob = ""; next }
/^fn=/ { fn = name(substr($0, 4), "f"); next }
/^cob=/ { cob = name(substr($0, 5), "o"); next }
/^cfn=/ { cfn = name(substr($0, 5), "f"); next }
/^calls=/ { incall = 1; next }
/^[+*0-9-]/ {
    if (incall) {
        o = cob != "" ? cob : cur
        if (mine(cur) && !mine(o) && !forwarded(fn, cfn) && o !~ /libcurl/ && o != exe) own += $2
        incall = 0; cob = ""
    } else if (mine(cur)) own += $2
}
END { printf "%.0f\n", own }'
own() { awk -v lib=/libbackoff.so "$OWN_AWK" "$1"; }
cg_sum() { sed -n 's/^summary: *//p' "$1"; }
# How many times libcurl's curl_multi_perform ran (its passes), from the call graph.
perform_calls() {
    awk "$CG_NAME_AWK"'
        /^ob=/ { cur = name(substr($0, 4), "o"); cob = ""; next }
        /^cob=/ { cob = name(substr($0, 5), "o"); next }
        /^fn=/ { name(substr($0, 4), "f"); next }
        /^cfn=/ { tgt = name(substr($0, 5), "f"); next }
        /^calls=/ { split(substr($0, 7), a, " "); o = cob != "" ? cob : cur
                    if (tgt == "curl_multi_perform" && o ~ /libcurl/) n += a[1]
                    cob = ""; next }
        END { printf "%d\n", n }' "$1"
}
HAVE_CG=no
if command -v valgrind >/dev/null 2>&1 && command -v callgrind_annotate >/dev/null 2>&1; then
    HAVE_CG=yes
fi

# (a') per call, instructions (callgrind): the unshimmed call's instructions
# and the shim's own code per call, each from two run lengths.
ir_shim=nan
ir_plain=nan
if [ $HAVE_CG = yes ]; then
    CALLS_Q=$((CALLS / 4))
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.plain0" "$BENCH" "$URL" "$CALLS_Q" >/dev/null 2>&1
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.plain1" "$BENCH" "$URL" "$CALLS" >/dev/null 2>&1
    LD_PRELOAD="$LIB" valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.shim0" \
        "$BENCH" "$URL" "$CALLS_Q" >/dev/null 2>&1
    LD_PRELOAD="$LIB" valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.shim1" \
        "$BENCH" "$URL" "$CALLS" >/dev/null 2>&1
    ir_plain=$(awk -v a="$(cg_sum "$TMP/cg.plain0")" -v b="$(cg_sum "$TMP/cg.plain1")" \
        -v n=$((CALLS - CALLS_Q)) 'BEGIN { printf "%.0f", (b - a) / n }')
    ir_shim=$(awk -v a="$(own "$TMP/cg.shim0")" -v b="$(own "$TMP/cg.shim1")" \
        -v n=$((CALLS - CALLS_Q)) 'BEGIN { printf "%.0f", (b - a) / n }')
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
# destination (start-up and the first call to each cancel out): the shim's
# own code, the destination table's part of it (shim/dest/table.c, inclusive),
# and all of the difference.
IR_DESTS=${IR_DESTS:-10000}
ir_d_total=nan
ir_d_own=nan
ir_d_table=nan
# Each run gets a host-wide file of its own: one left by the wall-clock
# runs above (or by the other callgrind run) holds the entries of processes
# that have exited, which the first attach to each slot reaps (once per
# slot and dead process, so nothing of a call's steady cost, but 10,000
# slots of it land in the measured calls: ~1,500 instructions a call).
cg_run() { # OUT PRELOAD CALLS
    rm -rf "$TMP/cgd.rt" && mkdir "$TMP/cgd.rt"
    XDG_RUNTIME_DIR="$TMP/cgd.rt" LD_PRELOAD="$2" valgrind --tool=callgrind \
        --callgrind-out-file="$1" "$MANY" "$PORT" "$IR_DESTS" "$3" >/dev/null 2>&1
}
cg_table() {
    callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null | awk '
        { v = $1; gsub(",", "", v) }
        /dest\/table.c:bo_block_(get|put|ref) / { total += v }
        END { printf "%.0f", total }'
}
if [ $HAVE_CG = yes ]; then
    cg_run "$TMP/cgd.plain0" "" 0
    cg_run "$TMP/cgd.plain1" "" "$IR_DESTS"
    cg_run "$TMP/cgd.shim0" "$LIB" 0
    cg_run "$TMP/cgd.shim1" "$LIB" "$IR_DESTS"
    ir_d_total=$(awk -v a0="$(cg_sum "$TMP/cgd.plain0")" -v a1="$(cg_sum "$TMP/cgd.plain1")" \
        -v b0="$(cg_sum "$TMP/cgd.shim0")" -v b1="$(cg_sum "$TMP/cgd.shim1")" -v n="$IR_DESTS" \
        'BEGIN { printf "%.0f", ((b1 - b0) - (a1 - a0)) / n }')
    ir_d_own=$(awk -v a="$(own "$TMP/cgd.shim0")" -v b="$(own "$TMP/cgd.shim1")" -v n="$IR_DESTS" \
        'BEGIN { printf "%.0f", (b - a) / n }')
    ir_d_table=$(awk -v t0="$(cg_table "$TMP/cgd.shim0")" -v t1="$(cg_table "$TMP/cgd.shim1")" \
        -v n="$IR_DESTS" 'BEGIN { printf "%.0f", (t1 - t0) / n }')
    pass_plain=$(awk -v a="$(perform_calls "$TMP/cgd.plain0")" -v b="$(perform_calls "$TMP/cgd.plain1")" \
        -v n="$IR_DESTS" 'BEGIN { printf "%.2f", (b - a) / n }')
    pass_shim=$(awk -v a="$(perform_calls "$TMP/cgd.shim0")" -v b="$(perform_calls "$TMP/cgd.shim1")" \
        -v n="$IR_DESTS" 'BEGIN { printf "%.2f", (b - a) / n }')
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
ir_m_own=nan
if [ $HAVE_CG = yes ]; then
    cg_m() { # OUT PRELOAD N
        LD_PRELOAD="$2" valgrind --tool=callgrind --callgrind-out-file="$1" \
            "$BENCH" "$URL" "$3" multi >/dev/null 2>&1
    }
    cg_m "$TMP/cgm.plain0" "" "$CALLS_IR"
    cg_m "$TMP/cgm.plain1" "" $((CALLS_IR * 6))
    cg_m "$TMP/cgm.shim0" "$LIB" "$CALLS_IR"
    cg_m "$TMP/cgm.shim1" "$LIB" $((CALLS_IR * 6))
    ir_m=$(awk -v a0="$(cg_sum "$TMP/cgm.plain0")" -v a1="$(cg_sum "$TMP/cgm.plain1")" \
        -v b0="$(cg_sum "$TMP/cgm.shim0")" -v b1="$(cg_sum "$TMP/cgm.shim1")" -v n=$((CALLS_IR * 5)) \
        'BEGIN { printf "%.0f", ((b1 - b0) - (a1 - a0)) / n }')
    ir_m_own=$(awk -v a="$(own "$TMP/cgm.shim0")" -v b="$(own "$TMP/cgm.shim1")" \
        -v n=$((CALLS_IR * 5)) 'BEGIN { printf "%.0f", (b - a) / n }')
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

# One instruction's time: the plain run's user CPU time per call over its
# instructions per call.
NS=$(awk -v u="$plain_user_us" -v p="$ir_plain" 'BEGIN {
    if (p == "nan" || p <= 0) print "nan"; else printf "%.4f", u * 1000 / p }')
CONV=$(awk -v u="$plain_user_us" -v p="$ir_plain" -v ns="$NS" 'BEGIN {
    printf "%.3f ns/instr = the plain call'"'"'s user CPU %.2f us / its %s instr", ns, u, p }')
# ir_row SCENARIO WHAT IR: an instruction row against the 1 us target.
ir_row() {
    awk -v s="$1" -v w="$2" -v ir="$3" -v ns="$NS" -v conv="$CONV" 'BEGIN {
        us = ir * ns / 1000
        printf "%s\taimd\tinstructions_per_call(callgrind; %s)\t-\t-\t%d\t-\t<= 1 us more (%d instr x %.3f ns = %.3f us; %s)\t%s\n",
            s, w, ir, ir, ns, us, conv, (us <= 1) ? "yes" : "no" }'
}

printf 'scenario\tpolicy\tmetric\twithout_shim\twith_shim\tdifference\tratio\ttarget\tmet\n'
awk -v a="$plain_us" -v b="$shim_us" -v n="$ROUNDS" -v c="$CALLS" 'BEGIN {
    d = b - a
    printf "per_call\taimd\tus_per_call(median of %d x %d)\t%.3f\t%.3f\t%.3f\t%.4f\t<= 1 us more\t%s\n",
        n, c, a, b, d, b / a, (d <= 1) ? "yes" : "no" }'
awk -v a="$plain_us_best" -v b="$shim_us_best" -v n="$ROUNDS" -v c="$CALLS" 'BEGIN {
    d = b - a
    printf "per_call\taimd\tus_per_call(best of %d x %d)\t%.3f\t%.3f\t%.3f\t%.4f\t<= 1 us more\t%s\n",
        n, c, a, b, d, b / a, (d <= 1) ? "yes" : "no" }'
if [ "$ir_shim" != nan ]; then
    ir_row per_call "shim = its own code, the multi hooks libcurl calls included; the plain call $ir_plain instr" "$ir_shim"
fi
awk -v a="$plain_d_us" -v b="$shim_d_us" -v n="$ROUNDS_DESTS" -v c="$CALLS_DESTS" -v d="$DESTS" 'BEGIN {
    x = b - a
    printf "per_call_dests\taimd\tus_per_call(%d destinations, new connection each; median of %d x %d)\t%.3f\t%.3f\t%.3f\t%.4f\t<= 1 us more\t%s\n",
        d, n, c, a, b, x, b / a, (x <= 1) ? "yes" : "no" }'
if [ "$ir_d_own" != nan ]; then
    ir_row per_call_dests "a call to one of $IR_DESTS known destinations, new URL each; shim = its own code, of which the table $ir_d_table" "$ir_d_own"
    ir_row per_call_dests "the same; all of the difference, libcurl's curl_multi_perform passes a call $pass_shim with the shim and $pass_plain without" "$ir_d_total"
fi
awk -v a="$plain_m_us" -v b="$shim_m_us" -v n="$ROUNDS" -v c="$CALLS" 'BEGIN {
    d = b - a
    printf "per_transfer_multi\taimd\tus_per_transfer(median of %d x %d)\t%.3f\t%.3f\t%.3f\t%.4f\t<= 1 us more\t%s\n",
        n, c, a, b, d, b / a, (d <= 1) ? "yes" : "no" }'
if [ "$ir_m_own" != nan ]; then
    ir_row per_transfer_multi "per transfer; shim = its own code" "$ir_m_own"
    ir_row per_transfer_multi "per transfer; all of the difference" "$ir_m"
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
