#!/bin/sh
# Soak: runs the whole `make test` N times, optionally with a CPU hog on every
# core beside it, and prints one line per run and a closing "N passed, N
# failed" for the runs (exit status 0 only when every run passed).  The logs
# of failing runs are kept in $BUILD/soak/DATE-TIME/ (one directory per soak:
# the run's output and its per-test logs); those of passing runs are removed.
#
#   SOAK_RUNS=N      runs (default 5)
#   SOAK_LOAD=1      stress-ng --cpu $(nproc) runs beside every run (default 0)
#   SOAK_TIMEOUT=S   bound on one run, in seconds (default 1800)
#   BUILD=DIR        build directory passed to make (default build)
#   MAKE=make        the make to call
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
MAKE=${MAKE:-make}
runs=${SOAK_RUNS:-5}
load=${SOAK_LOAD:-0}
limit=${SOAK_TIMEOUT:-1800}

bad() { echo "soak: $1" >&2; exit 2; }
case $runs in '' | *[!0-9]* | 0) bad "SOAK_RUNS=\"$runs\" is not valid (a whole number of runs, 1 or more)" ;; esac
case $load in 0 | 1) ;; *) bad "SOAK_LOAD=\"$load\" is not valid (0 or 1)" ;; esac
case $limit in '' | *[!0-9]* | 0) bad "SOAK_TIMEOUT=\"$limit\" is not valid (seconds, 1 or more)" ;; esac
if [ "$load" = 1 ]; then
    command -v stress-ng >/dev/null 2>&1 || bad "SOAK_LOAD=1 needs stress-ng (apt-get install stress-ng)"
fi

logs="$BUILD/soak/$(date -u +%Y%m%d-%H%M%S)"
mkdir -p "$logs" || bad "cannot create $logs"
HOG_PID=""
RUN_PID=""
stop_hog() {
    if [ -n "$HOG_PID" ]; then
        # stress-ng runs in its own process group (setsid): stop the group.
        kill -TERM "-$HOG_PID" 2>/dev/null || true
        _i=0
        while kill -0 "-$HOG_PID" 2>/dev/null && [ $_i -lt 50 ]; do sleep 0.1; _i=$((_i + 1)); done
        kill -KILL "-$HOG_PID" 2>/dev/null || true
        wait "$HOG_PID" 2>/dev/null || true
        HOG_PID=""
    fi
}
stop_run() {
    if [ -n "$RUN_PID" ]; then
        kill -TERM "-$RUN_PID" 2>/dev/null || true
        sleep 1
        kill -KILL "-$RUN_PID" 2>/dev/null || true
        wait "$RUN_PID" 2>/dev/null || true
        RUN_PID=""
    fi
}
trap 'stop_run; stop_hog' EXIT
trap 'exit 130' INT TERM

ncpu=$(nproc)
if [ "$load" = 1 ]; then
    # Bounded even if this script is killed outright: stress-ng stops itself.
    setsid stress-ng --cpu "$ncpu" --timeout $((runs * limit + 60))s --quiet \
        >"$logs/stress-ng.log" 2>&1 &
    HOG_PID=$!
    sleep 0.5
    kill -0 "$HOG_PID" 2>/dev/null || bad "stress-ng did not start: $(cat "$logs/stress-ng.log")"
    echo "soak: $runs runs of make test, stress-ng --cpu $ncpu beside them"
else
    echo "soak: $runs runs of make test, no load"
fi

passed=0
failed=0
k=1
while [ $k -le "$runs" ]; do
    log="$logs/run-$k.log"
    start=$(date +%s)
    # Its own process group, bounded: a hang fails the run, not the soak.
    setsid timeout -k 10 "$limit" "$MAKE" -C "$top" --no-print-directory BUILD="$BUILD" test \
        >"$log" 2>&1 </dev/null &
    RUN_PID=$!
    rc=0; wait "$RUN_PID" || rc=$?
    RUN_PID=""
    secs=$(($(date +%s) - start))
    result=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -z "$result" ]; then
        result="no summary"
        [ $rc -eq 0 ] && rc=1
    fi
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        echo "run $k/$runs: PASS ($result, ${secs}s)"
        rm -f "$log"
    else
        failed=$((failed + 1))
        what=$(sed -n 's/^failed: *//p' "$log" | tail -n 1)
        [ $rc -eq 124 ] && what="timed out after ${limit}s${what:+; $what}"
        rm -rf "$logs/run-$k.tests"
        cp -r "$BUILD/tests/logs" "$logs/run-$k.tests" 2>/dev/null || true
        echo "run $k/$runs: FAIL ($result, ${secs}s, exit $rc${what:+: $what}); log $log"
    fi
    k=$((k + 1))
done
stop_hog
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
