#!/bin/sh
# connect() under the library is the program's own connect() wherever it does
# not meet a throttle.  Each probe runs without and with
# LD_PRELOAD, times itself inside the program (monotonic clock around the
# connect, so a busy machine's start-up time never enters the figures) and
# must give the same result within plain + 50 ms:
#   - real programs: python3 socket.create_connection, bash /dev/tcp, perl
#     IO::Socket::INET to a closed port; python3 to a stale UNIX socket file
#     and to a missing abstract socket;
#   - ssh, wget, php, xdpyinfo without a display, tmux on a stale socket,
#     dbus-send to a missing abstract socket: timed from outside, so only
#     within plain + 1 s (the library used to add 4.5 to 9 s);
#   - connect_probe (C): a closed port on 127.0.0.1 and ::1, a client's
#     address loop (::1 refused, then 127.0.0.1), a stale socket file, a
#     missing abstract socket, 10 threads to a closed port at once.
# Then what a retry must keep: the options a program set (SO_RCVBUF,
# SO_LINGER, IP_TOS/IPV6_TCLASS, TCP_SYNCNT, TCP_USER_TIMEOUT, IPV6_V6ONLY,
# SO_KEEPALIVE, TCP_NODELAY, SO_BINDTODEVICE and SO_MARK as root, a bound
# source address) read back after a retried connect as after a plain one;
# TCP_SYNCNT 1 against a full backlog ends within plain + 0.5 s; alarm(1)
# with a handler without SA_RESTART against a destination being retried
# ends connect() with EINTR at 1.0 s (with SA_RESTART the wait resumes);
# SO_SNDTIMEO 1 s bounds the retries; a retry attempt whose SYNs are dropped
# is cut at BACKOFF_MAX_TIME_MS; with no bound set, connect() ends by 30 s.
. "$(dirname "$0")/lib.sh"
# These probes are about one connect()'s own bounds (deadlines, signals) over
# retries that run a second or more: the destination's retry budget, which
# lets a lone call to a failing destination make 3 retries, is off.
export BACKOFF_RETRY_BUDGET=0

LIB="$(cd "$BUILD" && pwd)/libbackoff.so"
PROBE="$BUILD/tests/helpers/connect_probe"
[ -f "$LIB" ] || fail "build $LIB first"
[ -x "$PROBE" ] || fail "build $PROBE first"

# bounded SECONDS CMD...: CMD in its own process group, killed whole when the time is up.
bounded() {
    limit=$1; shift
    setsid timeout -k 2 "$limit" "$@"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# field LINE NAME: the value of NAME=value in LINE.
field() {
    printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# same_within PLAIN PRELOADED MS_FIELD SLACK_MS WHAT: every field but the time
# equal, the preloaded time at most the plain one + SLACK_MS.
same_within() {
    p_rest=$(printf '%s\n' "$1" | tr ' ' '\n' | grep -v "^$3=" | tr '\n' ' ')
    l_rest=$(printf '%s\n' "$2" | tr ' ' '\n' | grep -v "^$3=" | tr '\n' ' ')
    [ "$p_rest" = "$l_rest" ] || fail "$5: plain '$1', preloaded '$2'"
    p_ms=$(field "$1" "$3"); l_ms=$(field "$2" "$3")
    [ -n "$p_ms" ] && [ -n "$l_ms" ] || fail "$5: no time in '$1' / '$2'"
    awk -v p="$p_ms" -v l="$l_ms" -v s="$4" 'BEGIN { exit !(l <= p + s) }' ||
        fail "$5: preloaded took $l_ms ms, plain $p_ms ms (allowed plain + $4 ms)"
    note "$5: plain '$1' | preloaded '$2'"
}

# probe WHAT SLACK CMD...: runs CMD plain and preloaded (default settings) and compares.
probe() {
    what=$1; slack=$2; shift 2
    plain=$(bounded 20 "$@") || fail "$what: plain run failed"
    pre=$(BACKOFF_STATS="$TMP/probe.json" LD_PRELOAD="$LIB" bounded 20 "$@") ||
        fail "$what: preloaded run failed"
    same_within "$plain" "$pre" ms "$slack" "$what"
}

CLOSED=$(free_port)

# The default bound (BO_CONNECT_MAX_TIME_MS, 30 s) takes 30 s to show: it runs
# in the background while the rest goes on, and is checked at the end.
BACKOFF_MAX_ATTEMPTS=0 LD_PRELOAD="$LIB" bounded 45 "$PROBE" sndtimeo 0 >"$TMP/default.out" 2>&1 &
DEFAULT_PID=$!
PIDS="$PIDS $DEFAULT_PID"

PY_TCP='
import errno, socket, sys, time
t = time.monotonic()
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    r = "connected"
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e.errno))
print("result=%s ms=%.1f" % (r, (time.monotonic() - t) * 1000))
'
PY_UNIX='
import errno, os, socket, sys, time
path = sys.argv[1]
if path.startswith("@"):
    path = "\0" + path[1:]          # a missing abstract socket
else:
    if os.path.exists(path):
        os.unlink(path)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)                # a socket file nobody listens on
    stale.close()
s = socket.socket(socket.AF_UNIX)
t = time.monotonic()
try:
    s.connect(path)
    r = "connected"
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e.errno))
print("result=%s ms=%.1f" % (r, (time.monotonic() - t) * 1000))
'
BASH_TCP='
t0=$EPOCHREALTIME
if exec 3<>"/dev/tcp/127.0.0.1/$1"; then r=connected; else r=refused; fi
t1=$EPOCHREALTIME
echo "result=$r ms=$(awk -v a="$t0" -v b="$t1" "BEGIN { printf \"%.1f\", (b - a) * 1000 }")"
'
PERL_TCP='
use IO::Socket::INET; use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);
my $t = clock_gettime(CLOCK_MONOTONIC);
my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0], Proto => "tcp");
my $r = $s ? "connected" : ($!{ECONNREFUSED} ? "ECONNREFUSED" : "errno" . ($! + 0));
printf "result=%s ms=%.1f\n", $r, (clock_gettime(CLOCK_MONOTONIC) - $t) * 1000;
'

note "real programs, a closed port / a stale or missing UNIX socket: same result, same time"
probe "python3 create_connection" 50 python3 -c "$PY_TCP" "$CLOSED"
probe "bash /dev/tcp" 50 bash -c "$BASH_TCP" bash "$CLOSED"
probe "perl IO::Socket::INET" 50 perl -e "$PERL_TCP" "$CLOSED"
probe "python3 stale UNIX socket" 50 python3 -c "$PY_UNIX" "$TMP/stale-py.sock"
probe "python3 missing abstract socket" 50 python3 -c "$PY_UNIX" "@backoff-test-missing-$$"
[ "$(stats_sum "$TMP/probe.json" attempts)" -eq 0 ] || fail "a handed-back connect was counted"

# outside WHAT CMD...: a program that cannot time itself: the same exit status
# and output plain and preloaded, the preloaded run no more than 1 s slower
# (process start-up included: the library used to add 4.5 s or more), its
# stats written (the library was loaded) and no attempt counted (handed back).
outside() {
    what=$1; shift
    t0=$(date +%s%N)
    p_out=$(bounded 30 "$@" 2>&1) && p_rc=0 || p_rc=$?
    t1=$(date +%s%N)
    rm -f "$TMP/outside.json"
    l_out=$(BACKOFF_STATS="$TMP/outside.json" LD_PRELOAD="$LIB" bounded 30 "$@" 2>&1) && l_rc=0 || l_rc=$?
    t2=$(date +%s%N)
    p_ms=$(( (t1 - t0) / 1000000 )); l_ms=$(( (t2 - t1) / 1000000 ))
    [ "$p_rc" = "$l_rc" ] && [ "$p_out" = "$l_out" ] ||
        fail "$what: plain exit $p_rc '$p_out', preloaded exit $l_rc '$l_out'"
    [ "$l_ms" -le $((p_ms + 1000)) ] || fail "$what: preloaded took $l_ms ms, plain $p_ms ms"
    [ -s "$TMP/outside.json" ] || fail "$what: the library was not loaded (no stats)"
    [ "$(stats_sum "$TMP/outside.json" attempts)" -eq 0 ] || fail "$what: a connect was retried"
    note "$what: exit $l_rc, plain $p_ms ms, preloaded $l_ms ms: $(printf '%s' "$l_out" | head -n 1)"
}

note "programs timed from outside: ssh, wget, php, X11 without a display, tmux and dbus-send"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$TMP/tmux.sock"
command -v ssh >/dev/null && outside "ssh" ssh -F /dev/null -o BatchMode=yes -p "$CLOSED" 127.0.0.1 true
command -v wget >/dev/null && outside "wget" wget -q -O /dev/null --tries=1 "http://127.0.0.1:$CLOSED/"
command -v php >/dev/null && outside "php fsockopen" php -r \
    '$f = @fsockopen("127.0.0.1", (int)$argv[1], $en, $es, 5); echo $f ? "ok" : "err $en $es";' "$CLOSED"
command -v xdpyinfo >/dev/null && outside "xdpyinfo, no display" env DISPLAY=:99 xdpyinfo
command -v tmux >/dev/null && outside "tmux, stale socket" tmux -S "$TMP/tmux.sock" ls
command -v dbus-send >/dev/null && outside "dbus-send, missing abstract socket" \
    dbus-send --bus="unix:abstract=/tmp/backoff-test-missing-$$" --print-reply --dest=org.x /org/x org.x.y

note "connect_probe (C): the same cases, an address loop and 10 threads"
probe "C closed port 127.0.0.1" 50 "$PROBE" tcp 127.0.0.1 "$CLOSED"
probe "C closed port ::1" 50 "$PROBE" tcp ::1 "$CLOSED"
probe "C address loop ::1 then 127.0.0.1" 50 "$PROBE" loop
probe "C stale UNIX socket" 50 "$PROBE" unix-stale "$TMP"
probe "C missing abstract socket" 50 "$PROBE" abstract "backoff-test-missing-$$"
plain=$(bounded 20 "$PROBE" threads 10 "$CLOSED")
pre=$(LD_PRELOAD="$LIB" bounded 20 "$PROBE" threads 10 "$CLOSED")
same_within "$plain" "$pre" last_ms 50 "C 10 threads to a closed port"

note "10 threads to a refusing destination that is retried (named): each call ends by BACKOFF_MAX_TIME_MS=2000"
out=$(BACKOFF_HOSTS=127.0.0.1 BACKOFF_MAX_TIME_MS=2000 LD_PRELOAD="$LIB" bounded 30 "$PROBE" threads 10 "$CLOSED")
note "preloaded: $out"
awk -v m="$(field "$out" last_ms)" 'BEGIN { exit !(m >= 1500 && m <= 2300) }' ||
    fail "named destination, 10 threads: the last returned at $(field "$out" last_ms) ms, bound 2000"

note "options survive a retried connect (server up 0.5 s later; plain: server already up)"
for fam in 4 6; do
    for b in bind nobind; do
        bounded 20 "$PROBE" opts "$fam" 0 "$b" >"$TMP/opts-plain" 2>/dev/null ||
            fail "opts $fam $b: plain run failed"
        BACKOFF_HOSTS=127.0.0.1,::1 BACKOFF_STATS="$TMP/opts-$fam-$b.json" LD_PRELOAD="$LIB" \
            bounded 20 "$PROBE" opts "$fam" 500 "$b" >"$TMP/opts-pre" 2>/dev/null ||
            fail "opts $fam $b: preloaded run failed"
        grep -q '^rc=0 ' "$TMP/opts-plain" || fail "opts $fam $b: plain did not connect"
        [ "$(stats_sum "$TMP/opts-$fam-$b.json" attempts)" -ge 2 ] ||
            fail "opts $fam $b: the preloaded connect was not retried"
        diff "$TMP/opts-plain" "$TMP/opts-pre" >"$TMP/opts-diff" ||
            fail "opts $fam $b: options differ after a retried connect: $(cat "$TMP/opts-diff")"
        note "IPv$fam $b: $(tr '\n' ' ' <"$TMP/opts-pre")"
    done
done

note "TCP_SYNCNT 1 against a full backlog (a destination seen alive): plain + 0.5 s"
probe "TCP_SYNCNT 1, full backlog" 500 "$PROBE" syncnt

note "alarm(1), handler without SA_RESTART, a destination being retried (served, now refuses)"
out=$(BACKOFF_STATS="$TMP/alarm.json" LD_PRELOAD="$LIB" bounded 20 "$PROBE" alarm)
note "preloaded: $out; plain: $(bounded 20 "$PROBE" alarm)"
[ "$(field "$out" rc)" = -1 ] && [ "$(field "$out" errno)" = EINTR ] ||
    fail "alarm: expected -1/EINTR, got $out"
awk -v m="$(field "$out" ms)" 'BEGIN { exit !(m >= 950 && m <= 1200) }' ||
    fail "alarm: connect() returned at $(field "$out" ms) ms, expected about 1000"
[ "$(field "$out" so_error)" = ECONNREFUSED ] ||
    fail "alarm: the connection request was not left under way: $out"
[ "$(stats_sum "$TMP/alarm.json" retries)" -ge 1 ] || fail "alarm: the destination was not being retried"

note "the same with SA_RESTART: the handler runs at 1 s, the retries go on to the policy's end"
out=$(LD_PRELOAD="$LIB" bounded 20 "$PROBE" alarm restart)
note "preloaded: $out"
[ "$(field "$out" errno)" = ECONNREFUSED ] || fail "alarm with SA_RESTART: $out"
awk -v m="$(field "$out" ms)" -v h="$(field "$out" handler_ms)" \
    'BEGIN { exit !(h >= 950 && h <= 1200 && m > h + 500) }' ||
    fail "alarm with SA_RESTART: the wait did not resume after the handler: $out"

note "SO_SNDTIMEO 1 s bounds the whole retried connect"
out=$(LD_PRELOAD="$LIB" bounded 20 "$PROBE" sndtimeo 1000)
note "preloaded: $out"
[ "$(field "$out" errno)" = ECONNREFUSED ] || fail "sndtimeo: $out"
# 100 ms of margin, plus as late as a plain 1 s sleep woke just before and
# just after (the machine's own lateness, not the shim's)
awk -v m="$(field "$out" ms)" -v l="$(field "$out" sleep_late_ms)" 'BEGIN { exit !(m <= 1100 + l) }' ||
    fail "sndtimeo: connect() returned at $(field "$out" ms) ms, past SO_SNDTIMEO 1000 ms (+100, + a plain sleep's $(field "$out" sleep_late_ms) ms late)"
note "a retry attempt whose SYNs are dropped is cut at the deadline (BACKOFF_MAX_TIME_MS=2000)"
out=$(BACKOFF_MAX_TIME_MS=2000 LD_PRELOAD="$LIB" bounded 20 "$PROBE" blackhole)
note "preloaded: $out; plain: $(bounded 20 "$PROBE" blackhole)"
[ "$(field "$out" errno)" = ETIMEDOUT ] || fail "blackhole: $out"
awk -v m="$(field "$out" ms)" 'BEGIN { exit !(m >= 1900 && m <= 2300) }' ||
    fail "blackhole: connect() returned at $(field "$out" ms) ms, expected about 2000"

note "BACKOFF_MAX_TIME_MS unset, BACKOFF_MAX_ATTEMPTS=0: connect() ends by the 30 s default"
wait "$DEFAULT_PID" || fail "default bound: the run failed or hung: $(cat "$TMP/default.out")"
out=$(cat "$TMP/default.out")
note "preloaded: $out"
[ "$(field "$out" errno)" = ECONNREFUSED ] || fail "default bound: $out"
awk -v m="$(field "$out" ms)" 'BEGIN { exit !(m >= 28000 && m <= 30500) }' ||
    fail "default bound: connect() returned at $(field "$out" ms) ms, expected at most 30000"
echo "ok"
