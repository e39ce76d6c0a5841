# A TLS server whose certificate changes after the first connection, for the
# harm suite (tests/integration/test_http_harm.sh): the first connection
# presents CERT_A (the one the client verifies), every later one CERT_B (a
# certificate for another host name from the same CA, or a self-signed one).
# Whatever reaches a later connection is answered 200 "wrong host": a client
# must never see it.
#   python3 harm_tls_server.py MODE CERT_A KEY_A CERT_B KEY_B
# MODE flip: the first connection's request is answered 429 (Retry-After: 0,
# Connection: close) and the connection closed.  MODE drop: the first
# connection's first request is answered 200 "first" (keep-alive), its
# second request is read and the connection closed without an answer (a
# kept-alive connection the server dropped).  MODE stall and reset: the
# first connection as flip; every later one takes its request and never
# answers (stall), or is reset at once, before any handshake (reset): a
# redial that fails.  With "plain" as a sixth argument no TLS at all (the
# certificates unused).  Prints "listening on 127.0.0.1:PORT", then "conn K
# handshake ok|failed" and "conn K request PATH" lines.
import socket
import ssl
import struct
import sys
import threading
import time

mode = sys.argv[1]
plain = len(sys.argv) > 6 and sys.argv[6] == "plain"
ctx = []
for cert, key in ((sys.argv[2], sys.argv[3]), (sys.argv[4], sys.argv[5])):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    c.load_cert_chain(cert, key)
    ctx.append(c)
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print("listening on 127.0.0.1:%d" % srv.getsockname()[1], flush=True)
lock = threading.Lock()


def log(line):
    with lock:
        print(line, flush=True)


def answer(s, status, body, close):
    s.sendall(b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n%s\r\n%s"
              % (status, len(body), b"Retry-After: 0\r\nConnection: close\r\n" if close else b"",
                 body))


def serve(conn, k):
    conn.settimeout(20)
    if k > 1 and mode == "reset":
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()
        log("conn %d reset" % k)
        return
    try:
        s = conn if plain else ctx[0 if k == 1 else 1].wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError):
        log("conn %d handshake failed" % k)
        conn.close()
        return
    log("conn %d handshake ok" % k)
    data = b""
    n = 0
    try:
        while True:
            while b"\r\n\r\n" not in data:
                d = s.recv(4096)
                if not d:
                    return
                data += d
            head, data = data.split(b"\r\n\r\n", 1)
            n += 1
            log("conn %d request %s" % (k, head.split(b" ")[1].decode()))
            if k > 1 and mode == "stall":
                time.sleep(30)
                break
            if k > 1:
                answer(s, b"200 OK", b"wrong host", False)
            elif mode in ("flip", "stall", "reset"):
                answer(s, b"429 Too Many Requests", b"rejected", True)
                break
            elif n == 1:
                answer(s, b"200 OK", b"first", False)
            else:
                break
    except OSError:
        pass
    finally:
        try:
            s.close()
        except OSError:
            pass


k = 0
while True:
    conn, _ = srv.accept()
    k += 1
    threading.Thread(target=serve, args=(conn, k), daemon=True).start()
