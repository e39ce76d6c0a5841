#!/bin/sh
# The http room (shim/http/): programs that speak HTTP/1.x themselves, over
# plain TCP sockets, get the libcurl programs' retries.  Each client (Python's
# requests Session and requests.get, urllib.request, http.client and its
# POSTs, httpie, Ruby's net/http, Perl's LWP and HTTP::Tiny, PHP's
# file_get_contents, wget) fetches /item/1..N from ratelimit-server and
# counts the right bodies (item_body), plain and under the shim
# (LD_PRELOAD; `backoff --` for one), each in its own session under a hard
# timeout:
#   - a token bucket with Retry-After (keep-alive), one without Retry-After,
#     a server that closes every connection (--close), a concurrency cap
#     with three processes at once: plain some answers are 429s, under the
#     shim every body is right, the shim retried, no POST reached the
#     server twice;
#   - nothing throttled: the output and the server's log of requests are
#     the same plain and under the shim, which followed every call (stats)
#     and retried none;
#   - BACKOFF_HTTP=0: the family passes everything through;
#   - the program's limits: a read's SO_RCVTIMEO bounds the retry's wait, a
#     signal whose handler lacks SA_RESTART ends it (the 429 is handed back
#     at once), a non-blocking socket's read is never held but for the wait.
# Each process keeps its own state (BACKOFF_SHARE=process), so that one
# client's pacing does not hide another's throttles.
. "$(dirname "$0")/lib.sh"

BUILD_ABS=$(cd "$BUILD" && pwd)
LIB="$BUILD_ABS/libbackoff.so"
WRAP="$BUILD_ABS/backoff"
PROGS="$TOP/tests/programs"
PY=/usr/bin/python3
N=8
for c in ruby perl php wget http; do
    command -v $c >/dev/null || fail "$c is not installed (make deps installs the test's clients)"
done
$PY -c 'import requests' 2>/dev/null || fail "python3-requests is not installed (make deps)"

# client NAME BASE N TAG: the command line of client NAME.
client() {
    case $1 in
    session | get | urllib | client | post) echo "$PY $PROGS/http_py.py $1 $2 $3 $4" ;;
    ruby) echo "ruby $PROGS/http_rb.rb $2 $3" ;;
    lwp | tiny) echo "perl $PROGS/http_pl.pl $1 $2 $3" ;;
    php) echo "php $PROGS/http_php.php $2 $3" ;;
    wget) echo "sh $PROGS/http_wget.sh $2 $3" ;;
    httpie) echo "sh $PROGS/http_httpie.sh $2 $3" ;;
    esac
}

# run OUT PRELOAD CMD...: CMD (bounded, its own session), stdout and stderr in
# OUT; PRELOAD: plain, shim (LD_PRELOAD), wrapper (backoff --) or off
# (LD_PRELOAD with BACKOFF_HTTP=0).  Stats in OUT.stats.
run() {
    _out=$1 _rh=$2
    shift 2
    case $_rh in
    plain) setsid timeout -k 2 40 "$@" >"$_out" 2>&1 || fail "$*: exit $?: $(tail -3 "$_out")" ;;
    shim | off)
        _h=1
        [ "$_rh" = off ] && _h=0
        setsid timeout -k 2 60 env LD_PRELOAD="$LIB" BACKOFF_HTTP=$_h BACKOFF_SHARE=process \
            BACKOFF_STATS="$_out.stats" "$@" >"$_out" 2>&1 || fail "$* under the shim: exit $?: $(tail -3 "$_out")" ;;
    wrapper)
        setsid timeout -k 2 60 env BACKOFF_SHARE=process "$WRAP" --stats "$_out.stats" -- "$@" \
            >"$_out" 2>&1 || fail "backoff -- $*: exit $?: $(tail -3 "$_out")" ;;
    esac
}
bad_of() { sed -n 's/^done [0-9]* bad \([0-9]*\)$/\1/p' "$1" | tail -n 1; }

# throttled NAME BASE N PAUSE [HOW]: NAME plain, then under the shim (HOW,
# default shim), PAUSE seconds apart (the bucket fills again): plain some
# bodies are wrong (else the case proves nothing), under the shim none, and
# the shim retried.
throttled() {
    _n=$1 _b=$2 _k=$3 _p=$4 _how=${5:-shim}
    # shellcheck disable=SC2046
    run "$TMP/$_n.plain" plain $(client "$_n" "$_b" "$_k" "$_n-plain")
    sleep "$_p"
    # shellcheck disable=SC2046
    run "$TMP/$_n.shim" "$_how" $(client "$_n" "$_b" "$_k" "$_n-shim")
    sleep "$_p"
    _bp=$(bad_of "$TMP/$_n.plain") _bs=$(bad_of "$TMP/$_n.shim")
    _r=$(stats_sum "$TMP/$_n.shim.stats" retries)
    note "$_n ($_b): plain $((_k - ${_bp:-$_k}))/$_k right, under the shim $((_k - ${_bs:-$_k}))/$_k, $_r retries"
    [ -n "$_bp" ] && [ "$_bp" -gt 0 ] ||
        fail "$_n: plain got every body ($(cat "$TMP/$_n.plain")): nothing was throttled"
    [ "$_bs" = 0 ] || fail "$_n under the shim: $(tail -3 "$TMP/$_n.shim")"
    [ "$_r" -gt 0 ] || fail "$_n: the shim retried nothing"
}

# ---- a token bucket with Retry-After, keep-alive ------------------------------

start_server bucket --rate 10 --burst 3
B="http://127.0.0.1:$PORT"
for c in session get urllib client post ruby lwp tiny php wget; do
    throttled $c "$B" $N 0.4
done
stop_server
[ "$(summary_field "$TMP/bucket.out" duplicate_posts)" = 0 ] || fail "a POST reached the server twice"
[ "$(summary_field "$TMP/bucket.out" posts)" -ge $N ] || fail "the POSTs did not reach the server"

# httpie starts a process per request (0.4 s each): a slower bucket, and the
# wrapper instead of LD_PRELOAD.
start_server httpie --rate 1 --burst 2
throttled httpie "http://127.0.0.1:$PORT" 4 2.1 wrapper
stop_server

# ---- no Retry-After; a server that closes every connection; a cap -------------

start_server nohint --rate 10 --burst 3 --bucket-hints none
for c in client tiny; do throttled $c "http://127.0.0.1:$PORT" $N 0.4; done
stop_server
start_server close --rate 10 --burst 3 --close
for c in client ruby; do throttled $c "http://127.0.0.1:$PORT" $N 0.4; done
stop_server

# three processes at once against one slot held 100 ms: plain some are 429s
start_server cap --max-busy 1 --service-ms 100
B="http://127.0.0.1:$PORT"
for how in plain shim; do
    pids=""
    for i in 1 2 3; do
        # shellcheck disable=SC2046
        run "$TMP/cap.$how.$i" $how $(client client "$B" 4 cap) &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || fail "a client against the cap failed ($how)"; done
    sleep 0.3
done
bp=0 bs=0
for i in 1 2 3; do
    bp=$((bp + $(bad_of "$TMP/cap.plain.$i"))) bs=$((bs + $(bad_of "$TMP/cap.shim.$i")))
done
note "cap of one slot, 3 processes x 4 GETs: plain $((12 - bp))/12 right, under the shim $((12 - bs))/12"
[ $bp -gt 0 ] || fail "the cap rejected nothing plain"
[ $bs = 0 ] || fail "the cap under the shim: $bs wrong"
stop_server

# ---- nothing throttled: the same bytes, the same requests ---------------------

start_server open --log "$TMP/open.csv"
B="http://127.0.0.1:$PORT"
for c in session get urllib client ruby lwp tiny php wget; do
    # shellcheck disable=SC2046
    run "$TMP/$c.open-plain" plain $(client $c "$B" 3 open)
    # shellcheck disable=SC2046
    run "$TMP/$c.open-shim" shim $(client $c "$B" 3 open)
    cmp -s "$TMP/$c.open-plain" "$TMP/$c.open-shim" ||
        fail "$c unthrottled: the output differs under the shim: $(diff "$TMP/$c.open-plain" "$TMP/$c.open-shim" | head -5)"
    [ "$(bad_of "$TMP/$c.open-shim")" = 0 ] || fail "$c unthrottled: $(cat "$TMP/$c.open-shim")"
    [ "$(stats_sum "$TMP/$c.open-shim.stats" calls)" = 3 ] ||
        fail "$c unthrottled: the shim followed $(stats_sum "$TMP/$c.open-shim.stats" calls) calls, expected 3"
    [ "$(stats_sum "$TMP/$c.open-shim.stats" retries)" = 0 ] || fail "$c unthrottled: the shim retried"
done
stop_server
# the server saw each client's requests twice, the same in the same order:
# blocks of 6 log lines (method, path, status), the plain run's 3 then the shim's
awk -F, 'NR > 1 { print $2 "," $3 "," $4 }' "$TMP/open.csv" >"$TMP/open.reqs"
[ "$(wc -l <"$TMP/open.reqs")" = $((9 * 3 * 2)) ] || fail "the server logged $(wc -l <"$TMP/open.reqs") requests, expected 54"
awk '{ l[NR % 6] = $0 } NR % 6 == 0 { for (i = 1; i <= 3; i++) if (l[i] != l[(i + 3) % 6]) bad++ }
     END { exit bad > 0 }' "$TMP/open.reqs" ||
    fail "the requests plain and under the shim differ: $(head -12 "$TMP/open.reqs" | tr '\n' ' ')"
note "unthrottled: 9 clients byte-exact with their plain runs, the same requests, none retried"

# ---- BACKOFF_HTTP=0 -------------------------------------------------------------

start_server off --rate 10 --burst 3
# shellcheck disable=SC2046
run "$TMP/off" off $(client client "http://127.0.0.1:$PORT" $N off)
stop_server
[ "$(bad_of "$TMP/off")" -gt 0 ] && [ "$(stats_sum "$TMP/off.stats" retries)" = 0 ] ||
    fail "BACKOFF_HTTP=0: $(cat "$TMP/off"), $(stats_sum "$TMP/off.stats" retries) retries"
note "BACKOFF_HTTP=0: passed through ($(cat "$TMP/off"))"

# ---- the program's limits ---------------------------------------------------------

# every request is refused with Retry-After: 3 (a bucket that never fills)
start_server limits --rate 0.01 --burst 1 --bucket-hints fixed --retry-after 3
B="http://127.0.0.1:$PORT"
curl -s -o /dev/null "$B/item/0" # spend the one token
for t in rcvtimeo signal nonblocking; do
    setsid timeout -k 2 30 env LD_PRELOAD="$LIB" BACKOFF_SHARE=process BACKOFF_MAX_TIME_MS=4000 \
        $PY "$PROGS/http_limits.py" $t "$B" >"$TMP/limits.$t" 2>&1 ||
        fail "limits $t: $(cat "$TMP/limits.$t")"
    note "limits $t: $(cat "$TMP/limits.$t")"
done
stop_server
echo "ok"
