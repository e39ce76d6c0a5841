#!/bin/sh
# The command lines: a bad flag is one line naming it, the value and what is
# accepted, with exit status 2; --help exits 0; --duration ends the run by
# itself with the summary; SIGINT ends it cleanly; one stats line per second on
# stderr; --log writes its CSV; --delay-ms delays every answer.
. "$(dirname "$0")/lib.sh"

expect_bad() { # program, expected message start, args...
    prog=$1; want=$2; shift 2
    rc=0; "$BUILD/$prog" "$@" >"$TMP/bad.out" 2>"$TMP/bad.err" || rc=$?
    [ "$rc" = 2 ] || fail "$prog $*: exit $rc, expected 2"
    [ "$(wc -l <"$TMP/bad.err")" = 1 ] || fail "$prog $*: expected one stderr line, got: $(cat "$TMP/bad.err")"
    case $(cat "$TMP/bad.err") in
    "$want"*) ;;
    *) fail "$prog $*: message '$(cat "$TMP/bad.err")' does not start with '$want'" ;;
    esac
}
expect_bad ratelimit-server 'ratelimit-server: --max-busy "x" is not valid: expected' --max-busy x
expect_bad ratelimit-server 'ratelimit-server: --reject-status "404" is not valid: expected 429, 503 or 403' --reject-status 404
expect_bad ratelimit-server 'ratelimit-server: --reject-body "xml" is not valid: expected text or s3' --reject-body xml
expect_bad ratelimit-server 'ratelimit-server: --retry-after-form "soon" is not valid: expected seconds, date, ms, ms-azure or none' --retry-after-form soon
expect_bad ratelimit-server 'ratelimit-server: --ratelimit-headers "github" is not valid: expected none, x-ratelimit, ratelimit, draft, x-rate-limit, openai, discord or openai-s' --ratelimit-headers github
expect_bad ratelimit-server 'ratelimit-server: --capacity "5:1,2:3" is not valid' --capacity 5:1,2:3
expect_bad ratelimit-server 'ratelimit-server: --outage-mode "down" is not valid' --outage-mode down
expect_bad ratelimit-server 'ratelimit-server: --rate "0" is not valid' --rate 0
expect_bad ratelimit-server 'ratelimit-server: --quota-spent "0" is not valid: expected seconds, a number above 0' --quota-spent 0 --ratelimit-headers ratelimit
expect_bad ratelimit-server 'ratelimit-server: --quota-spent needs --ratelimit-headers DIALECT' --quota-spent 60
expect_bad ratelimit-server 'ratelimit-server: unknown option "--nope"' --nope 1
expect_bad loadgen 'loadgen: --threads "0" is not valid: expected' --url http://127.0.0.1:1/ --threads 0
expect_bad loadgen 'loadgen: --method "DELETE" is not valid' --url http://127.0.0.1:1/ --method DELETE
expect_bad loadgen 'loadgen: --url is required' --requests 3
"$BUILD/ratelimit-server" --help | grep -q -- '--max-busy' || fail "server --help"
"$BUILD/loadgen" --help | grep -q -- '--verify' || fail "loadgen --help"

# --duration: exits on its own, status 0, summary after the listening line.
rc=0; timeout 20 "$BUILD/ratelimit-server" --port 0 --duration 1.5 >"$TMP/dur.out" 2>"$TMP/dur.err" || rc=$?
[ "$rc" = 0 ] || fail "--duration run exit $rc"
head -n 1 "$TMP/dur.out" | grep -q '^listening on 127.0.0.1:[0-9]*$' || fail "first line: $(head -n 1 "$TMP/dur.out")"
[ "$(summary_field "$TMP/dur.out" requests)" = 0 ] || fail "no summary after --duration"
grep -q '^ratelimit-server: t=1s concurrency=0 ' "$TMP/dur.err" || fail "no per-second stats line: $(cat "$TMP/dur.err")"

# SIGINT, with requests in flight and --log, --delay-ms.
start_server sig --delay-ms 700 --log "$TMP/sig.csv"
t0=$(date +%s%N)
code=$(http_code "http://127.0.0.1:$PORT/item/3" -m 10) || fail "curl failed"
t1=$(date +%s%N)
[ "$code" = 200 ] || fail "status $code"
[ $(((t1 - t0) / 1000000)) -ge 690 ] || fail "--delay-ms 700 answered after $(((t1 - t0) / 1000000)) ms"
curl -s -d abc "http://127.0.0.1:$PORT/item/4" >/dev/null || fail "POST failed"
kill -INT "$SERVER_PID"
rc=0; wait "$SERVER_PID" || rc=$?
[ "$rc" = 0 ] || fail "SIGINT exit $rc"
cat "$TMP/sig.out" "$TMP/sig.csv"
[ "$(summary_field "$TMP/sig.out" ok)" = 2 ] || fail "summary after SIGINT"
[ "$(head -n 1 "$TMP/sig.csv")" = "t_ms,method,path,status,concurrency,latency_ms" ] || fail "log header"
grep -Eq '^[0-9]+,GET,/item/3,200,1,[0-9]+$' "$TMP/sig.csv" || fail "no log row for the GET"
grep -Eq '^[0-9]+,POST,/item/4,200,1,[0-9]+$' "$TMP/sig.csv" || fail "no log row for the POST"
note "flags, --duration, SIGINT, stats line, --log, --delay-ms"
