#!/bin/sh
# What the shim does in programs it cannot enter, shown with a real check:
# stress_connect (one blocking connect() to a closed port) built dynamically
# is hooked (BACKOFF_VERBOSE prints the retries, BACKOFF_STATS its object);
# the same source built with -static has no dynamic loader, so LD_PRELOAD is
# never read: one attempt, not a line from the shim; and a setuid-root copy
# run by an unprivileged user (secure-execution mode) gets LD_PRELOAD
# ignored by ld.so, while a plain copy run by that same user is hooked.  The
# setuid part needs root (to chown and chmod u+s) and setpriv; without them
# it says so and checks the rest.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
[ -f "$LIB" ] || fail "build $LIB first"
SRC="$TOP/tests/helpers/stress_connect.c"
CC=${CC:-cc}

# A closed port: bound by nothing once python has let it go.
CLOSED=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# run_hooked BIN [prefix...]: runs BIN against the closed port under the shim
# (named in BACKOFF_HOSTS, so that its refusal is retried: 3 attempts, 10 ms
# apart, verbose, stats on stderr); stdout+stderr in $TMP/run.
run_hooked() {
    bin=$1; shift
    "$@" env BACKOFF_HOSTS=127.0.0.1 BACKOFF_VERBOSE=1 BACKOFF_MAX_ATTEMPTS=3 BACKOFF_BASE_MS=10 BACKOFF_POLICY=fixed \
        BACKOFF_STATS=stderr LD_PRELOAD="$LIB" "$bin" "$CLOSED" >"$TMP/run" 2>&1 || true
}

$CC -O2 -o "$TMP/dyn" "$SRC" || fail "cannot build the dynamic test program"
$CC -O2 -static -o "$TMP/static" "$SRC" 2>"$TMP/cc.err" || fail "cannot build a static program: $(cat "$TMP/cc.err")"
file "$TMP/static" | grep -q 'statically linked' || fail "$TMP/static is not static"

note "dynamic program: hooked"
run_hooked "$TMP/dyn"
cat "$TMP/run"
[ "$(grep -c '^backoff: connect' "$TMP/run")" -eq 3 ] || fail "the dynamic program was not hooked"
grep -q '"attempts":3' "$TMP/run" || fail "the dynamic program's stats do not show 3 attempts"

note "static program: LD_PRELOAD is never read"
run_hooked "$TMP/static"
cat "$TMP/run"
grep -q '^connect: Connection refused' "$TMP/run" || fail "the static program did not run"
grep -q 'backoff' "$TMP/run" && fail "the shim printed inside a static program"

if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    note "setuid: skipped (needs root and setpriv to make and run a setuid-root copy)"
    echo "ok"
    exit 0
fi
note "setuid-root program run by nobody: ld.so ignores LD_PRELOAD (secure-execution mode)"
D="$TMP/suid"
mkdir -p "$D"
cp "$TMP/dyn" "$D/plain"
cp "$TMP/dyn" "$D/setuid"
cp "$LIB" "$D/libbackoff.so"
LIB="$D/libbackoff.so"
chmod 755 "$TMP" "$D" "$D/plain"
chmod 644 "$LIB"
chown root:root "$D/setuid"
chmod 4755 "$D/setuid"
AS_NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
if ! $AS_NOBODY /bin/true 2>/dev/null; then
    note "setuid: skipped (setpriv cannot switch to nobody here)"
    echo "ok"
    exit 0
fi
run_hooked "$D/plain" $AS_NOBODY
cat "$TMP/run"
[ "$(grep -c '^backoff: connect' "$TMP/run")" -eq 3 ] || fail "nobody's plain copy was not hooked: the setuid check would prove nothing"
run_hooked "$D/setuid" $AS_NOBODY
cat "$TMP/run"
grep -q '^connect: Connection refused' "$TMP/run" || fail "the setuid program did not run"
grep -q 'backoff' "$TMP/run" && fail "the shim was loaded into a setuid program"
echo "ok"
