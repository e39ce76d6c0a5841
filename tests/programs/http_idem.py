# POSTs of one order from Python without libcurl, for
# tests/integration/test_shim_idempotency.sh (the http room under
# BACKOFF_IDEMPOTENCY_KEY): prints "status S body B" of the answer the
# program got in the end, or "error E".
#   python3 http_idem.py MODE URL FILE
# MODE: requests (requests.Session().post, once: whatever the library did);
# empty (the same with an empty Idempotency-Key field: no key);
# own (http.client: a POST, and on a connection error one more POST of its
# own, on a new connection: the program's own retry).
import http.client
import sys
import urllib.parse

mode, url, path = sys.argv[1], sys.argv[2], sys.argv[3]
body = open(path, "rb").read()
if mode in ("requests", "empty"):
    import requests

    headers = {"Idempotency-Key": ""} if mode == "empty" else {}
    try:
        r = requests.Session().post(url, data=body, headers=headers, timeout=15)
        print("status %d body %s" % (r.status_code, r.text))
    except Exception as e:
        print("error %s" % type(e).__name__)
    sys.exit(0)
u = urllib.parse.urlsplit(url)
for attempt in (1, 2):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=15)
    try:
        c.request("POST", u.path, body=body)
        r = c.getresponse()
        print("status %d body %s" % (r.status, r.read().decode()))
        break
    except (ConnectionError, http.client.HTTPException) as e:
        print("attempt %d: %s" % (attempt, type(e).__name__))
    finally:
        c.close()
