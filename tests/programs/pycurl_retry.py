# A program that retries on its own, as many crawlers do: up to 3 retries of
# a GET with a new pycurl handle each time, waiting 0.5, 1 and 2 s after a
# 5xx.  Prints the last status.  Used by tests/integration/test_shim_own_retries.sh
# and demo/bench-own-retries.sh.   python3 pycurl_retry.py URL
import io
import sys
import time

import pycurl

url = sys.argv[1]
for attempt in range(4):
    c = pycurl.Curl()
    c.setopt(pycurl.URL, url)
    c.setopt(pycurl.WRITEFUNCTION, io.BytesIO().write)
    c.perform()
    code = c.getinfo(pycurl.RESPONSE_CODE)
    c.close()
    if code < 500:
        break
    time.sleep(0.5 * 2 ** attempt)
print(code)
