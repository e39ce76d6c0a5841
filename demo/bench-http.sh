#!/bin/sh
# What the http room (shim/http/) costs a program that never meets a
# throttle (a benchmark: it prints figures and whether the targets are met;
# it does not fail on them).  tests/helpers/http_bench, with and without
# LD_PRELOAD=libbackoff.so, ROUNDS interleaved rounds, medians:
#
#   fd_*       read/write/recv/send on fds the room does not follow (a pipe,
#              a UNIX socket pair, /dev/null, /dev/zero, a loopback TCP
#              connection carrying no request): ns per call.  Target: within
#              20 ns (one lookup of the fd).
#   plain_request, tls_request
#              keep-alive GETs of an unthrottled ratelimit-server (http, and
#              https with SSL_write_ex/SSL_read_ex on an SSL object bound to
#              the socket): us per request and per call (the request's reads
#              and writes).  These connections are followed: each request is
#              admitted and completed (the destination's state, as a libcurl
#              call is) and its answer peeked at.  Target for TLS: within
#              1 us per SSL_read_ex/SSL_write_ex.
#
# With valgrind, callgrind's count of the shim's own instructions (its code
# and the libc functions it calls; not the program's, libssl's or the system
# calls' work) per call is printed too: it does not move with the machine's
# load.  Output: TSV with a header, as demo/bench-overhead.sh.  Environment:
# BUILD (default build), ROUNDS (7), CALLS (200000 fd pairs), REQUESTS (2000).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$top/$BUILD" ;; esac
ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-200000}
REQUESTS=${REQUESTS:-2000}
LIB="$BUILD/libbackoff.so"
BENCH="$BUILD/tests/helpers/http_bench"
for f in "$LIB" "$BENCH" "$BUILD/ratelimit-server"; do
    [ -e "$f" ] || { echo "backoff: $f is missing: run make all test-programs first" >&2; exit 2; }
done
command -v openssl >/dev/null || { echo "backoff: the openssl command is missing" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/backoff-bench-http.XXXXXX")
XDG_RUNTIME_DIR=$TMP
export XDG_RUNTIME_DIR
PIDS=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

# Pinning (as demo/bench-overhead.sh): the server and the request client
# share CPU 0, so that a request costs both sides' CPU time and no wake-up
# across CPUs; the fd loops run on CPU 1.
PIN0="" PIN1=""
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
    PIN0="taskset -c 0"
    PIN1="taskset -c 1"
fi
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "nan" }'; }

# server NAME [flags]: an unthrottled ratelimit-server on CPU 0; sets PORT.
server() {
    _n=$1
    shift
    # shellcheck disable=SC2086
    $PIN0 "$BUILD/ratelimit-server" --port 0 --threads 1 "$@" >"$TMP/$_n.out" 2>/dev/null &
    PIDS="$PIDS $!"
    _i=0
    until grep -q '^listening on 127.0.0.1:' "$TMP/$_n.out" 2>/dev/null; do
        _i=$((_i + 1))
        [ $_i -gt 100 ] && { echo "backoff: ratelimit-server did not start" >&2; exit 1; }
        sleep 0.05
    done
    PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/$_n.out" | head -n 1)
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1" -keyout "$TMP/key.pem" \
    -out "$TMP/cert.pem" >/dev/null 2>&1
server plain
HPORT=$PORT
server tls --tls-cert "$TMP/cert.pem" --tls-key "$TMP/key.pem"
TPORT=$PORT

# (a) fds the room does not follow, and (b) followed connections: ROUNDS
# interleaved rounds, each value in its own file.
r=0
while [ $r -lt "$ROUNDS" ]; do
    for how in plain shim; do
        pre=""
        [ $how = shim ] && pre="env LD_PRELOAD=$LIB"
        # shellcheck disable=SC2086
        $pre $PIN1 "$BENCH" fd "$CALLS" | while read -r name _ v; do
            echo "$v" >>"$TMP/fd_$name.$how"
        done
        # shellcheck disable=SC2086
        $pre $PIN0 "$BENCH" plain "$HPORT" "$REQUESTS" | awk '{ print $4, $6 }' >>"$TMP/plain_request.$how"
        # shellcheck disable=SC2086
        $pre $PIN0 "$BENCH" tls "$TPORT" "$TMP/cert.pem" "$REQUESTS" | awk '{ print $4, $6 }' \
            >>"$TMP/tls_request.$how"
    done
    r=$((r + 1))
done

# The shim's own instructions (callgrind): the self cost of libbackoff.so's
# functions plus the inclusive cost of their calls into libc and ld.so (not
# into the program, libssl or libcrypto, nor a hook's call of the real
# function it stands for: read's read), as demo/bench-overhead.sh counts
# them, per call, from two run lengths so that start-up cancels.
OWN_AWK='
function name(s, t,   id, rest) {
    if (s !~ /^\([0-9]+\)/) return s
    id = s; sub(/\).*/, "", id); sub(/^\(/, "", id)
    rest = s; sub(/^\([0-9]+\) ?/, "", rest)
    if (rest != "") tab[t, id] = rest
    return tab[t, id]
}
function mine(o) { return index(o, "/libbackoff.so") > 0 }
# A hook calling the real function it stands for (poll -> the libc poll):
# the call of the program itself, made with or without the library.
function forwarded(f, c) { sub(/^(__libc_|__)/, "", c); sub(/@.*/, "", c); return f == c }
/^cmd:/ { exe = $2; next }
/^ob=/ { cur = name(substr($0, 4), "o"); cob = ""; next }
/^fn=/ { fn = name(substr($0, 4), "f"); next }
/^cob=/ { cob = name(substr($0, 5), "o"); next }
/^cfn=/ { cfn = name(substr($0, 5), "f"); next }
/^calls=/ { incall = 1; next }
/^[+*0-9-]/ {
    if (incall) {
        o = cob != "" ? cob : cur
        if (mine(cur) && !mine(o) && !forwarded(fn, cfn) && o !~ /libssl|libcrypto/ && o != exe) own += $2
        incall = 0; cob = ""
    } else if (mine(cur)) own += $2
}
END { printf "%.0f\n", own }'
ir() { # MODE ARGS...: the shim's own instructions of http_bench MODE ARGS
    LD_PRELOAD="$LIB" valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "$BENCH" "$@" \
        >/dev/null 2>&1 || { echo nan; return; }
    awk "$OWN_AWK" "$TMP/cg"
}
IR_FD=nan IR_PLAIN=nan IR_TLS=nan
if command -v valgrind >/dev/null 2>&1; then
    a=$(ir fd 2000) b=$(ir fd 10000)
    # 8 calls a round: the pipe's, the UNIX pair's and the TCP pair's 2 each, /dev/null's, /dev/zero's
    IR_FD=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) / (8000 * 8) }')
    a=$(ir plain "$HPORT" 100) b=$(ir plain "$HPORT" 500)
    IR_PLAIN=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", (b - a) / 400 }')
    a=$(ir tls "$TPORT" "$TMP/cert.pem" 100) b=$(ir tls "$TPORT" "$TMP/cert.pem" 500)
    IR_TLS=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.0f", (b - a) / 400 }')
fi

printf 'scenario\tpolicy\tmetric\twithout_shim\twith_shim\tdifference\tratio\ttarget\tmet\n'
for f in "$TMP"/fd_*.plain; do
    n=$(basename "$f" .plain)
    a=$(median <"$f") b=$(median <"$TMP/$n.shim")
    awk -v n="$n" -v a="$a" -v b="$b" -v r="$ROUNDS" -v c="$CALLS" 'BEGIN {
        d = b - a
        printf "%s\taimd\tns_per_call(median of %d x %d)\t%.1f\t%.1f\t%.1f\t%.4f\t<= 20 ns more\t%s\n",
            n, r, c, a, b, d, b / a, (d <= 20) ? "yes" : "no" }'
done
for n in plain_request tls_request; do
    a=$(awk '{ print $1 }' "$TMP/$n.plain" | median) b=$(awk '{ print $1 }' "$TMP/$n.shim" | median)
    k=$(awk '{ print $2 }' "$TMP/$n.shim" | median)
    awk -v n="$n" -v a="$a" -v b="$b" -v k="$k" -v r="$ROUNDS" -v q="$REQUESTS" 'BEGIN {
        d = b - a
        printf "%s\taimd\tus_per_request(median of %d x %d; %s calls a request)\t%.3f\t%.3f\t%.3f\t%.4f\t-\t-\n",
            n, r, q, k, a, b, d, b / a
        t = n == "tls_request" ? "<= 1 us more" : "-"
        m = n == "tls_request" ? ((d / k <= 1) ? "yes" : "no") : "-"
        printf "%s\taimd\tus_per_call(the request'"'"'s difference / its calls)\t-\t-\t%.3f\t-\t%s\t%s\n",
            n, d / k, t, m }'
done
printf 'fd_calls\taimd\tshim_instructions_per_call(callgrind; its own code)\t-\t%s\t-\t-\t-\t-\n' "$IR_FD"
printf 'plain_request\taimd\tshim_instructions_per_request(callgrind; its own code)\t-\t%s\t-\t-\t-\t-\n' "$IR_PLAIN"
printf 'tls_request\taimd\tshim_instructions_per_request(callgrind; its own code)\t-\t%s\t-\t-\t-\t-\n' "$IR_TLS"
echo "# wall-clock figures on a shared machine move between runs (pinned: ${PIN0:-no});" \
    "the instruction counts are the stable ones" >&2
