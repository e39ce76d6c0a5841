#!/bin/sh
# BACKOFF_SHARE=host without a cliff: more processes on one
# destination than a slot's own chunk of entries (64) share its window.
#   1. 150 `backoff -- curl` at once (xargs -P 150, 300 calls) against a
#      token bucket without hints: --status shows more than 64 processes
#      using the destination (the slot took chunks of the pool), every call
#      ends 200, none gives up, at most 1.15 attempts per request (process-
#      local state sent 3x the requests), and afterwards nothing is in
#      flight, nobody is attached and the file is sound (share_dump --check);
#   2. 160 at once against a cap of 10 x 400 ms, a quarter of them SIGKILLed
#      part way (those with attempts in flight first): the rest finish, none
#      gives up, no lease of a dead process is left, nothing stays in flight,
#      and the file is sound;
#   3. (root: a tmpfs of its own) the same file with its tmpfs full, so that
#      no chunk of the pool can be allocated: 150 processes, 64 entries; the
#      rest wait for one (the verbose line says so) and never send outside
#      the window (at most 1.25 attempts per request: 151 requests carry the
#      window's learning), no SIGBUS, and the file is sound.
. "$(dirname "$0")/lib.sh"

DUMP="$BUILD/tests/helpers/share_dump"
for f in "$BUILD/libbackoff.so" "$BUILD/backoff" "$DUMP"; do
    [ -e "$f" ] || fail "build $f first"
done
command -v curl >/dev/null || fail "curl is not installed"
command -v xargs >/dev/null || fail "xargs is not installed"

# status_field KEY FIELD: FIELD of KEY's --status line (4 in flight, 5
# processes, 8 holding, 9 waiting); "none" when it is not listed (or there
# is no file yet).
status_field() {
    _rc=0
    "$BUILD/backoff" --status >"$TMP/status" 2>&1 || _rc=$?
    [ $_rc = 0 ] || [ $_rc = 1 ] || fail "--status failed: $(cat "$TMP/status")"
    awk -v k="$1" -v f="$2" '$1 == k { print $f; found = 1 } END { if (!found) print "none" }' \
        "$TMP/status"
}

# many NAME P CALLS: CALLS `backoff -- curl` processes, P at once, against
# $PORT, in the background (its process group in $TMP/NAME.pid, the
# timeout's pid, whose child is xargs); codes in $TMP/NAME.codes.
many() {
    _n=$1 _p=$2 _c=$3
    seq 1 "$_c" | BACKOFF_STATS="$TMP/$_n.json" setsid sh -c 'echo $$ >"$1"; exec timeout -k 2 90 \
        xargs -P "$2" -I{} "$3/backoff" -- curl -s -o /dev/null -w "%{http_code}\n" \
        "http://127.0.0.1:$4/item/{}"' sh "$TMP/$_n.pid" "$_p" "$BUILD" "$PORT" \
        >"$TMP/$_n.codes" 2>"$TMP/$_n.err" &
    MANY_PID=$!
    PIDS="$PIDS $MANY_PID"
}

# sound NAME: share_dump --check passes; its line in $TMP/NAME.check.
sound() {
    "$DUMP" --check >"$TMP/$1.check" 2>&1 || fail "$1: the file is not sound: $(cat "$TMP/$1.check")"
    note "$1: $(tail -n 1 "$TMP/$1.check")"
}

# check_field NAME FIELD: a field of share_dump --check's last line.
check_field() {
    tail -n 1 "$TMP/$1.check" | awk -v f="$2" '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }'
}

note "1. 150 processes at once, 300 calls, token bucket 30/s burst 10 without hints"
start_server bucket --rate 30 --burst 10 --bucket-hints none
KEY="http://127.0.0.1:$PORT"
t0=$(date +%s%3N)
many bucket 150 300
most=0 seen=""
while kill -0 "$MANY_PID" 2>/dev/null; do
    p=$(status_field "$KEY" 5)
    case $p in ''|none|*[!0-9]*) p=0 ;; esac
    if [ "$p" -gt "$most" ]; then
        most=$p
        seen=$(grep "^$KEY " "$TMP/status")
        "$DUMP" "$KEY" | sed -n 2p >"$TMP/bucket.chunks"
    fi
    sleep 0.2
done
wait "$MANY_PID" || fail "bucket: xargs failed or timed out: $(tail -n 3 "$TMP/bucket.err")"
t1=$(date +%s%3N)
stop_server
ok=$(grep -c '^200$' "$TMP/bucket.codes" || true)
att=$(summary_field "$TMP/bucket.out" requests)
note "bucket: $ok/300 ok, $att attempts, gave up $(stats_sum "$TMP/bucket.json" gave_up), $((t1 - t0)) ms (optimum 9,667); at most $most processes using it at once ($seen; $(cat "$TMP/bucket.chunks"))"
[ "$ok" = 300 ] || fail "bucket: $ok of 300 calls ended 200"
[ "$(stats_sum "$TMP/bucket.json" calls)" = 300 ] || fail "bucket: the stats count $(stats_sum "$TMP/bucket.json" calls) calls"
[ "$(stats_sum "$TMP/bucket.json" gave_up)" = 0 ] || fail "bucket: calls gave up"
[ "$most" -gt 64 ] || fail "bucket: at most $most processes shared the destination (more than 64 expected)"
grep -q 'chunks [1-9]' "$TMP/bucket.chunks" || fail "bucket: the slot took no chunk of the pool: $(cat "$TMP/bucket.chunks")"
[ $((att * 100)) -le $((300 * 115)) ] || fail "bucket: $att attempts for 300 calls (at most 1.15 per call)"
[ "$(status_field "$KEY" 4) $(status_field "$KEY" 5)" = "0 0" ] ||
    fail "bucket: after the run: $(cat "$TMP/status")"
sound bucket

note "2. 160 processes at once against a cap of 10 x 400 ms, a quarter SIGKILLed part way"
XDG_RUNTIME_DIR=$TMP/kill && mkdir -m 700 "$XDG_RUNTIME_DIR"
start_server cap --max-busy 10 --service-ms 400
KEY="http://127.0.0.1:$PORT"
# not xargs, which stops waiting for the others once a child is killed:
# a shell that starts one process a line and waits for them all
cat >"$TMP/launch.sh" <<'EOF'
while read -r i; do
    "$1/backoff" -- curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$2/item/$i" &
done
wait
EOF
seq 1 160 | BACKOFF_STATS="$TMP/kill.json" setsid sh -c 'echo $$ >"$1"; shift; exec timeout -k 2 90 sh "$@"' \
    sh "$TMP/kill.pid" "$TMP/launch.sh" "$BUILD" "$PORT" >"$TMP/kill.codes" 2>"$TMP/kill.err" &
MANY_PID=$!
PIDS="$PIDS $MANY_PID"
# once the window is full and most of them are waiting
i=0
until [ "$(status_field "$KEY" 4)" -ge 8 ] 2>/dev/null && [ "$(status_field "$KEY" 9)" -ge 60 ] 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 150 ] && fail "kill: the window never filled: $(cat "$TMP/status")"
    sleep 0.1
done
before=$(grep "^$KEY " "$TMP/status")
xp=$(pgrep -P "$(cat "$TMP/kill.pid")") || fail "kill: no shell"
pgrep -P "$xp" >"$TMP/kill.all" || true
# those holding leases first, then any
"$DUMP" "$KEY" | awk '$1 == "pid" && $6 > 0 { print $2 }' >"$TMP/kill.lease"
{ grep -Fxf "$TMP/kill.all" "$TMP/kill.lease"; cat "$TMP/kill.all"; } | awk '!seen[$0]++' |
    head -n 40 >"$TMP/kill.victims"
nk=$(wc -l <"$TMP/kill.victims")
nl=$(grep -Fxcf "$TMP/kill.all" "$TMP/kill.lease" || true)
t0=$(date +%s%3N)
for v in $(cat "$TMP/kill.victims"); do
    kill -KILL "$v" 2>/dev/null || true # one may have just ended
done
note "kill: $nk of $(wc -l <"$TMP/kill.all") running killed, $nl of them with an attempt in flight ($before)"
[ "$nk" -ge 35 ] || fail "kill: only $nk processes to kill"
[ "$nl" -ge 1 ] || fail "kill: no process held a lease when they were killed"
rc=0
wait "$MANY_PID" || rc=$?
t1=$(date +%s%3N)
stop_server
[ $rc = 0 ] || fail "kill: the processes' shell exited $rc (timeout?): $(tail -n 3 "$TMP/kill.err")"
ok=$(grep -c '^200$' "$TMP/kill.codes" || true)
calls=$(stats_sum "$TMP/kill.json" calls)
note "kill: the rest finished $((t1 - t0)) ms after the kill: $ok ok, stats of $calls calls, gave up $(stats_sum "$TMP/kill.json" gave_up), $(summary_field "$TMP/cap.out" requests) attempts"
# every process not killed ended 200 (a victim may have ended just before)
[ "$ok" -ge $((160 - nk)) ] && [ "$calls" = "$ok" ] ||
    fail "kill: $ok calls ended 200 and $calls counted, of $((160 - nk)) left"
[ "$(stats_sum "$TMP/kill.json" gave_up)" = 0 ] || fail "kill: calls gave up"
# 120 x 400 ms / 10 = 4.8 s of work left: the dead leases came back at once
[ $((t1 - t0)) -le 15000 ] || fail "kill: the rest took $((t1 - t0)) ms to finish"
# before any reap by --status: the waiters gave the dead processes' leases back
sound kill
[ "$(check_field kill leases)" = 0 ] && [ "$(check_field kill dead_leases)" = 0 ] ||
    fail "kill: leases left in the file: $(cat "$TMP/kill.check")"
[ "$(status_field "$KEY" 4) $(status_field "$KEY" 5)" = "0 0" ] ||
    fail "kill: after the run: $(cat "$TMP/status")"
"$DUMP" "$KEY" >"$TMP/kill.dump"
[ "$(head -n 1 "$TMP/kill.dump")" = "entries 0 busy 0" ] ||
    fail "kill: entries left after --status reaped: $(cat "$TMP/kill.dump")"
sound kill-after

note "3. a full tmpfs: no chunk of the pool to allocate, 150 processes on 64 entries"
mkdir -p "$TMP/full"
start_server full --rate 30 --burst 10 --bucket-hints none
KEY="http://127.0.0.1:$PORT"
if unshare -m sh -c "mount -t tmpfs -o size=1m,mode=700 tmpfs '$TMP/full'" 2>/dev/null; then
    # in a mount namespace of its own, so that nothing outlives the test
    unshare -m sh -c "mount -t tmpfs -o size=1m,mode=700 tmpfs '$TMP/full' || exit 1
        export XDG_RUNTIME_DIR='$TMP/full'
        '$BUILD/backoff' -- curl -s -o /dev/null '$KEY/item/0' || exit 1
        dd if=/dev/zero of='$TMP/full/fill' bs=4k 2>/dev/null
        seq 1 150 | BACKOFF_VERBOSE=1 BACKOFF_STATS='$TMP/full.json' timeout -k 2 60 \
            xargs -P 150 -I{} '$BUILD/backoff' -- curl -s -o /dev/null -w '%{http_code}\n' \
            '$KEY/item/{}' >'$TMP/full.codes' 2>'$TMP/full.verbose'
        echo \$? >'$TMP/full.rc'
        '$DUMP' --check >'$TMP/full.check' 2>&1
        df -k '$TMP/full' | tail -n 1 >'$TMP/full.df'" || fail "full: the tmpfs could not be set up"
    stop_server
    [ "$(cat "$TMP/full.rc")" = 0 ] || fail "full: xargs exited $(cat "$TMP/full.rc") (a curl killed by SIGBUS?)"
    ok=$(grep -c '^200$' "$TMP/full.codes" || true)
    waited=$(grep -c 'no entry free for this process' "$TMP/full.verbose" || true)
    att=$(summary_field "$TMP/full.out" requests)
    note "full: $ok/150 ok, $att attempts for 151 requests, $waited processes waited for an entry, gave up $(stats_sum "$TMP/full.json" gave_up); tmpfs: $(cat "$TMP/full.df")"
    [ "$ok" = 150 ] || fail "full: $ok of 150 calls ended 200"
    [ "$(stats_sum "$TMP/full.json" gave_up)" = 0 ] || fail "full: calls gave up"
    [ "$waited" -ge 1 ] || fail "full: no process had to wait for an entry (the test proves nothing)"
    # 151 requests carry the window's learning (about 15 attempts) at 10%; the
    # 86 processes past 64 sending blind would have cost 1.5 or more
    [ $((att * 100)) -le $((151 * 125)) ] || fail "full: $att attempts for 151 requests (at most 1.25 each)"
    grep -q '^sound .* chunks 0 ' "$TMP/full.check" || fail "full: $(cat "$TMP/full.check")"
    note "full: $(cat "$TMP/full.check")"
else
    stop_server
    note "full: skipped (mounting a tmpfs needs root)"
fi
echo "ok"
