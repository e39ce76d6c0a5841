"""requests under tenacity as its docs show it: wait_random_exponential(max=60)
(multiplier 1), stop_after_attempt(10), retrying on 429 and 503 answers and on
connection errors.  Usage: requests_tenacity.py BASE FIRST COUNT"""
import requests
from tenacity import (retry, retry_if_exception_type, retry_if_result,
                      stop_after_attempt, wait_random_exponential)

from peer_common import args, run

base, first, count, _ = args("requests_tenacity.py BASE FIRST COUNT")
s = requests.Session()


@retry(wait=wait_random_exponential(multiplier=1, max=60), stop=stop_after_attempt(10),
       retry=(retry_if_exception_type(requests.ConnectionError)
              | retry_if_result(lambda r: r.status_code in (429, 503))))
def get(url):
    return s.get(url)


def fetch(url, k):
    r = get(url)  # after the 10th attempt tenacity raises RetryError: failed
    return r.text if r.status_code == 200 else None


run(fetch, base, first, count)
