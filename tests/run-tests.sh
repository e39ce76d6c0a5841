#!/bin/sh
# Run the unit suites (check) and/or the integration scripts, each bounded in
# time, and end with one line "N passed, N failed".  Argument: unit,
# integration or all.
#
#   TEST_JOBS=N          suites run at once (default: the number of cores, at
#                        most 4).  Most suites spend their time waiting for a
#                        server's window or a retry's delay, so two at once
#                        on two cores halves make test; every suite has its
#                        own server on port 0, its own temporary directory
#                        and its own host-wide state, and its time bounds
#                        are measured in the run, not guessed.
#   INTEGRATION_TESTS    the integration scripts to run (names without .sh;
#                        default: every tests/integration/test_*.sh).
#   VALGRIND=1           the unit suites under memcheck.
#   SUITE_TIMEOUT=S      each suite's bound in seconds (default 300; under
#                        memcheck the unit suites get twice it).  make stress
#                        raises it: its 2,560,000 requests take about 265 s
#                        on two quiet cores, so 300 s failed a slower machine.
#
# Each suite's output goes to $BUILD/tests/logs/NAME.log; a failing suite's
# last 30 lines are printed when it ends.  Only this script writes to the
# terminal, so the lines of suites that end together never mix.
set -u
BUILD=${BUILD:-build}
what=${1:-all}
top=$(cd "$(dirname "$0")/.." && pwd)
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
export BUILD
case $what in unit | integration | all) ;;
    *) echo "run-tests.sh: \"$what\" is not valid (unit, integration or all)" >&2; exit 2 ;; esac
ncpu=$(nproc 2>/dev/null || echo 1)
[ "$ncpu" -gt 4 ] && ncpu=4
jobs=${TEST_JOBS:-$ncpu}
case $jobs in '' | *[!0-9]* | 0)
    echo "run-tests.sh: TEST_JOBS=\"$jobs\" is not valid (suites at once, 1 or more)" >&2; exit 2 ;; esac
bound=${SUITE_TIMEOUT:-300}
case $bound in '' | *[!0-9]* | 0)
    echo "run-tests.sh: SUITE_TIMEOUT=\"$bound\" is not valid (seconds each suite may take, 1 or more)" >&2; exit 2 ;; esac
# check's own per-test timeout (4 s by default) fails a suite on a busy
# machine (test_rng's 4 s expired beside a CPU hog on every core); each
# suite is bounded by run_one's timeout instead.
CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-240}
export CK_DEFAULT_TIMEOUT
# The shim's host-wide state: never the developer's own (each integration
# test also gets a directory of its own, tests/integration/lib.sh).
XDG_RUNTIME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/backoff-run.XXXXXX")
export XDG_RUNTIME_DIR
# Two files per running suite in $status, named after it with '/' as '%':
# KEY.pid (its timeout's pid) and KEY.rc (written when it ends: exit status
# and seconds).
status="$XDG_RUNTIME_DIR/.suites"
mkdir -p "$status"
running=0
stop_all() {
    if [ "$running" -gt 0 ]; then
        for _f in "$status"/*.pid; do
            [ -f "$_f" ] && kill -TERM "$(cat "$_f")" 2>/dev/null
        done
        wait
    fi
    rm -rf "$XDG_RUNTIME_DIR"
}
trap 'stop_all' EXIT
trap 'exit 130' INT TERM

passed=0
failed=0
failures=""
queue=""
# run_suite NAME: the suite (unit/test_x or integration/test_y), bounded in
# time; exec'd, so that the caller's $! is timeout's pid.
run_suite() {
    case $1 in
    unit/*)
        if [ "${VALGRIND:-0}" = 1 ]; then
            exec timeout -k 5 $((bound * 2)) env CK_FORK=no valgrind -q --error-exitcode=99 \
                --leak-check=full --errors-for-leak-kinds=definite "$BUILD/tests/$1"
        fi
        exec timeout -k 5 "$bound" "$BUILD/tests/$1" ;;
    integration/*) exec timeout -k 5 "$bound" sh "$top/tests/$1.sh" ;;
    esac
}
# start NAME: runs a suite in the background.  timeout puts the suite in a
# process group of its own; its pid is kept in KEY.pid, so that an interrupt
# stops every suite with everything it started (timeout passes the signal on
# to its group).
start() {
    _key=$(echo "$1" | tr / %)
    _log="$BUILD/tests/logs/$1.log"
    mkdir -p "$(dirname "$_log")"
    (
        s=$(date +%s)
        rc=0
        run_suite "$1" >"$_log" 2>&1 </dev/null &
        echo $! >"$status/$_key.pid"
        wait $! || rc=$?
        echo "$rc $(( $(date +%s) - s ))" >"$status/$_key.rc.tmp" && mv "$status/$_key.rc.tmp" "$status/$_key.rc"
    ) &
    running=$((running + 1))
}
# reap: reports every suite that has ended since the last call.
reap() {
    for _rc in "$status"/*.rc; do
        [ -f "$_rc" ] || continue
        _key=$(basename "$_rc" .rc)
        _name=$(echo "$_key" | tr % /)
        read -r _code _secs <"$_rc"
        rm -f "$_rc" "$status/$_key.pid"
        running=$((running - 1))
        if [ "$_code" = 0 ]; then
            passed=$((passed + 1))
            echo "PASS $_name (${_secs}s)"
        else
            failed=$((failed + 1))
            failures="$failures $_name"
            _log="$BUILD/tests/logs/$_name.log"
            echo "FAIL $_name (exit $_code, ${_secs}s); last lines of $_log:"
            tail -n 30 "$_log" | sed 's/^/    /'
        fi
    done
}

if [ "$what" = unit ] || [ "$what" = all ]; then
    for t in "$BUILD"/tests/unit/test_*; do
        [ -x "$t" ] && queue="$queue unit/$(basename "$t")"
    done
fi
if [ "$what" = integration ] || [ "$what" = all ]; then
    if [ -n "${INTEGRATION_TESTS:-}" ]; then
        for n in $INTEGRATION_TESTS; do
            [ -f "$top/tests/integration/$n.sh" ] || {
                echo "run-tests.sh: INTEGRATION_TESTS names \"$n\", which is not in tests/integration/" >&2
                exit 2
            }
            queue="$queue integration/$n"
        done
    else
        for t in "$top"/tests/integration/test_*.sh; do
            [ -f "$t" ] && queue="$queue integration/$(basename "$t" .sh)"
        done
    fi
fi
[ "$jobs" -gt 1 ] && echo "($jobs suites at a time; TEST_JOBS=1 runs them one by one)"
for name in $queue; do
    while [ "$running" -ge "$jobs" ]; do
        reap
        [ "$running" -ge "$jobs" ] && sleep 0.2
    done
    start "$name"
done
while [ "$running" -gt 0 ]; do
    reap
    [ "$running" -gt 0 ] && sleep 0.2
done
wait
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
