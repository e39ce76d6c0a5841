"""The files a curl or wget run of the peers bench left: how many hold their
item's body.  Usage: check_files.py DIR PREFIX FIRST COUNT (the file of item K
is DIR/PREFIXK: curl -o "DIR/f_#1" writes f_K, wget -P DIR writes K); prints
the count."""
import os
import sys

from peer_common import item_body

try:
    d, prefix, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
except (IndexError, ValueError):
    sys.stderr.write("usage: check_files.py DIR PREFIX FIRST COUNT\n")
    sys.exit(2)
ok = 0
for k in range(first, first + count):
    try:
        with open(os.path.join(d, "%s%d" % (prefix, k)), encoding="utf-8", errors="replace") as f:
            ok += f.read() == item_body(k)
    except OSError:
        pass
print(ok)
