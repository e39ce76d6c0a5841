#!/bin/sh
# curl's parallel mode (-Z: curl_multi_poll + curl_multi_perform) over 200
# URLs, each to its own file, against a token bucket without and with
# Retry-After and against a concurrency cap: without the shim files hold
# "rejected", under it every file holds exactly its item's bytes, in few
# attempts.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] || fail "build $BUILD/libbackoff.so first"
LIB="$(cd "$BUILD" && pwd)/libbackoff.so" # curl runs in another directory
N=200

# check DIR PREFIX: prints how many of the N files are not their item's bytes
check() {
    /usr/bin/python3 - "$1" "$2" "$N" <<'PY'
import os, sys
d, p, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = 0
for i in range(1, n + 1):
    want = (("item=%d;" % i) * 64)[:64].encode()
    try:
        got = open(os.path.join(d, "%s%d" % (p, i)), "rb").read()
    except OSError:
        got = None
    bad += got != want
print(bad)
PY
}

run_case() { # NAME server-flags...
    name=$1; shift
    start_server "$name" "$@"
    URL="http://127.0.0.1:$PORT/item/[1-$N]"
    mkdir -p "$TMP/$name"
    (cd "$TMP/$name" && setsid timeout -k 2 60 curl -sS -Z --parallel-max 20 "$URL" -o "plain_#1") \
        >"$TMP/$name.plain.log" 2>&1 || true
    bad=$(check "$TMP/$name" plain_)
    [ "$bad" -gt 0 ] || fail "$name: plain curl -Z got every file right: the server does not throttle it"
    note "$name: plain curl -Z: $bad of $N files wrong"
    t0=$(date +%s%N)
    (cd "$TMP/$name" && setsid timeout -k 2 120 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$name.stats" \
        curl -sS -Z --parallel-max 20 "$URL" -o "shim_#1") >"$TMP/$name.shim.log" 2>&1 ||
        fail "$name: curl -Z under the shim failed: $(cat "$TMP/$name.shim.log")"
    t1=$(date +%s%N)
    bad=$(check "$TMP/$name" shim_)
    [ "$bad" = 0 ] || fail "$name: $bad of $N files wrong under the shim"
    calls=$(stats_sum "$TMP/$name.stats" calls)
    attempts=$(stats_sum "$TMP/$name.stats" attempts)
    [ "$calls" = "$N" ] || fail "$name: $calls calls counted, expected $N"
    [ "$attempts" -le $((N * 3 / 2)) ] || fail "$name: $attempts attempts for $N requests"
    stop_server
    note "$name: under the shim every file right in $(((t1 - t0) / 1000000)) ms, $attempts attempts for $N requests; server: $(summary_field "$TMP/$name.out" rejected) rejected"
}

run_case bucket-nohint --rate 40 --burst 20 --bucket-hints none
run_case bucket-hint --rate 40 --burst 20
run_case cap --max-busy 5 --service-ms 50
echo "PASS"
