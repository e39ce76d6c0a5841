# Small clients of the harm suite (tests/integration/test_http_harm.sh,
# demo/bench-harm.sh), each doing one thing a real program does, and
# printing what it saw, so that a run under the library can be compared
# with a plain one.  Lines starting with "time " carry timings (seconds):
# they are left out of the comparison.
#   python3 harm_clients.py MODE ARGS...
# MODE:
#   get URL                  urllib GET: "STATUS BODY" (an error: "error CLASS"), its time
#   pipeline HOST PORT N [one]
#                            N GETs of /item/I written (one send each; one: all in one) before any
#                            answer is read; each read by http.client.HTTPResponse
#                            (a socket timeout of 5 s: an answer that never comes)
#   halfclose HOST PORT PATH a GET, shutdown(SHUT_WR), read to EOF: the bytes
#   blocking URL             http.client, a blocking socket without a timeout
#   early HOST PORT PATH block|nonblock
#                            a raw GET of an answer preceded by a 1xx: the bytes;
#                            "time first F maxcall C": the first read's delay, the
#                            longest recv() call (nonblock: each after a select())
#   line HOST PORT           an SMTP-style conversation
#   ws HOST PORT             a WebSocket upgrade, then frames both ways
#   expect HOST PORT         a POST with Expect: 100-continue, the body sent after the 100
#   head BASE KEY            HEADs (and a GET after them) on one keep-alive connection
#   chunked BASE PATH        a chunked upload (http.client encode_chunked)
#   big BASE PATH            a GET whose answer is large: status, length, sha256
#   tls URL CAFILE           requests.get(verify=CAFILE): "STATUS BODY" or "error CLASS"
#   tls-session URL CAFILE   requests.Session: two GETs of URL
#   pin HOST PORT SHA256     ssl CERT_NONE, then the peer certificate's sha256 checked
#                            against SHA256 after the handshake; a GET
#   seq URL N HOW [TIMEOUT]  N GETs of URL one after another, HOW: urllib, blocking
#                            (http.client on one keep-alive connection) or requests
#                            (a Session); a socket timeout of TIMEOUT s (default:
#                            none, blocking for good): "STATUS BODY" each (an
#                            error: "error CLASS"), then "time total T"
#   nginx BASE N             N GETs of BASE/api/xI (a new connection each, 6 s at most) while a
#                            second thread fetches BASE/static/f.txt on one
#                            keep-alive connection: the api answers and the static
#                            count; "time static_max S api_max A"
import hashlib
import http.client
import os
import select
import socket
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

mode, args = sys.argv[1], sys.argv[2:]


def out(*a):
    print(*a, flush=True)


def recv_all(s):
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            return data
        data += d


def show(data):
    sys.stdout.write(data.decode("latin-1").replace("\r", "\\r"))
    if not data.endswith(b"\n"):
        sys.stdout.write("\n")
    sys.stdout.flush()


def item(n):
    unit = ("item=%d;" % n).encode()
    return (unit * (64 // len(unit) + 1))[:64]


class Reader:
    """One buffered reader of a socket shared by successive HTTPResponse
    objects (each would make its own and lose what it read ahead)."""

    def __init__(self, sock):
        self.f = sock.makefile("rb")

    def makefile(self, *a, **k):
        return self

    def close(self):
        pass

    def __getattr__(self, name):
        return getattr(self.f, name)


def response(reader, method="GET"):
    r = http.client.HTTPResponse(reader, method=method)
    r.begin()
    return r, r.read()


if mode == "get":
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(args[0], timeout=60) as r:
            out(r.status, r.read().decode().strip())
    except urllib.error.HTTPError as e:
        out(e.code, e.read().decode().strip())
    except Exception as e:
        out("error", type(e).__name__)
    out("time total %.3f" % (time.monotonic() - t0))

elif mode == "pipeline":
    host, port, n = args[0], int(args[1]), int(args[2])
    s = socket.create_connection((host, port), timeout=5)
    # no Nagle: 25 small writes otherwise wait 40 ms for a delayed ACK now and then
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.monotonic()
    reqs = [("GET /item/%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (i, host, port)).encode()
            for i in range(1, n + 1)]
    for r in [b"".join(reqs)] if args[3:] == ["one"] else reqs:
        s.sendall(r)
    bad = 0
    reader = Reader(s)
    for i in range(1, n + 1):
        try:
            r, body = response(reader)
        except Exception as e:  # no answer within 5 s: the rest never comes
            out(i, "error", type(e).__name__)
            bad += n - i + 1
            break
        out(i, r.status, body.decode())
        bad += not (r.status == 200 and body == item(i))
    out("done %d bad %d" % (n, bad))
    out("time total %.3f" % (time.monotonic() - t0))

elif mode == "halfclose":
    host, port, path = args[0], int(args[1]), args[2]
    s = socket.create_connection((host, port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (path, host, port)).encode())
    s.shutdown(socket.SHUT_WR)
    show(recv_all(s))

elif mode == "blocking":
    u = urllib.parse.urlsplit(args[0])
    c = http.client.HTTPConnection(u.hostname, u.port)  # no timeout: blocking for good
    t0 = time.monotonic()
    try:
        c.request("GET", u.path + ("?" + u.query if u.query else ""))
        r = c.getresponse()
        out(r.status, r.read().decode().strip())
    except Exception as e:
        out("error", type(e).__name__, e)
    out("time total %.3f" % (time.monotonic() - t0))

elif mode == "early":
    host, port, path, how = args[0], int(args[1]), args[2], args[3]
    s = socket.create_connection((host, port))
    if how == "nonblock":
        s.setblocking(False)
    t0 = time.monotonic()
    s.sendall(("GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n"
               % (path, host, port)).encode())
    data, first, maxcall = b"", None, 0.0
    while True:
        if how == "nonblock":
            select.select([s], [], [], 5)
        t = time.monotonic()
        try:
            d = s.recv(65536)
        except BlockingIOError:
            d = None
        maxcall = max(maxcall, time.monotonic() - t)
        if d is None:
            continue
        if first is None:
            first = time.monotonic() - t0
        if not d:
            break
        data += d
    show(data)
    out("time first %.3f maxcall %.3f" % (first, maxcall))

elif mode == "line":
    s = socket.create_connection((args[0], int(args[1])), timeout=30)
    f = s.makefile("rb")
    out(f.readline().decode().strip())
    # (what is written in one send, whether the server answers it); the
    # message holds a whole request head and a status line, each in a send
    for text, answered in (("EHLO harm.example", 1), ("MAIL FROM:<a@harm.example>", 1),
                           ("RCPT TO:<b@harm.example>", 1), ("DATA", 1),
                           ("GET /looks/like/http HTTP/1.1\r\nHost: x\r\n", 0),
                           ("HTTP/1.1 429 Too Many Requests", 0), ("Retry-After: 1", 0),
                           ("", 0), (".", 1), ("NOOP", 1), ("QUIT", 1)):
        s.sendall(text.encode() + b"\r\n")
        if answered:
            out(f.readline().decode().strip())
    out("eof" if f.read() == b"" else "more")

elif mode == "ws":
    host, port = args[0], int(args[1])
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(("GET /ws HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
               % (host, port)).encode())
    f = s.makefile("rb")
    while True:
        line = f.readline()
        out(line.decode().strip())
        if line in (b"\r\n", b""):
            break

    def frame(op, data):
        mask = os.urandom(4)
        n = len(data)
        h = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else b"\xfe" + n.to_bytes(2, "big"))
        return h + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))

    def read_frame():
        h = f.read(2)
        n = h[1] & 0x7F
        if n == 126:
            n = int.from_bytes(f.read(2), "big")
        return h[0] & 0x0F, f.read(n)

    out("frame", *read_frame())
    for msg in (b"one", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 429 x\r\n\r\n", b"x" * 3000):
        s.sendall(frame(1, msg))
        op, data = read_frame()
        out("frame", op, len(data), hashlib.sha256(data).hexdigest()[:16])
    s.sendall(frame(8, b"\x03\xe8"))
    out("frame", *read_frame())
    out("eof" if f.read() == b"" else "more")

elif mode == "expect":
    host, port = args[0], int(args[1])
    body = b"expect me " * 1000
    s = socket.create_connection((host, port), timeout=30)
    s.sendall(("POST /echo HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: %d\r\n"
               "Expect: 100-continue\r\n\r\n" % (host, port, len(body))).encode())
    f = s.makefile("rb")
    interim = f.readline()
    out("interim", interim.decode().strip())
    while f.readline() not in (b"\r\n", b""):
        pass
    s.sendall(body)
    r = http.client.HTTPResponse(s)
    r.begin()
    out(r.status, r.read().decode().strip())

elif mode == "head":
    u = urllib.parse.urlsplit(args[0])
    key = args[1]
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    for i, (method, path) in enumerate((("HEAD", "/item/3"), ("HEAD", "/first429/%s?ra=0" % key),
                                        ("HEAD", "/first429/%s?ra=0" % key), ("GET", "/item/4"))):
        c.request(method, path)
        r = c.getresponse()
        out(i, method, r.status, r.getheader("Content-Length"), r.read())

elif mode == "chunked":
    u = urllib.parse.urlsplit(args[0])
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    parts = [(b"part %d;" % i) * (i * 50 + 1) for i in range(20)]
    want = hashlib.sha256(b"".join(parts)).hexdigest()
    c.request("POST", args[1], body=iter(parts), encode_chunked=True,
              headers={"Transfer-Encoding": "chunked"})
    r = c.getresponse()
    body = r.read().decode().strip()
    out(r.status, body, "(sent sha256=%s)" % want)

elif mode == "big":
    u = urllib.parse.urlsplit(args[0])
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request("GET", args[1])
    r = c.getresponse()
    body = r.read()
    out(r.status, len(body), hashlib.sha256(body).hexdigest())

elif mode == "notimeout":
    # requests with no timeout at all (its default): a stalled answer is
    # waited for as long as the socket lives
    import requests

    t0 = time.monotonic()
    try:
        r = requests.get(args[0], verify=args[1] if len(args) > 1 else True)
        out(r.status_code, r.text.strip())
    except requests.exceptions.ConnectionError as e:
        out("error ConnectionError", type(e).__name__)
    except Exception as e:
        out("error", type(e).__name__)
    out("time total %.3f" % (time.monotonic() - t0))

elif mode in ("tls", "tls-session"):
    import requests

    s = requests.Session() if mode == "tls-session" else requests
    for _ in range(2 if mode == "tls-session" else 1):
        try:
            r = s.get(args[0], verify=args[1], timeout=20)
            out(r.status_code, r.text.strip())
        except requests.exceptions.ConnectionError as e:
            out("error ConnectionError", type(e).__name__)
        except Exception as e:
            out("error", type(e).__name__)

elif mode == "pin":
    host, port, pin = args[0], int(args[1]), args[2]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(socket.create_connection((host, port), timeout=20))
    if hashlib.sha256(s.getpeercert(True)).hexdigest() != pin:
        out("pin mismatch: refused")
        sys.exit(0)
    s.sendall(("GET /pinned HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port)).encode())
    r = http.client.HTTPResponse(s)
    r.begin()
    out(r.status, r.read().decode().strip())

elif mode == "nginx":
    base, n = args[0], int(args[1])
    u = urllib.parse.urlsplit(base)
    done = threading.Event()
    stat = {"n": 0, "max": 0.0, "bad": 0}

    def statics():
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        while not done.is_set():
            t = time.monotonic()
            c.request("GET", "/static/f.txt")
            r = c.getresponse()
            b = r.read()
            stat["max"] = max(stat["max"], time.monotonic() - t)
            stat["n"] += 1
            stat["bad"] += not (r.status == 200 and b == b"static file\n")
            time.sleep(0.005)

    th = threading.Thread(target=statics)
    th.start()
    time.sleep(0.2)
    api_max = 0.0
    for i in range(n):
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=6)
        t = time.monotonic()
        try:
            c.request("GET", "/api/x%d" % i)
            r = c.getresponse()
            out("api", i, r.status, r.getheader("Retry-After"), r.read().decode().strip())
        except Exception as e:
            out("api", i, "error", type(e).__name__)
        api_max = max(api_max, time.monotonic() - t)
        c.close()
    time.sleep(0.2)
    done.set()
    th.join()
    out("static ok" if stat["n"] > 5 and stat["bad"] == 0 else "static bad %d of %d" % (stat["bad"], stat["n"]))
    out("time static_max %.4f api_max %.4f static_n %d" % (stat["max"], api_max, stat["n"]))

elif mode == "seq":
    url, n, how = args[0], int(args[1]), args[2]
    tmo = float(args[3]) if args[3:] else None
    u = urllib.parse.urlsplit(url)
    t0 = time.monotonic()
    if how == "requests":
        import requests

        sess = requests.Session()
    elif how == "blocking":
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=tmo)
    for _ in range(n):
        try:
            if how == "urllib":
                try:
                    with urllib.request.urlopen(url, timeout=tmo) as r:
                        out(r.status, r.read().decode().strip())
                except urllib.error.HTTPError as e:
                    out(e.code, e.read().decode().strip())
            elif how == "blocking":
                c.request("GET", u.path + ("?" + u.query if u.query else ""))
                r = c.getresponse()
                out(r.status, r.read().decode().strip())
            else:
                r = sess.get(url, timeout=tmo)
                out(r.status_code, r.text.strip())
        except Exception as e:
            out("error", type(e).__name__)
    out("time total %.3f" % (time.monotonic() - t0))

else:
    sys.exit("harm_clients.py: unknown mode " + mode)
