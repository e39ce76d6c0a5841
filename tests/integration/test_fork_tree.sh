#!/bin/sh
# Harmless in every process: processes that fork again after
# being forked, from any thread, while other threads are inside a retry.
# Before the fix the shim's init lock stayed held in every child, so the
# child's own next fork waited forever; here each program runs in its own
# session under a hard timeout that kills the whole group (a hang fails the
# test), and fork_tree's processes arm an alarm before they wait.
#   - fork 3 levels deep, each level a curl call through the shim;
#   - 16 threads inside retries (a server that admits 2 at once and rejects
#     the rest) while a non-main thread forks; the child calls and forks
#     again, the grandchild calls;
#   - posix_spawn, vfork+exec, system() and popen() from that threaded program;
#   - bash subshells, command substitutions and pipelines, plain and preloaded.
# FORK_TREE_PARTS (default "deep threads spawn bash") runs only the parts it
# names: check-tsan leaves "threads" out (see the Makefile: a TSan runtime
# hangs a child forked while another thread is inside its allocator).
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
H="$BUILD/tests/helpers/fork_tree"
[ -f "$LIB" ] && [ -x "$H" ] && [ -x "$BUILD/backoff" ] || fail "build $LIB, $BUILD/backoff and $H first"
ROUNDS=${FORK_ROUNDS:-20}
PARTS=${FORK_TREE_PARTS:-deep threads spawn bash}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

# bounded LIMIT CMD...: CMD in a new session, the whole group killed after LIMIT s.
bounded() {
    _lim=$1; shift
    setsid timeout -k 2 "$_lim" "$@"
}

start_server tree --max-busy 2 --error-ms 0 --service-ms 2
URL="http://127.0.0.1:$PORT"

if part deep; then
note "fork 3 levels deep, a call at each level: plain, LD_PRELOAD, backoff --"
bounded 60 "$H" deep "$URL" 3 >"$TMP/out" 2>&1 || fail "plain: $(cat "$TMP/out")"
grep -qx "deep ok 3" "$TMP/out" || fail "plain: $(cat "$TMP/out")"
rm -f "$TMP/deep.json"
BACKOFF_STATS="$TMP/deep.json" LD_PRELOAD="$LIB" bounded 60 "$H" deep "$URL" 3 >"$TMP/out" 2>&1 ||
    fail "preloaded: $(cat "$TMP/out")"
grep -qx "deep ok 3" "$TMP/out" || fail "preloaded: $(cat "$TMP/out")"
# The deeper levels leave with _exit (no stats line): the trace shows that
# each level's call went through the shim, one process per level.
bounded 60 "$BUILD/backoff" --trace "$TMP/deep.csv" -- "$H" deep "$URL" 3 >"$TMP/out" 2>&1 ||
    fail "backoff --: $(cat "$TMP/out")"
pids=$(awk -F, 'NR > 1 && $7 == "success" { print $2 }' "$TMP/deep.csv" | sort -u | wc -l)
note "processes with a successful call through the shim: $pids"
[ "$pids" -ge 3 ] || fail "the trace shows calls from $pids processes, want 3 levels"
fi

if part threads; then
note "a non-main thread forks $ROUNDS times while 16 threads retry; each child calls and forks again"
rm -f "$TMP/threads.json"
BACKOFF_STATS="$TMP/threads.json" LD_PRELOAD="$LIB" bounded 120 "$H" threads "$URL" "$ROUNDS" \
    >"$TMP/out" 2>&1 || fail "$(tail -n 10 "$TMP/out")"
cat "$TMP/out"
grep -q "^threads ok $ROUNDS of $ROUNDS;" "$TMP/out" || fail "not every fork succeeded"
# The forked processes leave with _exit: the stats line is the parent's.
retries=$(stats_sum "$TMP/threads.json" retries)
note "retries in the parent while it forked: $retries"
[ "$retries" -gt 0 ] || fail "the threads were never inside a retry"
fi

if part spawn; then
note "posix_spawn, vfork+exec, system(), popen() while 16 threads retry"
LD_PRELOAD="$LIB" bounded 120 "$H" spawn "$URL" 10 >"$TMP/out" 2>&1 || fail "$(tail -n 10 "$TMP/out")"
cat "$TMP/out"
grep -q "^spawn ok 10 of 10;" "$TMP/out" || fail "a spawned command failed"
fi
stop_server

part bash || { echo "ok ($PARTS)"; exit 0; }
note "bash subshells, command substitutions, pipelines: same output plain and preloaded"
i=0
while IFS= read -r script; do
    i=$((i + 1))
    bounded 20 bash -c "$script" >"$TMP/plain.$i" 2>&1 || echo "exit $?" >>"$TMP/plain.$i"
    LD_PRELOAD="$LIB" bounded 20 bash -c "$script" >"$TMP/pre.$i" 2>&1 ||
        echo "exit $?" >>"$TMP/pre.$i"
    bounded 20 "$BUILD/backoff" -- bash -c "$script" >"$TMP/wrap.$i" 2>&1 ||
        echo "exit $?" >>"$TMP/wrap.$i"
    grep -q "^exit 124" "$TMP/plain.$i" && fail "plain bash timed out on: $script"
    cmp -s "$TMP/plain.$i" "$TMP/pre.$i" ||
        fail "LD_PRELOAD changes [$script]: '$(cat "$TMP/plain.$i")' vs '$(cat "$TMP/pre.$i")'"
    cmp -s "$TMP/plain.$i" "$TMP/wrap.$i" ||
        fail "backoff -- changes [$script]: '$(cat "$TMP/plain.$i")' vs '$(cat "$TMP/wrap.$i")'"
    printf 'same: %s => %s\n' "$script" "$(tr '\n' ' ' <"$TMP/plain.$i")"
done <<'EOF'
( x=$(echo a); echo $x )
for i in 1 2; do x=$(echo $i | (read y; echo $y)); echo $x; done
( ( ( echo deep; ( echo deeper ) ) ) )
echo $(echo $(echo $(echo nested)))
x=$( (echo a; (echo b | tr b c)) | sort -r | tr '\n' ' '); echo "$x"
{ for i in 3 1 2; do ( echo $(echo $i) ) & done; wait; } | sort; echo all
f() { (echo f$1 | cat) | (read y; echo $y); }; f 1; f 2 | cat; echo $(f 3)
coproc C { read l; echo got $l; }; echo hi >&"${C[1]}"; read r <&"${C[0]}"; echo $r
set -o pipefail; (exit 3) | cat; echo pipe $?
( exit 7 ); echo sub $?; $(exit 5); echo subst $?; exit 4
EOF
echo "ok"
