#!/bin/sh
# Faults through libcurl's multi interface (curl -Z over 100 URLs), with the
# easy path's rules (test_fault_reset.sh):
#  - a token bucket whose rejections carry an absurd Retry-After: without
#    the shim files hold "rejected"; under it, garbage is no hint (the wait is
#    bounded by BACKOFF_CAP_MS) and every file holds exactly its item's
#    bytes, while a date in the year 9999 is a refusal past the cap, not
#    waited for: each 429 is the program's at once, not retried (a file holds
#    its item or "rejected", as plain), within seconds;
#  - every 5th item body cut half way by a TCP reset: bytes were delivered,
#    so the transfer is not retried: one attempt per transfer, and each cut
#    file holds exactly the bytes that arrived (a prefix of its body); no
#    transfer is lost (ROUNDS rounds: the loss was seen once in ten runs).
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] || fail "build $BUILD/libbackoff.so first"
LIB="$(cd "$BUILD" && pwd)/libbackoff.so"
N=100

wrong() { # DIR PREFIX: how many of the N files are not their item's bytes
    for n in $(seq 1 $N); do printf "%s " "$n"; tr -d "\n" 2>/dev/null <"$1/$2$n" || true; echo; done |
        awk '{ w = ""; while (length(w) < 64) w = w "item=" $1 ";"; if ($2 != substr(w, 1, 64)) k++ }
             END { print k + 0 }'
}

# The reset case, ROUNDS times (a transfer lost at the end of the run, its
# request never sent, came about once in ten runs): in every round each of
# the N transfers is sent exactly once, and each of the N files exists or is
# accounted for by a curl error line that no cut file claims.
ROUNDS=${ROUNDS:-25}
cuts=0
for round in $(seq 1 "$ROUNDS"); do
    start_server "reset$round" --fault-reset 5
    d="$TMP/reset$round"
    mkdir -p "$d"
    (cd "$d" && setsid timeout -k 2 60 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/reset$round.stats" \
        curl -sS -Z --parallel-max 10 "http://127.0.0.1:$PORT/item/[1-$N]" -o "shim_#1") \
        >"$TMP/reset$round.shim" 2>&1 || true
    stop_server
    made=$(ls "$d" | grep -c '^shim_' || true)
    cut=$(($(wrong "$d" shim_) - (N - made))) # files made, not their whole body
    [ "$cut" -gt 0 ] || fail "reset round $round: no body was cut (this case could not fail)"
    att=$(stats_sum "$TMP/reset$round.stats" attempts)
    req=$(summary_field "$TMP/reset$round.out" requests)
    errs=$(grep -o 'curl: ([0-9]*)' "$TMP/reset$round.shim" | wc -l)
    # a cut body is not retried, and no transfer goes unsent
    [ "$att" = $N ] || fail "reset round $round: $att attempts for $N transfers ($req requests at the server, $made files); curl said: $(tr '\r' '\n' <"$TMP/reset$round.shim" | grep -o 'curl: (.*' | sort | uniq -c | tr '\n' ' ')"
    [ "$req" = $N ] || fail "reset round $round: the server saw $req requests for $N transfers"
    # every cut file has its error line, and so has every missing one
    [ $((cut + N - made)) -le "$errs" ] ||
        fail "reset round $round: $((N - made)) files missing, $errs curl errors for $cut cut bodies"
    [ "$round" = 1 ] || { cuts=$((cuts + cut)); continue; } # the bytes: once is enough
    for n in $(seq 1 $N); do
        f="$d/shim_$n"
        got=$(wc -c <"$f" 2>/dev/null || echo 0)
        [ "$got" -gt 0 ] || continue
        item_body "$n" "$got" | cmp -s - "$f" || fail "reset round $round: file $n is not the first $got bytes of its body"
    done
    cuts=$((cuts + cut))
done
note "reset: $ROUNDS rounds, $cuts of $((ROUNDS * N)) bodies cut, each file exactly what arrived (round 1), $N attempts and $N requests a round (none retried, none lost)"

run_case() { # NAME clean|stands server-flags...
    name=$1 want=$2; shift 2
    start_server "$name" "$@"
    mkdir -p "$TMP/$name"
    (cd "$TMP/$name" && setsid timeout -k 2 60 curl -sS -Z --parallel-max 10 \
        "http://127.0.0.1:$PORT/item/[1-$N]" -o "plain_#1") >"$TMP/$name.plain" 2>&1 || true
    bad=$(wrong "$TMP/$name" plain_)
    [ "$bad" -gt 0 ] || fail "$name: plain curl -Z got every file right (this test could not fail)"
    t0=$(date +%s)
    (cd "$TMP/$name" && setsid timeout -k 2 90 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$name.stats" \
        BACKOFF_CAP_MS=300 \
        curl -sS -Z --parallel-max 10 "http://127.0.0.1:$PORT/item/[1-$N]" -o "shim_#1") \
        >"$TMP/$name.shim" 2>&1 || fail "$name: curl -Z under the shim failed: $(cat "$TMP/$name.shim")"
    secs=$(($(date +%s) - t0))
    stop_server
    shim_bad=$(wrong "$TMP/$name" shim_) retries=$(stats_sum "$TMP/$name.stats" retries)
    if [ "$want" = clean ]; then
        [ "$shim_bad" = 0 ] || fail "$name: $shim_bad files wrong under the shim"
    else
        rej=$(for f in "$TMP/$name"/shim_*; do [ "$(cat "$f")" != rejected ] || echo; done | wc -l)
        [ "$retries" = 0 ] && [ "$shim_bad" -gt 0 ] && [ "$rej" = "$shim_bad" ] && [ "$secs" -lt 10 ] ||
            fail "$name: under the shim $retries retries, $shim_bad files wrong ($rej of them the 429's \"rejected\"), $secs s: the refusals were not handed over at once"
    fi
    note "$name: plain $bad of $N files wrong; under the shim $shim_bad, $retries retries, $secs s"
}

run_case retry-after-9999 stands --rate 40 --burst 10 --retry-after-raw "Fri, 31 Dec 9999 23:59:59 GMT"
run_case retry-after-garbage clean --rate 40 --burst 10 --retry-after-raw "soon, maybe"

echo "PASS"
