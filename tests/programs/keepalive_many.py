# Many kept-alive connections (issue 46's memory row): N http.client
# connections to HOST:PORT, one GET of PATH on each, every one kept open, then
# the process's resident memory.  Prints the statuses ("200 x N") and "time
# rss_kb K conns N".  Used by tests/integration/test_http_harm.sh and
# demo/bench-harm.sh.   python3 keepalive_many.py HOST PORT PATH N
import collections
import http.client
import resource
import sys

host, port, path, n = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = n + 64
if soft < want:
    limit = want if hard == resource.RLIM_INFINITY or hard >= want else hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    n = min(n, limit - 64)
conns, statuses = [], collections.Counter()
for _ in range(n):
    c = http.client.HTTPConnection(host, port)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    statuses[r.status] += 1
    conns.append(c)
for s, k in sorted(statuses.items()):
    print(s, "x", k)
rss = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
print("time rss_kb", rss, "conns", n)
