#!/usr/bin/env python3
"""daemon_server.py PORTFILE: a classic double-forking daemon (fork, setsid,
fork, its own process group), then a ForkingMixIn HTTP server on 127.0.0.1
port 0 that forks a child per request.  Writes "PORT PGID" to PORTFILE once
it listens; answers GET /N with "pid-independent answer N".  The caller
stops it with: kill -TERM -- -PGID (the daemon and its request children)."""
import http.server
import os
import socketserver
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        # Fork once more inside the request child: a fork in a forked child
        # of a forked child of a daemon.
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.write(w, ("answer %s\n" % self.path.lstrip("/")).encode())
            os._exit(0)
        os.close(w)
        body = os.read(r, 100)
        os.close(r)
        os.waitpid(pid, 0)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ForkingMixIn, http.server.HTTPServer):
    pass


def main():
    portfile = sys.argv[1]
    if os.fork() > 0:
        os._exit(0)
    os.setsid()
    if os.fork() > 0:
        os._exit(0)
    os.setpgid(0, 0)
    fd = os.open(os.devnull, os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(fd, i)
    srv = Server(("127.0.0.1", 0), Handler)
    tmp = portfile + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (srv.server_address[1], os.getpgid(0)))
    os.rename(tmp, portfile)
    srv.serve_forever()


main()
