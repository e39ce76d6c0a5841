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
# The signal is delivered asynchronously: wait (bounded) until the server is stopped.
wait_state "$SERVER_PID" T 10
curl -s -m 60 -o "$TMP/body" -w '%{http_code}' "$url" >"$TMP/code" 2>"$TMP/curl.err" &
CURL_PID=$!
PIDS="$PIDS $CURL_PID"
# The request must be sent before it can be shown to be stalled: wait (bounded)
# for curl's connection to reach the server's port, then give it 2 s in which it
# must not be answered (a stopped server cannot answer, however busy the machine).
i=0
# An established TCP connection to or from the port, in /proc/net/tcp (the port in hex).
established() {
    awk -v p="$(printf ':%04X' "$PORT")" '$4 == "01" && (substr($2, 9) == p || substr($3, 9) == p) { n++ }
        END { exit n == 0 }' /proc/net/tcp
}
until established; do
    i=$((i + 1)); [ $i -gt 300 ] && fail "curl did not connect to the stopped server within 30 s"
    kill -0 "$CURL_PID" 2>/dev/null || fail "curl finished ($(cat "$TMP/code")) while the server was stopped"
    sleep 0.1
done
sleep 2
kill -0 "$CURL_PID" 2>/dev/null || fail "curl finished ($(cat "$TMP/code")) while the server was stopped"
wait_state "$SERVER_PID" T 1
note "curl connected and still waiting after 2 s of SIGSTOP"
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
