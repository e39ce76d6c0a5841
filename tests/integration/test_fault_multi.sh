#!/bin/sh
# Faults through libcurl's multi interface (curl -Z over 100 URLs), with the
# easy path's rules (test_fault_reset.sh):
#  - a token bucket whose rejections carry an absurd Retry-After (a date
#    in the year 9999, garbage): without the shim files hold "rejected",
#    under it the wait is bounded by BACKOFF_CAP_MS and every file holds
#    exactly its item's bytes;
#  - every 5th item body cut half way by a TCP reset: bytes were delivered,
#    so the transfer is not retried: one attempt per transfer, and each cut
#    file holds exactly the bytes that arrived (a prefix of its body).
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] || fail "build $BUILD/libbackoff.so first"
LIB="$(cd "$BUILD" && pwd)/libbackoff.so"
N=100

wrong() { # DIR PREFIX: how many of the N files are not their item's bytes
    for n in $(seq 1 $N); do printf "%s " "$n"; tr -d "\n" 2>/dev/null <"$1/$2$n" || true; echo; done |
        awk '{ w = ""; while (length(w) < 64) w = w "item=" $1 ";"; if ($2 != substr(w, 1, 64)) k++ }
             END { print k + 0 }'
}

start_server reset --fault-reset 5
mkdir -p "$TMP/reset"
(cd "$TMP/reset" && setsid timeout -k 2 60 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/reset.stats" \
    curl -sS -Z --parallel-max 10 "http://127.0.0.1:$PORT/item/[1-$N]" -o "shim_#1") \
    >"$TMP/reset.shim" 2>&1 || true
stop_server
cut=$(wrong "$TMP/reset" shim_)
[ "$cut" -gt 0 ] || fail "reset: no body was cut (this case could not fail)"
# at most one attempt per transfer (a transfer curl gave up on before any
# attempt completed counts none: seen once in ten runs, a file never made)
[ "$(stats_sum "$TMP/reset.stats" attempts)" -le $N ] ||
    fail "reset: $(stats_sum "$TMP/reset.stats" attempts) attempts for $N transfers: a cut body was retried; $(tail -n 5 "$TMP/reset.shim")"
[ "$(summary_field "$TMP/reset.out" requests)" -le $N ] || fail "reset: the server saw $(summary_field "$TMP/reset.out" requests) requests"
for n in $(seq 1 $N); do
    f="$TMP/reset/shim_$n"
    got=$(wc -c <"$f" 2>/dev/null || echo 0)
    [ "$got" -gt 0 ] || continue
    item_body "$n" "$got" | cmp -s - "$f" || fail "reset: file $n is not the first $got bytes of its body"
done
note "reset: $cut of $N bodies cut, each file exactly what arrived, $(stats_sum "$TMP/reset.stats" attempts) attempts (none retried)"

run_case() { # NAME server-flags...
    name=$1; shift
    start_server "$name" "$@"
    mkdir -p "$TMP/$name"
    (cd "$TMP/$name" && setsid timeout -k 2 60 curl -sS -Z --parallel-max 10 \
        "http://127.0.0.1:$PORT/item/[1-$N]" -o "plain_#1") >"$TMP/$name.plain" 2>&1 || true
    bad=$(wrong "$TMP/$name" plain_)
    [ "$bad" -gt 0 ] || fail "$name: plain curl -Z got every file right (this test could not fail)"
    (cd "$TMP/$name" && setsid timeout -k 2 90 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$name.stats" \
        BACKOFF_CAP_MS=300 \
        curl -sS -Z --parallel-max 10 "http://127.0.0.1:$PORT/item/[1-$N]" -o "shim_#1") \
        >"$TMP/$name.shim" 2>&1 || fail "$name: curl -Z under the shim failed: $(cat "$TMP/$name.shim")"
    [ "$(wrong "$TMP/$name" shim_)" = 0 ] || fail "$name: $(wrong "$TMP/$name" shim_) files wrong under the shim"
    stop_server
    note "$name: plain $bad of $N files wrong; under the shim none, $(stats_sum "$TMP/$name.stats" retries) retries"
}

run_case retry-after-9999 --rate 40 --burst 10 --retry-after-raw "Fri, 31 Dec 9999 23:59:59 GMT"
run_case retry-after-garbage --rate 40 --burst 10 --retry-after-raw "soon, maybe"

echo "PASS"
