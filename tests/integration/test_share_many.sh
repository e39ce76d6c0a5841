#!/bin/sh
# BACKOFF_SHARE=host without a cliff: more processes on one
# destination than a slot's own chunk of entries (64) share its window.
#
# Each part first holds its processes at a gate (a ratelimit-server of its
# own with --gate: their first call waits there, unanswered): they start as
# slowly as the machine starts them, and once every one is inside that call
# (--status counts them all on the gate's destination, or the gate holds
# them all) the test counts them and opens the gate.  Then each goes on to
# the server under test, all of them at once, faster than it serves them
# on any machine: the overlap and the throttle are made, not hoped for (150
# curls started one by one overlapped only 27 to 40 at a time on a slow
# machine).  A bucket is first learnt by one process (loadgen, 4 threads,
# 40 requests: it meets the throttle, the shared state the rate), as a
# destination is whose processes do not all start together: the 150 at
# once would otherwise pay that once-per-destination learning all together
# (30 to 45 attempts more).  The bounds count the learning apart: it was
# about 15 attempts within them when the first processes paid it as they
# came, so they are now 1.10 and 1.15 attempts per request, not 1.15 and
# 1.25.
#   1. 150 `backoff -- curl` at the gate (xargs -P 150): --status counts
#      more than 64 of them using the gate's destination at once (all 150;
#      the slot took chunks of the pool) and the gate answers each once;
#      released, each makes 2 calls to a token bucket without hints (30/s,
#      burst 10; 300 calls, the first 150 at once): every call ends 200,
#      none gives up, at most 1.10 attempts per request (process-local
#      state sent 3x the requests), and afterwards nothing is in flight,
#      nobody is attached and the file is sound (share_dump --check);
#   2. 160 at the gate, released against a cap of 10 x 400 ms (160 calls at
#      once: the cap takes 4 s for 100 of them), a quarter SIGKILLed once the
#      window is full and 60 wait (those with attempts in flight first):
#      the rest finish, none gives up, no lease of a dead process is left,
#      nothing stays in flight, and the file is sound;
#   3. (root: a tmpfs of its own) the same file with its tmpfs full, so that
#      no chunk of the pool can be allocated: 150 processes, 64 entries.  At
#      the gate 64 hold an entry and the 86 others wait for one (the verbose
#      line says so) without sending anything (the gate never holds more
#      than 64 calls); released, they go on to a bucket (30/s, burst 10), on
#      whose 64 entries they wait again as the gate's free: every call ends
#      200, none gives up, at most 1.15 attempts per request (processes past
#      64 sending blind would have cost 1.5 or more), no SIGBUS, and the
#      file is sound.
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

# gate_held ERR: how many requests the gate whose stderr is ERR holds now.
gate_held() {
    awk '$2 == "gate:" && $4 == "held" { n = $3 } $2 == "gate" && $3 == "opened:" { n = 0 }
         END { print n + 0 }' "$1"
}

# all_in NAME N: waits (at most 120 s, however slowly the machine starts
# them) until all N processes are inside their call to the gate: --status
# counts N using its destination ($GKEY), or the gate holds N requests (a
# library that counted fewer would still have sent them all).  Then IN
# holds the count of processes using the destination and IN_LINE its
# --status line, $TMP/NAME.chunks the slot's chunks.
all_in() {
    _w=0
    while :; do
        IN=$(status_field "$GKEY" 5)
        case $IN in ''|none|*[!0-9]*) IN=0 ;; esac
        [ "$IN" -ge "$2" ] && break
        [ "$(gate_held "$TMP/$1.err")" -ge "$2" ] && break
        _w=$((_w + 1))
        [ $_w -gt 600 ] && fail "$1: not every process came in within 120 s: $IN using the gate's destination, the gate holds $(gate_held "$TMP/$1.err")"
        sleep 0.2
    done
    IN_LINE=$(grep "^$GKEY " "$TMP/status" || true)
    "$DUMP" "$GKEY" | sed -n 2p >"$TMP/$1.chunks"
}

# start_gate NAME: a ratelimit-server --gate (closed); sets GPORT, GPID, GKEY.
start_gate() {
    start_server "$1" --gate
    GPORT=$PORT GPID=$SERVER_PID GKEY="http://127.0.0.1:$PORT"
}

# open_gate NAME: opens it (SIGUSR1) and waits for the server to say so.
open_gate() {
    kill -USR1 "$GPID"
    wait_for "$TMP/$1.err" '^ratelimit-server: gate opened: ' 30
}

# stop_gate: stops the gate's server ($TMP/NAME.out then holds its summary).
stop_gate() {
    kill -TERM "$GPID" 2>/dev/null || true
    wait "$GPID" 2>/dev/null || true
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

# codes_of NAME PORT CODE: how many of NAME's calls to PORT ended CODE
# (curl -w '%{http_code} %{url_effective}', a line per call).
codes_of() {
    grep -c "^$3 http://127\.0\.0\.1:$2/" "$TMP/$1.codes" || true
}

note "1. 150 processes at a gate, then 2 calls each (300) against a token bucket 30/s burst 10 without hints"
start_gate gate
start_server bucket --rate 30 --burst 10 --bucket-hints none
KEY="http://127.0.0.1:$PORT"
# 150 at once, each: the gate, then the bucket twice
seq 1 150 | BACKOFF_STATS="$TMP/bucket.json" setsid timeout -k 2 240 \
    xargs -P 150 -I{} "$BUILD/backoff" -- curl -s -w '%{http_code} %{url_effective}\n' \
    -o /dev/null "$GKEY/item/{}" -o /dev/null "$KEY/item/{}" -o /dev/null "$KEY/item/{}" \
    >"$TMP/bucket.codes" 2>"$TMP/bucket.err" &
MANY_PID=$!
PIDS="$PIDS $MANY_PID"
t0=$(date +%s%3N)
all_in gate 150
# the bucket learnt before the 150 come at once (see the top)
BACKOFF_STATS="$TMP/learn.json" setsid timeout -k 2 60 env LD_PRELOAD="$BUILD/libbackoff.so" \
    "$BUILD/loadgen" --url "$KEY/item/{n}" --requests 40 --threads 4 >"$TMP/learn.tsv" ||
    fail "bucket: loadgen failed: $(cat "$TMP/learn.tsv")"
learn=$(stats_sum "$TMP/learn.json" attempts)
[ "$(summary_field "$TMP/learn.tsv" ok)" = 40 ] && [ "$(stats_sum "$TMP/learn.json" throttled)" -gt 0 ] ||
    fail "bucket: learning it: $(cat "$TMP/learn.tsv" "$TMP/learn.json")"
t1=$(date +%s%3N)
open_gate gate
# the bucket's own count, for the note: the 150 come at once
most=0
while kill -0 "$MANY_PID" 2>/dev/null; do
    p=$(status_field "$KEY" 5)
    case $p in ''|none|*[!0-9]*) p=0 ;; esac
    [ "$p" -gt "$most" ] && most=$p
    sleep 0.2
done
wait "$MANY_PID" || fail "bucket: xargs failed or timed out: $(tail -n 3 "$TMP/bucket.err")"
t2=$(date +%s%3N)
stop_server
stop_gate
ok=$(codes_of bucket "$PORT" 200)
att=$(($(summary_field "$TMP/bucket.out" requests) - learn))
note "gate: all 150 in after $((t1 - t0)) ms, $IN processes using its destination at once ($IN_LINE; $(cat "$TMP/gate.chunks")); it answered $(summary_field "$TMP/gate.out" requests) requests"
note "bucket: learnt by loadgen in $learn attempts for 40 requests; $ok/300 ok, $att attempts, gave up $(stats_sum "$TMP/bucket.json" gave_up), $((t2 - t1)) ms from the gate's opening (optimum 9,667); at most $most processes using it at once"
[ "$IN" -gt 64 ] || fail "gate: at most $IN processes shared the destination (more than 64 expected)"
grep -q 'chunks [1-9]' "$TMP/gate.chunks" || fail "gate: the slot took no chunk of the pool: $(cat "$TMP/gate.chunks")"
[ "$(codes_of bucket "$GPORT" 200)" = 150 ] || fail "gate: $(codes_of bucket "$GPORT" 200) of 150 calls ended 200"
# held, never answered until the gate opened: none was sent twice
[ "$(summary_field "$TMP/gate.out" requests)" = 150 ] ||
    fail "gate: $(summary_field "$TMP/gate.out" requests) requests for 150 calls"
[ "$ok" = 300 ] || fail "bucket: $ok of 300 calls ended 200"
[ "$(stats_sum "$TMP/bucket.json" calls)" = 450 ] || fail "bucket: the stats count $(stats_sum "$TMP/bucket.json" calls) calls, expected 450"
[ "$(stats_sum "$TMP/bucket.json" gave_up)" = 0 ] || fail "bucket: calls gave up"
[ $((att * 100)) -le $((300 * 110)) ] || fail "bucket: $att attempts for 300 calls (at most 1.10 per call)"
for k in "$GKEY" "$KEY"; do
    [ "$(status_field "$k" 4) $(status_field "$k" 5)" = "0 0" ] ||
        fail "bucket: after the run: $(cat "$TMP/status")"
done
sound bucket

note "2. 160 processes at a gate, then at once against a cap of 10 x 400 ms, a quarter SIGKILLed part way"
XDG_RUNTIME_DIR=$TMP/kill && mkdir -m 700 "$XDG_RUNTIME_DIR"
start_gate gate2
start_server cap --max-busy 10 --service-ms 400
KEY="http://127.0.0.1:$PORT"
# not xargs, which stops waiting for the others once a child is killed:
# a shell that starts one process a line and waits for them all; each
# code line ends with the process's pid (backoff and sh exec: curl's own)
cat >"$TMP/launch.sh" <<'EOF'
while read -r i; do
    sh -c 'exec "$1/backoff" -- curl -s -w "%{http_code} %{url_effective} $$\n" \
        -o /dev/null "$2/item/$4" -o /dev/null "$3/item/$4"' sh "$1" "$2" "$3" "$i" &
done
wait
EOF
seq 1 160 | BACKOFF_STATS="$TMP/kill.json" setsid sh -c 'echo $$ >"$1"; shift; exec timeout -k 2 240 sh "$@"' \
    sh "$TMP/kill.pid" "$TMP/launch.sh" "$BUILD" "$GKEY" "$KEY" >"$TMP/kill.codes" 2>"$TMP/kill.err" &
MANY_PID=$!
PIDS="$PIDS $MANY_PID"
t0=$(date +%s%3N)
all_in gate2 160
t1=$(date +%s%3N)
open_gate gate2
# once the window is full and most of them are waiting (the 160 came at
# once; the cap serves 25 a second)
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
t2=$(date +%s%3N)
for v in $(cat "$TMP/kill.victims"); do
    kill -KILL "$v" 2>/dev/null || true # one may have just ended
done
note "kill: all 160 in at the gate after $((t1 - t0)) ms ($IN using its destination); $((t2 - t1)) ms after its opening, $nk of $(wc -l <"$TMP/kill.all") running killed, $nl of them with an attempt in flight ($before)"
[ "$nk" -ge 35 ] || fail "kill: only $nk processes to kill"
[ "$nl" -ge 1 ] || fail "kill: no process held a lease when they were killed"
rc=0
wait "$MANY_PID" || rc=$?
t3=$(date +%s%3N)
stop_server
stop_gate
[ $rc = 0 ] || fail "kill: the processes' shell exited $rc (timeout?): $(tail -n 3 "$TMP/kill.err")"
# the processes not killed (a victim may have ended just before its kill, or
# been killed between writing its stats and its codes: not counted either way)
ok=$(awk -v k="$KEY/" 'NR == FNR { v[$1]; next }
    $1 == 200 && index($2, k) == 1 && !($3 in v) { n++ } END { print n + 0 }' \
    "$TMP/kill.victims" "$TMP/kill.codes")
calls=$(awk 'NR == FNR { v[$1]; next } match($0, /"pid":[0-9]+/) {
        if (substr($0, RSTART + 6, RLENGTH - 6) in v) next
        if (match($0, /"calls":[0-9]+/)) n += substr($0, RSTART + 8, RLENGTH - 8) }
    END { print n + 0 }' "$TMP/kill.victims" "$TMP/kill.json")
note "kill: the rest finished $((t3 - t2)) ms after the kill: $ok ok, stats of $calls calls (2 a process), gave up $(stats_sum "$TMP/kill.json" gave_up), $(summary_field "$TMP/cap.out" requests) attempts"
# every process not killed ended 200, with its two calls counted: the
# gate's and the cap's
[ "$ok" = $((160 - nk)) ] && [ "$calls" = $((2 * ok)) ] ||
    fail "kill: $ok calls ended 200 and $calls counted, of $((160 - nk)) left"
[ "$(stats_sum "$TMP/kill.json" gave_up)" = 0 ] || fail "kill: calls gave up"
# 120 x 400 ms / 10 = 4.8 s of work left: the dead leases came back at once
[ $((t3 - t2)) -le 15000 ] || fail "kill: the rest took $((t3 - t2)) ms to finish"
# before any reap by --status: the waiters gave the dead processes' leases back
sound kill
[ "$(check_field kill leases)" = 0 ] && [ "$(check_field kill dead_leases)" = 0 ] ||
    fail "kill: leases left in the file: $(cat "$TMP/kill.check")"
for k in "$GKEY" "$KEY"; do
    [ "$(status_field "$k" 4) $(status_field "$k" 5)" = "0 0" ] ||
        fail "kill: after the run: $(cat "$TMP/status")"
done
"$DUMP" "$KEY" >"$TMP/kill.dump"
[ "$(head -n 1 "$TMP/kill.dump")" = "entries 0 busy 0" ] ||
    fail "kill: entries left after --status reaped: $(cat "$TMP/kill.dump")"
sound kill-after

note "3. a full tmpfs: no chunk of the pool to allocate, 150 processes on 64 entries"
mkdir -p "$TMP/full"
start_gate gate3
start_server full --rate 30 --burst 10 --bucket-hints none
KEY="http://127.0.0.1:$PORT"
if unshare -m sh -c "mount -t tmpfs -o size=1m,mode=700 tmpfs '$TMP/full'" 2>/dev/null; then
    # in a mount namespace of its own, so that nothing outlives the test:
    # both destinations get their slot before the tmpfs is full (a new one
    # would stay process-local; the gate opened for one call, then closed),
    # then the 150 come to the gate; once every one is in (64 with an entry
    # using its destination, the others' lines saying they wait for one; or
    # the gate holds all 150), it opens
    cat >"$TMP/full.sh" <<'EOF'
T=$1 B=$2 D=$3 G=$4 GP=$5 GE=$6 K=$7
mount -t tmpfs -o size=1m,mode=700 tmpfs "$T/full" || exit 1
export XDG_RUNTIME_DIR=$T/full
gate_line() {
    _i=0
    until grep -q "$1" "$GE"; do
        _i=$((_i + 1))
        [ $_i -gt 600 ] && { echo "the gate never said '$1'" >"$T/full.fail"; exit 1; }
        sleep 0.05
    done
}
"$B/backoff" -- curl -s -o /dev/null "$K/item/0" || exit 1
"$B/backoff" -- curl -s -o /dev/null "$G/item/0" &
w=$!
gate_line '^ratelimit-server: gate: 1 held$'
kill -USR1 "$GP"
wait "$w" || exit 1
kill -USR2 "$GP"
gate_line '^ratelimit-server: gate closed$'
dd if=/dev/zero of="$T/full/fill" bs=4k 2>/dev/null
seq 1 150 | BACKOFF_VERBOSE=1 BACKOFF_STATS="$T/full.json" timeout -k 2 240 \
    xargs -P 150 -I{} "$B/backoff" -- curl -s -w '%{http_code} %{url_effective}\n' \
    -o /dev/null "$G/item/{}" -o /dev/null "$K/item/{}" >"$T/full.codes" 2>"$T/full.verbose" &
x=$!
i=0
while :; do
    busy=$("$B/backoff" --status 2>/dev/null | awk -v k="$G" '$1 == k { print $5 }')
    case $busy in '' | *[!0-9]*) busy=0 ;; esac
    waiting=$(grep -cF "$G: the shared state has no entry free" "$T/full.verbose")
    held=$(awk '$2 == "gate:" && $4 == "held" { n = $3 } $2 == "gate" && $3 == "opened:" { n = 0 }
                END { print n + 0 }' "$GE")
    [ $((busy + waiting)) -ge 150 ] || [ "$held" -ge 150 ] && break
    i=$((i + 1))
    [ $i -gt 600 ] && break
    sleep 0.2
done
echo "$busy $waiting $held" >"$T/full.in"
# the bucket learnt (see the top; the outer script checks it), then the gate opens
BACKOFF_STATS="$T/learn3.json" timeout -k 2 60 env LD_PRELOAD="$B/libbackoff.so" \
    "$B/loadgen" --url "$K/item/{n}" --requests 40 --threads 4 >"$T/learn3.tsv"
kill -USR1 "$GP"
wait "$x"
echo $? >"$T/full.rc"
"$D" --check >"$T/full.check" 2>&1
df -k "$T/full" | tail -n 1 >"$T/full.df"
EOF
    unshare -m sh "$TMP/full.sh" "$TMP" "$BUILD" "$DUMP" "$GKEY" "$GPID" "$TMP/gate3.err" "$KEY" ||
        fail "full: $(cat "$TMP/full.fail" 2>/dev/null || echo "the tmpfs could not be set up")"
    stop_server
    stop_gate
    [ "$(cat "$TMP/full.rc")" = 0 ] || fail "full: xargs exited $(cat "$TMP/full.rc") (a curl killed by SIGBUS?)"
    read -r busy waiting held <"$TMP/full.in"
    released=$(sed -n "s/^ratelimit-server: gate opened: \([0-9]*\) released$/\1/p" "$TMP/gate3.err" | sed -n 2p)
    okg=$(codes_of full "$GPORT" 200)
    ok=$(codes_of full "$PORT" 200)
    waits=$(grep -cF "$KEY: the shared state has no entry free" "$TMP/full.verbose" || true)
    learn=$(stats_sum "$TMP/learn3.json" attempts)
    [ "$(summary_field "$TMP/learn3.tsv" ok)" = 40 ] && [ "$(stats_sum "$TMP/learn3.json" throttled)" -gt 0 ] ||
        fail "full: learning the bucket: $(cat "$TMP/learn3.tsv" "$TMP/learn3.json")"
    att=$(($(summary_field "$TMP/full.out" requests) - 1 - learn))
    note "full: at the gate $busy processes held an entry and $waiting waited for one; it released $released requests; the bucket (learnt by loadgen in $learn attempts for 40 requests): $ok/150 ok, $att attempts, $waits processes waited for its entries, gave up $(stats_sum "$TMP/full.json" gave_up); tmpfs: $(cat "$TMP/full.df")"
    [ $((busy + waiting)) -ge 150 ] ||
        fail "full: not every process came in within 120 s: $busy with an entry, $waiting waiting for one, the gate holds $held"
    [ "$waiting" -ge 1 ] || fail "full: no process had to wait for an entry (the test proves nothing)"
    # a process waiting for an entry sends nothing: the gate had the calls
    # of those with an entry alone
    [ "$released" -le 64 ] || fail "full: the gate held $released requests of processes with 64 entries"
    [ "$okg" = 150 ] && [ "$ok" = 150 ] || fail "full: $okg of 150 calls to the gate and $ok to the bucket ended 200"
    [ "$(stats_sum "$TMP/full.json" gave_up)" = 0 ] || fail "full: calls gave up"
    # processes past 64 sending blind would have cost 1.5 or more
    [ $((att * 100)) -le $((150 * 115)) ] || fail "full: $att attempts for 150 requests (at most 1.15 each)"
    grep -q '^sound .* chunks 0 ' "$TMP/full.check" || fail "full: $(cat "$TMP/full.check")"
    note "full: $(cat "$TMP/full.check")"
else
    stop_server
    stop_gate
    note "full: skipped (mounting a tmpfs needs root)"
fi
echo "ok"
