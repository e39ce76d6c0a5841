#!/bin/sh
# One AIMD for the fleet: the Redis script the library runs for
# BACKOFF_SHARE=redis (shim/dest/fleet.lua, built in as it is here) and its
# C model in policies/ (bo_fleet.c) are driven through the same events, at
# the same times, against Debian's redis-server: the script's every answer
# and the whole state it leaves (window, threshold, pace, probes, leases,
# queue) must equal the model's to the bit (tests/helpers/fleet_equal).
# Two seeds, 28 destinations x 400 events each, covering slow start, cuts
# of the window and of the pace, the plateau, probes that find room and
# probes that do not, deep cuts, losses, expired leases and the queue.
. "$(dirname "$0")/lib.sh"

EQ="$BUILD/tests/helpers/fleet_equal"
[ -x "$EQ" ] || fail "build $EQ first (make test-programs)"
start_redis redis
for seed in 1 2; do
    setsid timeout -k 2 120 "$EQ" "$REDIS_PORT" 28 400 "$seed" >"$TMP/eq.$seed" 2>&1 ||
        fail "seed $seed: $(cat "$TMP/eq.$seed")"
    grep -q '^11200 events equal$' "$TMP/eq.$seed" || fail "seed $seed: $(cat "$TMP/eq.$seed")"
    note "seed $seed: $(cat "$TMP/eq.$seed")"
done
stop_redis
echo "PASS: the fleet's script and policies/bo_fleet.c agree event by event"
