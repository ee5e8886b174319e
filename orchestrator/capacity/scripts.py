"""The two Lua scripts that take and settle capacity atomically in Redis, and their keys.

Keys (``P`` is the store's ``key_prefix``; every key carries the hash tag
``{capacity}``, so all of them sit in one slot and one script may touch a
limiter and every budget a call counts against, on Redis Cluster too)::

    P{capacity}:log:NAME     zset  call id -> start time (server seconds): the window's log
    P{capacity}:tok:NAME     hash  call id -> tokens reserved or used; "sum": their total
    P{capacity}:live:NAME    zset  call id -> lease end: calls in flight (max_concurrency)
    P{capacity}:usd:KEY:N    hash  spent, reserved (dollars) of budget KEY in period N

Time is the server's (``TIME``), the one clock every process shares, so a
window means the same for all. A call in flight holds its concurrency slot
until it settles or its lease ends (a process that died frees its slots).
"""

from __future__ import annotations

__all__ = ["SETTLE", "TAKE", "keys"]

#: KEYS log, tok, live, budgets...; ARGV id ('': only look, reserve nothing), rpm, tpm,
#: max_concurrency (0 = none), window, tokens, lease, cost, then per budget: usd, period end
#: (epoch), ttl (s). Returns {"ok", now} or {what refused ("c", "r", "t", "b<i>"), seconds
#: until it frees (-1 unknown)}.
TAKE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local id, rpm, tpm, maxc = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local window, want, lease, cost = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]),
  tonumber(ARGV[8])
local limited = rpm > 0 or tpm > 0 or maxc > 0
local nb = #KEYS - 3
if limited then
  while true do
    local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - window, 'LIMIT', 0, 500)
    if #old == 0 then break end
    local toks = redis.call('HMGET', KEYS[2], unpack(old))
    local gone = 0
    for i = 1, #toks do gone = gone + (tonumber(toks[i]) or 0) end
    redis.call('HDEL', KEYS[2], unpack(old))
    redis.call('ZREM', KEYS[1], unpack(old))
    redis.call('HINCRBYFLOAT', KEYS[2], 'sum', -gone)
  end
  if maxc > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
    if redis.call('ZCARD', KEYS[3]) >= maxc then return {'c', '-1'} end
  end
  local count = redis.call('ZCARD', KEYS[1])
  if rpm > 0 and count >= rpm then
    local o = redis.call('ZRANGE', KEYS[1], count - rpm, count - rpm, 'WITHSCORES')
    return {'r', tostring(math.max(0, tonumber(o[2]) + window - now))}
  end
  if tpm > 0 then
    local sum = tonumber(redis.call('HGET', KEYS[2], 'sum') or '0')
    local excess = sum + math.min(want, tpm) - tpm
    if excess > 0 then
      local free_at = now
      local ids = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
      for i = 1, #ids, 2 do
        excess = excess - (tonumber(redis.call('HGET', KEYS[2], ids[i])) or 0)
        free_at = tonumber(ids[i + 1]) + window
        if excess <= 0 then break end
      end
      return {'t', tostring(math.max(0, free_at - now))}
    end
  end
end
for i = 1, nb do
  local v = redis.call('HMGET', KEYS[3 + i], 'spent', 'reserved')
  local usd, ends = tonumber(ARGV[6 + 3 * i]), tonumber(ARGV[7 + 3 * i])
  if (tonumber(v[1]) or 0) + math.max(0, tonumber(v[2]) or 0) >= usd then
    return {'b' .. i, tostring(math.max(0, ends - t[1]))}
  end
end
if id == '' then return {'ok', tostring(now)} end
for i = 1, nb do
  redis.call('HINCRBYFLOAT', KEYS[3 + i], 'reserved', cost)
  redis.call('EXPIRE', KEYS[3 + i], ARGV[8 + 3 * i])
end
if limited then
  local ttl = math.ceil(window + lease) + 1
  redis.call('ZADD', KEYS[1], now, id)
  redis.call('HSET', KEYS[2], id, want)
  redis.call('HINCRBYFLOAT', KEYS[2], 'sum', want)
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
  if maxc > 0 then
    redis.call('ZADD', KEYS[3], now + lease, id)
    redis.call('EXPIRE', KEYS[3], ttl)
  end
end
return {'ok', tostring(now)}
"""

#: KEYS log, tok, live, budgets...; ARGV id, tokens used ('' = keep the reservation), cost,
#: cost reserved. Frees the call's slot, corrects its tokens, counts its spend.
SETTLE = """
local id = ARGV[1]
redis.call('ZREM', KEYS[3], id)
if ARGV[2] ~= '' then
  local old = redis.call('HGET', KEYS[2], id)
  if old then
    redis.call('HSET', KEYS[2], id, ARGV[2])
    redis.call('HINCRBYFLOAT', KEYS[2], 'sum', tonumber(ARGV[2]) - tonumber(old))
  end
end
for i = 4, #KEYS do
  redis.call('HINCRBYFLOAT', KEYS[i], 'spent', ARGV[3])
  local left = tonumber(redis.call('HINCRBYFLOAT', KEYS[i], 'reserved', -tonumber(ARGV[4])))
  if left < 0 then redis.call('HSET', KEYS[i], 'reserved', 0) end
end
return 1
"""


def keys(prefix: str, name: str, budgets: tuple[str, ...]) -> list[str]:
    """The keys of one call: its limiter's three, then one per budget (``key:period``)."""
    tag = f"{prefix}{{capacity}}"
    return [f"{tag}:log:{name}", f"{tag}:tok:{name}", f"{tag}:live:{name}"] + [
        f"{tag}:usd:{b}" for b in budgets
    ]
