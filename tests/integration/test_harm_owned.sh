#!/bin/sh
# The harm suite of what the library holds (issue 46: "nothing the library
# holds outlives the program's say").  Each case runs a real program plain
# and under the library (LD_PRELOAD), each run in its own session under a
# hard timeout, against ratelimit-servers that never throttle:
#   1. a program that closes every descriptor (close_range(3, ~0U, 0), or a
#      close() loop, as daemons do), opens 4 files of its own, writes 6
#      bytes in each, then calls a new destination: through libcurl, a plain
#      socket and Python's http.client (the http room); each file must hold
#      exactly its own bytes and each close() of the program succeed;
#   2. the same with BACKOFF_SHARE=redis://: nothing of Redis's protocol in
#      the program's files, none of its descriptors closed behind it, and
#      the fleet joined again quietly (its keys written for the new
#      destination, no "alone" line under BACKOFF_VERBOSE); and after calls
#      with a trace and a metrics file, the program has no descriptor open
#      that plain has not, but the Redis connection's;
#   3. the host-wide state file truncated while programs map it: one
#      program truncates it between two calls, three others, each in (its first call made), call on while it
#      is truncated 20 times: no SIGBUS, every answer as plain, the one line
#      under BACKOFF_VERBOSE; one waiting for a slot's lock that a stopped
#      process holds goes on once the file is truncated; a program's own SIGBUS (its own mapping
#      truncated) still reaches its handler, installed before or after the
#      library's, or kills it as plain;
#   4. the fleet's keys poisoned (a window of 0, of -1e308, 50 eternal
#      leases) and the host-wide state poisoned (a window of 0, a pace of
#      NaN, holds an hour ahead): calls to a server that never throttles
#      take about what plain takes (under 1 s each; 12-40 s before).
# The outputs must be the same as plain.  The figures, plain against the
# library, are demo/bench-harm.sh's.
. "$(dirname "$0")/lib.sh"

BUILD_ABS=$(cd "$BUILD" && pwd)
LIB="$BUILD_ABS/libbackoff.so"
H="$BUILD_ABS/tests/helpers/harm_owned"
POISON="$BUILD_ABS/tests/helpers/share_poison"
PY=/usr/bin/python3
PYP="$TOP/tests/programs/harm_owned.py"
for f in "$LIB" "$H" "$POISON"; do [ -e "$f" ] || fail "$f is missing (make test-programs)"; done
FAILED=""
NFAILED=0
SHM="$XDG_RUNTIME_DIR/backoff.shm"

harm() {
    echo "FAIL: $*" >&2
    FAILED="$FAILED
    $*"
    NFAILED=$((NFAILED + 1))
}
# go OUT HOW SECS CMD...: CMD in its own session, killed with its group after
# SECS; stdout in OUT, stderr in OUT.err; HOW plain or lib (LD_PRELOAD, with
# BACKOFF_VERBOSE=1 and whatever $SHARE says).  RC: CMD's status.
go() {
    _o=$1 _h=$2 _s=$3
    shift 3
    RC=0
    case $_h in
    plain) setsid timeout -k 2 "$_s" "$@" >"$_o" 2>"$_o.err" || RC=$? ;;
    lib) setsid timeout -k 2 "$_s" env LD_PRELOAD="$LIB" BACKOFF_VERBOSE=1 \
        BACKOFF_SHARE="${SHARE:-host}" "$@" >"$_o" 2>"$_o.err" || RC=$? ;;
    esac
    grep -v '^time ' "$_o" >"$_o.cmp" || true
}
# same NAME: NAME.plain and NAME.lib printed the same (time lines aside).
same() {
    cmp -s "$TMP/$1.plain.cmp" "$TMP/$1.lib.cmp" ||
        harm "$1: not the output of plain: $(diff "$TMP/$1.plain.cmp" "$TMP/$1.lib.cmp" | head -6 | tr '\n' ' ')"
}
# files DIR NAME: DIR/f1..f4 hold exactly "fileN\n".
files() {
    for i in 1 2 3 4; do
        printf 'file%d\n' $i >"$TMP/want"
        cmp -s "$TMP/want" "$1/f$i" ||
            harm "$2: f$i holds $(wc -c <"$1/f$i") bytes, not its 6: $(head -c 40 "$1/f$i" | od -c | head -2 | tr '\n' ' ')"
    done
}
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }
tfield() {
    awk -v k="$2" '$1 == "time" { for (i = 2; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$1"
}

start_server one
B1="http://127.0.0.1:$PORT"
start_server two
B2="http://127.0.0.1:$PORT"

# ---- 1 and 2. a program that closes every descriptor, then opens its own -------

# fds_case NAME CMD...: CMD (given "fds ... URL1 URL2 DIR" by the caller) plain
# and under the library, each with a fresh state file and its own DIR.
fds_case() {
    _n=$1
    shift
    for how in plain lib; do
        rm -rf "$TMP/$_n.$how.d" "$SHM"
        mkdir "$TMP/$_n.$how.d"
        go "$TMP/$_n.$how" $how 30 "$@" "$B1/one/$_n" "$B2/two/$_n" "$TMP/$_n.$how.d"
        [ $RC = 0 ] || { [ $how = lib ] && harm "$_n: exit $RC under the library: $(tail -2 "$TMP/$_n.$how.err")"; } ||
            fail "$_n plain: exit $RC: $(cat "$TMP/$_n.$how.err")"
    done
    grep -q '^get2 200$' "$TMP/$_n.plain" || fail "$_n plain: $(cat "$TMP/$_n.plain")"
    files "$TMP/$_n.plain.d" "$_n plain"
    same "$_n"
    files "$TMP/$_n.lib.d" "$_n"
}

for SHARE in host redis; do
    if [ $SHARE = redis ]; then
        start_redis redis
        SHARE="redis://127.0.0.1:$REDIS_PORT"
    fi
    for c in range loop; do
        fds_case "curl.$c" "$H" fds curl $c
        fds_case "sock.$c" "$H" fds sock $c
        fds_case "py.$c" $PY "$PYP" fds $c
    done
    case $SHARE in
    redis*)
        for c in range loop; do
            for k in curl sock py; do
                grep -q 'goes on with its host-wide state alone' "$TMP/$k.$c.lib.err" &&
                    harm "$k.$c: the fleet was left, not joined again quietly: $(cat "$TMP/$k.$c.lib.err")"
            done
        done
        # the new destination's keys: the calls after the descriptors were
        # closed reached the fleet on a connection of its own
        [ "$(rcli exists "backoff:default:{$B2}")" = 1 ] ||
            harm "redis: no fleet key for $B2: the process did not join again ($(rcli keys '*' | tr '\n' ' '))"
        note "2: BACKOFF_SHARE=redis: 12 programs' files as plain, the fleet joined again"
        ;;
    *) note "1: 12 programs (libcurl, socket, http.client; close_range, close loop): files as plain" ;;
    esac
done
# descriptors left open after calls (a trace and a metrics file written)
for k in curl sock; do
    go "$TMP/kept.$k.plain" plain 30 "$H" calls $k 2 "$B1/kept"
    for SHARE in host "redis://127.0.0.1:$REDIS_PORT"; do
        n=${SHARE%%:*}
        rm -f "$TMP/trace.csv"
        go "$TMP/kept.$k.$n" lib 30 env BACKOFF_TRACE="$TMP/trace.csv" \
            BACKOFF_METRICS_FILE="$TMP/metrics.prom" "$H" calls $k 2 "$B1/kept"
        [ -s "$TMP/trace.csv" ] || harm "kept.$k.$n: no trace written"
    done
    fp=$(tfield "$TMP/kept.$k.plain" fds) fh=$(tfield "$TMP/kept.$k.host" fds) fr=$(tfield "$TMP/kept.$k.redis" fds)
    [ "$fh" = "$fp" ] || harm "kept.$k: $fh descriptors open after the calls under the library, $fp plain"
    [ "$fr" = $((fp + 1)) ] || harm "kept.$k: $fr descriptors open with Redis, not plain's $fp and its connection"
done
note "2: descriptors open after calls with a trace and a metrics file: plain $fp, host-wide $fh, Redis $fr (its connection)"
SHARE=host

# ---- 3. the state file truncated under the mapping -------------------------------

for k in curl sock; do
    for how in plain lib; do
        rm -f "$SHM"
        go "$TMP/trunc.$k.$how" $how 30 "$H" trunc $k "$B1/t/$k" "$B2/t/$k" "$SHM"
        [ $RC = 0 ] || { [ $how = lib ] && harm "trunc.$k: exit $RC under the library (135: SIGBUS)"; } ||
            fail "trunc.$k plain: exit $RC"
    done
    same "trunc.$k"
    n=$(grep -c 'the shared state file was truncated or emptied under this process' "$TMP/trunc.$k.lib.err" || true)
    [ "$n" = 1 ] || harm "trunc.$k: $n lines saying the sharing was lost, not 1: $(cat "$TMP/trunc.$k.lib.err")"
done

# three programs call on while the file is truncated again and again; each
# waits after its first call (its state mapped) until every one is in, so
# all three meet the truncated file at any speed of the machine
rm -f "$SHM"
go "$TMP/seed" lib 30 "$H" calls sock 1 "$B1/seed"
for how in plain lib; do
    pids=""
    rm -f "$TMP/many.gate"
    for i in 1 2 3; do
        go "$TMP/many.$i.$how" $how 60 env HARM_GATE="$TMP/many.gate" "$H" calls sock 150 "$B1/m$i" &
        pids="$pids $!"
    done
    w=0
    for i in 1 2 3; do
        until grep -q '^get ' "$TMP/many.$i.$how" 2>/dev/null; do
            w=$((w + 1))
            [ $w -gt 400 ] && fail "many.$i.$how: no first answer in 20 s: $(cat "$TMP/many.$i.$how.err")"
            sleep 0.05
        done
    done
    [ $how = lib ] && truncate -s 0 "$SHM"
    touch "$TMP/many.gate"
    j=0
    while [ $j -lt 20 ]; do
        j=$((j + 1))
        [ $how = lib ] && [ -e "$SHM" ] && truncate -s 0 "$SHM"
        sleep 0.05
    done
    for p in $pids; do wait "$p" || true; done
    for i in 1 2 3; do
        grep -c '^get 200$' "$TMP/many.$i.$how" >"$TMP/many.$i.$how.n" || true
    done
done
for i in 1 2 3; do
    [ "$(cat "$TMP/many.$i.plain.n")" = 150 ] || fail "many.$i plain: $(tail -2 "$TMP/many.$i.plain")"
    [ "$(cat "$TMP/many.$i.lib.n")" = 150 ] ||
        harm "many.$i: $(cat "$TMP/many.$i.lib.n") of 150 answers while the file was truncated: $(tail -2 "$TMP/many.$i.lib" "$TMP/many.$i.lib.err" | tr '\n' ' ')"
done
# a program waiting for a slot's lock that a stopped process holds when the
# file is truncated: it goes on (the lock is waited for in slices that
# touch it again), as plain goes on at once
rm -f "$SHM"
go "$TMP/seed" lib 30 "$H" calls curl 1 "$B1/held"
setsid timeout -k 2 30 "$BUILD_ABS/tests/helpers/share_hold" slot "$B1" >"$TMP/hold.out" 2>&1 &
HOLD=$!
PIDS="$PIDS $HOLD"
w=0
until grep -q '^locked$' "$TMP/hold.out"; do
    w=$((w + 1))
    [ $w -gt 100 ] && fail "share_hold did not take the slot's lock: $(cat "$TMP/hold.out")"
    sleep 0.05
done
(sleep 1 && truncate -s 0 "$SHM") &
go "$TMP/held.lib" lib 20 "$H" calls curl 2 "$B1/held"
kill "$HOLD" 2>/dev/null || true
wait "$HOLD" 2>/dev/null || true
go "$TMP/held.plain" plain 20 "$H" calls curl 2 "$B1/held"
same held
tl=$(tfield "$TMP/held.lib" max)
lt "${tl:-99}" 3 || harm "held: a call behind a held lock took ${tl:-?} s after the file was truncated at 1 s"
said=$(cat "$TMP"/many.*.lib.err | grep -c 'the shared state file was truncated or emptied' || true)
[ "$said" = 3 ] || harm "many: $said of 3 programs met the truncated file (each was in before it was truncated): $(cat "$TMP"/many.*.lib.err | head -3)"
note "3: the file truncated under 1 and 3 programs ($said of 3 met it): no SIGBUS, every answer; behind a held lock: $tl s"

# a fault of the program's own still goes where it would have (a sanitized
# helper's SIGBUS is its sanitizer's: make check-asan skips this part)
if ldd "$H" 2>/dev/null | grep -q 'libasan\|libtsan'; then
    note "3: the program's own SIGBUS: skipped (a sanitized helper: its runtime reports every fault)"
else
    for m in default early late; do
        for how in plain lib; do
            rm -rf "$TMP/fault.$m.$how.d" "$SHM"
            mkdir "$TMP/fault.$m.$how.d"
            go "$TMP/fault.$m.$how" $how 30 "$H" fault $m "$B1/f/$m" "$TMP/fault.$m.$how.d"
            echo "exit $RC" >>"$TMP/fault.$m.$how.cmp"
        done
        same "fault.$m"
    done
    grep -qx 'exit 135' "$TMP/fault.default.plain.cmp" || fail "fault.default plain: $(cat "$TMP/fault.default.plain.cmp")"
    grep -qx 'exit 7' "$TMP/fault.early.plain.cmp" || fail "fault.early plain: $(cat "$TMP/fault.early.plain.cmp")"
    note "3: the program's own SIGBUS as plain (no handler: killed; its handler before or after the library's: called)"
fi

# ---- 4. poisoned values ---------------------------------------------------------

# calls_case NAME HOW: 3 calls of B1/p/NAME, plain and under the library; per
# call under 1 s.
calls_case() {
    go "$TMP/$1.plain" plain 60 "$H" calls "$2" 3 "$B1/p/$1"
    go "$TMP/$1.lib" lib 60 "$H" calls "$2" 3 "$B1/p/$1"
    [ $RC = 0 ] || harm "$1: exit $RC under the library"
    same "$1"
    tl=$(tfield "$TMP/$1.lib" max)
    lt "${tl:-99}" 1 || harm "$1: a call took ${tl:-?} s under the library, $(tfield "$TMP/$1.plain" max) s plain"
}

SHARE="redis://127.0.0.1:$REDIS_PORT"
for kind in zero negative leases; do
    for k in curl sock; do
        rcli flushall >/dev/null
        sh "$TOP/tests/programs/fleet_poison.sh" "$REDIS_PORT" $kind "$B1" "tcp://127.0.0.1:${B1##*:}"
        calls_case "redis.$kind.$k" $k
    done
done
note "4: the fleet's keys poisoned (cwnd 0, -1e308, 50 eternal leases): $(tfield "$TMP/redis.leases.curl.lib" max) s a call at most"
SHARE=host
stop_redis

for k in curl sock; do
    rm -f "$SHM"
    go "$TMP/seed.$k" lib 30 "$H" calls $k 1 "$B1/p/shm.$k"
    "$POISON" "$B1" 3600 window >/dev/null || fail "share_poison found no slot for $B1"
    calls_case "shm.$k" $k
    grep -q 'held values the library never sets' "$TMP/shm.$k.lib.err" ||
        harm "shm.$k: the poisoned state was not said to start fresh: $(cat "$TMP/shm.$k.lib.err")"
done
note "4: the host-wide state poisoned (window 0, pace NaN, holds an hour ahead): $(tfield "$TMP/shm.curl.lib" max) s a call at most"

[ $NFAILED = 0 ] || fail "$NFAILED harm(s):$FAILED"
echo "ok"
