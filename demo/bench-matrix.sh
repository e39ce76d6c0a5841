#!/bin/sh
# make bench-matrix: the robustness matrix in real time, against
# ratelimit-server on 127.0.0.1 (backoff-sim --scenario matrix is the same
# matrix in virtual time, every policy; see demo/sim/matrix.c).
#
# Servers: cap-0ms / cap-10ms (--max-busy 50, 100 ms per success, a 429 at
# once or after 10 ms), bucket-b20 / bucket-b1 (--rate 20, burst 20 or 1,
# 10 ms per success), latency (003's model: 100 ms x 1.05^((c - 30)/15), no
# rejections), schedule (--capacity 0:50,1:10,3:50, 100 ms per success).
# Hints on a 429: none; fixed (Retry-After: 1 whatever the state); accurate
# (the bucket's own wait, whole seconds; not in the default run, which must
# stay within 10 minutes: BENCH_MATRIX_HINTS="none fixed accurate"; the cap
# has no accurate hint in ratelimit-server, so cap and schedule skip it).
# Clients (fewer requests than the simulator's, to stay within 10 minutes):
#   fresh-seq    a shell loop of `backoff -- curl`, one process per request
#   fresh-8      the same through `xargs -P 8`
#   threads-8    loadgen --threads 8 under the shim
#   threads-200  loadgen --threads 200 under the shim
# Every policy with its defaults (BACKOFF_MAX_ATTEMPTS 8).  Columns as the
# simulator's: completion / optimum (optimum: the server's capacity and the
# clients' concurrency, no retry wasted, process start-up not counted),
# attempts per request (the server's count), calls that gave up (a non-2xx
# answer returned to the program), the most rejected attempts in any one
# second (sliding in 100 ms steps, from the server's --log) and that over the
# server's capacity in the same second.
#
# BENCH_MATRIX_POLICIES, _SERVERS, _HINTS, _CLIENTS narrow or widen a run;
# BENCH_MATRIX_SCALE multiplies the request counts (default 1).  Judge a run
# against the default policy's targets with
#   grep -v '^#' OUT.tsv > t.tsv && sh demo/sim-matrix.sh --tsv t.tsv
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/backoff-bench-matrix.XXXXXX")
POLICIES=${BENCH_MATRIX_POLICIES:-"aimd exponential full-jitter decorrelated-jitter"}
SERVERS=${BENCH_MATRIX_SERVERS:-"cap-0ms cap-10ms bucket-b20 bucket-b1 latency schedule"}
HINTS=${BENCH_MATRIX_HINTS:-"none fixed"}
CLIENTS=${BENCH_MATRIX_CLIENTS:-"fresh-seq fresh-8 threads-8 threads-200"}
SCALE=${BENCH_MATRIX_SCALE:-1}
CURL=${CURL:-curl}

SERVER_PID=""
cleanup() {
    [ -z "$SERVER_PID" ] || { kill -TERM "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
. "$top/demo/lib.sh"

# Unset every BACKOFF_* variable: each policy runs with its own defaults.
for v in $(env | sed -n 's/^\(BACKOFF_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done

# server_flags SERVER HINT: ratelimit-server's flags, or nothing when the
# server has no such hint.
server_flags() {
    case $1 in
    cap-0ms | cap-10ms | schedule)
        f="--service-ms 100"
        case $1 in
        cap-0ms) f="$f --max-busy 50" ;;
        cap-10ms) f="$f --max-busy 50 --error-ms 10" ;;
        schedule) f="$f --max-busy 50 --capacity 0:50,1:10,3:50" ;;
        esac
        case $2 in none) ;; fixed) f="$f --retry-after 1" ;; *) return 1 ;; esac ;;
    bucket-b20 | bucket-b1)
        f="--rate 20 --burst $([ "$1" = bucket-b20 ] && echo 20 || echo 1) --service-ms 10 --bucket-hints $2" ;;
    latency)
        [ "$2" = none ] || return 1
        f="--service-ms 100 --latency-limit 30 --latency-factor 1.05 --latency-k 15" ;;
    esac
    echo "$f"
}

# requests SERVER CLIENT: a bucket's 20/s makes every request cost 50 ms; a
# cap serves 500/s, and the schedule needs 3 s of load to show its dip.
requests() {
    case $1-$2 in
    bucket*-fresh-seq) n=8 ;; bucket*-fresh-8) n=24 ;; bucket*-threads-8) n=40 ;; bucket*-threads-200) n=100 ;;
    *-fresh-seq) n=8 ;; *-fresh-8) n=24 ;; *-threads-8) n=200 ;; *-threads-200) n=1000 ;;
    esac
    echo $((n * SCALE))
}
workers() { case $1 in fresh-seq) echo 1 ;; fresh-8 | threads-8) echo 8 ;; threads-200) echo 200 ;; esac; }

# optimum SERVER OPS WORKERS: seconds, or "-" (latency).
optimum() {
    awk -v s="$1" -v ops="$2" -v w="$3" 'BEGIN {
        if (s == "latency") { print "-"; exit }
        if (s ~ /^bucket/) {
            burst = (s == "bucket-b20") ? 20 : 1; per = 0.010
            ts = (ops - burst) / 20 + per; tc = int((ops + w - 1) / w) * per
            printf "%.3f\n", (ts > tc) ? ts : tc; exit
        }
        per = 0.100; served = 0; t = 0; dt = 0.001
        while (served < ops) {
            c = (s == "schedule" && t >= 1 && t < 3) ? 10 : 50
            conc = w < c ? w : c; served += conc * dt / per; t += dt
        }
        tc = int((ops + w - 1) / w) * per
        printf "%.3f\n", (t > tc) ? t : tc }'
}

# capacity per second at a time (s) since the server started
# peak LOG SERVER: "most-rejected-in-1s fraction-of-capacity" from the server's CSV log.
peak() {
    awk -F, -v s="$2" '
        NR == 1 { next }
        { if (t0 == "") t0 = $1; b = int(($1 - t0) / 100); if (b > nb) nb = b
          if ($4 == 429 || $4 == 503) rej[b]++ }
        function cap(t) {
            if (s ~ /^bucket/) return 20
            if (s == "latency") return 0
            if (s == "schedule" && t >= 1 && t < 3) return 100
            return 500
        }
        END {
            best = 0; frac = 0
            for (b = 0; b <= nb; b++) {
                n = 0; c = 0
                for (k = 0; k < 10; k++) { n += rej[b + k]; c += cap((b + k) / 10) / 10 }
                if (n > best) best = n
                if (c > 0 && n / c > frac) frac = n / c
            }
            if (s == "latency") printf "%d -\n", best; else printf "%d %.3f\n", best, frac
        }' "$1"
}

now_ms() { date +%s%3N; }

# run_client CLIENT POLICY URL-PREFIX OUT N: the HTTP status of each call into OUT.
run_client() {
    n=$5
    case $1 in
    fresh-seq)
        i=0
        while [ $i -lt "$n" ]; do
            i=$((i + 1))
            BACKOFF_POLICY=$2 "$BUILD/backoff" -- "$CURL" -s -o /dev/null -w '%{http_code}\n' "$3$i" || echo 000
        done >"$4" ;;
    fresh-8)
        seq 1 "$n" | BACKOFF_POLICY=$2 xargs -P 8 -I '{}' "$BUILD/backoff" -- "$CURL" -s -o /dev/null \
            -w '%{http_code}\n' "$3{}" >"$4" || true ;;
    threads-8 | threads-200)
        BACKOFF_POLICY=$2 LD_PRELOAD="$BUILD/libbackoff.so" "$BUILD/loadgen" --url "$3{n}" --requests "$n" \
            --threads "$(workers "$1")" >"$4.tsv"
        col "$4.tsv" ok | awk -v n="$n" '{ for (i = 0; i < $1; i++) print 200; for (; i < n; i++) print 429 }' >"$4" ;;
    esac
}

echo "# backoff bench-matrix: $(uname -srm), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC'); real time on 127.0.0.1"
echo "# requests (fresh-seq fresh-8 threads-8 threads-200): buckets $(for c in fresh-seq fresh-8 threads-8 threads-200; do printf '%s ' "$(requests bucket "$c")"; done)- other servers $(for c in fresh-seq fresh-8 threads-8 threads-200; do printf '%s ' "$(requests cap "$c")"; done)"
echo "# completion includes starting the client processes (tens of ms each): short runs read high"
printf 'server\thint\tclients\tpolicy\tcompletion_s\toptimum_s\tratio\tattempts_per_req\tgave_up\tpeak_rejected_per_s\tpeak_rejected_frac\n'
for s in $SERVERS; do
    for h in $HINTS; do
        flags=$(server_flags "$s" "$h") || continue
        for c in $CLIENTS; do
            for p in $POLICIES; do
                # shellcheck disable=SC2086
                start_server "$WORK/server.tsv" --threads 4 --log "$WORK/server.csv" $flags
                n=$(requests "$s" "$c")
                t0=$(now_ms)
                run_client "$c" "$p" "http://127.0.0.1:$PORT/item/" "$WORK/codes" "$n"
                t1=$(now_ms)
                stop_server
                comp=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1000 }')
                opt=$(optimum "$s" "$n" "$(workers "$c")")
                ratio=$(awk -v c="$comp" -v o="$opt" 'BEGIN { if (o == "-") print "-"; else printf "%.3f", c / o }')
                att=$(awk -v a="$(col "$WORK/server.tsv" requests)" -v n="$n" 'BEGIN { printf "%.3f", a / n }')
                gave=$(awk '$1 !~ /^2/ { k++ } END { print k + 0 }' "$WORK/codes")
                set -- $(peak "$WORK/server.csv" "$s")
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$([ "$s" = latency ] && echo - || echo "$h")" \
                    "$c" "$p" "$comp" "$opt" "$ratio" "$att" "$gave" "$1" "$2"
            done
        done
    done
done
