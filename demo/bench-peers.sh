#!/bin/sh
# The peers bench (make bench scenario peers): the real retry tools a user
# would try instead of `backoff`, each set up as its own documentation
# recommends, side by side with the plain client under `backoff --`, on
# the same loopback ratelimit-server, in one run.  A benchmark: it prints
# figures and whether backoff meets the targets of issue 49; it does not fail
# on them.
#
# Clients (demo/peers/: one small script per peer; every item's body checked):
#   backoff-python  requests, its own retries off, under `backoff --`
#   backoff-curl    curl (one process, its N URLs), no --retry, under `backoff --`
#   backoff-wget    wget --tries=1 -i (its N URLs), under `backoff --`
#     (defaults; a fresh state: an XDG_RUNTIME_DIR of its own each run,
#     shared host-wide by that run's processes, as on one machine)
#   urllib3         Retry(total=10, backoff_factor=0.5, status_forcelist=[429,503],
#                   respect_retry_after_header=True) mounted in requests
#   tenacity        requests under wait_random_exponential(max=60),
#                   stop_after_attempt(10), retrying 429, 503, connection errors
#   curl-retry      curl --retry 10 --retry-all-errors --retry-max-time 120
#   wget-retry      wget --tries=10 --waitretry=10 --retry-on-http-error=429,503
#                   (and --retry-connrefused in the refused outage)
#   got             got, retry: {limit: 10}
#   undici          undici's RetryAgent, maxRetries 10
#   axios-retry     axios with axios-retry: retries 10, exponentialDelay
#   backoff-botocore, botocore-standard, botocore-adaptive (S3 only):
#                   botocore's retries off under `backoff --`; its standard and
#                   adaptive modes with max_attempts 10
#
# Workloads (P processes x N items, each process its own items, one after
# another; ratelimit-server on 127.0.0.1, a fresh one each run):
#   1  1 x 40, token bucket 10/s burst 3, Retry-After: 1        optimum 3.70 s
#   2  8 x 20, token bucket 20/s burst 20, no hint              optimum 7.00 s
#   3  50 x 30, 25 in flight (50 ms each), 503 + Retry-After: 1 optimum 3.00 s
#   4  8 x 10, 20 per 2 s fixed window, GitHub's x-ratelimit headers
#      (started 20 ms into a window)                            optimum 6.00 s
#   5  8 x 100, every answer 20 ms, an outage (503, no hint) from 1 s for 5 s
#      (every process has connected before it, none is done) optimum 7.00 s
#   6  the same with the outage refusing connections (and dropping the
#      requests on open ones)                                   optimum 7.00 s
#   7  S3: 8 x 10 GetObject (path-style /item/K), token bucket 10/s burst 10,
#      503 SlowDown with S3's error XML, no hint               optimum 7.00 s
#   The optimum is the server's own time for the work (client start-up left
#   out): a bucket's (items - burst) / rate, a cap's items x 50 ms / 25, a
#   window's start of the last window needed, an outage's 5 s plus a
#   process's 100 x 20 ms; and one request per item.
#
# Figures per workload and client, over PEERS_RUNS runs (3): the median wall
# time (from the first process's launch to the last one's exit), the median
# of the requests the server answered (its summary line; connections refused
# are not requests), the items failed (the range over the runs), and for the
# backoff rows the issue's targets: 0 failed where any peer failed none,
# fewer requests than every peer (or one an item: none fewer is possible),
# time no worse than the fastest peer.  PEERS_TSV=FILE also writes the rows
# as TSV (workload, client, time_s, optimum_s, requests, failed_min,
# failed_max; make demo draws them).
#
# Environment: BUILD (build), PEERS_RUNS (3), PEERS_WORKLOADS ("1 2 3 4 5 6
# 7"), PEERS_CLIENTS (all: a space-separated subset narrows a run),
# PEERS_TIMEOUT (60: seconds a process may take; the whole process group is
# killed past it and its items count as failed).
# Dependencies: the Debian packages (demo/ensure-deps.sh peers: python3-requests,
# -urllib3, -tenacity, -botocore, curl, wget, nodejs, npm where Node has none)
# and the npm packages (got, undici, axios, axios-retry, exact versions below,
# into $BUILD/peers/npm with npm install --prefix) are installed when missing.
# Takes about 31 minutes with the defaults (1,869 s on a 2-core VM at load 7 to 11),
# 96% of it the clients' own time (the sum of the medians, x 3 runs: 1,789 s), so
# only fewer runs or clients make it shorter: PEERS_RUNS=1 takes about 10 minutes.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
RUNS=${PEERS_RUNS:-3}
WORKLOADS=${PEERS_WORKLOADS:-"1 2 3 4 5 6 7"}
ONLY=${PEERS_CLIENTS:-}
LIMIT=${PEERS_TIMEOUT:-60}
for v in RUNS:$RUNS LIMIT:$LIMIT; do
    case ${v#*:} in
    '' | *[!0-9]* | 0) echo "backoff: PEERS_${v%%:*} \"${v#*:}\" is not valid: expected a whole number >= 1" >&2
                       exit 2 ;;
    esac
done
for w in $WORKLOADS; do
    case $w in
    [1-7]) ;;
    *) echo "backoff: PEERS_WORKLOADS: \"$w\" is not valid: expected workloads from 1 to 7" >&2; exit 2 ;;
    esac
done
for f in "$BUILD/backoff" "$BUILD/libbackoff.so" "$BUILD/ratelimit-server"; do
    [ -e "$f" ] || { echo "backoff: $f is missing: run make first" >&2; exit 2; }
done
PY=/usr/bin/python3 # Debian's, with Debian's modules (a python3 on PATH may be another)
PEERS="$top/demo/peers"
NPM_DIR="$BUILD/peers/npm"

sh "$top/demo/ensure-deps.sh" peers >&2

WORK=$(mktemp -d "${TMPDIR:-/tmp}/backoff-bench-peers.XXXXXX")
SERVER_PID=""
PIDS=""
cleanup() {
    for p in $PIDS; do kill -KILL -- "-$p" 2>/dev/null || true; done
    if [ -n "$SERVER_PID" ]; then
        kill -CONT "$SERVER_PID" 2>/dev/null || true
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
. "$top/demo/lib.sh"

# --- the npm packages ------------------------------------------------------
# Exact versions, the newest that run on this Node (got 14 and undici 7 need
# Node 20; Debian 12's Node 18 gets got 13 and undici 6).
NODE_OK=0
node_pkgs() {
    _v=$(node -p 'process.versions.node' 2>/dev/null) || return 1
    if [ "$(printf '%s\n20.18.1\n' "$_v" | sort -V | head -n 1)" = 20.18.1 ]; then
        echo "got@14.6.5 undici@7.30.2 axios@1.21.1 axios-retry@4.5.0"
    else
        echo "got@13.0.0 undici@6.29.1 axios@1.21.1 axios-retry@4.5.0"
    fi
}
if want=$(node_pkgs) && command -v npm >/dev/null 2>&1; then
    if [ "$(cat "$NPM_DIR/.installed" 2>/dev/null)" = "$want" ]; then
        NODE_OK=1
    else
        rm -rf "$NPM_DIR"
        mkdir -p "$NPM_DIR"
        echo '{ "private": true }' >"$NPM_DIR/package.json"
        echo "backoff: installing the npm peers into $NPM_DIR: $want" >&2
        # shellcheck disable=SC2086
        if timeout -k 2 600 npm install --prefix "$NPM_DIR" --no-audit --no-fund --save-exact \
            $want >"$NPM_DIR/npm.log" 2>&1; then
            echo "$want" >"$NPM_DIR/.installed"
            NODE_OK=1
        else
            echo "backoff: npm install failed (the Node peers are skipped): $(tail -n 3 "$NPM_DIR/npm.log")" >&2
        fi
    fi
fi
PEERS_NPM=$NPM_DIR
export PEERS_NPM

# --- workloads ----------------------------------------------------------------
# workload W: sets NAME, P, N, FLAGS, OPT, CLIENTS for workload W.
ALL="backoff-python backoff-curl backoff-wget urllib3 tenacity curl-retry wget-retry got undici axios-retry"
workload() {
    CLIENTS=$ALL
    case $1 in
    1) NAME="1 x 40, bucket 10/s burst 3, Retry-After: 1" P=1 N=40 OPT=3.70
       FLAGS="--rate 10 --burst 3 --bucket-hints fixed --retry-after 1" ;;
    2) NAME="8 x 20, bucket 20/s burst 20, no hint" P=8 N=20 OPT=7.00
       FLAGS="--rate 20 --burst 20 --bucket-hints none" ;;
    3) NAME="50 x 30, 25 in flight x 50 ms, 503 + Retry-After: 1" P=50 N=30 OPT=3.00
       FLAGS="--max-busy 25 --service-ms 50 --reject-status 503 --retry-after 1" ;;
    4) NAME="8 x 10, 20 per 2 s window, GitHub's headers" P=8 N=10 OPT=6.00
       FLAGS="--window-requests 20 --window-s 2 --ratelimit-headers x-ratelimit" ;;
    5) NAME="8 x 100, 20 ms each, outage 503 (no hint) 5 s" P=8 N=100 OPT=7.00
       FLAGS="--delay-ms 20 --outage-at 1 --outage-for 5 --outage-mode 503" ;;
    6) NAME="8 x 100, 20 ms each, outage refusing connections 5 s" P=8 N=100 OPT=7.00
       FLAGS="--delay-ms 20 --outage-at 1 --outage-for 5 --outage-mode refuse" ;;
    7) NAME="S3: 8 x 10 GetObject, bucket 10/s burst 10, 503 SlowDown" P=8 N=10 OPT=7.00
       FLAGS="--rate 10 --burst 10 --reject-status 503 --bucket-hints none --reject-body s3"
       CLIENTS="backoff-botocore botocore-standard botocore-adaptive" ;;
    esac
}

# launch CLIENT I FIRST COUNT DIR: start process I of a run in the background,
# in its own process group under timeout; its pid joins PIDS.
launch() {
    _c=$1 _i=$2 _f=$3 _n=$4 _d=$5
    _l=$((_f + _n - 1))
    _u="http://127.0.0.1:$PORT"
    _wr=""
    [ "$W" = 6 ] && _wr="--retry-connrefused"
    case $_c in *wget*) seq "$_f" "$_l" | sed "s|^|$_u/item/|" >"$_d/urls.$_i" ;; esac
    _bo="env XDG_RUNTIME_DIR=$_d/xdg $BUILD/backoff --"
    # shellcheck disable=SC2086
    case $_c in
    backoff-python) set -- $_bo "$PY" "$PEERS/requests_plain.py" "$_u" "$_f" "$_n" ;;
    backoff-curl) set -- $_bo curl -sS -o "$_d/f/f_#1" "$_u/item/[$_f-$_l]" ;;
    backoff-wget) set -- $_bo wget -q --tries=1 -P "$_d/f" -i "$_d/urls.$_i" ;;
    backoff-botocore) set -- $_bo "$PY" "$PEERS/botocore_s3.py" "$_u" "$_f" "$_n" off ;;
    urllib3) set -- "$PY" "$PEERS/requests_urllib3.py" "$_u" "$_f" "$_n" ;;
    tenacity) set -- "$PY" "$PEERS/requests_tenacity.py" "$_u" "$_f" "$_n" ;;
    curl-retry) set -- curl -sS --retry 10 --retry-all-errors --retry-max-time 120 \
                    -o "$_d/f/f_#1" "$_u/item/[$_f-$_l]" ;;
    wget-retry) set -- wget -q --tries=10 --waitretry=10 --retry-on-http-error=429,503 $_wr \
                    -P "$_d/f" -i "$_d/urls.$_i" ;;
    got) set -- node "$PEERS/got.mjs" "$_u" "$_f" "$_n" ;;
    undici) set -- node "$PEERS/undici.mjs" "$_u" "$_f" "$_n" ;;
    axios-retry) set -- node "$PEERS/axios.mjs" "$_u" "$_f" "$_n" ;;
    botocore-standard) set -- "$PY" "$PEERS/botocore_s3.py" "$_u" "$_f" "$_n" standard ;;
    botocore-adaptive) set -- "$PY" "$PEERS/botocore_s3.py" "$_u" "$_f" "$_n" adaptive ;;
    *) echo "backoff: unknown peers client \"$_c\"" >&2; exit 2 ;;
    esac
    # a simple command: $! is setsid's pid, which becomes timeout's, the group's leader
    setsid timeout -k 2 "$LIMIT" "$@" >"$_d/out.$_i" 2>"$_d/err.$_i" &
    PIDS="$PIDS $!"
}

# items_ok CLIENT ITEMS DIR: the items 1..ITEMS the run's processes got right
# (curl and wget: the files they left, one check for all; the scripts: the
# sum of their "ok N failed M" lines, a process that printed none got none).
items_ok() {
    case $1 in
    *curl*) "$PY" "$PEERS/check_files.py" "$3/f" f_ 1 "$2" ;;
    *wget*) "$PY" "$PEERS/check_files.py" "$3/f" "" 1 "$2" ;;
    *) cat "$3"/out.* | awk '/^ok [0-9]+ failed [0-9]+$/ { s += $2 } END { print s + 0 }' ;;
    esac
}

# wait_window S: sleep until 20 ms past the start of an S-second window of the
# epoch (the server's windows are aligned to it).
wait_window() {
    _ms=$(date +%s%3N)
    _p=$(($1 * 1000))
    sleep "$(awk -v m=$(( (_p - _ms % _p + 20) % _p )) 'BEGIN { printf "%.3f", m / 1000 }')"
}

# run_once CLIENT R: one run of the current workload; appends "W CLIENT R
# time requests failed killed" to $WORK/runs.tsv.
run_once() {
    _d="$WORK/w$W-$1-$2"
    mkdir -p "$_d/f"
    mkdir -m 700 "$_d/xdg"
    # shellcheck disable=SC2086
    start_server "$_d/server.tsv" $FLAGS
    [ "$W" = 4 ] && wait_window 2
    PIDS=""
    _t0=$(date +%s%N)
    _i=0
    while [ $_i -lt "$P" ]; do
        launch "$1" $_i $((_i * N + 1)) "$N" "$_d"
        _i=$((_i + 1))
    done
    _killed=0
    for _p in $PIDS; do
        _rc=0
        wait "$_p" || _rc=$?
        [ "$_rc" = 124 ] || [ "$_rc" = 137 ] && _killed=$((_killed + 1))
    done
    _t1=$(date +%s%N)
    PIDS=""
    stop_server
    _ok=$(items_ok "$1" $((P * N)) "$_d")
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$W" "$1" "$2" \
        "$(awk -v a="$_t0" -v b="$_t1" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')" \
        "$(col "$_d/server.tsv" requests)" $((P * N - _ok)) "$_killed" >>"$WORK/runs.tsv"
    rm -rf "$_d"
    sleep 0.1 # the next server is new; the machine settles
}

# report W: the workload's rows from runs.tsv, then the backoff rows' targets.
report() {
    awk -F'\t' -v w="$1" -v name="$NAME" -v opt="$OPT" -v items=$((P * N)) -v order="$CLIENTS" \
        -v tsv="${PEERS_TSV:-}" '
    function median(s,   a, n, i, j, t) {
        n = split(s, a, " ")
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $1 == w {
        c = $2; tm[c] = tm[c] " " $4; rq[c] = rq[c] " " $5
        if (!(c in lo) || $6 < lo[c]) lo[c] = $6
        if (!(c in hi) || $6 > hi[c]) hi[c] = $6
        k[c] += $7
    }
    END {
        n = split(order, cl, " ")
        printf "| %s | optimum | %.2f | %d | 0 | |\n", w ": " name, opt, items
        best_t = -1; best_r = -1; peer_zero = 0
        for (i = 1; i <= n; i++) {
            c = cl[i]
            if (!(c in tm)) continue
            t[c] = median(tm[c]); r[c] = median(rq[c])
            if (c !~ /^backoff-/) {
                if (best_t < 0 || t[c] < best_t) { best_t = t[c]; best_p = c }
                if (best_r < 0 || r[c] < best_r) best_r = r[c]
                if (hi[c] == 0) peer_zero = 1
            }
        }
        for (i = 1; i <= n; i++) {
            c = cl[i]
            if (!(c in tm)) continue
            f = (lo[c] == hi[c]) ? lo[c] : lo[c] "-" hi[c]
            if (k[c]) f = f " (" k[c] " killed at the time limit)"
            met = ""
            if (c ~ /^backoff-/ && best_t >= 0) {
                why = ""
                if (peer_zero && hi[c] > 0) why = why ", failed items"
                if (r[c] >= best_r && r[c] > items) why = why ", requests"
                if (t[c] > best_t) why = why ", time (" best_p " " sprintf("%.2f", best_t) ")"
                met = why == "" ? "yes" : "**no**: " substr(why, 3)
            }
            printf "| | %s | %.2f (%.2fx) | %d | %s | %s |\n", c, t[c], t[c] / opt, r[c], f, met
            if (tsv != "")
                printf "%s\t%s\t%.2f\t%.2f\t%d\t%d\t%d\n", w, c, t[c], opt, r[c], lo[c], hi[c] >>tsv
        }
    }' "$WORK/runs.tsv"
}

have() { # have CLIENT: can this machine run it?
    case $1 in
    got | undici | axios-retry) [ "$NODE_OK" = 1 ] ;;
    *wget*) command -v wget >/dev/null 2>&1 ;;
    *curl*) command -v curl >/dev/null 2>&1 ;;
    *) true ;;
    esac
}

echo "# peers bench: $(uname -srm), $(nproc) cores, $(awk '/model name/ { sub(/.*: /, ""); print; exit }' /proc/cpuinfo)"
echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); tree: $(git -C "$top" describe --always --dirty 2>/dev/null || echo unknown);" \
    "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# peers: $(curl --version | head -n 1 | cut -d' ' -f1,2), $(wget --version | head -n 1 | cut -d' ' -f1-3)," \
    "python3 $("$PY" -c 'import platform, requests, urllib3, botocore
try:
    from importlib.metadata import version; t = version("tenacity")
except Exception:
    t = "?"
print(platform.python_version(), "requests", requests.__version__, "urllib3", urllib3.__version__,
      "tenacity", t, "botocore", botocore.__version__)')," \
    "node $(node -v 2>/dev/null || echo none) $(cat "$NPM_DIR/.installed" 2>/dev/null || echo '(no npm peers)')"
echo "# median of $RUNS runs; time: first launch to last exit (x the optimum); requests: answered by the server;"
echo "# failed: items not right at the end (range over the runs); met: backoff's targets (0 failed where a peer"
echo "# has 0, fewer requests than every peer or one an item, time no worse than the fastest peer)"
echo
echo "| workload | client | time s (x optimum) | requests | failed | met |"
echo "| --- | --- | --- | --- | --- | --- |"
: >"$WORK/runs.tsv"
if [ -n "${PEERS_TSV:-}" ]; then
    printf 'workload\tclient\ttime_s\toptimum_s\trequests\tfailed_min\tfailed_max\n' >"$PEERS_TSV"
fi
_start=$(date +%s)
for W in $WORKLOADS; do
    workload "$W"
    set --
    for c in $CLIENTS; do
        if [ -n "$ONLY" ]; then
            case " $ONLY " in *" $c "*) ;; *) continue ;; esac
        fi
        have "$c" || { echo "# workload $W: $c skipped (not installed)"; continue; }
        set -- "$@" "$c"
    done
    # the runs go round the clients (each client's runs spread over the workload's time)
    r=1
    while [ $r -le "$RUNS" ]; do
        for c in "$@"; do run_once "$c" $r; done
        r=$((r + 1))
    done
    report "$W"
done
echo
echo "# peers bench: $(( $(date +%s) - _start )) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
