# A TLS server whose certificate changes from one connection to the next,
# for tests/integration/test_http_tls.sh: connections 1, 3, 5... present
# CERT_A (which the client trusts), 2, 4, 6... CERT_B (which it does not).
# Every request is answered 429 "rejected" with Retry-After: 0 and
# Connection: close.  Prints "listening on 127.0.0.1:PORT", then one line
# per connection: "conn K handshake ok|failed".
#   python3 tls_flip_server.py CERT_A KEY_A CERT_B KEY_B
import socket
import ssl
import sys
import threading

ctx = []
for cert, key in ((sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])):
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    c.load_cert_chain(cert, key)
    ctx.append(c)
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(16)
print("listening on 127.0.0.1:%d" % srv.getsockname()[1], flush=True)


def serve(conn, k):
    try:
        s = ctx[(k - 1) % 2].wrap_socket(conn, server_side=True)
    except (ssl.SSLError, OSError):
        print("conn %d handshake failed" % k, flush=True)
        conn.close()
        return
    print("conn %d handshake ok" % k, flush=True)
    try:
        data = b""
        while b"\r\n\r\n" not in data:
            d = s.recv(4096)
            if not d:
                return
            data += d
        s.sendall(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 8\r\n"
                  b"Connection: close\r\nContent-Type: text/plain\r\n\r\nrejected")
        s.close()
    except OSError:
        pass


k = 0
while True:
    conn, _ = srv.accept()
    k += 1
    threading.Thread(target=serve, args=(conn, k), daemon=True).start()
