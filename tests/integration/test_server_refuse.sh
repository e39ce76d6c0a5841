#!/bin/sh
# --outage-mode refuse really closes the listener: curl exits 7 (could not
# connect) during the outage, and the server comes back on the same port.
. "$(dirname "$0")/lib.sh"

# The outage starts 5 s after the server: time enough, on a busy machine, for
# the first request to be served before it.
start_server refuse --outage-at 5 --outage-for 3 --outage-mode refuse
url="http://127.0.0.1:$PORT/item/1"
rc=0; code=$(http_code "$url" -m 5) || rc=$?
[ "$rc" = 0 ] && [ "$code" = 200 ] || fail "before the outage: curl exit $rc, status $code"

# Poll (at most 10 s) until a connect is refused.  A connection that the
# kernel had queued on the listener when it closed is dropped without an
# answer (curl exit 52, or 56 when it is reset), as with any server that
# closes its socket: seen once beside a CPU hog; that is the outage
# beginning, not a failure.
i=0; rc=0
while :; do
    rc=0; code=$(http_code "$url" -m 5) || rc=$?
    [ "$rc" = 7 ] && break
    case $rc in
    0) ;;
    52 | 56) note "poll $i: curl exit $rc, a connection queued as the listener closed" ;;
    *) fail "curl exit $rc (status $code) while waiting for the outage, expected 0, 7, 52 or 56" ;;
    esac
    i=$((i + 1)); [ $i -gt 100 ] && fail "the listener never closed"
    sleep 0.1
done
note "outage: curl exit 7 after $i polls"
grep -q 'outage: listener closed' "$TMP/refuse.err" || fail "no outage line on stderr"
kill -0 "$SERVER_PID" || fail "the server died"

# Poll (at most 15 s) until the same port answers again.
i=0
while :; do
    rc=0; code=$(http_code "$url" -m 5) || rc=$?
    [ "$rc" = 0 ] && break
    [ "$rc" = 7 ] || fail "curl exit $rc during the outage, expected 7"
    i=$((i + 1)); [ $i -gt 150 ] && fail "port $PORT never came back"
    sleep 0.1
done
[ "$code" = 200 ] || fail "after the outage: status $code"
# And it keeps serving, with keep-alive, after it came back.
"$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 50 --threads 2 --verify >"$TMP/lg.tsv"
cat "$TMP/lg.tsv"
[ "$(summary_field "$TMP/lg.tsv" ok)" = 50 ] || fail "not all requests succeeded after the outage"
stop_server
cat "$TMP/refuse.out" "$TMP/refuse.err"
note "refuse: exit 7 during the outage, port $PORT back after it"
