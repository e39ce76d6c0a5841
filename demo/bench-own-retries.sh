#!/bin/sh
# A program that retries on its own, plain and under the shim
# (defaults), counted at the server (for a closed port: the shim's trace
# rows, one per attempt; plain curl makes 1 + 3).  Cases:
#   curl-retry3-503        curl -o F --retry 3, always 503
#   curl-connrefused       curl --retry 3 --retry-connrefused, a closed
#                          127.0.0.1 port named in BACKOFF_HOSTS
#   pycurl-loop3-503       a pycurl loop, a new handle per try, 3 retries
#                          (waits 0.5, 1, 2 s), always 503
#   curl-retry10-back10s   curl --retry 10, a server answering 503 for its
#                          first 10 s (both runs at once, a server each)
# Each of the first three again with BACKOFF_MAX_TIME_MS=1000 (-maxtime1s:
# the shim's part of a logical request bounded to a second, then handed
# back to the program's own retries).  Targets: requests <= 8 and time <=
# plain + 1.5 s (the last case: shim no later than plain + 1.5 s).  A lone
# call to a server that is down (nothing else uses the destination) is
# handed back after its 4 attempts (the retry budget funds no more, and no
# other work will tell when the server is back), so the program's own
# retries continue it: 4 + 3 requests in all.
# -maxtime1s bounds it to a second.  A benchmark: it prints the figures and
# whether each target is met.
#
# Output: TSV with a header (case plain_requests plain_ms shim_requests
# shim_ms target), runnable as `sh demo/bench-own-retries.sh` or from make
# bench with BENCH_SCENARIOS=own.  Environment: BUILD (default build).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
LIB="$BUILD/libbackoff.so"
SRV="$BUILD/ratelimit-server"
[ -e "$LIB" ] && [ -e "$SRV" ] || { echo "backoff: $LIB or $SRV is missing: run make all first" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-own.XXXXXX")
SPID=""
trap '[ -z "$SPID" ] || kill $SPID 2>/dev/null || true; rm -rf "$TMP"' EXIT INT TERM

now_ms() { date +%s%3N; }

# serve NAME FLAGS...: a server on a free port; sets PORT and SPID.
serve() {
    _n=$1; shift
    "$SRV" --port 0 "$@" >"$TMP/$_n.out" 2>/dev/null &
    SPID="$SPID $!"
    _i=0
    until grep -q '^listening on' "$TMP/$_n.out" 2>/dev/null; do
        _i=$((_i + 1)); [ $_i -gt 300 ] && { echo "backoff: ratelimit-server did not start" >&2; exit 2; }
        sleep 0.05
    done
    PORT=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$TMP/$_n.out")
}
# stop: stop every server (in this shell: a subshell cannot wait for them).
stop() {
    for p in $SPID; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    SPID=""
}
# requests NAME: NAME's answered requests, from its summary (after stop).
requests() {
    awk -F'\t' '$1 == "requests" { h = 1; next } h { print $1; exit }' "$TMP/$1.out"
}
row() { # CASE PN PMS SN SMS TARGET_MS
    ok=no
    [ "$4" -le 8 ] && [ "$5" -le "$6" ] && ok=yes
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$ok"
}

printf 'case\tplain_requests\tplain_ms\tshim_requests\tshim_ms\ttarget\n'

serve p; t=$(now_ms); curl -s -o "$TMP/f" --retry 3 "http://127.0.0.1:$PORT/status/503" || true
pms=$(($(now_ms) - t)); stop; pn=$(requests p)
for mt in 0 1000; do
    serve s; t=$(now_ms)
    BACKOFF_MAX_TIME_MS=$mt LD_PRELOAD="$LIB" curl -s -o "$TMP/f" --retry 3 "http://127.0.0.1:$PORT/status/503" || true
    sms=$(($(now_ms) - t)); stop; sn=$(requests s)
    row "curl-retry3-503$([ $mt = 0 ] || echo -maxtime1s)" "$pn" "$pms" "$sn" "$sms" $((pms + 1500))
done

CP=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
t=$(now_ms); curl -s -o /dev/null --retry 3 --retry-connrefused "http://127.0.0.1:$CP/" || true
pms=$(($(now_ms) - t))
for mt in 0 1000; do
    rm -f "$TMP/c.csv"; t=$(now_ms)
    BACKOFF_MAX_TIME_MS=$mt BACKOFF_HOSTS=127.0.0.1 BACKOFF_TRACE="$TMP/c.csv" LD_PRELOAD="$LIB" \
        curl -s -o /dev/null --retry 3 --retry-connrefused "http://127.0.0.1:$CP/" || true
    sms=$(($(now_ms) - t)); sn=$(($(wc -l <"$TMP/c.csv") - 1))
    row "curl-connrefused$([ $mt = 0 ] || echo -maxtime1s)" 4 "$pms" "$sn" "$sms" $((pms + 1500))
done

serve p; t=$(now_ms); /usr/bin/python3 "$top/tests/programs/pycurl_retry.py" "http://127.0.0.1:$PORT/status/503" >/dev/null || true
pms=$(($(now_ms) - t)); stop; pn=$(requests p)
for mt in 0 1000; do
    serve s; t=$(now_ms)
    BACKOFF_MAX_TIME_MS=$mt LD_PRELOAD="$LIB" /usr/bin/python3 "$top/tests/programs/pycurl_retry.py" "http://127.0.0.1:$PORT/status/503" >/dev/null || true
    sms=$(($(now_ms) - t)); stop; sn=$(requests s)
    row "pycurl-loop3-503$([ $mt = 0 ] || echo -maxtime1s)" "$pn" "$pms" "$sn" "$sms" $((pms + 1500))
done

serve p --outage-at 0 --outage-for 10 --outage-mode 503; PP=$PORT
serve s --outage-at 0 --outage-for 10 --outage-mode 503; PS=$PORT
(t=$(now_ms); curl -s -o "$TMP/dp" --retry 10 "http://127.0.0.1:$PP/item/1" || true
 echo $(($(now_ms) - t)) >"$TMP/p.ms") &
c1=$!
(t=$(now_ms); LD_PRELOAD="$LIB" curl -s -o "$TMP/ds" --retry 10 "http://127.0.0.1:$PS/item/1" || true
 echo $(($(now_ms) - t)) >"$TMP/s.ms") &
c2=$!
wait $c1 $c2
stop
pn=$(requests p)
sn=$(requests s)
row curl-retry10-back10s "$pn" "$(cat "$TMP/p.ms")" "$sn" "$(cat "$TMP/s.ms")" $(($(cat "$TMP/p.ms") + 1500))
