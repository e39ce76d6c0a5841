"""requests with urllib3's Retry mounted as urllib3's and requests' docs show it:
Retry(total=10, backoff_factor=0.5, status_forcelist=[429, 503],
respect_retry_after_header=True) in an HTTPAdapter.
Usage: requests_urllib3.py BASE FIRST COUNT"""
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from peer_common import args, run

base, first, count, _ = args("requests_urllib3.py BASE FIRST COUNT")
retry = Retry(total=10, backoff_factor=0.5, status_forcelist=[429, 503],
              respect_retry_after_header=True)
s = requests.Session()
s.mount("http://", HTTPAdapter(max_retries=retry))


def fetch(url, k):
    r = s.get(url)  # after the 10th retry urllib3 raises (RetryError): failed
    return r.text if r.status_code == 200 else None


run(fetch, base, first, count)
