-- fleet.lua: the fleet's window and pace of one destination, in Redis.
-- The rules are policies/bo_fleet.c's, step for step (a test drives both
-- through the same events and requires the same state after every one);
-- their constants come from policies/ through ARGV, so that this text has
-- none of its own.  Built into the library as a C string (redis.c).
--
-- KEYS: the hash, the leases, the queue, the queue's last asks.
-- ARGV: 1 op (a admit, c complete, r release), 2 the member, 3 lease_us,
--   4 ttl_ms, 5 the outcome (s success, t throttle, l loss, o other),
--   6 the initial window, 7 beta, 8 the rules (bo_fleet_rules, space
--   separated), 9 now in microseconds (tests; else Redis's TIME).
local now = tonumber(ARGV[9])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local k, lk, qk, qlk = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local op, id = ARGV[1], ARGV[2]
local lease_us, ttl = tonumber(ARGV[3]), tonumber(ARGV[4])
local beta = tonumber(ARGV[7])
local R = {}
for v in string.gmatch(ARGV[8], '%S+') do R[#R + 1] = tonumber(v) end
local ss_inc, plat_slow, plat_us, soon_us, soon_rtts = R[1], R[2], R[3], R[4], R[5]
local late_us, late_rtts, pmax_us, pdeep, pgain, pfound = R[6], R[7], R[8], R[9], R[10], R[11]
local decay, qpoll_us, qdrop_us, minwin, capfrac = R[12], R[13], R[14], R[15], R[16]
-- Every value read is checked against what the rules can leave there (a
-- hand, a bug or another version may have left a window below 1, a number
-- that is not finite, a pace's next send or a lease further ahead than the
-- rules ever set): one that is not is absent, its default used
-- (bo_fleet.c's sane(), step for step).  NaN fails every comparison.
local function within(x, lo, hi) return x ~= nil and x >= lo and x <= hi end
local top = 1.7976931348623157e308
local ahead_us = now + lease_us
local f = redis.call('HMGET', k, 'cwnd', 'ssth', 'rate', 'next', 'cut', 'b', 'ok0',
  'ok1', 'ceil', 'rtt', 'pw', 'ps', 'pf')
local cwnd = tonumber(f[1])
if not within(cwnd, 1, 1e9) then cwnd = tonumber(ARGV[6]) end
local ssth = tonumber(f[2])
if not within(ssth, 1, 1e9) then ssth = 1e9 end
local rate = tonumber(f[3])
if not (rate == 0 or within(rate, 0.1, top)) then rate = 0 end
local nxt = tonumber(f[4])
if not within(nxt, 0, now + 1e7) then nxt = 0 end
local cut = tonumber(f[5])
if not within(cut, 0, ahead_us) then cut = 0 end
local b = tonumber(f[6])
if not within(b, 0, ahead_us) then b = now end
local ok0 = tonumber(f[7])
if not within(ok0, -1, top) then ok0 = -1 end
local ok1 = tonumber(f[8])
if not within(ok1, 0, top) then ok1 = 0 end
local ceil = tonumber(f[9])
if not within(ceil, 0, 1e9) then ceil = 0 end
local rtt = tonumber(f[10])
if not within(rtt, 0, lease_us) then rtt = 0 end
local pw = tonumber(f[11])
if not within(pw, 0, top) then pw = 0 end
local ps = tonumber(f[12])
if not (ps == -1 or within(ps, 0, ahead_us)) then ps = -1 end
local pf = tonumber(f[13])
if not within(pf, 0, 1e9) then pf = 0 end
local soon = math.max(soon_us, soon_rtts * rtt)
redis.call('ZREMRANGEBYSCORE', lk, '-inf', now)
-- a lease that ends further ahead than a lease's life (an eternal one) is void
redis.call('ZREMRANGEBYSCORE', lk, string.format('(%.17g', ahead_us), '+inf')
local gone = redis.call('ZRANGEBYSCORE', qlk, '-inf', now - qdrop_us, 'LIMIT', 0, 64)
if #gone > 0 then
  redis.call('ZREM', qk, unpack(gone)); redis.call('ZREM', qlk, unpack(gone))
end
-- a last ask further ahead than a lease's life, a queued call that never asked
local void = redis.call('ZRANGEBYSCORE', qlk, string.format('(%.17g', ahead_us), '+inf',
  'LIMIT', 0, 64)
if #void > 0 then
  redis.call('ZREM', qk, unpack(void)); redis.call('ZREM', qlk, unpack(void))
end
if redis.call('ZCARD', qk) > redis.call('ZCARD', qlk) then
  for _, m in ipairs(redis.call('ZRANGE', qk, 0, 63)) do
    if not redis.call('ZSCORE', qlk, m) then redis.call('ZREM', qk, m) end
  end
end
local res = {1, 0}
if now - b >= 1e6 then
  if now - b < 2e6 then ok0 = ok1 else ok0 = 0 end
  ok1 = 0; b = now
end
if op == 'a' then
  local n = redis.call('ZCARD', lk)
  if rate > 0 and nxt > now then
    res = {0, math.floor(nxt - now)}
  else
    local rank = redis.call('ZRANK', qk, id)
    local ahead = rank or redis.call('ZCARD', qk)
    local free = math.floor(cwnd) - n
    if free <= ahead then
      if not rank then redis.call('ZADD', qk, now, id) end
      redis.call('ZADD', qlk, now, id)
      local w = qpoll_us
      if rtt > 0 then w = math.min(w, math.max(1000, (ahead - free + 1) * rtt / cwnd)) end
      res = {0, math.floor(w)}
    else
      if rank then redis.call('ZREM', qk, id); redis.call('ZREM', qlk, id) end
      redis.call('ZADD', lk, now + lease_us, id)
      if rate > 0 then
        local gap = 1e6 / rate
        nxt = math.max(nxt, now - gap) + gap
      end
      res = {1, n + 1}
    end
  end
else
  if op == 'r' then redis.call('ZREM', qk, id); redis.call('ZREM', qlk, id) end
  local sent = redis.call('ZSCORE', lk, id)
  redis.call('ZREM', lk, id)
  local n = redis.call('ZCARD', lk)
  local o = ARGV[5]
  if op == 'c' and sent then
    sent = tonumber(sent) - lease_us
    if o == 's' then
      ok1 = ok1 + 1
      if rtt > 0 then rtt = 0.875 * rtt + 0.125 * (now - sent) else rtt = now - sent end
      if n + 2 >= cwnd or redis.call('EXISTS', qk) == 1 then
        local inc = 1 / cwnd
        if cwnd < ssth then inc = ss_inc end
        if cwnd + 1 >= ceil and cwnd < ceil + 1 and now - cut < plat_us then
          inc = inc / plat_slow
        end
        if cwnd >= ssth and cut > 0 and rtt > 0 then
          if ps < 0 and now - cut >= pw then ps = now; pf = cwnd end
          if ps >= 0 then
            local g = math.min(ss_inc, pgain * 2 ^ math.floor((now - ps) / rtt))
            if g > inc then inc = g end
          end
        end
        cwnd = cwnd + inc
      end
      if rate > 0 then rate = rate + math.max(1 / rate, rate / 500) end
    elseif o == 't' and sent >= cut then
      cut = now
      local okr = ok0
      if okr < 0 then okr = ok1 * 1e6 / math.max(now - b, 50000) end
      if cwnd > minwin and (rtt == 0 or okr >= capfrac * cwnd * 1e6 / rtt) then
        ceil = cwnd
        local c = math.max(1, cwnd * beta, math.min(cwnd, n))
        if ps >= 0 then
          if c > pf * pfound then pw = soon else pw = math.min(2 * pw, pmax_us) end
          ps = -1
        elseif c < cwnd * pdeep then pw = soon
        elseif pw == 0 then pw = math.max(late_us, late_rtts * rtt) end
        cwnd = c; ssth = c
      else
        local meas = ok0
        if meas < 0 then meas = ok1 end
        if rate > 0 then rate = rate * decay
        else rate = math.max(meas, 1) * decay end
        if rate < 0.1 then rate = 0.1 end
        nxt = math.max(nxt, now + 1e6 / rate)
      end
    elseif o == 'l' and sent >= cut then
      cut = now; ssth = math.max(2, cwnd * beta); cwnd = 1
    end
  end
end
redis.call('HSET', k, 'cwnd', cwnd, 'ssth', ssth, 'rate', rate, 'next', nxt, 'cut', cut,
  'b', b, 'ok0', ok0, 'ok1', ok1, 'ceil', ceil, 'rtt', rtt, 'pw', pw, 'ps', ps, 'pf', pf)
redis.call('PEXPIRE', k, ttl)
redis.call('PEXPIRE', lk, ttl)
redis.call('PEXPIRE', qk, ttl)
redis.call('PEXPIRE', qlk, ttl)
return res
