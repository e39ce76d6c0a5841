# A keep-alive burst after sequential use (issue 46's row: a destination that
# never throttled, used one request at a time, then many at once): NSEQ GETs
# of PATH one after another on one keep-alive connection, then N connections,
# each of which writes its GET before any answer is read (blocking sockets,
# no timeout, as http.client uses them), then every answer read.  Prints the
# statuses ("200 x N") and "time burst S": from the first write of the burst
# to its last answer.  Used by tests/integration/test_http_harm.sh and
# demo/bench-harm.sh.   python3 keepalive_burst.py HOST PORT PATH NSEQ N
import http.client
import sys
import time

host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
nseq, n = int(sys.argv[4]), int(sys.argv[5])

seq = http.client.HTTPConnection(host, port)
for _ in range(nseq):
    seq.request("GET", path)
    r = seq.getresponse()
    r.read()
    if r.status != 200:
        print("sequential", r.status)
conns = [http.client.HTTPConnection(host, port) for _ in range(n)]
for c in conns:
    c.connect()
t0 = time.monotonic()
for c in conns:
    c.request("GET", path)
statuses = []
for c in conns:
    r = c.getresponse()
    r.read()
    statuses.append(r.status)
t = time.monotonic() - t0
print(" ".join("%d x %d" % (s, statuses.count(s)) for s in sorted(set(statuses))), flush=True)
print("time burst %.3f" % t, flush=True)
