#!/bin/sh
# BACKOFF_SHARE=redis://... with Debian's redis-server on 127.0.0.1:
#   - a bad URL: one line naming BACKOFF_SHARE, the value with its password
#     masked and what is accepted; the call still succeeds (host-wide state);
#   - hiredis is not mapped by a process that makes no request; missing, it
#     costs one line naming BACKOFF_SHARE, the library and its package, and
#     the call succeeds (host-wide state);
#   - a fleet: 3 "hosts" (each its own XDG_RUNTIME_DIR, so its own host-wide
#     state) x 3 loadgen processes against one token bucket and one Redis
#     with a password (in the URL for one host, REDISCLI_AUTH for the
#     others): every request ends 2xx, the fleet's script ran (commandstats),
#     the keys are namespaced, carry a TTL, and no lease is left;
#   - keys expire (?ttl_ms=1000): nothing left shortly after;
#   - a host that dies holding leases loses them at their expiry (?lease_ms);
#   - Redis killed (SIGKILL) and restarted mid-run: every call succeeds, none
#     is slow, each process says "alone" at most once and rejoins;
#   - the fleet's queue: calls held back queue in Redis and leave it when
#     they go (nothing left after the run);
#   - a "Redis" that accepts and never answers: every call completes within
#     the bound (20 ms per step), the run is as quick as without Redis.
# Everything runs under timeout -k in its own process group (setsid).
. "$(dirname "$0")/lib.sh"

[ -f "$BUILD/libbackoff.so" ] && [ -x "$BUILD/backoff" ] || fail "build libbackoff.so and backoff first"
command -v curl >/dev/null || fail "curl is not installed"
command -v redis-cli >/dev/null || fail "redis-cli is not installed (Debian: redis-tools)"

# loadgen_fleet NAME SHARE HOSTS PROCS REQUESTS [loadgen flags...]: HOSTS x PROCS
# loadgen processes (1 thread each) against $PORT, host h with XDG_RUNTIME_DIR
# $TMP/NAME.h; each process's stderr in $TMP/NAME.h.p.err, its TSV in .out.
loadgen_fleet() {
    _n=$1 _s=$2 _h=$3 _p=$4 _r=$5
    shift 5
    _pids=""
    _i=1
    while [ $_i -le "$_h" ]; do
        mkdir -p -m 700 "$TMP/$_n.$_i"
        _j=1
        while [ $_j -le "$_p" ]; do
            XDG_RUNTIME_DIR=$TMP/$_n.$_i BACKOFF_SHARE=$_s BACKOFF_STATS="$TMP/$_n.json" \
                setsid timeout -k 2 60 "$BUILD/backoff" -- "$BUILD/loadgen" \
                --url "http://127.0.0.1:$PORT/item/{n}" --requests "$_r" --threads 1 "$@" \
                >"$TMP/$_n.$_i.$_j.out" 2>"$TMP/$_n.$_i.$_j.err" &
            _pids="$_pids $!"
            _j=$((_j + 1))
        done
        _i=$((_i + 1))
    done
    for _pid in $_pids; do
        wait "$_pid" || fail "$_n: a loadgen failed or timed out (status $?)"
    done
}

# fleet_ok NAME: sum of ok over the fleet's loadgen rows; fleet_max NAME COL: largest COL.
fleet_sum() { cat "$TMP/$1".*.out | awk -F'\t' -v c="$2" '$1 == "requests" { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } k { s += $k } END { print s + 0 }'; }
fleet_max() { cat "$TMP/$1".*.out | awk -F'\t' -v c="$2" '$1 == "requests" { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } k && $k > m { m = $k } END { print m + 0 }'; }

# --- a bad URL: one line, password masked, the call still succeeds ------------
start_server plain
code=$(BACKOFF_SHARE='redis://fleet:hunter2@127.0.0.1/0' setsid timeout -k 2 30 "$BUILD/backoff" -- \
    curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/item/1" 2>"$TMP/bad.err") ||
    fail "a bad redis URL broke the call: $(cat "$TMP/bad.err")"
[ "$code" = 200 ] || fail "a bad redis URL: status $code"
cat "$TMP/bad.err"
[ "$(grep -c 'BACKOFF_SHARE' "$TMP/bad.err")" = 1 ] || fail "a bad URL: expected one line naming BACKOFF_SHARE"
grep -q 'redis://fleet:\*\*\*@127.0.0.1/0' "$TMP/bad.err" || fail "a bad URL: the value is not shown masked"
grep -q 'hunter2' "$TMP/bad.err" && fail "a bad URL: the password is printed"
grep -q 'port is missing' "$TMP/bad.err" || fail "a bad URL: the line does not say what is wrong"
grep -q 'expected host, process or redis://' "$TMP/bad.err" || fail "a bad URL: the line does not say what is accepted"
grep -q 'using host' "$TMP/bad.err" || fail "a bad URL: the line does not say it stays host"
BACKOFF_SHARE='rediss://127.0.0.1:6379' "$BUILD/backoff" -- curl -s -o /dev/null "http://127.0.0.1:$PORT/item/1" \
    2>"$TMP/tls.err" || fail "rediss:// broke the call"
grep -q 'rediss:// (TLS) needs hiredis_ssl' "$TMP/tls.err" || fail "rediss:// is not refused clearly: $(cat "$TMP/tls.err")"
# hiredis is loaded on the fleet's first connection, not at load: a process
# that never reaches the fleet does not map it; with the library missing (a
# mount namespace shows /dev/null in its place), one line names
# BACKOFF_SHARE, the library and its Debian package, and the call goes on
# with the host-wide state (BACKOFF_VERBOSE unset: the line is not an outage's).
maps=$(BACKOFF_SHARE='redis://127.0.0.1:1' "$BUILD/backoff" -- sh -c 'cat /proc/$$/maps')
echo "$maps" | grep -q libbackoff || fail "the library is not in sh's maps"
echo "$maps" | grep -q libhiredis && fail "a process that makes no request maps libhiredis"
so=$(grep -ao 'libhiredis\.so\.[0-9.]*[0-9]' "$BUILD/libbackoff.so" | head -n 1)
lib=$(ldconfig -p | awk -v so="$so" '$1 == so { print $NF; exit }')
pkg=$(echo "$so" | sed 's/\.so\.//')
if [ -n "$so" ] && [ -n "$lib" ] && unshare -m sh -c "mount --bind /dev/null '$lib'" 2>/dev/null; then
    code=$(BACKOFF_SHARE='redis://127.0.0.1:1' setsid timeout -k 2 30 unshare -m sh -c \
        'mount --bind /dev/null "$1" && shift && exec "$@"' sh "$lib" "$BUILD/backoff" -- \
        curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/item/1" 2>"$TMP/nolib.err") ||
        fail "a missing hiredis broke the call: $(cat "$TMP/nolib.err")"
    cat "$TMP/nolib.err"
    [ "$code" = 200 ] || fail "a missing hiredis: status $code"
    [ "$(wc -l <"$TMP/nolib.err")" = 1 ] || fail "a missing hiredis: expected one line"
    grep -q "BACKOFF_SHARE=redis://127.0.0.1:1: the fleet needs $so, which cannot be loaded" \
        "$TMP/nolib.err" || fail "a missing hiredis: the line does not name BACKOFF_SHARE and $so"
    grep -q "apt-get install $pkg); this process goes on with its host-wide state alone" \
        "$TMP/nolib.err" || fail "a missing hiredis: the line does not name the package $pkg"
else
    note "no mount namespace here (not root?): a missing hiredis is not checked"
fi
stop_server

# --- a fleet of 3 hosts x 3 processes, one Redis with a password ----------------
REDIS_PASS=s3cret
start_redis redis --requirepass "$REDIS_PASS"
start_server bucket --rate 10 --burst 5 --bucket-hints none
URL="redis://127.0.0.1:$REDIS_PORT?namespace=fleetA&lease_ms=2000"
# The parts that check what the fleet keeps in Redis give it 2 s to answer
# (timeout_ms): with the default 20 ms, a machine busy enough (ASan beside a
# parallel test run) answers a first command late, the host goes on alone, as
# it should, and nothing reaches Redis.  The bound itself is checked by the
# restart and silent-Redis parts, which keep the default.
PATIENT="timeout_ms=2000"
# host 1 has the password in the URL, hosts 2 and 3 in REDISCLI_AUTH
(
    mkdir -p -m 700 "$TMP/fleet.1"
    XDG_RUNTIME_DIR=$TMP/fleet.1 BACKOFF_VERBOSE=1 BACKOFF_SHARE="redis://:$REDIS_PASS@127.0.0.1:$REDIS_PORT?namespace=fleetA&$PATIENT" \
        setsid timeout -k 2 30 "$BUILD/backoff" -- curl -s -o /dev/null "http://127.0.0.1:$PORT/item/1" 2>"$TMP/join.err"
) || fail "the first fleet call failed"
grep -q 'joins the fleet (namespace fleetA)' "$TMP/join.err" || fail "no 'joins the fleet' line: $(cat "$TMP/join.err")"
grep -q "$REDIS_PASS" "$TMP/join.err" && fail "the password is printed"
export REDISCLI_AUTH=$REDIS_PASS
loadgen_fleet fleet "$URL&$PATIENT" 3 3 6 --verify
ok=$(fleet_sum fleet ok)
[ "$ok" = 54 ] || fail "fleet: $ok of 54 requests ok"
evals=$(rcli info commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
note "fleet: 54/54 ok, $evals EVALSHA calls"
[ "${evals:-0}" -ge 108 ] || fail "fleet: only ${evals:-0} EVALSHA calls for 54 requests (an admission and a completion each expected)"
key="backoff:fleetA:{http://127.0.0.1:$PORT}"
rcli keys 'backoff:*' | sort >"$TMP/keys"
cat "$TMP/keys"
grep -qxF "$key" "$TMP/keys" || fail "fleet: no key $key"
grep -v '^backoff:fleetA:' "$TMP/keys" && fail "fleet: keys outside the namespace"
ttl=$(rcli pttl "$key")
[ "$ttl" -gt 0 ] && [ "$ttl" -le 60000 ] || fail "fleet: the key's TTL is $ttl ms (expected 1..60000)"
# Every lease went back, but for an admission whose answer came later than
# the 20 ms bound on a busy machine (Redis leased, the host went alone): those
# expire with their lease (2 s here).
sleep 2.1
now_us=$(rcli time | tr -d '\r' | awk 'NR == 1 { s = $1 } NR == 2 { printf "%d%06d", s, $1 }')
live=$(rcli zcount "$key:leases" "($now_us" +inf)
[ "$live" = 0 ] || fail "fleet: $live leases still live after every call ended: $(rcli zrange "$key:leases" 0 -1 withscores | tr '\n' ' ')"
rcli hgetall "$key" | paste - - | tr '\t' '=' | tr '\n' ' '
echo
stop_server
att=$(summary_field "$TMP/bucket.out" requests)
note "fleet: $att attempts for 54 requests"

# --- the fleet's queue: calls held back wait their turn, none left behind ---------
# 2 hosts x 2 processes x 3 threads, started at one instant, against a fleet
# window of 4 (BACKOFF_WINDOW, the fleet's first window too) and a cap of 4
# slots x 300 ms: each host's window lets 4 calls ask at once, so the fleet
# holds some back and they queue; every call that queued left the queue when
# it went (an empty sorted set is no key at all).  Redis's MONITOR lists every
# command the script ran, so the queue's use is counted, not sampled (a
# sampler every 50 ms once saw nothing on a busy CI machine).
start_server queue --max-busy 4 --service-ms 300
qkey="backoff:queue:{http://127.0.0.1:$PORT}:queue"
rcli monitor >"$TMP/queue.monitor" 2>&1 &
mon=$!
PIDS="$PIDS $mon"
sleep 0.3
BACKOFF_WINDOW=4 BACKOFF_WINDOW_MAX=4 loadgen_fleet queue \
    "redis://127.0.0.1:$REDIS_PORT?namespace=queue&$PATIENT" 2 2 6 --threads 3 --verify \
    --start-at-ms $(($(date +%s%3N) + 1500))
kill "$mon" 2>/dev/null || true
wait "$mon" 2>/dev/null || true
ok=$(fleet_sum queue ok)
[ "$ok" = 24 ] || fail "queue: $ok of 24 requests ok"
queued=$(grep -c "\"ZADD\" \"$qkey\"" "$TMP/queue.monitor" || true)
[ "$queued" -ge 1 ] ||
    fail "queue: no call queued while 12 threads shared a window of 4 ($(wc -l <"$TMP/queue.monitor") commands seen)"
[ "$(rcli exists "$qkey" | tr -d '\r')" = 0 ] ||
    fail "queue: calls left in the queue after all ended: $(rcli zrange "$qkey" 0 -1 | tr '\n' ' ')"
stop_server
busy=$(summary_field "$TMP/queue.out" max_concurrency)
note "queue: 24/24 ok, $queued calls queued, the server saw at most $busy at once, queue empty after"

loads() { rcli info commandstats | tr -d '\r' | sed -n 's/^cmdstat_script|load:calls=\([0-9]*\),.*/\1/p'; }

# --- the script cache lost under a running process (SCRIPT FLUSH): reloaded --------
start_server flush
loadgen_fleet flush "$URL&$PATIENT" 1 1 10 --rate 5 &
lgs=$!
sleep 1
before=$(loads)
rcli script flush >/dev/null
wait "$lgs" || fail "flush: the loadgen failed"
[ "$(fleet_sum flush ok)" = 10 ] || fail "flush: $(fleet_sum flush ok) of 10 requests ok"
after=$(loads)
evals=$(rcli info commandstats | tr -d '\r' | sed -n 's/^cmdstat_eval:calls=\([0-9]*\),.*/\1/p')
[ "${evals:-0}" -ge 1 ] || [ "$after" -gt "$before" ] ||
    fail "flush: the script was not run again from its text (EVAL ${evals:-0}, SCRIPT LOAD $before then $after)"
note "flush: SCRIPT FLUSH under a running process: run again from its text (EVAL ${evals:-0}), 10/10 ok"
stop_server

# --- keys expire ------------------------------------------------------------------
start_server ttl
BACKOFF_SHARE="redis://127.0.0.1:$REDIS_PORT?namespace=ttl&ttl_ms=1000&$PATIENT" \
    setsid timeout -k 2 30 "$BUILD/backoff" -- curl -s -o /dev/null "http://127.0.0.1:$PORT/item/2" || fail "ttl: the call failed"
[ -n "$(rcli keys 'backoff:ttl:*')" ] || fail "ttl: no key made"
_w=0
while [ -n "$(rcli keys 'backoff:ttl:*')" ]; do
    _w=$((_w + 1))
    [ $_w -gt 50 ] && fail "ttl: keys left 5 s after a 1 s TTL: $(rcli keys 'backoff:ttl:*')"
    sleep 0.1
done
note "ttl: the destination's keys expired $((_w * 100)) ms after the call"
stop_server

# --- a host that dies holding leases loses them at their expiry ----------------------
start_server slow --service-ms 20000
LURL="redis://127.0.0.1:$REDIS_PORT?namespace=lease&lease_ms=1500&$PATIENT"
mkdir -p -m 700 "$TMP/dead"
XDG_RUNTIME_DIR=$TMP/dead BACKOFF_SHARE=$LURL setsid timeout -k 2 30 "$BUILD/backoff" -- \
    "$BUILD/loadgen" --url "http://127.0.0.1:$PORT/item/{n}" --requests 3 --threads 3 >/dev/null 2>&1 &
dead=$!
lkey="backoff:lease:{http://127.0.0.1:$PORT}:leases"
_w=0
until [ "$(rcli zcard "$lkey")" = 3 ]; do
    _w=$((_w + 1))
    [ $_w -gt 100 ] && fail "lease: the 3 attempts did not take 3 leases within 10 s ($(rcli zcard "$lkey"))"
    sleep 0.1
done
kill -KILL -- "-$dead" 2>/dev/null || kill -KILL "$dead"
wait "$dead" 2>/dev/null || true
[ "$(rcli zcard "$lkey")" = 3 ] || fail "lease: the leases went before their expiry"
sleep 1.6
stop_server
start_server quick
XDG_RUNTIME_DIR=$TMP/dead BACKOFF_SHARE="redis://127.0.0.1:$REDIS_PORT?namespace=lease&$PATIENT" \
    setsid timeout -k 2 30 "$BUILD/backoff" -- curl -s -o /dev/null "http://127.0.0.1:$PORT/item/3" || fail "lease: the call failed"
lkey="backoff:lease:{http://127.0.0.1:$PORT}:leases"
[ "$(rcli zcard "$lkey")" = 0 ] || fail "lease: expired leases of a dead host are still counted"
note "lease: a killed host's 3 leases held until their 1.5 s expiry, then gone"
stop_server

# --- Redis killed and restarted mid-run -----------------------------------------
# 2 hosts x 2 processes, 5 requests/s each for 6 s; Redis is killed at about 1 s
# and comes back at about 2.5 s on the same port.
start_server steady
export BACKOFF_VERBOSE=1
loadgen_fleet restart "$URL" 2 2 30 --rate 5 &
lgs=$!
unset BACKOFF_VERBOSE
sleep 1
stop_redis KILL
note "restart: Redis killed"
sleep 1.5
start_redis redis2 --requirepass "$REDIS_PASS"
note "restart: Redis back on port $REDIS_PORT"
wait "$lgs" || fail "restart: the fleet failed"
ok=$(fleet_sum restart ok)
[ "$ok" = 120 ] || fail "restart: $ok of 120 requests ok"
p99=$(fleet_max restart p99_ms)
note "restart: 120/120 ok, worst p99 $p99 ms"
awk -v p="$p99" 'BEGIN { exit !(p < 500) }' || fail "restart: p99 $p99 ms: calls were held up by the outage"
alone=0 rejoined=0
# Once per outage: the outage's own line (closed, refused) at most once per
# process; a busy machine may add episodes of answers later than the bound
# ("temporarily unavailable"), each said once and each followed by a rejoin.
for f in "$TMP"/restart.*.err; do
    n=$(grep 'host-wide state alone' "$f" | grep -vc 'temporarily unavailable' || true)
    [ "$n" -le 1 ] || fail "restart: $f says 'alone' $n times for one outage: $(cat "$f")"
    n=$(grep -c 'host-wide state alone' "$f" || true)
    r=$(grep -c 'rejoins the fleet' "$f" || true)
    [ "$n" -le $((r + 1)) ] || fail "restart: $f went alone $n times but rejoined $r times: $(cat "$f")"
    alone=$((alone + n))
    rejoined=$((rejoined + $(grep -c 'rejoins the fleet' "$f" || true)))
done
note "restart: $alone processes said 'alone' once, $rejoined rejoined"
[ "$alone" -ge 1 ] || fail "restart: no process noticed the outage"
[ "$rejoined" -ge 1 ] || fail "restart: no process rejoined after Redis came back"
[ -n "$(rcli keys "backoff:fleetA:*")" ] || fail "restart: nothing in the restarted Redis: nobody rejoined"

# --- a Redis that accepts and never answers -------------------------------------
# (the steady section's ratelimit-server stays up for the fleet; the listener
# is started through start_py_server, whose PORT and SERVER_PID are kept
# aside and given back)
cat >"$TMP/silent_redis.py" <<'MUTE'
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0)); s.listen(64)
print("listening on 127.0.0.1:%d" % s.getsockname()[1], flush=True)
held = []
while True:
    c, _ = s.accept(); held.append(c)   # accepted, never read, never answered
MUTE
http_port=$PORT http_pid=$SERVER_PID
start_py_server silent_redis "$TMP/silent_redis.py"
mport=$PORT mute=$SERVER_PID
PORT=$http_port SERVER_PID=$http_pid
t0=$(date +%s%3N)
export BACKOFF_VERBOSE=1
loadgen_fleet mute "redis://127.0.0.1:$mport" 1 2 20 --rate 20
unset BACKOFF_VERBOSE
t1=$(date +%s%3N)
ok=$(fleet_sum mute ok)
[ "$ok" = 40 ] || fail "mute: $ok of 40 requests ok"
p99=$(fleet_max mute p99_ms)
note "mute: 40/40 ok in $((t1 - t0)) ms, worst p99 $p99 ms"
awk -v p="$p99" 'BEGIN { exit !(p < 200) }' || fail "mute: p99 $p99 ms: a silent Redis held calls past the bound"
for f in "$TMP"/mute.*.err; do
    n=$(grep -c 'host-wide state alone' "$f" || true)
    [ "$n" = 1 ] || fail "mute: $f says 'alone' $n times (once expected): $(cat "$f")"
done
kill "$mute" 2>/dev/null || true
stop_server
echo "ok"
