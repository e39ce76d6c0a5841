# The HTTP/1.1 server of the harm suite (tests/integration/test_http_harm.sh,
# demo/bench-harm.sh): threaded, keep-alive, its answers written byte by byte
# (no Date, no Server: two runs of a client see the same bytes).  Prints
# "listening on 127.0.0.1:PORT", then one line per request, "req METHOD PATH"
# (flushed), so that a test counts what reached it.
#   python3 harm_server.py [line]
# Routes (GET, HEAD; POST reads its body first, Content-Length or chunked):
#   /item/N              200, ratelimit-server's body (item=N; repeated to 64 bytes)
#   /quick               200 "quick\n"
#   /slow/S              200 "slow S\n" after S seconds (a long poll, a slow answer)
#   /always429?ra=N&close=1&size=B
#                        429 every time, Retry-After: N when given, Connection:
#                        close with close=1, a body of B bytes (default "rejected")
#   /first429/KEY?ra=N&slow=S&close=1&size=B&split=T
#                        the first request of KEY (path and query): the 429 above
#                        (split: its head written alone, its body T seconds later);
#                        every later one: 200 "ok\n" (a POST: its "sha256=..." line)
#                        after S seconds (default 0)
#   /early/CODE?delay=S  an interim answer CODE (103 Early Hints with a Link, or
#                        102 Processing) at once, the 200 after S seconds (1)
#   /ws                  a WebSocket upgrade (101), then every frame echoed
#                        (unmasked) until a close frame, which is echoed too
#   POST /echo           200 "sha256=HEX length=N\n" of the body received
#                        (Expect: 100-continue gets its 100 first); every POST
#                        also logs "post PATH sha256=HEX length=N"
# With the argument "line": an SMTP-style line server instead: "220 ready",
# then "250 ok: LINE" for every line, "354 go on" after DATA (lines up to "."
# are taken as a message: "250 queued N lines"), "221 bye" to QUIT (closed).
import base64
import hashlib
import http.server
import socketserver
import sys
import threading
import time
import urllib.parse

lock = threading.Lock()
seen = {}


def log(line):
    with lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def item(n):
    unit = ("item=%s;" % n).encode()
    return (unit * (64 // len(unit) + 1))[:64]


def filler(size):
    unit = b"rejected;"
    return (unit * (size // len(unit) + 1))[:size]


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 60

    def log_message(self, *a):
        pass

    def answer(self, status, reason, body, extra=(), close=False, split=0.0):
        head = "HTTP/1.1 %d %s\r\n" % (status, reason)
        for k, v in extra:
            head += "%s: %s\r\n" % (k, v)
        head += "Content-Type: text/plain\r\nContent-Length: %d\r\n" % len(body)
        if close:
            head += "Connection: close\r\n"
            self.close_connection = True
        head += "\r\n"
        data = head.encode()
        try:
            if split > 0 and self.command != "HEAD":
                self.wfile.write(data)  # the head alone, the body split seconds later
                self.wfile.flush()
                time.sleep(split)
                data = b""
            if self.command != "HEAD":
                data += body
            self.wfile.write(data)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def throttle(self, q):
        extra = []
        if "ra" in q:
            extra.append(("Retry-After", q["ra"]))
        body = filler(int(q["size"])) if "size" in q else b"rejected"
        self.answer(429, "Too Many Requests", body, extra, close=q.get("close") == "1",
                    split=float(q.get("split", 0)))

    def route(self):
        log("req %s %s" % (self.command, self.path))
        u = urllib.parse.urlsplit(self.path)
        q = dict(urllib.parse.parse_qsl(u.query))
        p = u.path
        sha = None
        if self.command == "POST":
            data = self.body()
            sha = ("sha256=%s length=%d\n" % (hashlib.sha256(data).hexdigest(), len(data))).encode()
            log("post %s %s" % (self.path, sha.decode().strip()))
            if p == "/echo":
                return self.answer(200, "OK", sha)
        if p.startswith("/item/"):
            return self.answer(200, "OK", item(p[6:]))
        if p == "/quick":
            return self.answer(200, "OK", b"quick\n")
        if p.startswith("/slow/"):
            time.sleep(float(p[6:]))
            return self.answer(200, "OK", ("slow %s\n" % p[6:]).encode())
        if p == "/always429":
            return self.throttle(q)
        if p.startswith("/first429/"):
            with lock:
                n = seen[self.path] = seen.get(self.path, 0) + 1
            if n == 1:
                return self.throttle(q)
            time.sleep(float(q.get("slow", 0)))
            return self.answer(200, "OK", sha or b"ok\n")
        if p.startswith("/early/"):
            code = int(p[7:])
            if code == 103:
                interim = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
            else:
                interim = b"HTTP/1.1 102 Processing\r\n\r\n"
            self.wfile.write(interim)
            self.wfile.flush()
            time.sleep(float(q.get("delay", 1)))
            return self.answer(200, "OK", ("after %d\n" % code).encode())
        if p == "/ws":
            return self.websocket()
        return self.answer(404, "Not Found", b"no such route\n")

    do_GET = do_HEAD = do_POST = route

    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        acc = base64.b64encode(hashlib.sha1(
            (key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.wfile.write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                          "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % acc).encode())
        self.wfile.write(b"\x81\x05hello")  # the server speaks first
        self.wfile.flush()
        self.close_connection = True
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            op, n = h[0] & 0x0F, h[1] & 0x7F
            if n == 126:
                n = int.from_bytes(self.rfile.read(2), "big")
            elif n == 127:
                n = int.from_bytes(self.rfile.read(8), "big")
            mask = self.rfile.read(4) if h[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(n)))
            out = bytes([0x80 | op])
            out += bytes([n]) if n < 126 else b"\x7e" + n.to_bytes(2, "big")
            self.wfile.write(out + data)
            self.wfile.flush()
            if op == 8:
                return


class Line(socketserver.StreamRequestHandler):
    def handle(self):
        self.wfile.write(b"220 ready\r\n")
        data = 0
        while True:
            line = self.rfile.readline()
            if not line:
                return
            text = line.rstrip(b"\r\n")
            if data:
                if text == b".":
                    self.wfile.write(b"250 queued %d lines\r\n" % (data - 1))
                    data = 0
                else:
                    data += 1
                continue
            if text.upper() == b"QUIT":
                self.wfile.write(b"221 bye\r\n")
                return
            if text.upper() == b"DATA":
                self.wfile.write(b"354 go on\r\n")
                data = 1
                continue
            self.wfile.write(b"250 ok: " + text + b"\r\n")


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass  # a client that went away (an aborted request) is no news


srv = Server(("127.0.0.1", 0), Line if sys.argv[1:] == ["line"] else H)
print("listening on 127.0.0.1:%d" % srv.server_address[1], flush=True)
srv.serve_forever()
