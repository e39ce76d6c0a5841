#!/bin/sh
# Runs every libFuzzer target in $FUZZ_BUILD for FUZZ_SECONDS each, starting
# from its seed corpus in tests/fuzz/corpus/<target>/ (new inputs go to
# $FUZZ_BUILD/corpus/<target>/, the seeds stay as committed), FUZZ_JOBS
# targets at a time (default: the number of CPUs; each target uses one).
# Prints one line per target: executions, executions per second, corpus
# size, and exits non-zero when a target crashed, leaked or broke an
# invariant (the crashing input is kept in $FUZZ_BUILD/crash-*).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
FUZZ_BUILD=${FUZZ_BUILD:-$top/build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}

# run_one TARGET: one bounded fuzzing run; its exit status in $FUZZ_BUILD/TARGET.rc.
run_one() {
    t=$1
    work="$FUZZ_BUILD/corpus/$t"
    mkdir -p "$work"
    # -timeout: one input taking 10 s is a hang; -rss_limit_mb bounds memory.
    timeout -k 10 $((FUZZ_SECONDS + 120)) "$FUZZ_BUILD/$t" -max_total_time="$FUZZ_SECONDS" \
        -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$FUZZ_BUILD/" \
        "$work" "$top/tests/fuzz/corpus/$t" >"$FUZZ_BUILD/$t.log" 2>&1
    echo $? >"$FUZZ_BUILD/$t.rc"
}

targets=""
failed=0
for src in "$top"/tests/fuzz/fuzz_*.c; do
    t=$(basename "$src" .c)
    if [ ! -x "$FUZZ_BUILD/$t" ]; then
        echo "$t: $FUZZ_BUILD/$t is missing (make fuzz builds it)" >&2
        failed=1
        continue
    fi
    targets="$targets $t"
done
running=0
for t in $targets; do
    rm -f "$FUZZ_BUILD/$t.rc"
    run_one "$t" &
    running=$((running + 1))
    if [ $running -ge "$FUZZ_JOBS" ]; then
        wait
        running=0
    fi
done
wait
printf 'target\tseconds\texecutions\texec_per_s\tcorpus\tresult\n'
for t in $targets; do
    log="$FUZZ_BUILD/$t.log"
    result=ok
    [ "$(cat "$FUZZ_BUILD/$t.rc" 2>/dev/null)" = 0 ] || { result=FAILED; failed=1; }
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    corpus=$(ls "$FUZZ_BUILD/corpus/$t" | wc -l)
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$FUZZ_SECONDS" "${execs:-?}" "${rate:-?}" "$corpus" "$result"
    if [ "$result" != ok ]; then
        grep -E 'ERROR|SUMMARY|runtime error|deadly signal|Test unit written' "$log" | head -n 20 >&2
    fi
done
exit $failed
