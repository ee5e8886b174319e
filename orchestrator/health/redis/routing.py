"""Routing state shared through Redis: calls in flight, latency figures, affinity keys.

A :class:`SharedRouting` answers every call from a local
:class:`~orchestrator.routing.state.MemoryRouting` (no I/O on the hot path) and
syncs with Redis on the store's background tick (:meth:`exchange`, one more
pipelined round trip: a replica must learn the keys others kept before its own
first keyed call, so it reads them whether or not it routed yet):

- calls in flight: each process publishes its own counts (``P busy:{owner}``, a
  hash that expires unless refreshed) and reads the others' sum;
- latency: each process publishes a child's decayed average when it took a new
  sample (``P lat``: the newest figure wins); an exploration claim likewise
  (``P explored``), so one replica explores a stale region for all;
- affinity: a key kept here is written with its TTL (``P aff:{digest}``) and
  listed by time (``P affs``); every process reads the keys listed since its
  last read into its mirror, so the next turn of a conversation finds its child
  on any replica (within one ``sync_interval``). Digests only: keys are hashed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from orchestrator.clock import Clock
from orchestrator.routing.state import MemoryRouting

__all__ = ["SharedRouting"]

#: How many affinity updates one round trip reads at most (the rest, the next one).
_AFFINITY_BATCH = 1000
#: Affinity keys waiting for Redis at most (an outage must not grow memory without bound).
_MAX_UNPUSHED = 10_000

# KEYS: busy zset, own busy hash. ARGV: owner, wall, stale-after (s), ttl ms, then pairs
# (child, count). Publishes this process's counts; returns the others' (child, sum) pairs.
_BUSY = """
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('DEL', KEYS[2])
for i = 5, #ARGV, 2 do
  if tonumber(ARGV[i + 1]) > 0 then redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
end
redis.call('PEXPIRE', KEYS[2], ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[3]))
local sums = {}
local prefix = string.sub(KEYS[2], 1, #KEYS[2] - #ARGV[1])
for _, owner in ipairs(redis.call('ZRANGE', KEYS[1], 0, 255)) do
  if owner ~= ARGV[1] then
    local h = redis.call('HGETALL', prefix .. owner)
    for j = 1, #h, 2 do sums[h[j]] = (sums[h[j]] or 0) + tonumber(h[j + 1]) end
  end
end
local out = {}
for child, n in pairs(sums) do out[#out + 1] = child; out[#out + 1] = n end
return out
"""

# KEYS: latency hash, explored hash. ARGV: then triples (kind, child, "avg at" or at):
# a figure replaces the stored one only when newer. Returns both hashes.
_FIGURES = """
for i = 1, #ARGV, 3 do
  local key = ARGV[i] == 'l' and KEYS[1] or KEYS[2]
  local old = redis.call('HGET', key, ARGV[i + 1])
  local at = tonumber(string.match(ARGV[i + 2], '(%S+)$'))
  if not old or tonumber(string.match(old, '(%S+)$')) < at then
    redis.call('HSET', key, ARGV[i + 1], ARGV[i + 2])
  end
end
return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}
"""

# KEYS: affinity zset. ARGV: prefix, wall, since, longest ttl (s), batch, then triples
# (digest, child, ttl ms). Returns (digest, child, remaining ms, listed at) listed after since.
_AFFINITY = """
for i = 6, #ARGV, 3 do
  redis.call('SET', ARGV[1] .. ARGV[i], ARGV[i + 1], 'PX', ARGV[i + 2])
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]) - tonumber(ARGV[4]))
local listed = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[3], '+inf', 'WITHSCORES',
  'LIMIT', 0, tonumber(ARGV[5]))
local out = {}
for j = 1, #listed, 2 do
  local key = ARGV[1] .. listed[j]
  local child = redis.call('GET', key)
  if child then
    out[#out + 1] = listed[j]; out[#out + 1] = child
    out[#out + 1] = redis.call('PTTL', key); out[#out + 1] = listed[j + 1]
  end
end
return out
"""


class SharedRouting(MemoryRouting):
    """:class:`~orchestrator.routing.state.RoutingState` mirrored through Redis (see the
    module docstring); the store calls :meth:`exchange` on each of its ticks."""

    def __init__(self, clock: Clock, key_prefix: str, owner: str, sync_interval: float) -> None:
        super().__init__(clock)
        self.key_prefix, self.owner = key_prefix, owner
        self.stale_after = max(1.0, 20 * sync_interval)  # a process silent this long is gone
        self.others: dict[str, int] = {}  # child -> calls in flight in the other processes
        self._figures: dict[tuple[str, str], str] = {}  # (kind, child) -> value to push
        self._kept: dict[str, tuple[str, float]] = {}  # digest -> (child, ttl) to push
        self._since = 0.0  # wall time of the newest affinity entry read
        self._longest = 0.0  # the longest affinity ttl written here
        self._scripts: tuple[int, Any, Any, Any] | None = None

    # -- the RoutingState calls: local, remembered for the next push ---------------------

    def in_flight(self, child: str) -> int:
        return super().in_flight(child) + self.others.get(child, 0)

    def observe_many(self, samples: Iterable[tuple[str, float, float]]) -> None:
        samples = tuple(samples)
        super().observe_many(samples)
        for child in {s[0] for s in samples}:
            average, at = self.averages[child]
            self._figures["l", child] = f"{average!r} {self._wall(at)!r}"

    def explored(self, child: str) -> None:
        super().explored(child)
        self._figures["e", child] = repr(self._wall(self.explorations[child]))

    def keep(self, digest: str, child: str, ttl: float) -> None:
        super().keep(digest, child, ttl)
        self._kept[digest] = (child, ttl)
        if len(self._kept) > _MAX_UNPUSHED:  # Redis gone for long: the mirror keeps them
            del self._kept[next(iter(self._kept))]
        self._longest = max(self._longest, ttl)

    # -- the round trip --------------------------------------------------------------------

    async def exchange(self, client: Any) -> None:
        """Push what changed here and read the fleet's figures (one pipeline)."""
        busy, figures, affinity = self._scripts_for(client)
        wall, p = self.clock.wall(), self.key_prefix
        pushed, self._figures = self._figures, {}
        kept, self._kept = self._kept, {}
        pipe = client.pipeline(transaction=False)
        counts = [x for child, n in self.busy.items() for x in (child, n)]
        ttl_ms = int(self.stale_after * 1000)
        args = [self.owner, repr(wall), repr(self.stale_after), ttl_ms, *counts]
        await busy(keys=[f"{p}busy", f"{p}busy:{self.owner}"], args=args, client=pipe)
        flat = [x for (kind, child), value in pushed.items() for x in (kind, child, value)]
        await figures(keys=[f"{p}lat", f"{p}explored"], args=flat, client=pipe)
        triples = [x for d, (c, ttl) in kept.items() for x in (d, c, int(ttl * 1000))]
        longest = max(self._longest, 600.0)
        head = [f"{p}aff:", repr(wall), repr(self._since), repr(longest), _AFFINITY_BATCH]
        await affinity(keys=[f"{p}affs"], args=[*head, *triples], client=pipe)
        others, (latency, explored), listed = await pipe.execute()
        self._adopt(others, latency, explored, listed)

    def _scripts_for(self, client: Any) -> tuple[Any, Any, Any]:
        if self._scripts is None or self._scripts[0] != id(client):
            made = [client.register_script(s) for s in (_BUSY, _FIGURES, _AFFINITY)]
            self._scripts = (id(client), *made)
        return self._scripts[1], self._scripts[2], self._scripts[3]

    def _adopt(
        self,
        others: list[Any],
        latency: list[Any],
        explored: list[Any],
        listed: list[Any],
    ) -> None:
        """Take the fleet's figures into the mirror (newer ones only)."""
        self.others = {str(others[i]): int(others[i + 1]) for i in range(0, len(others), 2)}
        for i in range(0, len(latency), 2):
            average, at = (float(x) for x in str(latency[i + 1]).split())
            mine = self.averages.get(latency[i])
            if mine is None or self._wall(mine[1]) < at:
                self.averages[latency[i]] = (average, self._local(at))
        for i in range(0, len(explored), 2):
            at = self._local(float(explored[i + 1]))
            if at > self.explorations.get(explored[i], -1e18):
                self.explorations[explored[i]] = at
        for i in range(0, len(listed), 4):
            digest, child, left, when = listed[i : i + 4]
            self._since = max(self._since, float(when))
            if int(left) > 0 and digest not in self._kept:  # not one changed here meanwhile
                super().keep(digest, child, int(left) / 1000)

    def _wall(self, at: float) -> float:
        return self.clock.wall() - (self.clock.now() - at)

    def _local(self, wall_at: float) -> float:
        return self.clock.now() - (self.clock.wall() - wall_at)
