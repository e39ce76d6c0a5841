#!/bin/sh
# BACKOFF_SHARE=host keeps a process's block attached to its host-wide slot
# while the process does not use it (its entry idle), so that coming back
# to a known destination takes no file lock.  What must still hold:
#   1. eviction: a slot whose only entry is a live process's idle one is
#      taken when the file needs the room, and that process then attaches
#      anew to a slot of its own, with a fresh state (share_evict drives the
#      file's code itself: the file's 16,384 slots are filled for it);
#   2. exit: processes that end normally leave no entry behind (a loop of
#      50 `backoff -- curl`): `backoff --status` shows nobody, and the slot
#      read without any reaping (share_dump) holds no entry either;
#   3. fork: the child of a process with an idle attachment uses the
#      destination as itself, and the parent's entries stay as they were,
#      idle and busy, through the child's calls and its exit.
. "$(dirname "$0")/lib.sh"

LIB="$BUILD/libbackoff.so"
EVICT="$BUILD/tests/helpers/share_evict"
DUMP="$BUILD/tests/helpers/share_dump"
FORK="$BUILD/tests/helpers/idle_fork"
for f in "$LIB" "$BUILD/backoff" "$EVICT" "$DUMP" "$FORK"; do
    [ -e "$f" ] || fail "build $f first"
done
command -v curl >/dev/null || fail "curl is not installed"

note "1. a slot held only by a live process's idle entry is evicted when the file is full"
XDG_RUNTIME_DIR=$TMP/evict && mkdir -m 700 "$XDG_RUNTIME_DIR"
rc=0
timeout -k 2 60 "$EVICT" >"$TMP/evict.out" 2>&1 || rc=$?
cat "$TMP/evict.out"
[ $rc -eq 0 ] || fail "share_evict exited $rc"
[ "$(grep -c '^ok: ' "$TMP/evict.out")" -ge 14 ] || fail "share_evict made fewer checks than it has"
rm -rf "$XDG_RUNTIME_DIR"

start_server idle
KEY="http://127.0.0.1:$PORT"

note "2. 50 backoff -- curl, one after another: no entry left behind"
XDG_RUNTIME_DIR=$TMP/loop && mkdir -m 700 "$XDG_RUNTIME_DIR"
i=0
while [ $i -lt 50 ]; do
    code=$(timeout -k 2 20 "$BUILD/backoff" -- curl -s -o /dev/null -w '%{http_code}' "$KEY/item/$i") ||
        fail "backoff -- curl $i failed"
    [ "$code" = 200 ] || fail "backoff -- curl $i answered $code"
    i=$((i + 1))
done
"$DUMP" "$KEY" >"$TMP/loop.dump" || fail "share_dump failed"
cat "$TMP/loop.dump"
[ "$(head -n 1 "$TMP/loop.dump")" = "entries 0 busy 0" ] ||
    fail "processes that exited left entries in the slot"
"$BUILD/backoff" --status >"$TMP/loop.status" || fail "--status failed"
cat "$TMP/loop.status"
awk -v k="$KEY" '$1 == k { seen = 1; if ($5 != 0) bad = 1 } END { exit bad || !seen }' "$TMP/loop.status" ||
    fail "--status does not list $KEY with 0 processes"
XDG_RUNTIME_DIR=$TMP/fork && mkdir -m 700 "$XDG_RUNTIME_DIR"

note "3. fork with an idle attachment (a.test idle, b.test in use)"
A="http://a.test:$PORT"
B="http://b.test:$PORT"
mkfifo "$TMP/in"
LD_PRELOAD="$LIB" timeout -k 2 60 "$FORK" "$PORT" <"$TMP/in" >"$TMP/fork.out" 2>"$TMP/fork.err" &
FPID=$!
PIDS="$PIDS $FPID"
exec 3>"$TMP/in"
# wait_line WORD: until the helper printed a line starting with WORD (20 s).
wait_line() {
    _w=0
    until grep -q "^$1 " "$TMP/fork.out" 2>/dev/null; do
        kill -0 $FPID 2>/dev/null || fail "idle_fork ended early: $(cat "$TMP/fork.out" "$TMP/fork.err")"
        _w=$((_w + 1))
        [ $_w -gt 200 ] && fail "idle_fork printed no $1 line"
        sleep 0.1
    done
}
# expect KEY "ENTRIES BUSY" [PID REFS]: the slot's dump.
expect() {
    "$DUMP" "$1" >"$TMP/dump" || fail "share_dump $1 failed"
    sed "s|^|# $1: |" "$TMP/dump"
    [ "$(head -n 1 "$TMP/dump")" = "entries $2" ] || fail "$1: expected entries $2"
    if [ $# -gt 2 ]; then
        grep -q "^pid $3 refs $4 " "$TMP/dump" || fail "$1: the entry of pid $3 is not at refs $4"
    fi
}
wait_line ready1
P=$(sed -n 's/^ready1 //p' "$TMP/fork.out")
expect "$A" "1 busy 0" "$P" 0
expect "$B" "1 busy 1" "$P" 1
echo >&3
wait_line ready2
[ "$(sed -n 's/^ready2 //p' "$TMP/fork.out")" = 0 ] || fail "the child's calls failed: $(cat "$TMP/fork.out" "$TMP/fork.err")"
note "after the child's calls and exit the parent's entries are as they were, the child's gone"
expect "$A" "1 busy 0" "$P" 0
expect "$B" "1 busy 1" "$P" 1
echo >&3
exec 3>&-
rc=0
wait $FPID || rc=$?
[ $rc -eq 0 ] || fail "idle_fork exited $rc: $(cat "$TMP/fork.out" "$TMP/fork.err")"
note "the parent reused a.test and exited: nothing left"
expect "$A" "0 busy 0"
expect "$B" "0 busy 0"

note "4. exit while another process, stopped, holds the lock of a slot left idle: bounded"
rm -f "$TMP/in" "$TMP/fork.out"
mkfifo "$TMP/in"
BACKOFF_STATS="$TMP/exit.json" LD_PRELOAD="$LIB" timeout -k 2 60 "$FORK" "$PORT" exit \
    <"$TMP/in" >"$TMP/fork.out" 2>"$TMP/fork.err" &
FPID=$!
PIDS="$PIDS $FPID"
exec 3>"$TMP/in"
wait_line ready1
P=$(sed -n 's/^ready1 //p' "$TMP/fork.out")
setsid "$BUILD/tests/helpers/share_hold" slot "$A" >"$TMP/hold.out" 2>"$TMP/hold.err" &
HP=$!
PIDS="$PIDS $HP"
_w=0
until grep -q '^locked$' "$TMP/hold.out" 2>/dev/null; do
    _w=$((_w + 1)); [ $_w -gt 200 ] && fail "share_hold did not take a.test's lock"
    sleep 0.1
done
kill -STOP $HP
t0=$(date +%s%3N)
echo >&3
exec 3>&-
rc=0
wait $FPID || rc=$?
t1=$(date +%s%3N)
kill -KILL $HP 2>/dev/null || true
[ $rc -eq 0 ] || fail "idle_fork exit exited $rc: $(cat "$TMP/fork.out" "$TMP/fork.err")"
note "it exited $((t1 - t0)) ms after it was told to"
[ $((t1 - t0)) -le 5000 ] || fail "its exit waited $((t1 - t0)) ms for the held lock"
[ "$(stats_sum "$TMP/exit.json" calls)" = 2 ] || fail "its stats do not count its 2 calls: $(cat "$TMP/exit.json")"
note "b.test, whose slot was free, was let go; a.test's entry names a dead process (reaped)"
expect "$B" "0 busy 0"
stop_server
echo "ok"
