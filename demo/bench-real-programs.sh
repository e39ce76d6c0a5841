#!/bin/sh
# What the library costs a real program that never meets a throttle
# (the target: within plain + 50 ms).  Each program runs ROUNDS
# times plain and with LD_PRELOAD=libbackoff.so, interleaved; printed: the
# median wall time of each and the median of the per-round differences
# (preloaded - plain), in ms.  A benchmark: it prints figures and whether
# the target is met, it does not fail on them (the machine's load moves
# single runs by more than the target).
#
# Output: TSV with a header (scenario program plain_ms preloaded_ms diff_ms
# target), runnable as `sh demo/bench-real-programs.sh` or from make bench
# with BENCH_SCENARIOS=real.  Environment: BUILD (default build), ROUNDS (7).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
ROUNDS=${ROUNDS:-7}
LIB="$BUILD/libbackoff.so"
PROGS="$top/tests/programs"
[ -e "$LIB" ] || { echo "backoff: $LIB is missing: run make all first" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
export PROGS

# A prepared git repository and a recursive make tree (3 x 4 sub-makes).
(
    cd "$TMP" && export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid \
        GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid HOME="$TMP"
    git init -q r && cd r
    for i in 1 2 3 4 5; do echo "$i" >>f; git add f; git commit -qm "c$i"; done
    cd "$TMP" && mkdir mk && cd mk
    for d in a b c; do
        for s in 1 2 3 4; do
            mkdir -p $d/s$s
            printf 'all:\n\t@echo $$(echo %s) > out\n' "$d$s" >$d/s$s/Makefile
        done
        printf 'SUBS = s1 s2 s3 s4\nall: $(SUBS)\n$(SUBS):\n\t@$(MAKE) -s -C $@\n.PHONY: all $(SUBS)\n' >$d/Makefile
    done
    printf 'all: a b c\na b c:\n\t@$(MAKE) -s -C $@\n.PHONY: all a b c\n' >Makefile
)

now_us() { echo $(($(date +%s%N) / 1000)); }

# one SNIPPET [preload]: wall time of `sh -c SNIPPET` in us.
one() {
    _t=$(now_us)
    if [ "${2:-}" = preload ]; then
        LD_PRELOAD="$LIB" sh -c "$1" >/dev/null 2>&1 || true
    else
        sh -c "$1" >/dev/null 2>&1 || true
    fi
    echo $(($(now_us) - _t))
}

median() { sort -n | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); printf "%.1f", v[m] / 1000 }'; }

printf 'scenario\tprogram\tplain_ms\tpreloaded_ms\tdiff_ms\ttarget\n'
bench() { # NAME SNIPPET
    : >"$TMP/p" && : >"$TMP/l" && : >"$TMP/d"
    one "$2" >/dev/null # warm the caches
    i=0
    while [ $i -lt "$ROUNDS" ]; do
        a=$(one "$2")
        b=$(one "$2" preload)
        echo "$a" >>"$TMP/p"
        echo "$b" >>"$TMP/l"
        echo $((b - a)) >>"$TMP/d"
        i=$((i + 1))
    done
    d=$(median <"$TMP/d")
    printf 'real\t%s\t%s\t%s\t%s\t%s\n' "$1" "$(median <"$TMP/p")" "$(median <"$TMP/l")" "$d" \
        "$(awk -v d="$d" 'BEGIN { print d <= 50 ? "met(<=50ms)" : "missed(<=50ms)" }')"
}

bench true '/bin/true'
bench bash-subshells 'bash "$PROGS/subshells.sh"'
bench dash-subshells 'sh "$PROGS/subshells.sh"'
bench make-recursive "make -s -j4 -C '$TMP/mk'"
bench perl-forks 'perl "$PROGS/forks.pl"'
bench python-fork2 "python3 -c 'import os
p = os.fork()
if p == 0:
    q = os.fork()
    os._exit(0) if q == 0 else os.waitpid(q, 0)
    os._exit(0)
os.waitpid(p, 0)'"
bench git-log "git -C '$TMP/r' log --oneline"
bench curl-file "curl -s -o /dev/null file:///dev/null"
