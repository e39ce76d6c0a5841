#!/bin/sh
# python3-pycurl's CurlMulti (Debian's python3, libcurl's GnuTLS flavour
# dlopen()ed by the module): a perform()/select() loop and an event loop on
# socket_action with CURLMOPT_SOCKETFUNCTION and CURLMOPT_TIMERFUNCTION (as
# tornado drives it), GETs and POSTs with their own X-Request-Id, against a
# token bucket and a concurrency cap.  Without the shim some answers are
# 429; under it every body is exact, only the final headers reach the
# program, and the server saw no POST twice.
. "$(dirname "$0")/lib.sh"

PY=/usr/bin/python3
[ -f "$BUILD/libbackoff.so" ] || fail "build $BUILD/libbackoff.so first"
LIB="$(cd "$BUILD" && pwd)/libbackoff.so"
$PY -c 'import pycurl' 2>/dev/null || fail "python3-pycurl is not installed (apt-get install python3-pycurl)"


run_case() { # NAME MODE server-flags...
    name=$1 mode=$2; shift 2
    start_server "$name" "$@"
    U="http://127.0.0.1:$PORT"
    setsid timeout -k 2 60 $PY "$TOP/tests/programs/pycurl_multi.py" "$U" "$mode" 60 plain >"$TMP/$name.plain" 2>&1 ||
        fail "$name: the plain client failed: $(cat "$TMP/$name.plain")"
    grep -q '^done 60 bad [1-9]' "$TMP/$name.plain" ||
        fail "$name: without the shim nothing was throttled (this test could not fail): $(cat "$TMP/$name.plain")"
    setsid timeout -k 2 90 env LD_PRELOAD="$LIB" BACKOFF_STATS="$TMP/$name.stats" \
        $PY "$TOP/tests/programs/pycurl_multi.py" "$U" "$mode" 60 shim >"$TMP/$name.shim" 2>&1 ||
        fail "$name: the client under the shim failed: $(cat "$TMP/$name.shim")"
    grep -q '^done 60 bad 0$' "$TMP/$name.shim" || fail "$name: under the shim: $(cat "$TMP/$name.shim")"
    stop_server
    [ "$(summary_field "$TMP/$name.out" duplicate_posts)" = 0 ] || fail "$name: a POST reached the server twice"
    note "$name: plain $(cat "$TMP/$name.plain"); under the shim $(cat "$TMP/$name.shim"), $(stats_sum "$TMP/$name.stats" retries) retries, $(summary_field "$TMP/$name.out" posts) POSTs, none twice"
}

run_case perform-bucket perform --rate 30 --burst 10 --bucket-hints none
run_case perform-cap perform --max-busy 4 --service-ms 30
run_case socket-bucket socket --rate 30 --burst 10
run_case socket-cap socket --max-busy 4 --service-ms 30
echo "PASS"
