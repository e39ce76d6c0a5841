#!/bin/sh
# Held requests are not throttling.  20 processes each hold a long poll to
# one destination that never throttles (ratelimit-server's
# /item/N?hold_ms=8000), and then another process makes a quick GET to it:
# under the library it is admitted at once on a fresh destination (the
# first window is 80), and at once too on a destination used one request at
# a time before (its successes proved 1 in flight: its window of 20 is full
# of long polls, but a destination that never throttled keeps the first
# window's room).  The control: with BACKOFF_WINDOW=5 (a first window of
# 20) the same GET waits behind them until they stop holding the window,
# older than the destination's round trips allow (so this test can fail).
# Every long poll still gets its answer.
#
# What is timed is the quick GET's wait inside the library (BACKOFF_STATS'
# wait_ms), not its wall time, which adds starting backoff and curl (the
# machine's speed).  The 20 polls start together: each process is first
# held at a gate (a ratelimit-server --gate of its own) until all 20 are
# there, so that the polls' ages, which the control's wait follows (about
# 4 s from the oldest), do not depend on how fast the machine starts 20
# processes.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/backoff" ] || fail "build libbackoff.so and backoff first"
command -v curl >/dev/null || fail "curl is not installed"

HOLD_MS=8000

# polls NAME: 20 backoff -- curl processes in the background, each held at
# the gate NAME-gate until all 20 are there, then a long poll to $SP (their
# codes in NAME.pN: the gate's, then the poll's); waits until the host-wide
# state counts the 20 polls in flight.
polls() {
    start_server "$1-gate" --gate
    GATE_PID=$SERVER_PID
    _i=1
    POLLS=""
    while [ $_i -le 20 ]; do
        setsid timeout -k 2 90 "$BUILD/backoff" -- curl -s -w '%{http_code}\n' \
            -o /dev/null "http://127.0.0.1:$PORT/item/$_i" \
            -o /dev/null "http://127.0.0.1:$SP/item/$_i?hold_ms=$HOLD_MS" >"$TMP/$1.p$_i" &
        POLLS="$POLLS $!"
        _i=$((_i + 1))
    done
    PIDS="$PIDS $POLLS"
    wait_for "$TMP/$1-gate.err" '^ratelimit-server: gate: 20 held$' 60
    kill -USR1 "$GATE_PID"
    _w=0
    until [ "$("$BUILD/backoff" --status | awk -v k="http://127.0.0.1:$SP" '$1 == k { print $4 }')" = 20 ]; do
        _w=$((_w + 1))
        [ $_w -gt 100 ] && fail "$1: the 20 long polls are not all in flight after 10 s: $("$BUILD/backoff" --status)"
        sleep 0.1
    done
}

# quick NAME: one quick GET under the library; prints the time it waited
# inside the library (BACKOFF_STATS' wait_ms: its admission), then its wall
# time in ms, which adds starting backoff and curl (the machine's speed).
quick() {
    _t0=$(date +%s%3N)
    _code=$(BACKOFF_STATS="$TMP/$1.quick.json" setsid timeout -k 2 30 "$BUILD/backoff" -- \
        curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SP/item/99") ||
        fail "$1: the quick GET failed"
    _t1=$(date +%s%3N)
    [ "$_code" = 200 ] || fail "$1: the quick GET answered $_code"
    [ "$(stats_sum "$TMP/$1.quick.json" calls)" = 1 ] || fail "$1: the quick GET's stats: $(cat "$TMP/$1.quick.json")"
    echo "$(stats_sum "$TMP/$1.quick.json" wait_ms) $((_t1 - _t0))"
}

# answered NAME: every long poll of NAME (and its call to the gate) ended
# 200; the gate stops.
answered() {
    for _p in $POLLS; do wait "$_p" || true; done
    _i=1
    while [ $_i -le 20 ]; do
        [ "$(tr '\n' ' ' <"$TMP/$1.p$_i")" = "200 200 " ] ||
            fail "$1: long poll $_i answered '$(cat "$TMP/$1.p$_i")'"
        _i=$((_i + 1))
    done
    kill -TERM "$GATE_PID"
    wait "$GATE_PID" || true
}

start_server srv
SP=$PORT

# A fresh destination: the first window has room for the 20 and the GET.
XDG_RUNTIME_DIR=$TMP/fresh && mkdir -m 700 "$XDG_RUNTIME_DIR"
polls fresh
r=$(quick fresh)
ms=${r% *} all=${r#* }
note "fresh destination, 20 long polls in flight: the quick GET waited $ms ms ($all ms in all)"
[ "$ms" -lt 500 ] || fail "fresh: the quick GET waited $ms ms behind 20 long polls (expected well under 1 s)"
answered fresh

# A destination used one request at a time: its window stays 20, which the long
# polls fill, but it never throttled: the first window's room (80) is still its.
XDG_RUNTIME_DIR=$TMP/warm && mkdir -m 700 "$XDG_RUNTIME_DIR"
for i in 1 2 3 4 5; do "$BUILD/backoff" -- curl -s -o /dev/null "http://127.0.0.1:$SP/item/$i"; done
polls warm
r=$(quick warm)
ms=${r% *} all=${r#* }
note "a destination used one at a time, its window of 20 full of long polls: the quick GET waited $ms ms ($all ms in all)"
[ "$ms" -lt 500 ] || fail "warm: the quick GET waited $ms ms behind 20 long polls (expected well under 1 s)"
answered warm

# The control: the first window as small as the polls (BACKOFF_WINDOW=5: 20 in the first
# window), on a fresh destination with no answer yet: the GET waits for the aging bound
# before any answer (a second, then the long bound): it cannot go at once.
XDG_RUNTIME_DIR=$TMP/control && mkdir -m 700 "$XDG_RUNTIME_DIR"
export BACKOFF_WINDOW=5
polls control
r=$(quick control)
ms=${r% *} all=${r#* }
unset BACKOFF_WINDOW
note "control: BACKOFF_WINDOW=5 (a first window of 20), full of long polls: the quick GET waited $ms ms ($all ms in all)"
[ "$ms" -ge 900 ] || fail "control: the quick GET waited $ms ms: the window did not hold it (is the test able to fail?)"
[ "$ms" -lt $((HOLD_MS - 1000)) ] || fail "control: the quick GET waited for the long polls to end ($ms ms)"
answered control
echo "ok: held requests do not keep a quick request out"
