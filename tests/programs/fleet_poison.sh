#!/bin/sh
# The fleet's keys of destinations written with what the library never
# leaves there, as a bug, another version or a hand could (anyone with
# access to the Redis server can), for the harm suite of what the library
# holds (tests/integration/test_harm_owned.sh, demo/bench-harm.sh).
#   sh fleet_poison.sh PORT KIND DEST...
# KIND: zero (the window 0), negative (the window -1e308) or leases (50
# leases that end in 1e18 µs, never); DEST: the destination as the library
# names it (http://127.0.0.1:PORT, tcp://...), namespace "default", on the
# redis-server of 127.0.0.1:PORT.
set -eu
port=$1 kind=$2
shift 2
for d in "$@"; do
    key="backoff:default:{$d}"
    case $kind in
    zero) echo "HSET $key cwnd 0" ;;
    negative) echo "HSET $key cwnd -1e308" ;;
    leases)
        i=0
        while [ $i -lt 50 ]; do
            i=$((i + 1))
            echo "ZADD $key:leases 1e18 evil:$i"
        done
        ;;
    *) echo "fleet_poison.sh: KIND is zero, negative or leases, not $kind" >&2; exit 2 ;;
    esac
done | timeout -k 1 10 redis-cli -p "$port" >/dev/null
