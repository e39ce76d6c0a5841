#!/bin/sh
# Run the unit suites (check) and/or the integration scripts, each bounded in
# time, and end with one line "N passed, N failed".  Argument: unit,
# integration or all.  VALGRIND=1 runs the unit suites under memcheck.
set -u
BUILD=${BUILD:-build}
what=${1:-all}
top=$(cd "$(dirname "$0")/.." && pwd)
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
export BUILD
# check's own per-test timeout (4 s by default) fails a suite on a busy
# machine (test_rng's 4 s expired beside a CPU hog on every core); each
# suite is bounded by run_one's timeout instead.
CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-240}
export CK_DEFAULT_TIMEOUT
# The shim's host-wide state: never the developer's own (each integration
# test also gets a directory of its own, tests/integration/lib.sh).
XDG_RUNTIME_DIR=$(mktemp -d "${TMPDIR:-/tmp}/backoff-run.XXXXXX")
export XDG_RUNTIME_DIR
trap 'rm -rf "$XDG_RUNTIME_DIR"' EXIT
passed=0
failed=0
failures=""
run_one() { # name, timeout seconds, command...
    name=$1; limit=$2; shift 2
    log="$BUILD/tests/logs/$name.log"
    mkdir -p "$(dirname "$log")"
    start=$(date +%s)
    if timeout -k 5 "$limit" "$@" >"$log" 2>&1; then
        passed=$((passed + 1))
        echo "PASS $name ($(( $(date +%s) - start ))s)"
    else
        rc=$?
        failed=$((failed + 1))
        failures="$failures $name"
        echo "FAIL $name (exit $rc, $(( $(date +%s) - start ))s); last lines of $log:"
        tail -n 30 "$log" | sed 's/^/    /'
    fi
}
if [ "$what" = unit ] || [ "$what" = all ]; then
    for t in "$BUILD"/tests/unit/test_*; do
        [ -x "$t" ] || continue
        if [ "${VALGRIND:-0}" = 1 ]; then
            run_one "unit/$(basename "$t")" 600 env CK_FORK=no valgrind -q --error-exitcode=99 \
                --leak-check=full --errors-for-leak-kinds=definite "$t"
        else
            run_one "unit/$(basename "$t")" 300 "$t"
        fi
    done
fi
if [ "$what" = integration ] || [ "$what" = all ]; then
    for t in "$top"/tests/integration/test_*.sh; do
        [ -f "$t" ] || continue
        run_one "integration/$(basename "$t" .sh)" 300 sh "$t"
    done
fi
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
