# A Python program that does what daemons do to their descriptors, for the
# harm suite of what the library holds (tests/integration/test_harm_owned.sh,
# demo/bench-harm.sh): http.client through the library's http room.
#   python3 harm_owned.py fds range|loop URL1 URL2 DIR
# GET URL1, close every descriptor from 3 up (os.closerange, or os.close one
# by one), open DIR/f1..f4 and write "fileN\n" in each, GET URL2 (a new
# destination), close the four.  Prints "get1 STATUS", "get2 STATUS" and
# "close fN 0|ERRNO-NAME", as tests/helpers/harm_owned.c does.
import errno
import http.client
import os
import resource
import sys
import urllib.parse


def get(url):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        c.request("GET", u.path or "/")
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


mode, how, url1, url2, where = sys.argv[1:6]
assert mode == "fds"
print("get1 %d" % get(url1), flush=True)
top = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 65536)
if how == "range":
    os.closerange(3, top)
else:
    for fd in range(3, top):
        try:
            os.close(fd)
        except OSError:
            pass
fds = []
for i in range(1, 5):
    fd = os.open(os.path.join(where, "f%d" % i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"file%d\n" % i)
    fds.append(fd)
print("get2 %d" % get(url2), flush=True)
for i, fd in enumerate(fds, 1):
    try:
        os.close(fd)
        print("close f%d 0" % i)
    except OSError as e:
        print("close f%d %s" % (i, errno.errorcode.get(e.errno, str(e.errno))))
