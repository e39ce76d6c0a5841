#!/bin/sh
# Measures ratelimit-server's throughput on this machine, so we know it is never
# the bottleneck of a test or benchmark: rejected requests per second (a
# --max-busy 0 server, and an empty token bucket, error-ms 0) and served
# requests per second (service 0 ms, the default 64-byte /item body).  Uses wrk
# (wrk -t2 -c64 -dNs, keep-alive) when installed, otherwise loadgen.  Prints one
# row per case and the targets: >= 20,000 rejected/s, >= 10,000 served/s.
# DURATION=seconds per case (default 5); STRICT=1 exits 1 below a target.
# The client runs on the same cores as the server, so figures are a floor.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
DURATION=${DURATION:-5}
STRICT=${STRICT:-0}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/backoff-tput.XXXXXX")
SERVER_PID=""
. "$top/demo/lib.sh"
cleanup() {
    [ -n "$SERVER_PID" ] && stop_server
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

for p in ratelimit-server loadgen; do
    [ -x "$BUILD/$p" ] || { echo "backoff: $BUILD/$p is missing; run make first" >&2; exit 1; }
done
tool=${TOOL:-}; [ -n "$tool" ] || { if command -v wrk >/dev/null 2>&1; then tool=wrk; else tool=loadgen; fi; }

# run_case NAME TARGET server-flags...: prints "NAME  req/s  server-counts  verdict".
below=0
run_case() {
    name=$1; target=$2; shift 2
    start_server "$tmp/srv.out" "$@"
    url="http://127.0.0.1:$PORT/item/1"
    if [ $tool = wrk ]; then
        wrk -t2 -c64 -d"${DURATION}s" "$url" >"$tmp/client.out"
        rps=$(awk '/^Requests\/sec:/ { printf "%.0f", $2 }' "$tmp/client.out")
    else
        "$BUILD/loadgen" --url "$url" --threads 8 --duration-s "$DURATION" >"$tmp/client.out"
        rps=$(awk -F'\t' 'NR == 2 { printf "%.0f", $1 / $4 }' "$tmp/client.out")
    fi
    stop_server
    counts=$(awk -F'\t' '$1 == "requests" { getline; printf "requests=%s ok=%s rejected=%s", $1, $2, $3 }' "$tmp/srv.out")
    verdict="ok (target >= $target/s)"
    [ "$rps" -ge "$target" ] || { verdict="BELOW target $target/s"; below=1; }
    printf '%-28s %10s req/s   %-44s %s\n' "$name" "$rps" "$counts" "$verdict"
}

echo "# ratelimit-server throughput, $tool, ${DURATION}s per case, $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
run_case "rejected (max-busy 0)" 20000 --max-busy 0 --error-ms 0
run_case "rejected (empty bucket)" 20000 --rate 0.001 --burst 1 --error-ms 0
run_case "served (service 0 ms)" 10000
[ "$STRICT" = 1 ] && [ $below = 1 ] && exit 1
exit 0
