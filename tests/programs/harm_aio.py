# aiohttp on one event loop, for the harm suite (test_http_harm.sh,
# demo/bench-harm.sh), with a ticker task (asyncio.sleep(0.01) in a loop)
# that measures the loop's largest stall.
#   python3 harm_aio.py concurrent BASE N PATH
#       N concurrent GETs of BASE+PATH on one ClientSession
#   python3 harm_aio.py waitfor BASE N PATH_PREFIX LIMIT
#       N concurrent GETs of BASE+PATH_PREFIX+I (I = 1..N), each under
#       asyncio.wait_for(..., LIMIT)
#   python3 harm_aio.py many BASE N PATH_PREFIX
#       N concurrent GETs of BASE+PATH_PREFIX+I, no ticker (the loop's only
#       timers are aiohttp's own)
#   python3 harm_aio.py beside BASE N PATH_PREFIX LIMIT PATH
#       as waitfor, no ticker, and beside them a GET of BASE+PATH (a long
#       poll), under wait_for(..., LIMIT) too: its line is "beside ..."
# Prints one line per request in order, "I STATUS BODY" (or "I TimeoutError",
# "I error CLASS"), then "time total ELAPSED maxstall STALL answered SLOWEST"
# (seconds; SLOWEST: the slowest of the N answers that came).
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


answered = [0.0]  # the slowest of the N answers that came (not the one beside)


async def one(session, i):
    t = time.monotonic()
    try:
        r = await one_(session, i)
        if i <= n:
            answered[0] = max(answered[0], time.monotonic() - t)
        return r
    except asyncio.TimeoutError:
        return ("beside " if i > n else "") + "TimeoutError"
    except Exception as e:  # every other failure shows as its class
        return "error %s" % type(e).__name__


async def one_(session, i):
    if mode == "concurrent":
        return await get(session, base + sys.argv[4])
    if mode == "many":
        return await get(session, "%s%s%d" % (base, sys.argv[4], i))
    if i > n:
        return "beside " + await asyncio.wait_for(get(session, base + sys.argv[6]),
                                                  float(sys.argv[5]))
    return await asyncio.wait_for(get(session, "%s%s%d" % (base, sys.argv[4], i)),
                                  float(sys.argv[5]))


async def main():
    state = {"done": False, "stall": 0.0}
    ticking = mode in ("concurrent", "waitfor")
    tick = asyncio.ensure_future(ticker(state) if ticking else asyncio.sleep(0))
    await asyncio.sleep(0.05)
    t0 = time.monotonic()
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        last = n + 1 if mode == "beside" else n
        res = await asyncio.gather(*(one(session, i) for i in range(1, last + 1)))
    elapsed = time.monotonic() - t0
    state["done"] = True
    await tick
    for i, r in enumerate(res, 1):
        print(i, r)
    print("time total %.3f maxstall %.3f answered %.3f" % (elapsed, state["stall"], answered[0]))


asyncio.run(main())
