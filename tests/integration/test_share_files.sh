#!/bin/sh
# BACKOFF_SHARE=host never uses a state file it should not: one
# of another user (tests run as root: chowned to nobody), a symlink, a file
# open to others, and, while another process holds it, a truncated file,
# random bytes, or another layout version (another build of the library).
# The process then keeps its state to itself (its call is still retried) and
# says so in one BACKOFF_VERBOSE line; the file is left as it was.  The same
# bad files of ours that nobody holds are replaced by a good one.  The file
# made is 0600 and ours; BACKOFF_SHARE=process makes none; --reset clears
# what --status shows.
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/loadgen" ] && [ -x "$BUILD/backoff" ] ||
    fail "build libbackoff.so, loadgen and backoff first"

start_flip_server flip
n=0

# call NAME [VAR=VALUE...]: one GET (429 first, then 200) with the state in
# $XDG_RUNTIME_DIR; checks it was retried and ended 200; stderr in NAME.err.
call() {
    _n=$1; shift
    n=$((n + 1))
    env "$@" BACKOFF_VERBOSE=1 BACKOFF_STATS="$TMP/$_n.json" LD_PRELOAD="$BUILD/libbackoff.so" \
        setsid timeout -k 2 60 "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/$n" \
        --requests 1 --threads 1 >"$TMP/$_n.tsv" 2>"$TMP/$_n.err" || fail "$_n: loadgen failed"
    [ "$(summary_field "$TMP/$_n.tsv" ok)" = 1 ] || fail "$_n: the call did not end 200: $(cat "$TMP/$_n.err")"
    [ "$(stats_sum "$TMP/$_n.json" attempts)" = 2 ] || fail "$_n: the call was not retried once: $(cat "$TMP/$_n.json")"
}

# dir NAME: a fresh XDG_RUNTIME_DIR; F is its state file.
dir() {
    XDG_RUNTIME_DIR=$TMP/$1
    mkdir -m 700 "$XDG_RUNTIME_DIR"
    F=$XDG_RUNTIME_DIR/backoff.shm
}

# fallback NAME PATTERN: the call fell back, saying PATTERN, in one line.
fallback() {
    [ "$(grep -c 'shared state not used' "$TMP/$1.err")" = 1 ] ||
        fail "$1: expected one line saying the shared state is not used: $(cat "$TMP/$1.err")"
    grep 'shared state not used' "$TMP/$1.err" | grep -q "$2" || fail "$1: the line does not say '$2': $(cat "$TMP/$1.err")"
    note "$1: $(grep 'shared state not used' "$TMP/$1.err")"
}

# A good file first: made 0600, ours, of the layout's size; quiet.
dir good
call good
[ -f "$F" ] && [ ! -L "$F" ] || fail "no state file made in $XDG_RUNTIME_DIR"
[ "$(stat -c %a:%u "$F")" = "600:$(id -u)" ] || fail "the state file is $(stat -c %a:%u "$F"), expected 600:$(id -u)"
! grep -q "shared state" "$TMP/good.err" || fail "a good file made the shim complain: $(cat "$TMP/good.err")"
SIZE=$(stat -c %s "$F")
note "state file: $SIZE bytes, mode 600"
"$BUILD/backoff" --status >"$TMP/status" || fail "--status failed"
grep -q "^http://127.0.0.1:$PORT " "$TMP/status" || fail "--status does not list the destination: $(cat "$TMP/status")"
cp "$F" "$TMP/good.copy"

# Another user's file: never used, never changed.
dir owner
cp "$TMP/good.copy" "$F" && chmod 600 "$F" && chown nobody "$F"
call owner
fallback owner "belongs to uid"
[ "$(stat -c %U "$F")" = nobody ] && cmp -s "$F" "$TMP/good.copy" || fail "owner: the file was changed"

# A symlink to a file of ours: never followed.
dir link
cp "$TMP/good.copy" "$TMP/target" && ln -s "$TMP/target" "$F"
call link
fallback link "symbolic link"
[ -L "$F" ] && cmp -s "$TMP/target" "$TMP/good.copy" || fail "link: the link or its target was changed"

# Ours but open to others: not used.
dir mode
cp "$TMP/good.copy" "$F" && chmod 644 "$F"
call mode
fallback mode "open to other users"

# bad NAME: plant $TMP/NAME.plant as the file; held by another process: a
# fallback, the file untouched; held by nobody: replaced by a good file.
bad() {
    dir "$1-held"
    cp "$TMP/$1.plant" "$F" && chmod 600 "$F"
    rm -f "$TMP/held"
    (exec 9<"$F" && flock -s 9 && echo held >"$TMP/held" && exec sleep 60) &
    _h=$!
    PIDS="$PIDS $_h"
    wait_for "$TMP/held" '^held$' 20
    call "$1-held"
    fallback "$1-held" "$2"
    cmp -s "$F" "$TMP/$1.plant" || fail "$1-held: the file was changed"
    kill $_h
    wait $_h 2>/dev/null || true
    dir "$1-free"
    cp "$TMP/$1.plant" "$F" && chmod 600 "$F"
    call "$1-free"
    grep -q "replaced the shared state file" "$TMP/$1-free.err" || fail "$1-free: not replaced: $(cat "$TMP/$1-free.err")"
    [ "$(stat -c %s "$F")" = "$SIZE" ] || fail "$1-free: the new file is $(stat -c %s "$F") bytes"
    "$BUILD/backoff" --status >"$TMP/status" || fail "$1-free: --status failed after the replacement"
    note "$1 (nobody holding it): $(cat "$TMP/$1-free.err")"
}
head -c 100 "$TMP/good.copy" >"$TMP/truncated.plant"
bad truncated "is in use and it is 100 bytes"
head -c "$SIZE" /dev/urandom >"$TMP/random.plant"
bad random "bad magic"
# Another layout version: the version field (after the 8-byte magic) is 99.
cp "$TMP/good.copy" "$TMP/version.plant"
printf 'c\000\000\000' | dd of="$TMP/version.plant" bs=1 seek=8 conv=notrunc 2>/dev/null
bad version "layout (version 99"

# BACKOFF_SHARE=process: no file at all, the retry as always.
dir process
call process BACKOFF_SHARE=process
[ ! -e "$F" ] || fail "BACKOFF_SHARE=process made $F"
! grep -q "shared state" "$TMP/process.err" || fail "process: the shim spoke of shared state: $(cat "$TMP/process.err")"

# --reset: nothing shared any more.
XDG_RUNTIME_DIR=$TMP/good
"$BUILD/backoff" --reset >"$TMP/reset" || fail "--reset failed: $(cat "$TMP/reset")"
"$BUILD/backoff" --status >"$TMP/status" || fail "--status failed"
! grep -q "^http://" "$TMP/status" || fail "--status still lists destinations after --reset: $(cat "$TMP/status")"
note "--reset: $(cat "$TMP/reset")"

# A full tmpfs (1 MB, in a mount namespace of its own, so nothing outlives the
# test; needs root, else skipped): the file is sparse and a slot's pages are
# allocated before it is used, so the destinations that do not fit stay
# process-local; without that, the program died of SIGBUS (exit 135).
mkdir -p "$TMP/full"
start_server full # a server that lets everything through
if unshare -m sh -c "mount -t tmpfs -o size=1m,mode=700 tmpfs '$TMP/full'" 2>/dev/null; then
    unshare -m sh -c "mount -t tmpfs -o size=1m,mode=700 tmpfs '$TMP/full' &&
        XDG_RUNTIME_DIR='$TMP/full' LD_PRELOAD='$BUILD/libbackoff.so' \
        timeout -k 2 60 '$BUILD/tests/helpers/many_dests' $PORT 600 1200 >'$TMP/full.out' 2>&1
        echo \$? >'$TMP/full.rc'
        XDG_RUNTIME_DIR='$TMP/full' '$BUILD/backoff' --status | grep -c '^http' >'$TMP/full.held'"
    rc=$(cat "$TMP/full.rc")
    [ "$rc" = 0 ] || fail "full tmpfs: many_dests exited $rc (135: SIGBUS): $(tail -n 2 "$TMP/full.out")"
    grep -q "failures 0" "$TMP/full.out" || fail "full tmpfs: calls failed: $(tail -n 2 "$TMP/full.out")"
    held=$(cat "$TMP/full.held")
    [ "$held" -gt 0 ] && [ "$held" -lt 600 ] ||
        fail "full tmpfs: the 1 MB file held $held of 600 destinations (some, not all, expected)"
    note "full tmpfs (1 MB): 600 destinations, $held shared, the rest process-local, no SIGBUS"
else
    note "full tmpfs: skipped (mounting a tmpfs needs root)"
fi

echo "ok"
