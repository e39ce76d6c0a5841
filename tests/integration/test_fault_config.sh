#!/bin/sh
# Every BACKOFF_* variable with several invalid values, under the real curl
# command against a server that answers 429 to everything: the program runs
# and gets the server's answer, stderr has exactly one line, starting
# "backoff:" and naming the variable, and the shim is a pure pass-through
# (no call managed: BACKOFF_STATS stays empty, nothing is retried under a
# configuration the user did not mean).  Prints the table the README's
# "Hardening" section shows (variable, value, the line printed).  Control:
# a valid configuration does retry the 429 (so the checks can fail).
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
[ -f "$LIB" ] || fail "build $LIB first"
CURL=/usr/bin/curl

start_server all429 --max-busy 0
URL="http://127.0.0.1:$PORT/item/1"

n=0
while IFS='|' read -r var val; do
    [ -n "$var" ] || continue
    n=$((n + 1))
    rc=0
    # The bad value comes last so that it wins over the defaults given here.
    env BACKOFF_MAX_ATTEMPTS=3 BACKOFF_BASE_MS=1 BACKOFF_STATS="$TMP/st$n" "$var=$val" \
        LD_PRELOAD="$LIB" $CURL -s "$URL" >"$TMP/out" 2>"$TMP/err" || rc=$?
    [ $rc -eq 0 ] || fail "$var=\"$val\": curl exited $rc"
    [ "$(cat "$TMP/out")" = rejected ] || fail "$var=\"$val\": the program did not get the server's answer"
    [ "$(wc -l <"$TMP/err")" -eq 1 ] || fail "$var=\"$val\": expected one stderr line, got: $(cat "$TMP/err")"
    grep -q "^backoff: .*$var" "$TMP/err" || fail "$var=\"$val\": the line does not name it: $(cat "$TMP/err")"
    [ "$(stats_sum "$TMP/st$n" attempts)" -eq 0 ] || fail "$var=\"$val\": the shim managed the call"
    printf '%s\t%s\t%s\n' "$var" "$val" "$(cat "$TMP/err")"
done <<'VALUES'
BACKOFF_POLICY|bogus
BACKOFF_POLICY|
BACKOFF_POLICY|AIMD 
BACKOFF_MAX_ATTEMPTS|abc
BACKOFF_MAX_ATTEMPTS|-1
BACKOFF_MAX_ATTEMPTS|1000001
BACKOFF_MAX_ATTEMPTS|99999999999999999999999
BACKOFF_MAX_ATTEMPTS|0x10
BACKOFF_MAX_TIME_MS|1.5x
BACKOFF_MAX_TIME_MS|-1
BACKOFF_MAX_TIME_MS|86400001
BACKOFF_BASE_MS|-5
BACKOFF_BASE_MS|0
BACKOFF_BASE_MS|3600001
BACKOFF_CAP_MS|lots
BACKOFF_CAP_MS|0
BACKOFF_CAP_MS|86400001
BACKOFF_FACTOR|zero
BACKOFF_FACTOR|0.5
BACKOFF_FACTOR|nan
BACKOFF_FACTOR|inf
BACKOFF_FACTOR|101
BACKOFF_JITTER|7
BACKOFF_JITTER|-0.1
BACKOFF_JITTER|1e400
BACKOFF_RETRY_ON|418
BACKOFF_RETRY_ON|429,,503
BACKOFF_RETRY_ON|
BACKOFF_UNSAFE_RETRY|maybe
BACKOFF_UNSAFE_RETRY|2
BACKOFF_IDEMPOTENCY_KEY|yes
BACKOFF_IDEMPOTENCY_KEY|
BACKOFF_WINDOW|0
BACKOFF_WINDOW|1.5
BACKOFF_WINDOW|2000000
BACKOFF_WINDOW_MAX|x
BACKOFF_WINDOW_MAX|0
BACKOFF_BETA|3
BACKOFF_BETA|1
BACKOFF_BETA|-0.5
BACKOFF_AIMD_MODE|vegas
BACKOFF_AIMD_MODE|
BACKOFF_PACING|on
BACKOFF_RATELIMIT_HEADERS|off
BACKOFF_RATELIMIT_HEADERS|2
BACKOFF_UP|nope
BACKOFF_UP|0.5
BACKOFF_DOWN|nope
BACKOFF_DOWN|0
BACKOFF_DOWN|1.5
BACKOFF_DOWN_AFTER|-3
BACKOFF_DOWN_AFTER|0
BACKOFF_CONNECT|2
BACKOFF_HOSTS|a,,b
BACKOFF_HOSTS|[::1
BACKOFF_HOSTS|host:0
BACKOFF_HOSTS|host:65536
BACKOFF_VERBOSE|yes-please
BACKOFF_SEED|seed
BACKOFF_SEED|-1
BACKOFF_SEED|18446744073709551616
BACKOFF_STRICT|9
BACKOFF_METRICS_FILE|backoff.prom
BACKOFF_METRICS_MODE|0800
BACKOFF_METRICS_MODE|rw-r--r--
BACKOFF_RETRY_BUDGET|20%
BACKOFF_RETRY_BUDGET|1001
BACKOFF_SHARE|Host
BACKOFF_SHARE|memcache://127.0.0.1:1
BACKOFF_REDIS_NAMESPACE|a b
VALUES
note "$n invalid values: the program ran each time, one line each, nothing managed"

note "control: a valid configuration retries the 429"
BACKOFF_STATS="$TMP/ok.json" BACKOFF_MAX_ATTEMPTS=3 BACKOFF_BASE_MS=1 BACKOFF_POLICY=fixed \
    LD_PRELOAD="$LIB" $CURL -s "$URL" >/dev/null 2>"$TMP/err" || fail "control: curl failed"
[ ! -s "$TMP/err" ] || fail "control: the shim printed: $(cat "$TMP/err")"
[ "$(stats_sum "$TMP/ok.json" attempts)" -eq 3 ] || fail "control: $(stats_sum "$TMP/ok.json" attempts) attempts, expected 3"
stop_server
echo "ok"
