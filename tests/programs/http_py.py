# HTTP clients of Python that do not use libcurl, for
# tests/integration/test_http_clients.sh: each fetches BASE/item/1..N (or
# POSTs to it) and prints "done N bad K", K the answers that are not 200
# with ratelimit-server's body (item_body: "item=I;" repeated to 64 bytes;
# a POST's "fnv1a64=HEX length=LEN" line of what it sent).  Errors count as bad.
#   python3 http_py.py MODE BASE N [TAG]
# MODE: session (requests.Session, one keep-alive connection), get
# (requests.get, a connection per call), urllib (urllib.request), client
# (http.client, one keep-alive connection), post (http.client POSTs with an
# X-Request-Id), asyncio (asyncio.open_connection, https with memory BIOs;
# each answer's status printed), once (one GET of /item/1 with Connection:
# close, its status and body printed), bigpost (one POST of 100,000 bytes,
# over the 64 KiB the shim keeps: its status and body printed).  https: SSL_CERT_FILE names the test
# certificate.
import asyncio
import os
import ssl
import sys
import urllib.parse
import urllib.request

mode, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tag = sys.argv[4] if len(sys.argv) > 4 else "x"
cafile = os.environ.get("SSL_CERT_FILE")


def item(i):
    return (("item=%d;" % i) * 64)[:64].encode()


def fnv(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return ("fnv1a64=%016x length=%d" % (h, len(data))).encode()


bad = 0
if mode in ("session", "get"):
    import requests

    s = requests.Session() if mode == "session" else requests
    for i in range(1, n + 1):
        try:
            r = s.get("%s/item/%d" % (base, i), timeout=30, verify=cafile or True)
            bad += not (r.status_code == 200 and r.content == item(i))
        except Exception as e:
            print("error", e, file=sys.stderr)
            bad += 1
elif mode == "urllib":
    ctx = ssl.create_default_context(cafile=cafile) if base.startswith("https") else None
    for i in range(1, n + 1):
        try:
            d = urllib.request.urlopen("%s/item/%d" % (base, i), timeout=30, context=ctx).read()
            bad += d != item(i)
        except Exception as e:
            print("error", e, file=sys.stderr)
            bad += 1
elif mode in ("client", "post"):
    import http.client

    u = urllib.parse.urlsplit(base)
    if u.scheme == "https":
        c = http.client.HTTPSConnection(u.hostname, u.port, timeout=30,
                                        context=ssl.create_default_context(cafile=cafile))
    else:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    for i in range(1, n + 1):
        try:
            if mode == "post":
                body = ("order %d of %s " % (i, tag)).encode() * 20
                c.request("POST", "/item/%d" % i, body=body,
                          headers={"X-Request-Id": "%s-%d" % (tag, i)})
                want = fnv(body)
            else:
                c.request("GET", "/item/%d" % i)
                want = item(i)
            r = c.getresponse()
            d = r.read()
            bad += not (r.status == 200 and d.rstrip(b"\n") == want)
        except Exception as e:
            print("error", e, file=sys.stderr)
            bad += 1
            c.close()
elif mode == "bigpost":
    import http.client

    u = urllib.parse.urlsplit(base)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("POST", "/item/1", body=b"x" * 100000, headers={"X-Request-Id": tag})
    r = c.getresponse()
    print("status %d body %s" % (r.status, r.read().decode().strip()))
    sys.exit(0)
elif mode == "once":
    import http.client

    u = urllib.parse.urlsplit(base)
    if u.scheme == "https":
        c = http.client.HTTPSConnection(u.hostname, u.port, timeout=30,
                                        context=ssl.create_default_context(cafile=cafile))
    else:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.request("GET", "/item/1", headers={"Connection": "close"})
    r = c.getresponse()
    print("status %d body %s" % (r.status, r.read().decode()))
    sys.exit(0)
elif mode == "asyncio":
    async def main():
        u = urllib.parse.urlsplit(base)
        ctx = ssl.create_default_context(cafile=cafile) if u.scheme == "https" else None
        r, w = await asyncio.open_connection(u.hostname, u.port, ssl=ctx)
        got = []
        for i in range(1, n + 1):
            w.write(("GET /item/%d HTTP/1.1\r\nHost: %s\r\n\r\n" % (i, u.netloc)).encode())
            await w.drain()
            status = int((await r.readline()).split()[1])
            length = 0
            while True:
                line = await r.readline()
                if line in (b"\r\n", b""):
                    break
                k, _, v = line.decode().partition(":")
                if k.lower() == "content-length":
                    length = int(v)
            d = await r.readexactly(length)
            got.append(status)
            if not (status == 200 and d == item(i)):
                globals()["bad"] += 1
        print("statuses", " ".join(map(str, got)))
        w.close()
    asyncio.run(main())
else:
    sys.exit("http_py.py: unknown mode " + mode)
print("done %d bad %d" % (n, bad))
