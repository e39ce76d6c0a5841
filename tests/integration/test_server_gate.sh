#!/bin/sh
# ratelimit-server --gate: every request waits before any limiter while the
# gate is closed (it starts closed), and is not answered until SIGUSR1 opens
# it; stderr says "gate: N held" as each one is held.  The requests released
# are admitted as at the instant the gate opened: 5 held in front of a token
# bucket of 3 (10/s) get exactly 3 answers 200 and 2 rejections, whatever
# the machine's speed; 3 held in front of a cap of one slot, 1 and 2.  Once
# open, a request goes straight through; SIGUSR2 closes the gate again, and
# the server stops at once with a request held.  Without --gate the two
# signals change nothing; --gate takes no value.
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || fail "curl is not installed"
"$BUILD/ratelimit-server" --help | grep -q -- '--gate ' || fail "--help does not name --gate"
rc=0
"$BUILD/ratelimit-server" --gate=1 >/dev/null 2>"$TMP/bad.err" || rc=$?
[ $rc = 2 ] && [ "$(wc -l <"$TMP/bad.err")" = 1 ] &&
    grep -q '^ratelimit-server: --gate "1" is not valid: expected no value' "$TMP/bad.err" ||
    fail "--gate=1: exit $rc, $(cat "$TMP/bad.err")"

# gets NAME N PATH: N curls of PATH at once in the background, each code a
# line of $TMP/NAME.codes; their pids in GETS.
gets() {
    GETS=""
    _i=1
    while [ $_i -le "$2" ]; do
        setsid timeout -k 2 30 curl -s -o /dev/null -w '%{http_code}\n' \
            "http://127.0.0.1:$PORT$3/$_i" >>"$TMP/$1.codes" &
        GETS="$GETS $!"
        _i=$((_i + 1))
    done
    PIDS="$PIDS $GETS"
}
# count NAME CODE: how many of NAME's answers were CODE
count() { grep -c "^$2\$" "$TMP/$1.codes" || true; }

start_server bucket --gate --rate 10 --burst 3
gets bucket 5 /item
wait_for "$TMP/bucket.err" '^ratelimit-server: gate: 5 held$' 30
for p in $GETS; do
    kill -0 "$p" 2>/dev/null || fail "a request held at the closed gate was answered: $(cat "$TMP/bucket.codes")"
done
[ ! -s "$TMP/bucket.codes" ] || fail "answers while the gate was closed: $(cat "$TMP/bucket.codes")"
kill -USR1 "$SERVER_PID"
for p in $GETS; do wait "$p" || fail "a curl failed after the gate opened"; done
grep -q '^ratelimit-server: gate opened: 5 released$' "$TMP/bucket.err" || fail "no line for the opening: $(cat "$TMP/bucket.err")"
note "bucket of 3, 5 held, released at once: $(count bucket 200) answered 200, $(count bucket 429) 429"
[ "$(count bucket 200)" = 3 ] && [ "$(count bucket 429)" = 2 ] ||
    fail "5 released into a bucket of 3: $(tr '\n' ' ' <"$TMP/bucket.codes")"
# open: a request goes straight through (to the bucket, which may have no token)
code=$(http_code "http://127.0.0.1:$PORT/ok" -m 10) || fail "curl through the open gate failed"
case $code in 200 | 429) ;; *) fail "through the open gate: $code" ;; esac
[ "$(grep -c 'gate: [0-9]* held' "$TMP/bucket.err")" = 5 ] || fail "a request was held at the open gate"
# closed again: held, then answered 503 when the server stops
kill -USR2 "$SERVER_PID"
wait_for "$TMP/bucket.err" '^ratelimit-server: gate closed$' 30
gets late 1 /item
wait_for "$TMP/bucket.err" '^ratelimit-server: gate: 1 held$' 30
[ ! -s "$TMP/late.codes" ] || fail "answered at the gate closed again: $(cat "$TMP/late.codes")"
# the server stops with a request held (answered 503, or its connection
# closed when the answer could not go out before the daemons stopped)
t0=$(date +%s%3N)
stop_server
t1=$(date +%s%3N)
wait $GETS || true
case $(cat "$TMP/late.codes") in 503 | 000) ;; *) fail "held when the server stopped: '$(cat "$TMP/late.codes")'" ;; esac
[ $((t1 - t0)) -lt 5000 ] || fail "the server took $((t1 - t0)) ms to stop with a request held"

start_server cap --gate --max-busy 1 --service-ms 300
gets cap 3 /item
wait_for "$TMP/cap.err" '^ratelimit-server: gate: 3 held$' 30
kill -USR1 "$SERVER_PID"
for p in $GETS; do wait "$p" || fail "a curl failed after the gate opened"; done
note "cap of one slot, 3 held, released at once: $(count cap 200) answered 200, $(count cap 429) 429"
[ "$(count cap 200)" = 1 ] && [ "$(count cap 429)" = 2 ] || fail "3 released into a cap of 1: $(tr '\n' ' ' <"$TMP/cap.codes")"
stop_server

# without --gate, SIGUSR1 and SIGUSR2 change nothing
start_server plain
kill -USR1 "$SERVER_PID"
kill -USR2 "$SERVER_PID"
code=$(http_code "http://127.0.0.1:$PORT/item/1" -m 10) || fail "curl failed after the signals"
[ "$code" = 200 ] && kill -0 "$SERVER_PID" || fail "without --gate the signals changed something: $code"
! grep -q gate "$TMP/plain.err" || fail "without --gate: $(grep gate "$TMP/plain.err")"
stop_server
echo "ok"
