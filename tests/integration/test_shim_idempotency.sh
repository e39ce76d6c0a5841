#!/bin/sh
# BACKOFF_IDEMPOTENCY_KEY under the real library, against ratelimit-server
# --idempotency (a key is processed once, its answer stored and replayed):
#  - a POST processed and then reset (--fault-reset-post 1) is retried with
#    the same key and processed once: curl gets the replayed answer (exit 0,
#    the body's digest); without the variable nothing changes (curl 52/56,
#    one attempt);
#  - the program's own key is kept, never replaced (a later plain curl with
#    it is replayed the answer), and retried like an idempotent request even
#    without the variable; "Idempotency-Key:" in the program's list (not
#    sent) gets no key and no retry;
#  - two concurrent calls with one key meet a 409 (--post-delay-ms) and end
#    with one processing, both with the answer;
#  - keys differ across logical requests (curl --next, two processes): each
#    order is processed;
#  - an upload from a pipe is not retried (the existing rewind rule);
#  - the program's header list is as it set it after the call (a helper
#    compares its own slist before and after, and sees no key in it);
#  - the http room (Python without libcurl) follows the same rule: a
#    requests POST processed and then reset comes back with the replayed
#    answer (its first attempt carried the key); a program's own retry of a
#    POST after a reset carries its first try's key (processed once).
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] || fail "build libbackoff.so first"
command -v curl >/dev/null || fail "curl is not installed"
LIB=$BUILD/libbackoff.so
export BACKOFF_SEED=7 # keys must differ across processes even so
field() { summary_field "$TMP/$1.out" "$2"; }
expect() { # NAME COLUMN VALUE
    [ "$(field "$1" "$2")" = "$3" ] || fail "$1: $2 is $(field "$1" "$2"), expected $3: $(cat "$TMP/$1.out")"
}
printf 'order=42;item=pens' >"$TMP/order"
want=$(fnv1a64 "$TMP/order")
# spost NAME [env assignments...] -- [curl args...]: a shimmed POST of the
# order; stdout body in $TMP/NAME.body, exit status in $TMP/NAME.rc.
spost() {
    _n=$1
    shift
    rc=0
    env "$@" LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$_n.stats" setsid timeout -k 2 20 \
        curl -s -m 15 -o "$TMP/$_n.body" --data-binary @"$TMP/order" "$U" || rc=$?
    echo $rc >"$TMP/$_n.rc"
}
attempts() { sed -n 's/.*"attempts":\([0-9]*\).*/\1/p' "$TMP/$1.stats" | awk '{ s += $1 } END { print s + 0 }'; }

note "a POST processed then reset: retried with its key, processed once"
start_server reset --idempotency --fault-reset-post 1
U="http://127.0.0.1:$PORT/item/1"
spost keyed BACKOFF_IDEMPOTENCY_KEY=1
[ "$(cat "$TMP/keyed.rc")" = 0 ] && [ "$(cat "$TMP/keyed.body")" = "$want" ] ||
    fail "with the variable: curl $(cat "$TMP/keyed.rc"), body '$(cat "$TMP/keyed.body")'"
[ "$(attempts keyed)" = 2 ] || fail "with the variable: $(attempts keyed) attempts, expected 2"
stop_server
expect reset posts 1
expect reset post_resets 1
expect reset idem_replays 1
expect reset duplicate_posts 0

note "without the variable nothing changes"
start_server plain --idempotency --fault-reset-post 1
U="http://127.0.0.1:$PORT/item/1"
spost plain
case $(cat "$TMP/plain.rc") in 52 | 56) ;; *) fail "without the variable: curl $(cat "$TMP/plain.rc")" ;; esac
[ "$(attempts plain)" = 1 ] || fail "without the variable: $(attempts plain) attempts"
stop_server
expect plain posts 1
expect plain idem_replays 0

note "the program's own key: kept and retried; an empty mention: nothing added"
start_server own --idempotency --fault-reset-post 1
U="http://127.0.0.1:$PORT/item/1"
rc=0
LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/own.stats" setsid timeout -k 2 20 curl -s -m 15 \
    -o "$TMP/own.body" -H 'Idempotency-Key: "mine-1"' --data-binary @"$TMP/order" "$U" || rc=$?
[ $rc = 0 ] && [ "$(cat "$TMP/own.body")" = "$want" ] || fail "own key: curl $rc"
[ "$(attempts own)" = 2 ] || fail "own key: $(attempts own) attempts"
code=$(curl -s -m 10 -D "$TMP/own.h" -o "$TMP/own2.body" -w '%{http_code}' \
    -H 'Idempotency-Key: "mine-1"' --data-binary @"$TMP/order" "$U")
[ "$code" = 200 ] && grep -qi '^Idempotent-Replayed: true' "$TMP/own.h" ||
    fail "the program's key was replaced: a plain repeat with it got $code, not a replay"
rc=0
LD_PRELOAD="$LIB" BACKOFF_IDEMPOTENCY_KEY=1 BACKOFF_STATS="$TMP/empty.stats" setsid timeout -k 2 20 \
    curl -s -m 15 -o /dev/null -H 'Idempotency-Key:' --data-binary @"$TMP/order" "$U" || rc=$?
case $rc in 52 | 56) ;; *) fail "'Idempotency-Key:' in the program's list: curl $rc (a key added?)" ;; esac
[ "$(attempts empty)" = 1 ] || fail "'Idempotency-Key:': $(attempts empty) attempts"
stop_server
expect own posts 2
expect own idem_replays 2

note "two concurrent calls with one key: a 409, one processing"
start_server busy --idempotency --post-delay-ms 1500
U="http://127.0.0.1:$PORT/item/1"
busy_pids=""
for i in 1 2; do
    (LD_PRELOAD="$LIB" setsid timeout -k 2 30 curl -s -m 25 -o "$TMP/busy$i.body" \
        -H 'Idempotency-Key: "same"' --data-binary @"$TMP/order" "$U"; echo $? >"$TMP/busy$i.rc") &
    busy_pids="$busy_pids $!"
done
for p in $busy_pids; do wait "$p"; done
for i in 1 2; do
    [ "$(cat "$TMP/busy$i.rc")" = 0 ] && [ "$(cat "$TMP/busy$i.body")" = "$want" ] ||
        fail "concurrent $i: curl $(cat "$TMP/busy$i.rc"), body '$(cat "$TMP/busy$i.body")'"
done
stop_server
expect busy posts 1
[ "$(field busy idem_conflicts)" -ge 1 ] || fail "no 409 seen: $(cat "$TMP/busy.out")"

note "keys differ across logical requests and processes"
start_server keys --idempotency
U="http://127.0.0.1:$PORT/item/1"
for p in 1 2; do
    LD_PRELOAD="$LIB" BACKOFF_IDEMPOTENCY_KEY=1 setsid timeout -k 2 20 curl -s -m 15 -o /dev/null \
        --data-binary @"$TMP/order" "$U" --next -o /dev/null --data-binary @"$TMP/order" "$U" ||
        fail "process $p failed"
done
stop_server
expect keys posts 4
expect keys idem_replays 0

note "an upload from a pipe is not retried"
start_server pipe --idempotency --fault-reset-post 1
U="http://127.0.0.1:$PORT/item/1"
rc=0
LD_PRELOAD="$LIB" BACKOFF_IDEMPOTENCY_KEY=1 BACKOFF_STATS="$TMP/pipe.stats" setsid timeout -k 2 20 \
    sh -c 'cat "$1" | curl -s -m 15 -o /dev/null -X POST -T - "$2"' sh "$TMP/order" "$U" || rc=$?
case $rc in 52 | 56) ;; *) fail "a pipe upload: curl $rc" ;; esac
[ "$(attempts pipe)" = 1 ] || fail "a pipe upload: $(attempts pipe) attempts"
stop_server

note "the program's header list is as it set it"
start_server list --idempotency --fault-reset-post 1
LD_PRELOAD="$LIB" BACKOFF_IDEMPOTENCY_KEY=1 setsid timeout -k 2 20 \
    "$BUILD/tests/helpers/idem_headers" "http://127.0.0.1:$PORT/item/1" >"$TMP/helper.out" 2>&1 ||
    fail "idem_headers: $(cat "$TMP/helper.out")"
grep -q '^ok' "$TMP/helper.out" || fail "idem_headers: $(cat "$TMP/helper.out")"
stop_server
expect list posts 1
expect list idem_replays 1
note "the http room: a requests POST processed then reset gets the replayed answer"
PY=/usr/bin/python3
start_server pyreset --idempotency --fault-reset-post 1
U="http://127.0.0.1:$PORT/item/1"
LD_PRELOAD="$LIB" BACKOFF_IDEMPOTENCY_KEY=1 BACKOFF_STATS="$TMP/pyreset.stats" setsid timeout -k 2 30 \
    $PY "$TOP/tests/programs/http_idem.py" requests "$U" "$TMP/order" >"$TMP/pyreset.txt" 2>&1 ||
    fail "requests POST: $(cat "$TMP/pyreset.txt")"
stop_server
[ "$(cat "$TMP/pyreset.txt")" = "status 200 body $want" ] ||
    fail "requests POST, processed then reset: $(cat "$TMP/pyreset.txt")"
expect pyreset posts 1
expect pyreset post_resets 1
expect pyreset idem_replays 1
expect pyreset duplicate_posts 0

# (a server that validates keys would refuse the empty one at once: this one
# processes every POST, then resets it)
note "the http room: an empty Idempotency-Key is no key: not retried after the reset, none added"
start_server pyempty --fault-reset-post 1
U="http://127.0.0.1:$PORT/item/1"
LD_PRELOAD="$LIB" BACKOFF_IDEMPOTENCY_KEY=1 BACKOFF_STATS="$TMP/pyempty.stats" setsid timeout -k 2 30 \
    $PY "$TOP/tests/programs/http_idem.py" empty "$U" "$TMP/order" >"$TMP/pyempty.txt" 2>&1 ||
    fail "requests POST with an empty key: $(cat "$TMP/pyempty.txt")"
stop_server
grep -q '^error ' "$TMP/pyempty.txt" ||
    fail "a POST with an empty Idempotency-Key was retried after the reset: $(cat "$TMP/pyempty.txt")"
[ "$(attempts pyempty)" = 1 ] || fail "an empty Idempotency-Key: $(attempts pyempty) attempts"
expect pyempty posts 1

note "the http room: the program's own retry of a POST carries its first try's key"
start_server pyown --idempotency --fault-reset-post 1
U="http://127.0.0.1:$PORT/item/1"
LD_PRELOAD="$LIB" BACKOFF_IDEMPOTENCY_KEY=1 BACKOFF_MAX_ATTEMPTS=1 setsid timeout -k 2 30 \
    $PY "$TOP/tests/programs/http_idem.py" own "$U" "$TMP/order" >"$TMP/pyown.txt" 2>&1 ||
    fail "own retry: $(cat "$TMP/pyown.txt")"
stop_server
grep -q "^attempt 1: " "$TMP/pyown.txt" && grep -qx "status 200 body $want" "$TMP/pyown.txt" ||
    fail "the program's own retry: $(cat "$TMP/pyown.txt")"
expect pyown posts 1
expect pyown idem_replays 1
expect pyown duplicate_posts 0
echo "PASS: Idempotency-Key under the library"
