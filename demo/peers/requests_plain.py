"""requests with its own retries off (HTTPAdapter's default max_retries=0):
the plain client the peers bench runs under `backoff --`.
Usage: requests_plain.py BASE FIRST COUNT"""
import requests

from peer_common import args, run

base, first, count, _ = args("requests_plain.py BASE FIRST COUNT")
s = requests.Session()


def fetch(url, k):
    r = s.get(url)
    return r.text if r.status_code == 200 else None


run(fetch, base, first, count)
