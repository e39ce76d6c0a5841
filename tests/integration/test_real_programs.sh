#!/bin/sh
# Real programs: the library is loaded into every process of a
# command's tree and must change nothing there but throttled calls.  Each
# program below runs three ways -- plain, with LD_PRELOAD=libbackoff.so, and
# under `backoff --` -- each in a fresh directory, in its own session under
# a hard timeout that kills the whole group; the output and exit status must
# be the same.  Times are printed per program (plain vs preloaded); only a
# generous bound is asserted (preloaded <= 3 x plain + 2 s: a hang or a
# pathological slowdown, not noise).  `sh demo/bench-real-programs.sh` gives
# the median difference over several runs.
#
# REAL_PROGRAMS="name ..." runs a subset (names: see the `prog` lines; the
# default is every one but python-regrtest, which test_real_python_tests.sh
# runs on its own time budget); REAL_VARIANTS picks the runs compared with
# plain (default "preload wrapper").
. "$(dirname "$0")/lib.sh"

BUILD_ABS=$(cd "$BUILD" && pwd)
LIB="$BUILD_ABS/libbackoff.so"
WRAP="$BUILD_ABS/backoff"
PROGS="$TOP/tests/programs"
[ -f "$LIB" ] && [ -x "$WRAP" ] || fail "build $LIB and $WRAP first"
ONLY=${REAL_PROGRAMS:-}
VARIANTS=${REAL_VARIANTS:-preload wrapper}
export PROGS

# The daemonising server leaves the test's session: whatever happens, its
# process group (named in its port file) is killed on the way out.
kill_daemons() {
    for _f in "$TMP"/daemon.*/port; do
        [ -s "$_f" ] && /bin/kill -KILL -- "-$(cut -d' ' -f2 "$_f")" 2>/dev/null || true
    done
}
trap 'kill_daemons; cleanup' EXIT INT TERM

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run_variant VARIANT NAME LIMIT SNIPPET: runs the sh SNIPPET in $TMP/NAME.VARIANT/
# (stdout+stderr to NAME.VARIANT.out, then "exit N"); sets $ms.
run_variant() {
    _d="$TMP/$2.$1"
    mkdir -p "$_d"
    _rc=0
    _t0=$(now_ms)
    case $1 in
    plain) (cd "$_d" && setsid timeout -k 2 "$3" sh -c "$4") >"$_d.out" 2>&1 || _rc=$? ;;
    preload) (cd "$_d" && LD_PRELOAD="$LIB" setsid timeout -k 2 "$3" sh -c "$4") >"$_d.out" 2>&1 ||
        _rc=$? ;;
    wrapper) (cd "$_d" && setsid timeout -k 2 "$3" "$WRAP" -- sh -c "$4") >"$_d.out" 2>&1 || _rc=$? ;;
    esac
    ms=$(($(now_ms) - _t0))
    echo "exit $_rc" >>"$_d.out"
    [ "$_rc" != 124 ] && [ "$_rc" != 137 ] || fail "$2 ($1) timed out after $3 s: $(tail -n 5 "$_d.out")"
}

# prog NAME LIMIT SNIPPET: the three runs, compared.
prog() {
    case " $ONLY " in
    "  ") [ "$1" != python-regrtest ] || return 0 ;;
    *" $1 "*) ;;
    *) return 0 ;;
    esac
    run_variant plain "$1" "$2" "$3"
    _plain=$ms
    _line=$(printf '%-16s plain %6d ms' "$1" "$_plain")
    for v in $VARIANTS; do
        run_variant "$v" "$1" "$2" "$3"
        case $v in preload) _line="$_line  LD_PRELOAD" ;; *) _line="$_line  backoff --" ;; esac
        _line=$(printf '%s %6d ms' "$_line" "$ms")
        cmp -s "$TMP/$1.plain.out" "$TMP/$1.$v.out" ||
            fail "$1: $v differs from plain: $(diff "$TMP/$1.plain.out" "$TMP/$1.$v.out" | head -n 20)"
        [ "$ms" -le $((3 * _plain + 2000)) ] ||
            fail "$1: pathologically slow with $v ($ms ms vs $_plain ms plain)"
    done
    echo "$_line  ($(tail -n 1 "$TMP/$1.plain.out"))"
}

# --- shells -----------------------------------------------------------------
prog bash-subshells 60 'bash "$PROGS/subshells.sh"'
prog dash-subshells 60 'sh "$PROGS/subshells.sh"'

# --- recursive make -j: a generated tree of 3 x 4 sub-makes --------------------
prog make-recursive 120 '
for d in a b c; do
    mkdir -p $d
    for s in 1 2 3 4; do mkdir -p $d/s$s
        printf "all: out\nout:\n\t@echo \$\$(echo $d/s$s | tr a-z A-Z) > out\n\t@(cd .. && pwd) | sed \"s,.*/,,\" >> out\n" > $d/s$s/Makefile
    done
    printf "SUBS = s1 s2 s3 s4\nall: \$(SUBS)\n\t@cat s*/out | wc -l > count\n\$(SUBS):\n\t@\$(MAKE) -s -C \$@\n.PHONY: all \$(SUBS)\n" > $d/Makefile
done
printf "all: a b c\n\t@cat a/count b/count c/count | paste -sd+ | bc\na b c:\n\t@\$(MAKE) -s -C \$@ -j4\n.PHONY: all a b c\n" > Makefile
make -s -j4 --no-print-directory && cat */s*/out | sort | tr "\n" " "'

# --- interpreters that fork in forked children --------------------------------
prog perl-forks 60 'perl "$PROGS/forks.pl"'
prog python-forks 180 'python3 "$PROGS/forks.py"'

# --- git: init, commit, branch, log in a fresh repository ----------------------
prog git 60 '
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t \
       GIT_COMMITTER_EMAIL=t@example.invalid GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" \
       GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" HOME="$PWD" GIT_CONFIG_NOSYSTEM=1
git init -q -b main r && cd r &&
for i in 1 2 3; do echo "line $i" >> f; git add f; git commit -qm "commit $i"; done &&
git checkout -qb side && echo side > g && git add g && git commit -qm side &&
git checkout -q main && git merge -q --no-edit side &&
git log --format="%H %s" && git status --porcelain && git gc -q && git fsck --no-progress 2>&1 | wc -l'

# --- a double-forking daemon that then answers requests -------------------------
# The daemon leaves the session; the snippet always kills its process group
# (trap), and the test kills what a killed snippet left (pgid file).
prog daemon 60 '
trap "[ -s port ] && /bin/kill -TERM -- -\$(cut -d\" \" -f2 port) 2>/dev/null" EXIT
python3 "$PROGS/daemon_server.py" "$PWD/port"; echo "launcher exit $?"
i=0; while [ ! -s port ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.05; done
p=$(cut -d" " -f1 port)
for n in 1 2 3 4 5; do curl -s --max-time 10 "http://127.0.0.1:$p/$n"; done
python3 -c "
import urllib.request, sys
print(urllib.request.urlopen(\"http://127.0.0.1:%s/py\" % sys.argv[1], timeout=10).read().decode(), end=\"\")" "$p"'
# Each snippet stopped its daemon on exit: check that none is left.
for v in plain $VARIANTS; do
    [ -s "$TMP/daemon.$v/port" ] || continue
    pg=$(cut -d' ' -f2 "$TMP/daemon.$v/port")
    i=0
    while [ -n "$(ps -o pid= -g "$pg")" ]; do
        i=$((i + 1))
        [ $i -gt 100 ] && fail "daemon ($v): process group $pg still alive after SIGTERM"
        sleep 0.05
    done
done

# --- python3's own regression tests: fork, wait, signals, sockets, selectors ---
# test_socket without its VSOCK cases (they hang on some virtual machines
# even plain).  The summary lines are compared, not the timings around them.
PYTESTS=${REAL_PYTESTS:-"test_fork1 test_wait3 test_wait4 test_signal test_selectors test_socket"}
prog python-regrtest 135 "
python3 -m test -j2 --timeout 200 -i '*VSOCK*' -i '*Vsock*' $PYTESTS >log 2>&1; rc=\$?
grep -E '^(All [0-9]+ tests OK|Result: |Tests result: )' log || tail -n 30 log
exit \$rc"

echo "ok"
