#!/bin/sh
# make bench: the docs/DESIGN.md scenarios in real time against ratelimit-server,
# every policy side by side, plus the shim's overhead.  Output: TSV on stdout
# (one header row, "scenario policy" then the metric columns; "-" where a
# metric does not apply), preceded by "#" lines naming the machine, the date
# and the time scaling.  demo/bench-table.sh turns it into the table of docs/RESULTS.md.
#
#   burst     000's burst, times / 5: 2000 requests at 5000/s, max_busy 50,
#             100 ms per success, 10 ms per rejection, 20 ms travel
#   sizes     the burst against 100, 200, 500 and 1,000 slots (1,250 threads), for none,
#             linear, aws-adaptive and aimd (BENCH_SIZES_POLICIES)
#   room      never throttled: 200 loadgen threads x 2,000 requests of 200 ms, plain,
#             then under the library cold (a fresh state) and warm (the state that
#             left); targets 1.10x and 1.05x plain
#   outage    003's model, times / 5 for think time: 200 client threads with
#             exponential think time of mean 2 s (100 req/s), latency 100 ms up
#             to 30 concurrent then x1.05^((c-30)/15), 2 s timeout; the server
#             is stopped (SIGSTOP) for 5 s, then continued (SIGCONT)
#   pacing    002's sequential client: 200 requests (600 in docs/DESIGN.md), token
#             bucket 20/s burst 20 (429 with whole-second Retry-After when
#             empty); optimum 200 / 20 = 10 s
#   fairness  4 separate loadgen processes (no shared state), 500 requests
#             each, on one max_busy 50 server; Jain's index of throughputs
#   multi     curl -Z --parallel-max 20 (libcurl's multi interface)
#             over 200 URLs, one file each, under the default policy, against
#             a token bucket 20/s burst 20 without Retry-After (optimum
#             (200 - 20) / 20 = 9 s) and a concurrency cap of 4 with 100 ms
#             per request (optimum 200 / 4 x 0.1 = 5 s); every file checked;
#             targets: completion <= 1.15 x optimum, <= 1.25 attempts per request
#   overhead  demo/bench-overhead.sh (per-call cost, 8-thread throughput)
#   http      demo/bench-http.sh (the http room: read/write/recv/send on fds
#             it does not follow, and a followed request over http and over
#             https, SSL_read_ex/SSL_write_ex)
#   harm      demo/bench-harm.sh (what the http room must never do to event
#             loops, servers, proxies, half-closes and TLS peers: the issue's
#             table, plain against under backoff, each row with its target;
#             its cost rows are startup's)
#   startup   (not in the default list: harm prints it) demo/bench-startup.sh,
#             what a process that makes no request pays: 300 x /bin/true
#             preloaded in turn with plain, beside an empty library linked
#             alike (the floor) and the wrapper; target <= 1.05x
#   peers     demo/bench-peers.sh (the real retry tools side by side with
#             the plain client under backoff --: urllib3's Retry, tenacity,
#             curl --retry, wget --tries, got, undici's RetryAgent,
#             axios-retry, botocore standard/adaptive, each as its docs
#             recommend, on 7 workloads, median of 3: time, requests, items
#             failed, the optimum and backoff's targets; printed as comments,
#             a table of its own; about 30 minutes)
#   real      demo/bench-real-programs.sh (shells, make, perl, python, git:
#             median preloaded - plain ms; not in the default set)
#   own       (not in the default list): demo/bench-own-retries.sh,
#             programs that retry on their own (curl --retry, a pycurl loop),
#             requests counted at the server and wall time, plain and preloaded
#   share     fresh `backoff -- curl` processes, SHARE_CALLS (100)
#             one after another (loop) and 8 at once (xargs -P 8), against a
#             token bucket of 5/s burst 5 with and without Retry-After (slow
#             enough that this machine's curl loop outruns it) and a
#             concurrency cap of 4 slots x 200 ms; BACKOFF_SHARE=host (one
#             state for all the processes) beside process (each alone).
#             Optimum: bucket (calls - 5) / 5 s, cap calls x 0.2 s / (1 for
#             the loop, 4 for 8 at once); extra: attempts/request, gave up;
#             and 8 loadgen processes of 25 threads (host-wide) beside one of
#             200 threads against a cap of 50 slots x 100 ms (1000 requests,
#             optimum 2 s): the issue asks the same figures of both
#   many      xargs -P N of fresh `backoff -- curl` processes, N =
#             MANY_PARALLEL ("32 128 512"), over MANY_CALLS (1000) calls on one
#             destination, host-wide (the default), against a token bucket 20/s
#             burst 20 without hints (optimum (calls - 20) / 20 s) and a
#             concurrency cap of 10 x 100 ms (optimum calls x 0.1 / 10 s);
#             targets: <= 1.15 attempts per request, <= 1.15 x the optimum,
#             none failed; extra: the server's span (first arrival to last
#             answer: the processes' start-up, which the optimum leaves out,
#             excluded) and its ratio, the most processes --status showed using
#             the destination at once (sampled every 0.5 s), holding and
#             waiting among them, and the run's CPU time.  MANY_SERVERS
#             ("bucket-nohints cap") narrows a run.  Bounded: each run under
#             timeout (300 s), and an N the user's process limit (Max processes)
#             cannot hold with room to spare is skipped with a note.
#   fleet     4 "hosts" (each its own XDG_RUNTIME_DIR: its own
#             host-wide state) x 8 loadgen processes, BACKOFF_SHARE=redis://
#             (one redis-server on 127.0.0.1, ?timeout_ms=FLEET_TIMEOUT_MS,
#             100: 32 processes and Redis on a small machine's cores are hosts
#             too busy for the default 20 ms) beside host (each host alone),
#             every process started at one instant (loadgen --start-at-ms),
#             against a token bucket 20/s burst 20 (Retry-After; 8 requests per
#             process, optimum (256 - 20) / 20 = 11.8 s) and a concurrency cap
#             of 50 slots x 100 ms (4 threads, 64 requests per process, optimum
#             2048 x 0.1 / 50 = 4.1 s); targets with Redis: <= 1.25 attempts per
#             request, <= 1.15 x the optimum (judged on the server's span, first
#             arrival to last answer: starting 32 processes takes seconds on a
#             small machine); and the cost of an admission plus
#             a completion through Redis on loopback (us per call: 400 calls
#             of one thread, redis minus host).  FLEET_SERVERS="bucket cap
#             bucket-none bucket-fixed cap-fixed cap-10ms" adds servers that
#             throttle otherwise (no hint, a constant Retry-After: 1, a 429
#             that takes 10 ms)
#   headers   (not in the default list): the default policy paced
#             from the server's rate-limit headers, loadgen 1 and 8 threads
#             and 8 one-thread processes sharing host-wide (p8), against a
#             token bucket 20/s burst 20 (220 requests, 216 for p8, optimum
#             (N - 20) / 20 s) and a fixed window of 100 per 5 s (200
#             requests started at a window's start, optimum 5 s: the quota's
#             spend, then wait; 10 s before it, when the quota was spread),
#             for each --ratelimit-headers dialect (none: no headers, the
#             window alone)
#   quota     (not in the default list): real APIs' quota dialects,
#             scaled down (a fixed window of 20 per 2 s, a token bucket of 10/s
#             burst 10, a fixed window of 10 per 1 s), a fresh server per run,
#             windows started at their start (they are aligned to the epoch):
#             a shell loop of QUOTA_CALLS (40) fresh `curl -sf --retry 10`
#             beside `backoff -- curl -sf` (defaults) per dialect (GitHub's
#             403 and 429 shapes, X, OpenAI, Discord, Azure Cosmos DB's
#             x-ms-retry-after-ms, S3's 503 without a hint, Retry-After as an
#             HTTP-date); the quota's own optimum from the loop's own pace
#             (the same loop against a server without a limit): a window's
#             last request goes at its window's start plus its share of the
#             loop, a bucket's when its token is back; then loadgen 8 threads
#             x 100 under `backoff -n 0` (GitHub's 403, OpenAI, Discord), and
#             two loadgen processes sharing the GitHub quota with
#             BACKOFF_SHARE=process.  Targets (extra: met=yes|no): a loop:
#             0 failed, at most 42 requests (44 with no hint at all), within
#             1.10x the optimum and 1.05x plain curl (when plain curl failed
#             none: GitHub's 403 fails it); loadgen: at most 2
#             rejected, within 1.10x; two processes: at most 5% rejected
#
# BENCH_SCENARIOS and BENCH_POLICIES narrow a run.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/backoff-bench.XXXXXX")
SCENARIOS=${BENCH_SCENARIOS:-"burst sizes room outage pacing fairness multi share many fleet overhead http harm peers"}
# every policy of the library (aimd-000 is the simulator's alone)
ALL_POLICIES=$("$BUILD/backoff-sim" --list-policies | grep -v '^aimd-000$' | tr '\n' ' ')
POLICIES=${BENCH_POLICIES:-$ALL_POLICIES}

SERVER_PID=""
LOADGEN_PIDS=""
REDIS_PID=""
cleanup() {
    for p in $SERVER_PID $LOADGEN_PIDS $REDIS_PID; do
        kill -CONT "$p" 2>/dev/null || true
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in $SERVER_PID $LOADGEN_PIDS $REDIS_PID; do wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

. "$top/demo/lib.sh"

HEADER="scenario	policy	completion_s	optimum_s	ratio	calls	ok	attempts	wasted_pct	p99_ms	recovery_s	down_attempt_pct	peak_concurrency	jain	extra"
row() { # fields in HEADER order; missing ones print "-"
    printf '%s' "$1"; shift
    for f in "$@"; do printf '\t%s' "${f:--}"; done
    n=$#
    while [ $n -lt 14 ]; do printf '\t-'; n=$((n + 1)); done
    printf '\n'
}

echo "# backoff bench: $(uname -srm), $(nproc) cores, $(awk '/model name/ { sub(/.*: /, ""); print; exit }' /proc/cpuinfo)"
echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); real time on 127.0.0.1, times scaled as each scenario says"
echo "# burst: 000 / 5 (2000 req at 5000/s, max_busy 50, 100 ms success, 10 ms rejection, 20 ms travel); optimum 4 s"
echo "# outage: 003 with 200 clients of 2 s mean think time (100 req/s), 2 s timeout, server SIGSTOPped 5 s;"
echo "#   recovery_s: end of the first 1 s window after SIGCONT with >= 90% of the success rate before the stop;"
echo "#   down_attempt_pct: attempts sent while stopped, per second, as a % of the attempts per second before it;"
echo "#   late=N: calls that came back more than 100 ms past their own 2 s timeout (goal 0)"
echo "# pacing: 002 with 200 sequential requests (not 600), token bucket 20/s burst 20; fairness: 4 processes x 500 req, max_busy 50"
printf '%s\n' "$HEADER"

# --- burst -------------------------------------------------------------------
bench_burst() {
    for p in $POLICIES; do
        start_server "$WORK/burst-server.tsv" --max-busy 50 --service-ms 100 --error-ms 10 --delay-ms 20
        BACKOFF_BASE_MS=10 BACKOFF_CAP_MS=6000 BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=60000 \
            "$BUILD/backoff" -p "$p" -- "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" \
            --requests 2000 --threads 250 --rate 5000 --verify >"$WORK/burst-loadgen.tsv"
        stop_server
        comp=$(col "$WORK/burst-loadgen.tsv" completion_s)
        ok=$(col "$WORK/burst-loadgen.tsv" ok)
        mism=$(col "$WORK/burst-loadgen.tsv" body_mismatch)
        att=$(col "$WORK/burst-server.tsv" requests)
        rej=$(col "$WORK/burst-server.tsv" rejected)
        row burst "$p" "$comp" 4.00 "$(awk -v c="$comp" 'BEGIN { printf "%.2f", c / 4 }')" 2000 "$ok" \
            "$att" "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" \
            "$(col "$WORK/burst-loadgen.tsv" p99_ms)" - - "$(col "$WORK/burst-server.tsv" max_concurrency)" - \
            "body_mismatch=$mism"
    done
}

# --- burst at other server sizes -------------------------------------------------
# The burst above against 100, 200, 500 and 1,000 slots (the optimum: 2000 x 0.1 s / slots;
# at 500 and 1,000 the arrivals, 0.4 s, bound it), for the policies of BENCH_SIZES_POLICIES.
bench_sizes() {
    for slots in 100 200 500 1000; do
        opt=$(awk -v n="$slots" 'BEGIN { o = 2000 * 0.1 / n; if (o < 0.4) o = 0.4; printf "%.2f", o }')
        for p in ${BENCH_SIZES_POLICIES:-none linear aws-adaptive aimd}; do
            start_server "$WORK/sizes-server.tsv" --max-busy "$slots" --service-ms 100 --error-ms 10 --delay-ms 20
            BACKOFF_BASE_MS=10 BACKOFF_CAP_MS=6000 BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=60000 \
                "$BUILD/backoff" -p "$p" -- "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" \
                --requests 2000 --threads 1250 --rate 5000 --verify >"$WORK/sizes-loadgen.tsv"
            stop_server
            comp=$(col "$WORK/sizes-loadgen.tsv" completion_s)
            att=$(col "$WORK/sizes-server.tsv" requests)
            rej=$(col "$WORK/sizes-server.tsv" rejected)
            row "burst-$slots" "$p" "$comp" "$opt" "$(awk -v c="$comp" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')" 2000 \
                "$(col "$WORK/sizes-loadgen.tsv" ok)" "$att" \
                "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" \
                "$(col "$WORK/sizes-loadgen.tsv" p99_ms)" - - "$(col "$WORK/sizes-server.tsv" max_concurrency)" - \
                "slots=$slots body_mismatch=$(col "$WORK/sizes-loadgen.tsv" body_mismatch)"
        done
    done
}

# --- room: never throttled ----------------------------------------------------
# 200 loadgen threads x 2,000 requests against a server with no limit whose every answer
# takes 200 ms: plain, then under the library with a fresh state directory (cold), then
# again on the state that run left (warm).  Target: within 1.05x of plain (1.10x cold).
bench_room() {
    start_server "$WORK/room-server.tsv" --delay-ms 200
    u="http://127.0.0.1:$PORT/item/{n}"
    "$BUILD/loadgen" --url "$u" --threads 200 --requests 2000 --verify >"$WORK/room-plain.tsv"
    mkdir -m 700 "$WORK/room.xdg"
    for kind in cold warm; do
        XDG_RUNTIME_DIR="$WORK/room.xdg" "$BUILD/backoff" -- "$BUILD/loadgen" --url "$u" \
            --threads 200 --requests 2000 --verify >"$WORK/room-$kind.tsv"
    done
    stop_server
    plain=$(col "$WORK/room-plain.tsv" completion_s)
    row room none "$plain" "$plain" 1.00 2000 "$(col "$WORK/room-plain.tsv" ok)" - - \
        "$(col "$WORK/room-plain.tsv" p99_ms)" - - - - "plain (no library)"
    for kind in cold warm; do
        c=$(col "$WORK/room-$kind.tsv" completion_s)
        r=$(awk -v c="$c" -v p="$plain" 'BEGIN { printf "%.3f", c / p }')
        lim=1.05
        [ $kind = cold ] && lim=1.10
        row room "aimd-$kind" "$c" "$plain" "$r" 2000 "$(col "$WORK/room-$kind.tsv" ok)" - - \
            "$(col "$WORK/room-$kind.tsv" p99_ms)" - - - - \
            "target=<=${lim}x_plain met=$(awk -v r="$r" -v l="$lim" 'BEGIN { print (r <= l) ? "yes" : "no" }')"
    done
}

# --- outage --------------------------------------------------------------------
# Successes per second come from loadgen's CSV (start + latency = end); attempts
# from BACKOFF_TRACE (one row per attempt, written when it ends).
bench_outage() {
    for p in $POLICIES; do
        start_server "$WORK/outage-server.tsv" --service-ms 100 --latency-limit 30 \
            --latency-factor 1.05 --latency-k 15
        rm -f "$WORK/outage-trace.csv"
        t0=$(date +%s%3N)
        BACKOFF_BASE_MS=100 BACKOFF_CAP_MS=10000 BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=30000 \
            BACKOFF_FACTOR=$([ "$p" = gaussian-jitter ] && echo 2.718 || echo 2) \
            "$BUILD/backoff" -p "$p" --trace "$WORK/outage-trace.csv" -- \
            "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 0 --threads 200 \
            --think-ms 2000 --timeout-ms 2000 --duration-s 22 --csv "$WORK/outage-loadgen.csv" \
            >"$WORK/outage-loadgen.tsv" &
        LOADGEN_PIDS=$!
        sleep 8
        stop_at=$(date +%s%3N)
        kill -STOP "$SERVER_PID"
        sleep 5
        cont_at=$(date +%s%3N)
        kill -CONT "$SERVER_PID"
        wait "$LOADGEN_PIDS" || true
        LOADGEN_PIDS=""
        stop_server
        # recovery: the end of the first 1 s window after SIGCONT (windows start
        # every 100 ms) in which successes reach 90% of the rate before the stop
        # (from 2 s to the stop), up to 2 s before loadgen's last start (22 s).
        rec=$(awk -F, -v t0="$t0" -v s="$stop_at" -v c="$cont_at" '
            NR > 1 && $3 >= 200 && $3 < 300 { end = t0 + $1 + $5;
                                              if (end >= t0 + 2000 && end < s) pre++;
                                              if (end >= c) at[n++] = end - c }
            END { base = pre / ((s - t0 - 2000) / 1000); last = t0 + 20000 - c - 1000;
                  for (w = 0; w <= last; w += 100) {
                      k = 0; for (i = 0; i < n; i++) if (at[i] >= w && at[i] < w + 1000) k++
                      if (k >= 0.9 * base) { printf "%.1f\n", (w + 1000) / 1000; exit }
                  }
                  print "never" }' "$WORK/outage-loadgen.csv")
        # Attempts sent while the server was stopped: they time out (curl code 28)
        # between stop + 2 s and cont + 2 s (the one probe that is in flight at
        # SIGCONT succeeds instead and is not counted).
        down=$(awk -F, -v s="$stop_at" -v c="$cont_at" -v to=2000 '
            NR > 1 && $9 == 28 && $1 >= s + to && $1 < c + to { n++ }
            END { printf "%.1f", n / ((c - s) / 1000) }' "$WORK/outage-trace.csv")
        normal=$(awk -F, -v s="$stop_at" -v t0="$t0" '
            NR > 1 && $1 >= t0 + 2000 && $1 < s { n++ }
            END { printf "%.1f", n / ((s - t0 - 2000) / 1000) }' "$WORK/outage-trace.csv")
        row outage "$p" - - - "$(col "$WORK/outage-loadgen.tsv" requests)" "$(col "$WORK/outage-loadgen.tsv" ok)" \
            "$(awk -F, 'NR > 1 { n++ } END { print n + 0 }' "$WORK/outage-trace.csv")" - \
            "$(col "$WORK/outage-loadgen.tsv" p99_ms)" "$rec" \
            "$(awk -v d="$down" -v n="$normal" 'BEGIN { printf "%.1f", (n > 0 ? 100 * d / n : 0) }')" \
            "$(col "$WORK/outage-server.tsv" max_concurrency)" - \
            "down_attempts_per_s=$down normal_per_s=$normal late=$(col "$WORK/outage-loadgen.tsv" late)"
    done
}

# --- pacing --------------------------------------------------------------------
bench_pacing() {
    for p in $POLICIES; do
        start_server "$WORK/pacing-server.tsv" --rate 20 --burst 20
        BACKOFF_BASE_MS=10 BACKOFF_CAP_MS=6000 BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=60000 \
            "$BUILD/backoff" -p "$p" -- "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" \
            --requests 200 --threads 1 --verify >"$WORK/pacing-loadgen.tsv"
        stop_server
        comp=$(col "$WORK/pacing-loadgen.tsv" completion_s)
        att=$(col "$WORK/pacing-server.tsv" requests)
        rej=$(col "$WORK/pacing-server.tsv" rejected)
        row pacing "$p" "$comp" 10.00 "$(awk -v c="$comp" 'BEGIN { printf "%.2f", c / 10 }')" 200 \
            "$(col "$WORK/pacing-loadgen.tsv" ok)" "$att" \
            "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" \
            "$(col "$WORK/pacing-loadgen.tsv" p99_ms)" - - - - "answered_429=$rej"
    done
}

# --- multi -----------------------------------------------------------
bench_multi() {
    for lim in bucket cap; do
        if [ $lim = bucket ]; then
            flags="--rate 20 --burst 20 --bucket-hints none" opt=9
        else
            flags="--max-busy 4 --service-ms 100" opt=5
        fi
        rm -rf "$WORK/multi" && mkdir -p "$WORK/multi"
        # shellcheck disable=SC2086
        start_server "$WORK/multi-server.tsv" $flags
        t0=$(date +%s%N)
        (cd "$WORK/multi" && BACKOFF_STATS="$WORK/multi.stats" BACKOFF_MAX_ATTEMPTS=0 \
            BACKOFF_MAX_TIME_MS=60000 setsid timeout -k 2 120 "$BUILD/backoff" -- \
            curl -sS -Z --no-progress-meter --parallel-max 20 "http://127.0.0.1:$PORT/item/[1-200]" \
            -o "f_#1") >"$WORK/multi.log" 2>&1 || true
        t1=$(date +%s%N)
        stop_server
        # files holding exactly their item's 64 bytes ("item=N;" repeated)
        ok=$(for n in $(seq 1 200); do printf '%s ' "$n"; cat "$WORK/multi/f_$n" 2>/dev/null; echo; done |
            awk '{ w = ""; while (length(w) < 64) w = w "item=" $1 ";"; if ($2 == substr(w, 1, 64)) k++ }
                 END { print k + 0 }')
        comp=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
        att=$(col "$WORK/multi-server.tsv" requests)
        rej=$(col "$WORK/multi-server.tsv" rejected)
        ratio=$(awk -v c="$comp" -v o="$opt" 'BEGIN { printf "%.3f", c / o }')
        per=$(awk -v a="$att" 'BEGIN { printf "%.3f", a / 200 }')
        met=$(awk -v r="$ratio" -v p="$per" -v ok="$ok" 'BEGIN { print (r <= 1.15 && p <= 1.25 && ok == 200) ? "yes" : "no" }')
        row "multi-curlZ-$lim" default "$comp" "$opt.00" "$ratio" 200 "$ok" "$att" \
            "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" - - - - - \
            "attempts_per_request=$per files_right=$ok/200 target=ratio<=1.15,attempts<=1.25 met=$met"
    done
}

# --- headers ---------------------------------------------------------
bench_headers() {
    for lim in bucket window; do
        for d in x-ratelimit ratelimit draft none; do
            # 1 and 8 threads of one process, and 8 processes of one thread
            # sharing the destination host-wide (BACKOFF_SHARE=host, a fresh
            # runtime directory each run)
            for t in 1 8 p8; do
                if [ $lim = bucket ]; then
                    flags="--rate 20 --burst 20" req=220
                else
                    flags="--window-requests 100 --window-s 5" req=200
                fi
                procs=1 threads=$t
                if [ $t = p8 ]; then
                    procs=8 threads=1 req=$((req / 8 * 8))
                fi
                # optimum, the quota's own: the bucket's burst at once, then its
                # refill rate; the window's 100 at each window's start
                if [ $lim = bucket ]; then
                    opt=$(awk -v n=$req 'BEGIN { printf "%.2f", (n - 20) / 20 }')
                else
                    opt=$(quota_optimum window 100 5 $req 0)
                fi
                # shellcheck disable=SC2086
                start_server "$WORK/hdr-server.tsv" $flags --ratelimit-headers $d
                rundir="$WORK/hdr-run-$lim-$d-$t"
                mkdir -p "$rundir"
                # every process starts at one instant, 2 s ahead (their start-up
                # is not timed); for the window, on a window's start (windows are
                # aligned to the epoch)
                at=$(( $(date +%s%3N) + 2000 ))
                [ $lim = window ] && at=$(( (at + 4999) / 5000 * 5000 ))
                i=0 pids=""
                while [ $i -lt $procs ]; do
                    XDG_RUNTIME_DIR="$rundir" BACKOFF_SHARE=host \
                        BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=60000 \
                        "$BUILD/backoff" -- "$BUILD/loadgen" \
                        --url "http://127.0.0.1:$PORT/item/{n}" \
                        --requests $((req / procs)) --threads $threads --verify --start-at-ms $at \
                        >"$rundir/loadgen-$i.tsv" &
                    pids="$pids $!"
                    i=$((i + 1))
                done
                # shellcheck disable=SC2086
                wait $pids # the loadgens only: the server runs on
                stop_server
                ok=0 p99=0 comp=0
                for f in "$rundir"/loadgen-*.tsv; do
                    ok=$((ok + $(col "$f" ok)))
                    comp=$(awk -v a="$comp" -v b="$(col "$f" completion_s)" 'BEGIN { printf "%.2f", (b > a) ? b : a }')
                    p99=$(awk -v a="$p99" -v b="$(col "$f" p99_ms)" 'BEGIN { print (b > a) ? b : a }')
                done
                att=$(col "$WORK/hdr-server.tsv" requests)
                rej=$(col "$WORK/hdr-server.tsv" rejected)
                row "headers-$lim-$t" "default/$d" "$comp" "$opt" \
                    "$(awk -v c="$comp" -v o="$opt" 'BEGIN { printf "%.3f", c / o }')" $req \
                    "$ok" "$att" \
                    "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" \
                    "$p99" - - - - "answered_429=$rej processes=$procs threads=$threads"
            done
        done
    done
}

# --- quota -------------------------------------------------------------
QUOTA_CALLS=${QUOTA_CALLS:-40}

# quota_flags DIALECT: the server's flags for it, then ":" and the quota's
# shape (window W P, or bucket B R) for the optimum.
quota_flags() {
    case $1 in
    github-403) echo "--window-requests 20 --window-s 2 --ratelimit-headers x-ratelimit --reject-status 403 --retry-after-form none:window 20 2" ;;
    github-429) echo "--window-requests 20 --window-s 2 --ratelimit-headers x-ratelimit --retry-after-form none:window 20 2" ;;
    x) echo "--window-requests 10 --window-s 1 --ratelimit-headers x-rate-limit --retry-after-form none:window 10 1" ;;
    openai) echo "--window-requests 10 --window-s 1 --ratelimit-headers openai:window 10 1" ;;
    openai-s) echo "--window-requests 20 --window-s 2 --ratelimit-headers openai-s:window 20 2" ;;
    discord) echo "--rate 10 --burst 10 --ratelimit-headers discord:bucket 10 10" ;;
    azure) echo "--rate 10 --burst 10 --retry-after-form ms-azure:bucket 10 10" ;;
    s3) echo "--rate 10 --burst 10 --reject-status 503 --bucket-hints none:bucket 10 10" ;;
    date) echo "--rate 10 --burst 10 --retry-after-form date:bucket 10 10" ;;
    *) return 1 ;;
    esac
}

# quota_optimum SHAPE A B N C: when the last of N requests made one after
# another, each taking C s, can end: a window of A per B s (the first at a
# window's start) admits request i at floor(i / A) x B; a bucket of A tokens
# refilled at B/s at (i - A + 1) / B.
quota_optimum() {
    awk -v shape="$1" -v a="$2" -v b="$3" -v n="$4" -v c="$5" 'BEGIN {
        end = 0
        for (i = 0; i < n; i++) {
            if (shape == "window") at = int(i / a) * b
            else at = (i < a) ? 0 : (i - a + 1) / b
            end = (end > at ? end : at) + c
        }
        printf "%.2f", end }'
}

# quota_wait_window P: sleep until 20 ms past the start of a P-second window
# of the epoch (the server's windows are aligned to it).
quota_wait_window() {
    _ms=$(date +%s%3N)
    _p=$(($1 * 1000))
    _left=$(( (_p - _ms % _p + 20) % _p ))
    sleep "$(awk -v m="$_left" 'BEGIN { printf "%.3f", m / 1000 }')"
}

# quota_loop NAME KIND URL: QUOTA_CALLS fresh curl processes one after
# another, KIND plain (curl --retry 10) or backoff (backoff -- curl), their
# state in a directory of their own; writes "elapsed_s failed" to NAME.res.
quota_loop() {
    mkdir -m 700 "$WORK/$1.xdg"
    _t0=$(date +%s%3N) _f=0 _i=1
    while [ $_i -le "$QUOTA_CALLS" ]; do
        if [ "$2" = plain ]; then
            curl -sf --retry 10 -o /dev/null "$3/$_i" || _f=$((_f + 1))
        else
            XDG_RUNTIME_DIR="$WORK/$1.xdg" "$BUILD/backoff" -- curl -sf -o /dev/null "$3/$_i" ||
                _f=$((_f + 1))
        fi
        _i=$((_i + 1))
    done
    _t1=$(date +%s%3N)
    echo "$(awk -v t=$((_t1 - _t0)) 'BEGIN { printf "%.2f", t / 1000 }') $_f" >"$WORK/$1.res"
}

bench_quota() {
    command -v curl >/dev/null 2>&1 || { echo "# quota: no curl command, skipped"; return 0; }
    qn=$QUOTA_CALLS
    # the loops' own pace, against a server without a limit
    for kind in plain backoff; do
        start_server "$WORK/quota-pace-$kind.tsv"
        quota_loop "quota-pace-$kind" $kind "http://127.0.0.1:$PORT/item"
        stop_server
    done
    c_plain=$(awk -v n="$qn" '{ printf "%.4f", $1 / n }' "$WORK/quota-pace-plain.res")
    cb=$(awk -v n="$qn" '{ printf "%.4f", $1 / n }' "$WORK/quota-pace-backoff.res")
    echo "# quota: $qn fresh curl processes in a loop; unthrottled, one takes $c_plain s (plain curl), $cb s (backoff -- curl): the optimum counts that pace"
    for d in github-403 github-429 x openai discord azure s3 date; do
        spec=$(quota_flags $d)
        flags=${spec%%:*}
        set -- ${spec#*:}
        shape=$1 qa=$2 qb=$3
        opt=$(quota_optimum "$shape" "$qa" "$qb" "$qn" "$cb")
        maxreq=$((qn + 2))
        [ $d = s3 ] && maxreq=$((qn + 4)) # no hint at all
        for kind in plain backoff; do
            name="quota-$d-$kind"
            # shellcheck disable=SC2086
            start_server "$WORK/$name-server.tsv" $flags
            [ "$shape" = window ] && quota_wait_window "$qb"
            quota_loop "$name" $kind "http://127.0.0.1:$PORT/item"
            stop_server
        done
        pl=$(cut -d' ' -f1 "$WORK/quota-$d-plain.res")
        plfail=$(cut -d' ' -f2 "$WORK/quota-$d-plain.res") # plain curl failed some: no time to beat
        for kind in plain backoff; do
            name="quota-$d-$kind"
            set -- $(cat "$WORK/$name.res")
            att=$(col "$WORK/$name-server.tsv" requests)
            rej=$(col "$WORK/$name-server.tsv" rejected)
            ratio=$(awk -v c="$1" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')
            vs=$(awk -v c="$1" -v p="$pl" 'BEGIN { printf "%.2f", c / p }')
            met=-
            [ $kind = backoff ] && met=$(awk -v f="$2" -v a="$att" -v m="$maxreq" -v r="$ratio" -v v="$vs" \
                -v pf="$plfail" 'BEGIN { print (f == 0 && a <= m && r <= 1.10 && (v <= 1.05 || pf > 0)) ? "yes" : "no" }')
            row "quota-$d-loop" "$([ $kind = plain ] && echo curl-retry-10 || echo backoff)" "$1" "$opt" \
                "$ratio" "$qn" "$((qn - $2))" "$att" \
                "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" - - - - - \
                "failed=$2 requests=$att rejected=$rej vs_plain=$vs target=failed=0,requests<=$maxreq,ratio<=1.10,vs_plain<=1.05 met=$met"
            sleep 0.5
        done
    done
    # loadgen 8 threads x 100 under backoff -n 0, started at a window's start; OpenAI's
    # resets in whole seconds (openai-s) also 0.7 s and 1.6 s into one, where "2s" and
    # "0s" are early
    for dp in github-403:20 openai:20 discord:20 openai-s:20 openai-s:700 openai-s:1600; do
        d=${dp%%:*} phase=${dp#*:}
        spec=$(quota_flags $d)
        flags=${spec%%:*}
        set -- ${spec#*:}
        shape=$1 qa=$2 qb=$3
        opt=$(quota_optimum "$shape" "$qa" "$qb" 100 0)
        name="quota-$d-loadgen"
        [ "$phase" != 20 ] && name="quota-$d-p$phase-loadgen"
        if [ "$phase" != 20 ]; then
            # started $phase ms into a window: the first has less left, and so the last
            opt=$(awk -v o="$opt" -v p="$phase" 'BEGIN { printf "%.2f", o - p / 1000 }')
        fi
        mkdir -m 700 "$WORK/$name.xdg"
        # shellcheck disable=SC2086
        start_server "$WORK/$name-server.tsv" $flags
        at=$(( $(date +%s%3N) + 1500 ))
        [ "$shape" = window ] && at=$(( (at + qb * 1000 - 1) / (qb * 1000) * qb * 1000 + phase ))
        XDG_RUNTIME_DIR="$WORK/$name.xdg" "$BUILD/backoff" -n 0 -- "$BUILD/loadgen" \
            --url "http://127.0.0.1:$PORT/item/{n}" --requests 100 --threads 8 --verify \
            --start-at-ms $at >"$WORK/$name.tsv"
        stop_server
        comp=$(col "$WORK/$name.tsv" completion_s)
        att=$(col "$WORK/$name-server.tsv" requests)
        rej=$(col "$WORK/$name-server.tsv" rejected)
        ratio=$(awk -v c="$comp" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')
        row "${name}" backoff "$comp" "$opt" "$ratio" 100 "$(col "$WORK/$name.tsv" ok)" "$att" \
            "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" \
            "$(col "$WORK/$name.tsv" p99_ms)" - - - - \
            "rejected=$rej threads=8 target=rejected<=2,ratio<=1.10 met=$(awk -v r="$rej" -v q="$ratio" 'BEGIN { print (r <= 2 && q <= 1.10) ? "yes" : "no" }')"
        sleep 0.5
    done
    # two processes sharing the GitHub quota, each its own state
    spec=$(quota_flags github-429)
    name="quota-github-429-2proc"
    # shellcheck disable=SC2086
    start_server "$WORK/$name-server.tsv" ${spec%%:*}
    at=$(( ($(date +%s%3N) + 1500 + 1999) / 2000 * 2000 + 20 ))
    for k in 1 2; do
        mkdir -m 700 "$WORK/$name.$k.xdg"
        XDG_RUNTIME_DIR="$WORK/$name.$k.xdg" BACKOFF_SHARE=process "$BUILD/backoff" -n 0 -- \
            "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 50 --threads 4 \
            --verify --start-at-ms $at >"$WORK/$name.$k.tsv" &
        LOADGEN_PIDS="$LOADGEN_PIDS $!"
    done
    for p in $LOADGEN_PIDS; do wait "$p" || true; done
    LOADGEN_PIDS=""
    stop_server
    comp=$(cat "$WORK/$name".[12].tsv | awk -F'\t' '$1 != "requests" && $4 > m { m = $4 } END { printf "%.2f", m }')
    ok=$(cat "$WORK/$name".[12].tsv | awk -F'\t' '$1 != "requests" { s += $2 } END { print s + 0 }')
    att=$(col "$WORK/$name-server.tsv" requests)
    rej=$(col "$WORK/$name-server.tsv" rejected)
    opt=$(quota_optimum window 20 2 100 0)
    pct=$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')
    row "quota-github-429-2proc" backoff-process "$comp" "$opt" \
        "$(awk -v c="$comp" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')" 100 "$ok" "$att" "$pct" - - - - - \
        "rejected=$rej processes=2 threads=4 share=process target=rejected<=5% met=$(awk -v p="$pct" 'BEGIN { print (p <= 5) ? "yes" : "no" }')"
}

# --- fairness ------------------------------------------------------------------
bench_fairness() {
    for p in $POLICIES; do
        [ "$p" = none ] && continue
        start_server "$WORK/fair-server.tsv" --max-busy 50 --service-ms 100 --error-ms 10 --delay-ms 20
        LOADGEN_PIDS=""
        for k in 1 2 3 4; do
            BACKOFF_BASE_MS=10 BACKOFF_CAP_MS=6000 BACKOFF_MAX_ATTEMPTS=0 BACKOFF_MAX_TIME_MS=60000 \
                BACKOFF_SEED=$k "$BUILD/backoff" -p "$p" -- "$BUILD/loadgen" \
                --url "http://127.0.0.1:$PORT/item/{n}" --requests 500 --threads 60 --rate 1250 \
                >"$WORK/fair-$k.tsv" &
            LOADGEN_PIDS="$LOADGEN_PIDS $!"
        done
        for pid in $LOADGEN_PIDS; do wait "$pid" || true; done
        LOADGEN_PIDS=""
        stop_server
        tputs=""
        for k in 1 2 3 4; do
            tputs="$tputs $(awk -v o="$(col "$WORK/fair-$k.tsv" ok)" -v c="$(col "$WORK/fair-$k.tsv" completion_s)" \
                'BEGIN { printf "%.2f", (c > 0 ? o / c : 0) }')"
        done
        jain=$(echo "$tputs" | awk '{ for (i = 1; i <= NF; i++) { s += $i; q += $i * $i } }
                                   END { printf "%.3f", (q > 0 ? s * s / (NF * q) : 0) }')
        att=$(col "$WORK/fair-server.tsv" requests)
        rej=$(col "$WORK/fair-server.tsv" rejected)
        row fairness "$p" - - - 2000 - "$att" \
            "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" \
            - - - - "$jain" "throughputs=$(echo $tputs | tr ' ' '/')"
    done
}

# --- share -------------------------------------------------------------
# share_run NAME MODE CLIENTS CALLS: the calls as fresh curl processes, the
# state in a directory of its own; writes "elapsed_s ok gave_up" to NAME.res.
share_run() {
    XDG_RUNTIME_DIR="$WORK/$1.xdg"
    export XDG_RUNTIME_DIR
    mkdir -m 700 "$XDG_RUNTIME_DIR"
    _t0=$(date +%s%3N)
    if [ "$3" = loop ]; then
        _i=1
        while [ $_i -le "$4" ]; do
            BACKOFF_SHARE=$2 BACKOFF_STATS="$WORK/$1.json" "$BUILD/backoff" -- curl -s -o /dev/null \
                -w '%{http_code}\n' "http://127.0.0.1:$PORT/item/$_i" || true
            _i=$((_i + 1))
        done >"$WORK/$1.codes"
    else
        seq 1 "$4" | BACKOFF_SHARE=$2 BACKOFF_STATS="$WORK/$1.json" xargs -P 8 -I{} "$BUILD/backoff" -- \
            curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT/item/{}" >"$WORK/$1.codes" || true
    fi
    _t1=$(date +%s%3N)
    echo "$(awk -v t=$((_t1 - _t0)) 'BEGIN { printf "%.2f", t / 1000 }') $(grep -c '^200$' "$WORK/$1.codes") $(awk -F'"gave_up":' 'NF > 1 { s += $2 + 0 } END { print s + 0 }' "$WORK/$1.json")" >"$WORK/$1.res"
}

bench_share() {
    sn=${SHARE_CALLS:-100}
    command -v curl >/dev/null 2>&1 || { echo "# share: no curl command, skipped"; return 0; }
    echo "# share: fresh backoff -- curl processes, $sn calls, in a loop and 8 at once (xargs -P 8); bucket 5/s burst 5, cap 4 x 200 ms"
    for server in bucket-nohints bucket-hints cap; do
        case $server in
        bucket-nohints) flags="--rate 5 --burst 5 --bucket-hints none" ;;
        bucket-hints) flags="--rate 5 --burst 5" ;;
        cap) flags="--max-busy 4 --service-ms 200" ;;
        esac
        for clients in loop x8; do
            case $server/$clients in
            bucket*) opt=$(awk -v n="$sn" 'BEGIN { printf "%.2f", (n - 5) / 5 }') ;;
            cap/loop) opt=$(awk -v n="$sn" 'BEGIN { printf "%.2f", n * 0.2 }') ;;
            cap/x8) opt=$(awk -v n="$sn" 'BEGIN { printf "%.2f", n * 0.2 / 4 }') ;;
            esac
            for mode in host process; do
                name="share-$server-$clients-$mode"
                # shellcheck disable=SC2086
                start_server "$WORK/$name-server.tsv" $flags
                share_run "$name" "$mode" "$clients" "$sn"
                stop_server
                set -- $(cat "$WORK/$name.res")
                att=$(col "$WORK/$name-server.tsv" requests)
                row "share-$server-$clients" "aimd-$mode" "$1" "$opt" \
                    "$(awk -v c="$1" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')" "$sn" "$2" "$att" \
                    "$(awk -v a="$att" -v k="$2" 'BEGIN { printf "%.1f", a ? 100 * (a - k) / a : 0 }')" \
                    - - - - - "attempts_per_request=$(awk -v a="$att" -v n="$sn" 'BEGIN { printf "%.2f", a / n }') gave_up=$3"
                sleep 1.2 # the next server is new; the machine settles
            done
        done
    done
    bench_share_threads
}

# procs_run NAME SHARE HOSTS PROCS THREADS REQUESTS: HOSTS "hosts" (each its own
# state directory, so its own host-wide state) x PROCS loadgen processes of
# THREADS threads, all started at one instant (loadgen --start-at-ms: starting
# 32 processes takes a second or more on a small machine, as it never does on
# a fleet's hosts); writes "elapsed_s ok gave_up" to NAME.res, elapsed from
# that instant.
procs_run() {
    _pids=""
    _at=$(($(date +%s%3N) + 1500 + 30 * $3 * $4))
    _h=1
    while [ $_h -le "$3" ]; do
        mkdir -p -m 700 "$WORK/$1.h$_h"
        _p=1
        while [ $_p -le "$4" ]; do
            XDG_RUNTIME_DIR="$WORK/$1.h$_h" BACKOFF_SHARE=$2 BACKOFF_STATS="$WORK/$1.$_h.$_p.json" \
                setsid timeout -k 2 300 "$BUILD/backoff" -- "$BUILD/loadgen" \
                --url "http://127.0.0.1:$PORT/item/{n}" --requests "$6" --threads "$5" --verify \
                --start-at-ms $_at >"$WORK/$1.$_h.$_p.tsv" 2>/dev/null &
            _pids="$_pids $!"
            _p=$((_p + 1))
        done
        _h=$((_h + 1))
    done
    for _q in $_pids; do wait "$_q" || true; done
    _t1=$(date +%s%3N)
    echo "$(awk -v t=$((_t1 - _at)) 'BEGIN { printf "%.2f", t / 1000 }') $(cat "$WORK/$1".*.tsv |
        awk -F'\t' '$1 == "requests" { next } { s += $2 } END { print s + 0 }') $(cat "$WORK/$1".*.json 2>/dev/null |
        awk -F'"gave_up":' 'NF > 1 { s += $2 + 0 } END { print s + 0 }')" >"$WORK/$1.res"
}

# server_span LOG.csv: seconds from the first arrival to the last answer at
# the server (process start-up excluded).
server_span() {
    awk -F, 'NR > 1 { e = $1 + $6; if (!n++ || $1 < a) a = $1; if (e > z) z = e }
             END { printf "%.2f", (z - a) / 1000 }' "$1"
}

# share-threads: 8 processes of 25 threads against a cap of 50 slots x 100 ms, beside
# one process of 200 threads (1000 requests, optimum 1000 x 0.1 / 50 = 2 s).
bench_share_threads() {
    opt=2.00
    for shape in 1x200 8x25; do
        procs=${shape%x*} threads=${shape#*x}
        name="share-cap50-$shape"
        start_server "$WORK/$name-server.tsv" --max-busy 50 --service-ms 100 --log "$WORK/$name.csv"
        procs_run "$name" host 1 "$procs" "$threads" $((1000 / procs))
        stop_server
        set -- $(cat "$WORK/$name.res")
        span=$(server_span "$WORK/$name.csv")
        att=$(col "$WORK/$name-server.tsv" requests)
        rej=$(col "$WORK/$name-server.tsv" rejected)
        row "share-cap50" "aimd-$shape" "$1" "$opt" "$(awk -v c="$1" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')" \
            1000 "$2" "$att" "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" - - - \
            "$(col "$WORK/$name-server.tsv" max_concurrency)" - \
            "processes=$procs threads=$threads attempts_per_request=$(awk -v a="$att" 'BEGIN { printf "%.2f", a / 1000 }') server_span_s=$span span_ratio=$(awk -v c="$span" -v o="$opt" 'BEGIN { printf "%.2f", c / o }') gave_up=$3"
        sleep 1.2
    done
}

# --- many ---------------------------------------------------------------
# many_run NAME N CALLS: CALLS fresh `backoff -- curl` processes, N at once
# (xargs -P N), host-wide, the state in a directory of its own; --status
# sampled every 0.5 s meanwhile.  Writes "elapsed_s ok gave_up most holding
# waiting cpu_s" to NAME.res (most: the most processes --status showed using
# the destination, holding and waiting: that sample's).
many_run() {
    XDG_RUNTIME_DIR="$WORK/$1.xdg"
    export XDG_RUNTIME_DIR
    mkdir -m 700 "$XDG_RUNTIME_DIR"
    _t0=$(date +%s%3N)
    seq 1 "$3" | BACKOFF_STATS="$WORK/$1.json" setsid timeout -k 2 300 \
        /usr/bin/time -f '%U %S' -o "$WORK/$1.cpu" xargs -P "$2" -I{} "$BUILD/backoff" -- \
        curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$PORT/item/{}" \
        >"$WORK/$1.codes" 2>"$WORK/$1.err" &
    _pid=$!
    LOADGEN_PIDS="$_pid"
    _most="0 0 0"
    while kill -0 "$_pid" 2>/dev/null; do
        _s=$("$BUILD/backoff" --status 2>/dev/null |
            awk -v k="http://127.0.0.1:$PORT" '$1 == k { print $5, (NF > 7 ? $8 : "-"), (NF > 8 ? $9 : "-") }')
        [ -n "$_s" ] && [ "${_s%% *}" -gt "${_most%% *}" ] && _most=$_s
        sleep 0.5
    done
    wait "$_pid" || true
    LOADGEN_PIDS=""
    _t1=$(date +%s%3N)
    echo "$(awk -v t=$((_t1 - _t0)) 'BEGIN { printf "%.2f", t / 1000 }') $(grep -c '^200$' "$WORK/$1.codes") $(awk -F'"gave_up":' 'NF > 1 { s += $2 + 0 } END { print s + 0 }' "$WORK/$1.json") $_most $(awk '{ printf "%.1f", $1 + $2 }' "$WORK/$1.cpu" 2>/dev/null || echo -)" >"$WORK/$1.res"
}

bench_many() {
    mc=${MANY_CALLS:-1000}
    command -v curl >/dev/null 2>&1 || { echo "# many: no curl command, skipped"; return 0; }
    [ -x /usr/bin/time ] || { echo "# many: no /usr/bin/time, skipped"; return 0; }
    lim=$(awk '/^Max processes/ { print $3 }' /proc/self/limits 2>/dev/null || echo unlimited)
    echo "# many: xargs -P N of fresh backoff -- curl processes, $mc calls on one destination, host-wide; bucket 20/s burst 20 without hints, cap 10 x 100 ms"
    for server in ${MANY_SERVERS:-bucket-nohints cap}; do
        case $server in
        bucket-nohints) flags="--rate 20 --burst 20 --bucket-hints none"
                        opt=$(awk -v n="$mc" 'BEGIN { printf "%.2f", (n - 20) / 20 }') ;;
        cap) flags="--max-busy 10 --service-ms 100"
             opt=$(awk -v n="$mc" 'BEGIN { printf "%.2f", n * 0.1 / 10 }') ;;
        esac
        for n in ${MANY_PARALLEL:-32 128 512}; do
            if [ "$lim" != unlimited ] && [ $((n * 2 + 256)) -gt "$lim" ]; then
                echo "# many: -P $n skipped: the process limit is $lim"
                continue
            fi
            name="many-$server-$n"
            # shellcheck disable=SC2086
            start_server "$WORK/$name-server.tsv" $flags --log "$WORK/$name.csv"
            many_run "$name" "$n" "$mc"
            stop_server
            set -- $(cat "$WORK/$name.res")
            att=$(col "$WORK/$name-server.tsv" requests)
            span=$(server_span "$WORK/$name.csv")
            row "many-$server" "aimd-P$n" "$1" "$opt" \
                "$(awk -v c="$1" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')" "$mc" "$2" "$att" \
                "$(awk -v a="$att" -v k="$2" 'BEGIN { printf "%.1f", a ? 100 * (a - k) / a : 0 }')" \
                - - - - - "attempts_per_request=$(awk -v a="$att" -v n="$mc" 'BEGIN { printf "%.2f", a / n }') failed=$((mc - $2)) gave_up=$3 server_span_s=$span span_ratio=$(awk -v c="$span" -v o="$opt" 'BEGIN { printf "%.2f", c / o }') processes_max=$4 holding=$5 waiting=$6 cpu_s=$7"
            sleep 1.2 # the next server is new; the machine settles
        done
    done
}

# --- fleet  ----------------------------------------------------
# The fleet's bound on each Redis step: the 32 processes of the 4 "hosts" and
# Redis share this machine's cores, which no fleet's hosts do; DESIGN.md's
# advice for hosts too busy to get an answer in the default 20 ms is to raise it.
FLEET_TIMEOUT_MS=${FLEET_TIMEOUT_MS:-100}
# The servers: the issue's two by default; FLEET_SERVERS adds the other ways
# servers throttle (a bucket without a hint or with a constant Retry-After: 1,
# a cap with Retry-After: 1 or whose 429 takes 10 ms), to judge the fleet's
# reading of a throttle as a rate or a concurrency limit.
FLEET_SERVERS=${FLEET_SERVERS:-bucket cap}

bench_fleet() {
    command -v redis-server >/dev/null 2>&1 || { echo "# fleet: no redis-server, skipped"; return 0; }
    rport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$WORK/redis"
    setsid redis-server --bind 127.0.0.1 --port "$rport" --save '' --appendonly no --dir "$WORK/redis" \
        >"$WORK/redis/log" 2>&1 &
    REDIS_PID=$!
    _w=0
    until [ "$(redis-cli -p "$rport" ping 2>/dev/null)" = PONG ]; do
        _w=$((_w + 1))
        [ $_w -gt 100 ] && { echo "# fleet: redis-server did not start, skipped"; return 0; }
        sleep 0.1
    done
    echo "# fleet: 4 hosts (own XDG_RUNTIME_DIR each) x 8 loadgen processes started at one instant (loadgen --start-at-ms); redis = BACKOFF_SHARE=redis://127.0.0.1 (one redis-server, ?timeout_ms=$FLEET_TIMEOUT_MS: 32 processes and Redis on $(nproc) cores are hosts too busy for 20 ms), host = each host alone; completion_s from the common start, server_span_s from the first arrival to the last answer at the server"
    for server in $FLEET_SERVERS; do
        case $server in
        bucket) flags="--rate 20 --burst 20" threads=1 req=8 total=256 opt=11.80 ;;
        bucket-none) flags="--rate 20 --burst 20 --bucket-hints none" threads=1 req=8 total=256 opt=11.80 ;;
        bucket-fixed) flags="--rate 20 --burst 20 --bucket-hints fixed" threads=1 req=8 total=256 opt=11.80 ;;
        cap) flags="--max-busy 50 --service-ms 100" threads=4 req=64 total=2048 opt=4.10 ;;
        cap-fixed) flags="--max-busy 50 --service-ms 100 --retry-after 1" threads=4 req=64 total=2048 opt=4.10 ;;
        cap-10ms) flags="--max-busy 50 --service-ms 100 --error-ms 10" threads=4 req=64 total=2048 opt=4.10 ;;
        *) echo "backoff bench: FLEET_SERVERS: unknown server \"$server\": expected bucket, bucket-none, bucket-fixed, cap, cap-fixed or cap-10ms" >&2; return 2 ;;
        esac
        for mode in redis host; do
            name="fleet-$server-$mode"
            share=host
            [ $mode = redis ] && share="redis://127.0.0.1:$rport?namespace=$name&timeout_ms=$FLEET_TIMEOUT_MS"
            # shellcheck disable=SC2086
            start_server "$WORK/$name-server.tsv" $flags --log "$WORK/$name.csv"
            procs_run "$name" "$share" 4 8 "$threads" "$req"
            stop_server
            set -- $(cat "$WORK/$name.res")
            span=$(server_span "$WORK/$name.csv")
            sratio=$(awk -v c="$span" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')
            att=$(col "$WORK/$name-server.tsv" requests)
            rej=$(col "$WORK/$name-server.tsv" rejected)
            ratio=$(awk -v c="$1" -v o="$opt" 'BEGIN { printf "%.2f", c / o }')
            per=$(awk -v a="$att" -v n="$total" 'BEGIN { printf "%.2f", a / n }')
            met=$(awk -v r="$sratio" -v p="$per" -v ok="$2" -v n="$total" \
                'BEGIN { print (r <= 1.15 && p <= 1.25 && ok == n) ? "yes" : "no" }')
            row "fleet-$server" "aimd-$mode" "$1" "$opt" "$ratio" "$total" "$2" "$att" \
                "$(awk -v a="$att" -v r="$rej" 'BEGIN { printf "%.1f", a ? 100 * r / a : 0 }')" - - - \
                "$(col "$WORK/$name-server.tsv" max_concurrency)" - \
                "attempts_per_request=$per server_span_s=$span span_ratio=$sratio target=span_ratio<=1.15,attempts<=1.25 met=$met"
            sleep 1.2
        done
    done
    # The cost of Redis per call: 400 sequential calls that need no retry.
    start_server "$WORK/fleet-cost-server.tsv"
    for mode in host redis host redis; do
        share=host
        [ $mode = redis ] && share="redis://127.0.0.1:$rport?namespace=cost"
        mkdir -p -m 700 "$WORK/cost.$mode"
        XDG_RUNTIME_DIR="$WORK/cost.$mode" BACKOFF_SHARE=$share "$BUILD/backoff" -- "$BUILD/loadgen" \
            --url "http://127.0.0.1:$PORT/item/{n}" --requests 400 --threads 1 >"$WORK/cost-$mode.tsv" 2>/dev/null
        echo "$(col "$WORK/cost-$mode.tsv" completion_s)" >>"$WORK/cost-$mode.all"
    done
    stop_server
    h=$(sort -n "$WORK/cost-host.all" | head -1)
    r=$(sort -n "$WORK/cost-redis.all" | head -1)
    row fleet-cost aimd-redis - - - 400 - - - - - - - - \
        "us_per_call=$(awk -v h="$h" -v r="$r" 'BEGIN { printf "%.0f", (r - h) * 1e6 / 400 }') host_s=$h redis_s=$r (best of 2; an admission and a completion)"
    kill "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=""
}

bench_overhead() {
    if [ -f "$top/demo/bench-overhead.sh" ]; then
        BUILD="$BUILD" sh "$top/demo/bench-overhead.sh" | awk -F'\t' '
            /^#/ { print; next }
            !h { for (i = 1; i <= NF; i++) name[i] = $i; h = 1; next }
            { extra = ""; for (i = 3; i <= NF; i++) extra = extra (extra ? " " : "") name[i] "=" $i;
              printf "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", $1, $2, extra }'
    fi
}

bench_http() {
    BUILD="$BUILD" sh "$top/demo/bench-http.sh" | awk -F'\t' '
        /^#/ { print; next }
        !h { for (i = 1; i <= NF; i++) name[i] = $i; h = 1; next }
        { extra = ""; for (i = 3; i <= NF; i++) extra = extra (extra ? " " : "") name[i] "=" $i;
          printf "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", $1, $2, extra }'
}

# The harm table (demo/bench-harm.sh: issue-style rows, plain against under
# backoff, each with its target): printed as comments, it has no TSV rows.
bench_harm() {
    BUILD="$BUILD" sh "$top/demo/bench-harm.sh" | sed 's/^/# /'
}

# The start-up cost alone (demo/bench-startup.sh: harm's cost rows), as comments.
bench_startup() {
    BUILD="$BUILD" sh "$top/demo/bench-startup.sh" | sed 's/^/# /'
}

# The peers table (demo/bench-peers.sh: the real retry tools beside backoff,
# each row with backoff's targets): printed as comments, it has no TSV rows.
bench_peers() {
    BUILD="$BUILD" sh "$top/demo/bench-peers.sh" | sed 's/^/# /'
}

bench_real() {
    BUILD="$BUILD" sh "$top/demo/bench-real-programs.sh" | awk -F'\t' '
        /^#/ { print; next }
        !h { for (i = 1; i <= NF; i++) name[i] = $i; h = 1; next }
        { extra = ""; for (i = 3; i <= NF; i++) extra = extra (extra ? " " : "") name[i] "=" $i;
          printf "%s\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", $1, $2, extra }'
}

bench_own() {
    BUILD="$BUILD" sh "$top/demo/bench-own-retries.sh" | awk -F'\t' '
        /^#/ { print; next }
        !h { for (i = 1; i <= NF; i++) name[i] = $i; h = 1; next }
        { extra = ""; for (i = 2; i <= NF; i++) extra = extra (extra ? " " : "") name[i] "=" $i;
          printf "own\t%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t%s\n", $1, extra }'
}

for s in $SCENARIOS; do
    case "$s" in
    burst) bench_burst ;;
    sizes) bench_sizes ;;
    room) bench_room ;;
    outage) bench_outage ;;
    pacing) bench_pacing ;;
    fairness) bench_fairness ;;
    overhead) bench_overhead ;;
    http) bench_http ;;
    harm) bench_harm ;;
    startup) bench_startup ;;
    peers) bench_peers ;;
    multi) bench_multi ;;
    real) bench_real ;;
    own) bench_own ;;
    headers) bench_headers ;;
    quota) bench_quota ;;
    share) bench_share ;;
    share-threads) bench_share_threads ;;
    many) bench_many ;;
    fleet) bench_fleet ;;
    *) echo "backoff bench: unknown scenario \"$s\": expected burst, sizes, room, outage, pacing, fairness, multi, share, share-threads, many, fleet, overhead, http, harm, startup, peers, real, own, headers or quota" >&2; exit 2 ;;
    esac
done
