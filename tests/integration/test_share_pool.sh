#!/bin/sh
# BACKOFF_SHARE=host: a slot's process entries beyond its own chunk come
# from the file's pool, checked step by step by share_pool,
# which drives the file's own code (dest/share.c, linked in) in 150 forked
# processes: each has an entry of its own and the slot takes chunks of the
# pool past its 64; SIGKILLed ones' entries and leases are reaped, the
# live ones' stay; once they are gone the chunks go back to the pool; a
# death inside the file's lock half way through taking a chunk is
# repaired.  Then the file must be sound (share_dump --check).  No timing:
# it runs under the sanitizers too, where test_share_many's real programs
# start too slowly to run 65 at once.
. "$(dirname "$0")/lib.sh"

POOL="$BUILD/tests/helpers/share_pool"
DUMP="$BUILD/tests/helpers/share_dump"
for f in "$POOL" "$DUMP"; do
    [ -e "$f" ] || fail "build $f first"
done
rc=0
timeout -k 2 60 "$POOL" >"$TMP/pool.out" 2>&1 || rc=$?
cat "$TMP/pool.out"
[ $rc -eq 0 ] || fail "share_pool exited $rc"
[ "$(grep -c '^ok: ' "$TMP/pool.out")" -ge 15 ] || fail "share_pool made fewer checks than it has"
"$DUMP" --check >"$TMP/check" 2>&1 || fail "the file is not sound: $(cat "$TMP/check")"
cat "$TMP/check"
grep -q '^sound slots 1 chunks 2 free 2 entries 0 busy 0 leases 0 ' "$TMP/check" ||
    fail "expected one slot, its two chunks back in the pool and nothing held: $(cat "$TMP/check")"
echo "ok"
