#!/bin/sh
# make test, make demo (demo/ensure-deps.sh) and .ci/run install Debian
# packages through demo/apt-step.sh, which waits for the package manager's
# locks when another apt or dpkg holds them (unattended upgrades on a fresh
# machine), a bounded time, with one line saying so, instead of failing.
#
# apt-get runs here for real, as root, against a sandbox of its state (a
# copy of dpkg's status, lists and caches of its own, no sources: nothing is
# downloaded or installed, the machine's apt is not touched), its locks
# held by a process of the test with fcntl locks as apt and dpkg take them
# (flock(1) would not do: apt never sees those).  Checked: the dpkg
# frontend lock (an install: apt's own DPkg::Lock::Timeout), the lists lock
# (`apt-get update`, which that option does not cover), a lock held past
# APT_LOCK_WAIT (a failure that says so), no lock at all and a failure that
# is not a lock's (no wait, no line).
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
    note "not root: apt-get cannot run here; the lock waits are not checked"
    echo "ok"
    exit 0
fi
command -v apt-get >/dev/null 2>&1 || { note "no apt-get: skipped"; echo "ok"; exit 0; }

S="$TMP/apt"
mkdir -p "$S/dpkg" "$S/lists/partial" "$S/cache/archives/partial" "$S/state" "$S/none" "$TMP/bin"
cp /var/lib/dpkg/status "$S/dpkg/status"
# apt_step calls apt-get by name: this one is the real one, in the sandbox.
cat >"$TMP/bin/apt-get" <<SH
#!/bin/sh
exec /usr/bin/apt-get -o Dir::State="$S/state" -o Dir::State::lists="$S/lists/" \\
    -o Dir::State::status="$S/dpkg/status" -o Dir::Cache="$S/cache" \\
    -o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts="$S/none" "\$@"
SH
chmod +x "$TMP/bin/apt-get"

# hold FILE SECONDS: a process holds an fcntl write lock on FILE for SECONDS.
hold() {
    : >"$TMP/held"
    /usr/bin/python3 -c '
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)
open(sys.argv[3], "w").write("held\n")
time.sleep(float(sys.argv[2]))' "$1" "$2" "$TMP/held" &
    HOLDER=$!
    PIDS="$PIDS $HOLDER"
    wait_for "$TMP/held" held 10
}

# step NAME WAIT ARGS...: apt_step ARGS in a shell of its own (it exits on
# failure), APT_LOCK_WAIT=WAIT; its status in $TMP/NAME.rc, its stderr in
# $TMP/NAME.err, the seconds it took in $TMP/NAME.s.
step() {
    _n=$1 _w=$2
    shift 2
    _t0=$(date +%s)
    _rc=0
    PATH="$TMP/bin:$PATH" APT_LOCK_WAIT=$_w APT_LOG="$TMP/$_n.log" APT_WHO=backoff SUDO="" \
        timeout -k 2 120 sh -c '. "$1/demo/apt-step.sh"; shift; apt_step "$@"' sh "$TOP" "$@" \
        2>"$TMP/$_n.err" || _rc=$?
    echo $_rc >"$TMP/$_n.rc"
    echo $(($(date +%s) - _t0)) >"$TMP/$_n.s"
    note "$_n: exit $_rc after $(cat "$TMP/$_n.s") s: $(cat "$TMP/$_n.err")"
}
busy_lines() { grep -c 'the package manager is busy' "$TMP/$1.err" || true; }

# No lock held: at once, nothing said.
step free 60 install -y dpkg
[ "$(cat "$TMP/free.rc")" = 0 ] || fail "apt-get install with no lock held failed: $(cat "$TMP/free.log")"
[ "$(busy_lines free)" = 0 ] || fail "a wait was announced with no lock held"

# The dpkg frontend lock, held 4 s: one line, then the install runs.
hold "$S/dpkg/lock-frontend" 4
step frontend 60 install -y dpkg
wait "$HOLDER" 2>/dev/null || true
[ "$(cat "$TMP/frontend.rc")" = 0 ] || fail "the install failed: $(cat "$TMP/frontend.err")"
[ "$(busy_lines frontend)" = 1 ] || fail "expected one line saying it waits: $(cat "$TMP/frontend.err")"
grep -q "lock-frontend, held by process [0-9]* (python3)" "$TMP/frontend.err" ||
    fail "the line does not name the lock and its holder: $(cat "$TMP/frontend.err")"
[ "$(cat "$TMP/frontend.s")" -ge 3 ] || fail "it did not wait for the lock"

# The lists lock of apt-get update, held 4 s (DPkg::Lock::Timeout does not cover it).
hold "$S/lists/lock" 4
step lists 60 update
wait "$HOLDER" 2>/dev/null || true
[ "$(cat "$TMP/lists.rc")" = 0 ] || fail "apt-get update failed: $(cat "$TMP/lists.err")"
[ "$(busy_lines lists)" = 1 ] || fail "expected one line saying it waits: $(cat "$TMP/lists.err")"
grep -q "lists/lock, held by process" "$TMP/lists.err" || fail "$(cat "$TMP/lists.err")"
[ "$(cat "$TMP/lists.s")" -ge 3 ] || fail "apt-get update did not wait for the lock"

# Held past the bound: it gives up, saying so.
hold "$S/dpkg/lock-frontend" 30
step bound 3 install -y dpkg
kill "$HOLDER" 2>/dev/null || true
[ "$(cat "$TMP/bound.rc")" = 1 ] || fail "a lock held past APT_LOCK_WAIT: exit $(cat "$TMP/bound.rc")"
grep -q "was still held after 3 s" "$TMP/bound.err" || fail "$(cat "$TMP/bound.err")"
[ "$(cat "$TMP/bound.s")" -le 20 ] || fail "gave up after $(cat "$TMP/bound.s") s, the bound was 3"

# A failure that is no lock's: at once, no wait.
step other 60 install -y backoff-no-such-package
[ "$(cat "$TMP/other.rc")" = 1 ] || fail "a package that does not exist: exit $(cat "$TMP/other.rc")"
[ "$(busy_lines other)" = 0 ] || fail "waited on a failure that is not a lock's"
grep -q "failed; the end of" "$TMP/other.err" || fail "$(cat "$TMP/other.err")"
echo "ok"
