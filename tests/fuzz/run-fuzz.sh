#!/bin/sh
# Runs every libFuzzer target in $FUZZ_BUILD for FUZZ_SECONDS each, starting
# from its seed corpus in tests/fuzz/corpus/<target>/ (new inputs go to
# $FUZZ_BUILD/corpus/<target>/, the seeds stay as committed).  Prints one
# line per target: executions, executions per second, corpus size, and
# exits non-zero when a target crashed, leaked or broke an invariant (the
# crashing input is kept in $FUZZ_BUILD/crash-*).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_BUILD=${FUZZ_BUILD:-$top/build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
failed=0
printf 'target\tseconds\texecutions\texec_per_s\tcorpus\tresult\n'
for src in "$top"/tests/fuzz/fuzz_*.c; do
    t=$(basename "$src" .c)
    bin="$FUZZ_BUILD/$t"
    [ -x "$bin" ] || { echo "$t: $bin is missing (make fuzz builds it)" >&2; failed=1; continue; }
    work="$FUZZ_BUILD/corpus/$t"
    log="$FUZZ_BUILD/$t.log"
    mkdir -p "$work"
    result=ok
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb bounds memory.
    if ! timeout -k 10 $((FUZZ_SECONDS + 120)) "$bin" -max_total_time="$FUZZ_SECONDS" \
        -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$FUZZ_BUILD/" \
        "$work" "$top/tests/fuzz/corpus/$t" >"$log" 2>&1; then
        result=FAILED
        failed=1
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    corpus=$(ls "$work" | wc -l)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$FUZZ_SECONDS" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
    if [ "$result" != ok ]; then
        grep -E 'ERROR|SUMMARY|runtime error|deadly signal|Test unit written' "$log" | head -n 20 >&2
    fi
done
exit $failed
