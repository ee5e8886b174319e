"""The Lua scripts that update shared circuits atomically inside Redis, and their key layout.

Keys (``P`` is the store's ``key_prefix``, ``name`` the provider)::

    P circuit:{name}          hash   tripped (0/1), consec (consecutive failures)
    P open:{name}             string cooldown end (epoch seconds), expires with PX at that end
    P probe:{name}            string id of the process holding the half-open probe, PX = cooldown
    P win:{name}:{bucket}     hash   calls, fails: the breaker window in 10 buckets
    P budget:{bucket}         hash   req, retry: the retry-budget window in 10 buckets
    P changes                 channel a circuit opened or closed: subscribers sync at once

A circuit is open while ``open:`` exists, half-open when ``tripped`` is 1 and
``open:`` has expired. Scripts take the caller's wall time as an argument so
every decision uses epoch seconds, the one clock processes share. Floats go
in and out as strings (Lua numbers returned to Redis are truncated to integers).
"""

from __future__ import annotations

from orchestrator.health.machine import WINDOW_BUCKETS

__all__ = ["BUCKETS", "CLAIM", "READ", "RECORD", "REOPEN", "circuit_keys", "window_keys"]

#: Windows are kept as this many buckets of ``window / BUCKETS`` seconds each, as the
#: local mirror counts them.
BUCKETS = WINDOW_BUCKETS

_STATE = """
local function state(h, o, p, first, last, now)
  local v = redis.call('HMGET', h, 'tripped', 'consec')
  local open = redis.call('GET', o)
  if open and tonumber(open) <= now then open = false end
  local probe = redis.call('GET', p)
  local calls, fails = 0, 0
  for i = first, last do
    local b = redis.call('HMGET', KEYS[i], 'calls', 'fails')
    calls = calls + (tonumber(b[1]) or 0)
    fails = fails + (tonumber(b[2]) or 0)
  end
  return {v[1] or '0', open or '', tonumber(v[2] or '0'), calls, fails, probe or ''}
end
"""

#: KEYS circuit, open, probe, win buckets (current first); ARGV kind ('s' success, 'f'
#: failure, 'c' a last-resort success: closes even while open; counts no call), n, now,
#: retry_after ('' = none), threshold (0 = off), ratio (0 = off), min_calls, cooldown,
#: bucket ttl ms, channel. Returns the state after the update plus the transition ('' = none);
#: a transition is also published on ``channel`` so other processes read at once.
RECORD = (
    _STATE
    + """
local kind, n, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local hint = tonumber(ARGV[4]) or 0
local threshold, ratio = tonumber(ARGV[5]), tonumber(ARGV[6])
local min_calls, cooldown = tonumber(ARGV[7]), tonumber(ARGV[8])
if kind ~= 'c' then redis.call('HINCRBY', KEYS[4], 'calls', n) end
if kind == 'f' then redis.call('HINCRBY', KEYS[4], 'fails', n) end
redis.call('PEXPIRE', KEYS[4], ARGV[9])
local before = state(KEYS[1], KEYS[2], KEYS[3], 4, #KEYS, now)
local tripped = before[1] == '1'
local open_until = tonumber(before[2])
local change = ''
local function open(untl)
  redis.call('HSET', KEYS[1], 'tripped', '1')
  redis.call('SET', KEYS[2], string.format('%.6f', untl), 'PX',
    math.max(1, math.ceil((untl - now) * 1000)))
end
if kind == 's' or kind == 'c' then
  redis.call('HSET', KEYS[1], 'consec', 0)
  if tripped and (kind == 'c' or not open_until) then
    redis.call('HSET', KEYS[1], 'tripped', '0')
    redis.call('DEL', KEYS[2], KEYS[3])
    for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
    change = (kind == 'c') and 'last_resort_succeeded' or 'probe_succeeded'
  end
else
  local consec = redis.call('HINCRBY', KEYS[1], 'consec', n)
  if hint < 0 then hint = 0 end
  if tripped and not open_until then
    redis.call('DEL', KEYS[3])
    open(now + math.max(cooldown, hint))
    change = 'probe_failed'
  elseif tripped then
    if now + hint > open_until then open(now + hint) end
  else
    local length = 0
    if threshold > 0 and consec >= threshold then
      length, change = cooldown, 'consecutive_failures'
    elseif ratio > 0 and before[4] >= min_calls and before[5] >= ratio * before[4] then
      length, change = cooldown, 'failure_ratio'
    end
    if hint > length then
      length = hint
      if change == '' then change = 'retry_after' end
    end
    if length > 0 then
      redis.call('DEL', KEYS[3])
      open(now + length)
    end
  end
end
local after = state(KEYS[1], KEYS[2], KEYS[3], 4, #KEYS, now)
if change ~= '' then redis.call('PUBLISH', ARGV[10], KEYS[1]) end
table.insert(after, change)
return after
"""
)

#: KEYS per provider (circuit, open, probe, BUCKETS win buckets), then BUCKETS budget
#: buckets; ARGV now, number of providers. Returns each provider's state (6 fields)
#: followed by the budget's request and retry counts.
READ = (
    _STATE
    + """
local now, count = tonumber(ARGV[1]), tonumber(ARGV[2])
local width = 3 + """
    + str(BUCKETS)
    + """
local out = {}
for i = 0, count - 1 do
  local base = i * width
  local s = state(KEYS[base + 1], KEYS[base + 2], KEYS[base + 3], base + 4, base + width, now)
  for j = 1, 6 do table.insert(out, s[j]) end
end
local req, retry = 0, 0
for i = count * width + 1, #KEYS do
  local b = redis.call('HMGET', KEYS[i], 'req', 'retry')
  req = req + (tonumber(b[1]) or 0)
  retry = retry + (tonumber(b[2]) or 0)
end
table.insert(out, req)
table.insert(out, retry)
return out
"""
)

#: KEYS circuit, open, probe; ARGV now, owner, lead seconds, ttl ms. Claims the
#: half-open probe for ``owner`` when the circuit is tripped and its cooldown ends
#: within ``lead`` seconds; returns 1 when ``owner`` holds the claim.
CLAIM = """
if redis.call('HGET', KEYS[1], 'tripped') ~= '1' then return 0 end
local open = redis.call('GET', KEYS[2])
if open and tonumber(open) - tonumber(ARGV[1]) > tonumber(ARGV[3]) then return 0 end
if redis.call('SET', KEYS[3], ARGV[2], 'NX', 'PX', ARGV[4]) then return 1 end
if redis.call('GET', KEYS[3]) == ARGV[2] then return 1 end
return 0
"""

#: KEYS circuit, open; ARGV now, open_until, consec. After an outage, pushes a
#: circuit this process opened meanwhile; never shortens a longer cooldown.
REOPEN = """
local now, untl = tonumber(ARGV[1]), tonumber(ARGV[2])
if untl <= now then return 0 end
local current = tonumber(redis.call('GET', KEYS[2]) or '')
if current and current >= untl then return 0 end
redis.call('HSET', KEYS[1], 'tripped', '1', 'consec', ARGV[3])
redis.call('SET', KEYS[2], string.format('%.6f', untl), 'PX',
    math.max(1, math.ceil((untl - now) * 1000)))
return 1
"""


def window_keys(prefix: str, window: float, wall: float) -> list[str]:
    """The ``BUCKETS`` bucket keys of a window of ``window`` seconds at wall time ``wall``,
    newest first: what the scripts count failures and retries in."""
    current = int(wall // (window / BUCKETS))
    return [f"{prefix}{current - i}" for i in range(BUCKETS)]


def circuit_keys(prefix: str, provider: str, window: float, wall: float) -> list[str]:
    """A provider's KEYS as the scripts take them: circuit, open, probe, then its window."""
    names = (f"{prefix}{kind}:{provider}" for kind in ("circuit", "open", "probe"))
    return [*names, *window_keys(f"{prefix}win:{provider}:", window, wall)]
