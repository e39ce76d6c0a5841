# A forward proxy of the harm suite (tests/integration/test_http_harm.sh)
# that speaks only CONNECT: a tunnel to the host and port it names, bytes
# copied both ways until either side closes.  Prints "listening on
# 127.0.0.1:PORT", then "connect HOST:PORT" for each tunnel and "bad LINE"
# for a first line that is not a CONNECT (a client that skipped the
# proxy's step: a TLS ClientHello sent straight at it), answered 400.
import socket
import sys
import threading

lock = threading.Lock()


def log(line):
    with lock:
        print(line, flush=True)


def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(c):
    c.settimeout(30)
    head = b""
    try:
        while b"\r\n\r\n" not in head:
            d = c.recv(4096)
            if not d:
                c.close()
                return
            head += d
            if len(head) > 16384 or (len(head) >= 8 and not head.startswith(b"CONNECT ")):
                break
    except OSError:
        c.close()
        return
    line = head.split(b"\r\n", 1)[0]
    if not line.startswith(b"CONNECT "):
        log("bad %r" % line[:40])
        c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        c.close()
        return
    target = line.split(b" ")[1].decode()
    log("connect " + target)
    host, port = target.rsplit(":", 1)
    try:
        u = socket.create_connection((host, int(port)), timeout=10)
    except OSError:
        c.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        c.close()
        return
    u.settimeout(None)
    c.settimeout(None)
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    rest = head.split(b"\r\n\r\n", 1)[1]
    if rest:
        u.sendall(rest)
    threading.Thread(target=pipe, args=(u, c), daemon=True).start()
    pipe(c, u)


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print("listening on 127.0.0.1:%d" % srv.getsockname()[1], flush=True)
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
