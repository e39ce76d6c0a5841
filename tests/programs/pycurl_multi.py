# pycurl's CurlMulti driven as programs drive it, one program for both
# loops: MODE perform is a perform()/select() loop; MODE socket an event
# loop on socket_action with socket and timer callbacks (as tornado does).
# N transfers: every 4th a POST to /post/I with X-Request-Id TAG-I, the
# others GET /item/I (checked against ratelimit-server's item body).
# Prints "done N bad B".  Used by tests/integration/test_multi_pycurl.sh.
#   python3 pycurl_multi.py URL MODE N TAG
import io, select, sys, time
import pycurl

url, mode, n, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def want(i):
    return (("item=%d;" % i) * 64)[:64].encode()

def make(i):
    c = pycurl.Curl()
    c.body, c.heads, c.i = io.BytesIO(), [], i
    c.setopt(pycurl.WRITEFUNCTION, c.body.write)
    c.setopt(pycurl.HEADERFUNCTION, c.heads.append)
    if i % 4 == 0:
        c.setopt(pycurl.URL, "%s/post/%d" % (url, i))
        c.setopt(pycurl.POSTFIELDS, "n=%d" % i)
        c.setopt(pycurl.HTTPHEADER, ["X-Request-Id: %s-%d" % (tag, i)])
    else:
        c.setopt(pycurl.URL, "%s/item/%d" % (url, i))
    return c

m = pycurl.CurlMulti()
handles = [make(i) for i in range(1, n + 1)]
done = []

def collect():
    """Every finished transfer's message, with its error code (0: done)."""
    while True:
        q, ok, err = m.info_read()
        for c in ok:
            done.append((c, 0))
        for c, e, msg in err:
            done.append((c, e))
        if q == 0:
            break

if mode == "perform":
    for c in handles:
        m.add_handle(c)
    running = n
    while running:
        while True:
            ret, running = m.perform()
            if ret != pycurl.E_CALL_MULTI_PERFORM:
                break
        collect()
        if running:
            m.select(1.0)
else:
    # An event loop: socket callbacks register interest, the timer callback
    # sets one deadline, socket_action is called for events and timeouts.
    socks, deadline = {}, [None]
    def on_socket(what, fd, multi, data):
        if what == pycurl.POLL_REMOVE:
            socks.pop(fd, None)
        else:
            socks[fd] = what
    def on_timer(ms):
        deadline[0] = None if ms < 0 else time.monotonic() + ms / 1000.0
    m.setopt(pycurl.M_SOCKETFUNCTION, on_socket)
    m.setopt(pycurl.M_TIMERFUNCTION, on_timer)
    for c in handles:
        m.add_handle(c)
    running = n
    t_end = time.monotonic() + 50
    while len(done) < n and time.monotonic() < t_end:
        timeout = 1.0
        if deadline[0] is not None:
            timeout = max(0.0, min(timeout, deadline[0] - time.monotonic()))
        r = [fd for fd, w in socks.items() if w in (pycurl.POLL_IN, pycurl.POLL_INOUT)]
        w = [fd for fd, x in socks.items() if x in (pycurl.POLL_OUT, pycurl.POLL_INOUT)]
        if r or w:
            rr, ww, _ = select.select(r, w, [], timeout)
        else:
            time.sleep(timeout)
            rr, ww = [], []
        acted = False
        for fd in set(rr) | set(ww):
            ev = (pycurl.CSELECT_IN if fd in rr else 0) | (pycurl.CSELECT_OUT if fd in ww else 0)
            ret, running = m.socket_action(fd, ev)
            acted = True
        if deadline[0] is not None and time.monotonic() >= deadline[0]:
            deadline[0] = None
            ret, running = m.socket_action(pycurl.SOCKET_TIMEOUT, 0)
            acted = True
        if acted:
            collect()

bad = 0
for c, e in done:
    code = c.getinfo(pycurl.RESPONSE_CODE)
    body = c.body.getvalue()
    status_lines = [h for h in c.heads if h.startswith(b"HTTP/")]
    if c.i % 4 == 0:
        good = e == 0 and code == 200 and body.startswith(b"fnv1a64=")
    else:
        good = e == 0 and code == 200 and body == want(c.i)
    good = good and len(status_lines) == 1
    bad += not good
    m.remove_handle(c)
    c.close()
m.close()
print("done %d bad %d" % (len(done), bad + (n - len(done))))
