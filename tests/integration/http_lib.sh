# Shared by the http room's tests (test_http_clients.sh, test_http_tls.sh),
# sourced after lib.sh: the clients (tests/programs/http_*), how each runs
# (plain, under the shim, through the wrapper, with BACKOFF_HTTP=0), and the
# throttled case every client goes through.  Each process under the shim
# keeps its own state (BACKOFF_SHARE=process), so that one client's pacing
# does not hide another's throttles.
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
$PY -c 'import github' 2>/dev/null || fail "python3-github (PyGithub) is not installed (make deps)"

# client NAME BASE N TAG: the command line of client NAME.
client() {
    case $1 in
    session | get | urllib | client | post | once | asyncio | bigpost)
        echo "$PY $PROGS/http_py.py $1 $2 $3 $4" ;;
    ruby) echo "ruby $PROGS/http_rb.rb $2 $3" ;;
    lwp | tiny) echo "perl $PROGS/http_pl.pl $1 $2 $3" ;;
    php) echo "php $PROGS/http_php.php $2 $3" ;;
    wget) echo "sh $PROGS/http_wget.sh $2 $3" ;;
    httpie) echo "sh $PROGS/http_httpie.sh $2 $3" ;;
    node) echo "node $PROGS/http_node.js $2 $3" ;;
    fetch) echo "node $PROGS/http_node.js $2 $3 $4 fetch" ;;
    github) echo "$PY $PROGS/http_github.py $2 $3" ;;
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
# the shim retried.  $BEFORE_RUN, when set, is run before each of the two.  Outputs in $TMP/$SEC.NAME.{plain,shim}[.stats] (SEC:
# the section, so that a client's runs in two sections never mix).
throttled() {
    _n=$1 _b=$2 _k=$3 _p=$4 _how=${5:-shim}
    _f="$TMP/${SEC:-x}.$_n"
    ${BEFORE_RUN:-true}
    # shellcheck disable=SC2046
    run "$_f.plain" plain $(client "$_n" "$_b" "$_k" "$SEC-$_n-plain")
    sleep "$_p"
    ${BEFORE_RUN:-true}
    # shellcheck disable=SC2046
    run "$_f.shim" "$_how" $(client "$_n" "$_b" "$_k" "$SEC-$_n-shim")
    sleep "$_p"
    _bp=$(bad_of "$_f.plain") _bs=$(bad_of "$_f.shim")
    _r=$(stats_sum "$_f.shim.stats" retries)
    note "$SEC $_n ($_b): plain $((_k - ${_bp:-$_k}))/$_k right, under the shim $((_k - ${_bs:-$_k}))/$_k, $_r retries"
    [ -n "$_bp" ] && [ "$_bp" -gt 0 ] ||
        fail "$SEC $_n: plain got every body ($(cat "$_f.plain")): nothing was throttled"
    [ "$_bs" = 0 ] || fail "$SEC $_n under the shim: $(tail -3 "$_f.shim")"
    [ "$_r" -gt 0 ] || fail "$SEC $_n: the shim retried nothing"
}

# unthrottled BASE CLIENT...: each CLIENT's 3 fetches from a server that
# throttles nothing (started with --log $TMP/open.csv), plain and then under
# the shim: the same output, 3 calls followed and none retried.  Call
# unthrottled_requests after stopping the server.
unthrottled() {
    _b=$1
    shift
    for c in "$@"; do
        # shellcheck disable=SC2046
        run "$TMP/$c.open-plain" plain $(client $c "$_b" 3 open)
        # shellcheck disable=SC2046
        run "$TMP/$c.open-shim" shim $(client $c "$_b" 3 open)
        cmp -s "$TMP/$c.open-plain" "$TMP/$c.open-shim" ||
            fail "$c unthrottled: the output differs under the shim: $(diff "$TMP/$c.open-plain" "$TMP/$c.open-shim" | head -5)"
        [ "$(bad_of "$TMP/$c.open-shim")" = 0 ] || fail "$c unthrottled: $(cat "$TMP/$c.open-shim")"
        [ "$(stats_sum "$TMP/$c.open-shim.stats" calls)" = 3 ] ||
            fail "$c unthrottled: the shim followed $(stats_sum "$TMP/$c.open-shim.stats" calls) calls, expected 3"
        [ "$(stats_sum "$TMP/$c.open-shim.stats" retries)" = 0 ] || fail "$c unthrottled: the shim retried"
    done
}

# unthrottled_requests N: the server saw each of the N clients' requests
# twice, the same in the same order: blocks of 6 log lines (method, path,
# status), the plain run's 3 then the shim's.
unthrottled_requests() {
    awk -F, 'NR > 1 { print $2 "," $3 "," $4 }' "$TMP/open.csv" >"$TMP/open.reqs"
    [ "$(wc -l <"$TMP/open.reqs")" = $(($1 * 3 * 2)) ] ||
        fail "the server logged $(wc -l <"$TMP/open.reqs") requests, expected $(($1 * 3 * 2))"
    awk '{ l[NR % 6] = $0 } NR % 6 == 0 { for (i = 1; i <= 3; i++) if (l[i] != l[(i + 3) % 6]) bad++ }
         END { exit bad > 0 }' "$TMP/open.reqs" ||
        fail "the requests plain and under the shim differ: $(head -12 "$TMP/open.reqs" | tr '\n' ' ')"
}
