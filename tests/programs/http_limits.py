# The program's limits on a retry of the http room (shim/http/), for
# tests/integration/test_http_clients.sh, against a server that answers
# every request 429 with Retry-After: 3.  One GET on a raw socket; prints
# what came and when, and exits 1 when a limit was not kept:
#   rcvtimeo     SO_RCVTIMEO 0.5 s: the 429 comes back at once (a 3 s wait
#                does not fit in the read's timeout);
#   signal       a SIGALRM handler (Python's: no SA_RESTART) fires after
#                0.5 s: it ends the retry's wait, the 429 comes then;
#   nonblocking  a non-blocking socket polled by the program, with
#                BACKOFF_MAX_TIME_MS=4000: no recv call is held longer
#                than the retry's wait (3 s), and the 429 comes in the end.
#   python3 http_limits.py CASE BASE
import os
import select
import signal
import socket
import struct
import sys
import time
import urllib.parse

case, base = sys.argv[1], sys.argv[2]
u = urllib.parse.urlsplit(base)
s = socket.create_connection((u.hostname, u.port))
req = ("GET /item/1 HTTP/1.1\r\nHost: %s\r\n\r\n" % u.netloc).encode()
fired = []
if case == "rcvtimeo":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 500000))
elif case == "signal":
    signal.signal(signal.SIGALRM, lambda *a: fired.append(time.monotonic()))
    signal.setitimer(signal.ITIMER_REAL, 0.5)
elif case == "nonblocking":
    s.setblocking(False)
t0 = time.monotonic()
s.sendall(req)
longest = 0.0
while True:
    if case == "nonblocking":
        select.select([s], [], [], 10)
    t = time.monotonic()
    try:
        d = s.recv(65536)
    except BlockingIOError:
        longest = max(longest, time.monotonic() - t)
        continue
    longest = max(longest, time.monotonic() - t)
    break
took = time.monotonic() - t0
status = d.split(b" ", 2)[1].decode() if d.startswith(b"HTTP/") else "none"
print("status %s after %.2f s, longest recv %.2f s%s" %
      (status, took, longest, ", signal at %.2f s" % (fired[0] - t0) if fired else ""))
ok = status == "429"
if case == "rcvtimeo":
    ok = ok and took < 0.45
elif case == "signal":
    ok = ok and bool(fired) and 0.45 < took < 1.5
elif case == "nonblocking":
    ok = ok and longest < 3.6 and took < 5.5
sys.exit(0 if ok else 1)
