"""What every Python client of the peers bench shares (demo/bench-peers.sh).

A client fetches COUNT items, /item/FIRST .. /item/FIRST+COUNT-1, one after
another from BASE (http://127.0.0.1:PORT), checks each body against what
ratelimit-server sends for it ("item=K;" repeated to 64 bytes), and prints
one line: "ok N failed M".  An item is failed when the client gave up on it
(an exception) or got anything but its body.
"""
import sys


def item_body(k, size=64):
    unit = "item=%d;" % k
    return (unit * (size // len(unit) + 1))[:size]


def args(usage):
    """BASE FIRST COUNT from the command line (and the rest), or exit 2."""
    try:
        base, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
        if first < 0 or count < 0:
            raise ValueError
    except (IndexError, ValueError):
        sys.stderr.write("usage: %s\n" % usage)
        sys.exit(2)
    return base.rstrip("/"), first, count, sys.argv[4:]


def run(fetch, base, first, count):
    """fetch(url, k) returns the body text, or raises when the client gave up."""
    ok = failed = 0
    for k in range(first, first + count):
        try:
            good = fetch("%s/item/%d" % (base, k), k) == item_body(k)
        except Exception as e:  # the client's own give-up: the item failed
            sys.stderr.write("item %d: %s: %s\n" % (k, type(e).__name__, str(e)[:200]))
            good = False
        if good:
            ok += 1
        else:
            failed += 1
    print("ok %d failed %d" % (ok, failed))
    sys.stdout.flush()
