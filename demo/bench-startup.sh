#!/bin/sh
# What the library costs a process that makes no request: its start-up (a
# benchmark: it prints figures and whether the target is met; it does not
# fail on them).  The README's shell loop of curl starts a process per item,
# and every process of a command's tree (the shell, sed, make) loads the
# library.
#
#   300 x env LD_PRELOAD=libbackoff.so /bin/true against 300 x env /bin/true,
#   in turn: ROUNDS (10) rounds of a block of N (30) runs of each, the
#   order turned round every round (A B C D, D C B A) so that a machine that
#   speeds up or slows down charges both alike; the ratio of the totals, and
#   the smallest and the median of the rounds' ratios.  Target: <= 1.05x.
#   Beside it, in the same rounds:
#     the floor: an empty library linked with the library's own flags (what
#       any preloaded library costs: opening and mapping a file, relocating
#       it, its pages), built here with $CC;
#     the wrapper: backoff -- /bin/true (it replaces env: one exec each).
#   With valgrind, callgrind's instructions of one /bin/true, plain and
#   preloaded (the same on any machine, whatever its load).
#
# Output: rows of the harm table, "| case | plain | under backoff | target | met |"
# (demo/bench-harm.sh prints them as its cost rows).
# Environment: BUILD (default build), ROUNDS (10), N (30), CC (cc).
# stat's five words are split on purpose (set -- $(stat ...)).
# shellcheck disable=SC2046
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
ROUNDS=${ROUNDS:-10}
N=${N:-30}
CC=${CC:-cc}
LIB="$BUILD/libbackoff.so"
WRAP="$BUILD/backoff"
for f in "$LIB" "$WRAP"; do
    [ -e "$f" ] || { echo "backoff: $f is missing: run make first" >&2; exit 2; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-bench-startup.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

row() { printf '| %s | %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4" "$5"; }

# The floor: nothing in it, linked as the Makefile links the library.
FLOOR=""
printf 'int bo_floor_marker;\n' >"$TMP/floor.c"
if "$CC" -shared -fPIC -O2 -pthread -o "$TMP/libfloor.so" "$TMP/floor.c" -Wl,-z,defs -ldl \
    2>/dev/null; then
    FLOOR="$TMP/libfloor.so"
fi

now() { date +%s%N; }
# block KIND: N runs of KIND, its nanoseconds added to the total and this round's
block() {
    _t=$(now)
    _i=0
    case $1 in
    env) while [ $_i -lt "$N" ]; do _i=$((_i + 1)); env /bin/true; done ;;
    lib) while [ $_i -lt "$N" ]; do _i=$((_i + 1)); env LD_PRELOAD="$LIB" /bin/true; done ;;
    floor) while [ $_i -lt "$N" ]; do _i=$((_i + 1)); env LD_PRELOAD="$FLOOR" /bin/true; done ;;
    wrap) while [ $_i -lt "$N" ]; do _i=$((_i + 1)); "$WRAP" -- /bin/true; done ;;
    esac
    echo "$1 $(($(now) - _t))" >>"$TMP/round"
}

kinds="env lib wrap"
[ -n "$FLOOR" ] && kinds="env lib floor wrap"
rev=$(echo "$kinds" | awk '{ for (i = NF; i > 0; i--) printf "%s%s", $i, (i > 1 ? " " : "") }')
r=0
for k in $kinds; do block "$k"; done # a warm-up round, not counted
: >"$TMP/rounds"
while [ "$r" -lt "$ROUNDS" ]; do
    r=$((r + 1))
    : >"$TMP/round"
    if [ $((r % 2)) -eq 1 ]; then order=$kinds; else order=$rev; fi
    for k in $order; do block "$k"; done
    awk -v r="$r" '{ t[$1] = $2 } END { printf "%d %d %d %d %d\n", r, t["env"], t["lib"], t["floor"], t["wrap"] }' \
        "$TMP/round" >>"$TMP/rounds"
done

# stat COLUMN: "TOTAL_RATIO MIN MEDIAN US_MORE_A_PROCESS ENV_MS_A_PROCESS" against env (column 2)
stat() {
    awk -v c="$1" -v n="$N" '
        { e += $2; x += $c; q[NR] = $c / $2 }
        END {
            m = NR; for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (q[j] < q[i]) { t = q[i]; q[i] = q[j]; q[j] = t }
            d = (x - e) / (m * n) / 1000
            printf "%.3f %.3f %.3f %s %.3f\n", x / e, q[1], q[int((m + 1) / 2)],
                sprintf("%.0f_us_%s", d < 0 ? -d : d, d < 0 ? "less" : "more"), e / (m * n) / 1e6
        }' "$TMP/rounds"
}
set -- $(stat 3)
runs=$((ROUNDS * N))
row "cost: $runs x /bin/true under LD_PRELOAD, in turn with plain" "$5 ms a process (env /bin/true)" \
    "$1x ($(echo "$4" | tr _ ' ') a process; rounds of $N: min $2x, median $3x)" "<= 1.05x of plain" \
    "$(awk -v x="$1" 'BEGIN { print (x <= 1.05) ? "met" : "**not met**" }')"
if [ -n "$FLOOR" ]; then
    set -- $(stat 4)
    row "cost: the floor, an empty library linked alike" "(the rows above)" \
        "$1x ($(echo "$4" | tr _ ' ') a process; min $2x, median $3x)" "a figure: no library costs less" "-"
fi
set -- $(stat 5)
row "cost: $runs x backoff -- /bin/true (the wrapper, in place of env)" "(the rows above)" \
    "$1x ($(echo "$4" | tr _ ' ') a process; min $2x, median $3x)" "a figure" "-"

if command -v valgrind >/dev/null 2>&1; then
    ir() { # ir [LIB]: callgrind's instructions of one /bin/true
        if [ -n "${1:-}" ]; then
            LD_PRELOAD=$1 valgrind --tool=callgrind --callgrind-out-file=/dev/null /bin/true 2>&1
        else
            valgrind --tool=callgrind --callgrind-out-file=/dev/null /bin/true 2>&1
        fi | awk '/Collected/ { gsub(",", "", $4); print $4 }'
    }
    ip=$(ir)
    il=$(ir "$LIB")
    ifl=""
    [ -n "$FLOOR" ] && ifl=", the floor $(ir "$FLOOR")"
    row "cost: /bin/true's instructions (callgrind)" "$ip" "$il (+$((il - ip))$ifl)" "a figure" "-"
fi
