#!/bin/sh
# A SIGSTOPped server (article 003's outage) stalls clients: a request sent
# meanwhile is not answered while the process is stopped, and is answered
# correctly after SIGCONT.
. "$(dirname "$0")/lib.sh"

start_server stop
url="http://127.0.0.1:$PORT/item/5?size=100"
rc=0; code=$(http_code "$url" -m 5) || rc=$?
[ "$rc" = 0 ] && [ "$code" = 200 ] || fail "before SIGSTOP: curl exit $rc, status $code"

kill -STOP "$SERVER_PID"
state=$(awk '{ print $3 }' "/proc/$SERVER_PID/stat")
[ "$state" = T ] || fail "server state '$state' after SIGSTOP, expected T"
curl -s -m 60 -o "$TMP/body" -w '%{http_code}' "$url" >"$TMP/code" 2>"$TMP/curl.err" &
CURL_PID=$!
PIDS="$PIDS $CURL_PID"
sleep 2
kill -0 "$CURL_PID" 2>/dev/null || fail "curl finished ($(cat "$TMP/code")) while the server was stopped"
note "curl still waiting after 2 s of SIGSTOP"
kill -CONT "$SERVER_PID"
rc=0; wait "$CURL_PID" || rc=$?
[ "$rc" = 0 ] || fail "curl exit $rc after SIGCONT: $(cat "$TMP/curl.err")"
[ "$(cat "$TMP/code")" = 200 ] || fail "status $(cat "$TMP/code") after SIGCONT"
item_body 5 100 >"$TMP/expect"
cmp -s "$TMP/body" "$TMP/expect" || fail "wrong body after SIGCONT"
stop_server
cat "$TMP/stop.out"
[ "$(summary_field "$TMP/stop.out" ok)" = 2 ] || fail "server did not count both requests"
note "SIGSTOP stalled the client; SIGCONT answered it"
