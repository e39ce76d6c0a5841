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
# the shim retried.  Outputs in $TMP/$SEC.NAME.{plain,shim}[.stats] (SEC:
# the section, so that a client's runs in two sections never mix).
throttled() {
    _n=$1 _b=$2 _k=$3 _p=$4 _how=${5:-shim}
    _f="$TMP/${SEC:-x}.$_n"
    # shellcheck disable=SC2046
    run "$_f.plain" plain $(client "$_n" "$_b" "$_k" "$SEC-$_n-plain")
    sleep "$_p"
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
