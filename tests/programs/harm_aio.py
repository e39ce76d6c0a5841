# aiohttp on one event loop, for the harm suite (test_http_harm.sh,
# demo/bench-harm.sh), with a ticker task (asyncio.sleep(0.01) in a loop)
# that measures the loop's largest stall.
#   python3 harm_aio.py concurrent BASE N PATH
#       N concurrent GETs of BASE+PATH on one ClientSession
#   python3 harm_aio.py waitfor BASE N PATH_PREFIX LIMIT
#       N concurrent GETs of BASE+PATH_PREFIX+I (I = 1..N), each under
#       asyncio.wait_for(..., LIMIT)
# Prints one line per request in order, "I STATUS BODY" (or "I TimeoutError",
# "I error CLASS"), then "time total ELAPSED maxstall STALL" (seconds).
import asyncio
import sys
import time

import aiohttp

mode, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])


async def ticker(state):
    last = time.monotonic()
    while not state["done"]:
        await asyncio.sleep(0.01)
        now = time.monotonic()
        state["stall"] = max(state["stall"], now - last - 0.01)
        last = now


async def get(session, url):
    async with session.get(url) as r:
        body = await r.read()
        return "%d %s" % (r.status, body.decode(errors="replace").strip())


async def one(session, i):
    try:
        if mode == "concurrent":
            return await get(session, base + sys.argv[4])
        return await asyncio.wait_for(get(session, "%s%s%d" % (base, sys.argv[4], i)),
                                      float(sys.argv[5]))
    except asyncio.TimeoutError:
        return "TimeoutError"
    except Exception as e:  # every other failure shows as its class
        return "error %s" % type(e).__name__


async def main():
    state = {"done": False, "stall": 0.0}
    tick = asyncio.ensure_future(ticker(state))
    await asyncio.sleep(0.05)
    t0 = time.monotonic()
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        res = await asyncio.gather(*(one(session, i) for i in range(1, n + 1)))
    elapsed = time.monotonic() - t0
    state["done"] = True
    await tick
    for i, r in enumerate(res, 1):
        print(i, r)
    print("time total %.3f maxstall %.3f" % (elapsed, state["stall"]))


asyncio.run(main())
