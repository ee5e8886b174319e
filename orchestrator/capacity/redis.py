"""RedisCapacity: limiters and budgets shared by every process using one Redis.

Each call is one round trip: the :data:`~.scripts.TAKE` script checks the
limiter's window log and every budget and reserves them all, atomically; the
settle, when there is anything to give back, is a second round trip the call awaits. If Redis
cannot be reached the store never fails a call: it falls back to a local share
of each limit (``limit / replicas``, at least 1) in process memory, says so
once per outage (event ``capacity_store_degraded``; a round trip sent before the
store last changed state cannot flap it), and tries Redis again
after ``retry_after`` seconds (``capacity_store_recovered``).
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Coroutine
from typing import Any

from orchestrator import events
from orchestrator.capacity.memory import MemoryCapacity
from orchestrator.capacity.model import Charge, Refusal, Ticket, Want
from orchestrator.capacity.scripts import SETTLE, TAKE, keys
from orchestrator.capacity.values import Budget, Limits, period_bounds
from orchestrator.clock import SYSTEM_CLOCK, Clock

__all__ = ["RedisCapacity"]

_WHICH = {"c": "max_concurrency", "r": "rpm", "t": "tpm"}
_CONNECTIONS = 8  # per process and event loop
_LEASE = 600.0  # a call holds its concurrency slot at most this long (its process died)


class RedisCapacity:
    """Limiters and budgets in Redis (``url``), keys under ``key_prefix``; ``replicas`` is
    how many processes share the limits, for the local share used while Redis is down;
    ``timeout`` (seconds) how long a call waits for Redis before using that share."""

    def __init__(
        self,
        url: str,
        *,
        key_prefix: str = "failover:",
        timeout: float = 1.0,
        replicas: int = 1,
        retry_after: float = 1.0,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
            raise ValueError(f"replicas={replicas!r} must be an integer >= 1")
        self.url, self.key_prefix, self.timeout = url, key_prefix, timeout
        self.replicas, self.retry_after = replicas, retry_after
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self.local = MemoryCapacity(self.clock)  # the share used while Redis is down
        self._client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._scripts: tuple[Any, Any] | None = None
        self._down_until: float | None = None  # monotonic: use the local share until then
        # Bumped when the store goes down or comes back: a round trip only moves the state
        # if none moved since it was sent (replies from before an outage, or failures from
        # before a recovery, end in any order under load and must not flap it).
        self._epoch = 0
        self._seen: dict[str, tuple[Refusal, float]] = {}  # name -> last refusal, when
        self._owner, self._calls = uuid.uuid4().hex[:12], 0  # call ids: unique, cheap
        self._asked: dict[str, Want] = {}  # limiter name -> a call of it (what refresh reads)
        self._view: dict[str, dict[str, float]] = {}  # usage() as refresh last read it

    def peek(self, want: Want) -> Refusal | None:
        """The last refusal this process saw for ``want``'s limiter while it still holds
        (Redis is not asked: explaining costs no round trip), or the local share's."""
        if self._down_until is not None:
            return self.local.peek(_share(want, self.replicas))
        seen = self._seen.get(want.name)
        if seen is None or seen[0].free_in is None:
            return None
        refusal, at = seen
        left = at + (refusal.free_in or 0.0) - self.clock.now()
        return Refusal(refusal.reason, refusal.which, left) if left > 0 else None

    async def take(self, want: Want) -> Ticket | Refusal:
        """One round trip: check and reserve every limit and budget of ``want``, or none."""
        if self._down_until is not None and self.clock.now() < self._down_until:
            return self._local_take(want)
        self._calls += 1
        if want.name not in self._asked:  # bounded: one per limiter the chains name
            self._asked[want.name] = want
        call = f"{self._owner}{self._calls:x}"
        names, args = self._call_args(want, call)
        epoch = self._epoch
        try:
            script = self._script_for_loop()[0]
            got = await script(keys=names, args=args)  # the connection's own timeout bounds it
        except (TimeoutError, OSError, ConnectionError) as e:
            return self._degraded(want, e, epoch)
        except Exception as e:  # redis-py's own errors (ConnectionError, ResponseError...)
            if type(e).__module__.startswith("redis"):
                return self._degraded(want, e, epoch)
            raise
        if epoch == self._epoch:
            self._recovered()
        what, value = str(got[0]), float(got[1])
        if what == "ok":
            return Ticket(want, ("redis", call, names))
        refusal = _refusal(what, value, want.charges)
        self._seen[want.name] = (refusal, self.clock.now())
        return refusal

    async def look(self, want: Want) -> Refusal | None:
        """What the shared limiter and budgets of ``want`` say now, taking nothing (one round
        trip: the TAKE script's checks alone). :meth:`peek` answers with it while it holds,
        so ``failover explain`` shows what every process took, not only this one's last
        refusal. None when it fits, or when Redis cannot be asked."""
        if self._down_until is not None and self.clock.now() < self._down_until:
            return self.local.peek(_share(want, self.replicas))
        names, args = self._call_args(want, "")  # no call id: look only
        try:
            got = await self._script_for_loop()[0](keys=names, args=args)
        except Exception as e:  # redis-py's own errors, a timeout: nothing learned
            if isinstance(e, TimeoutError | OSError) or type(e).__module__.startswith("redis"):
                return None
            raise
        what, value = str(got[0]), float(got[1])
        if what == "ok":
            self._seen.pop(want.name, None)
            return None
        refusal = _refusal(what, value, want.charges)
        self._seen[want.name] = (refusal, self.clock.now())
        return refusal

    def settle(
        self, ticket: Ticket, tokens: int | None, cost: float
    ) -> Coroutine[Any, Any, None] | None:
        """Give back and count: None when done (nothing to send), else the round trip to
        await. Awaited by the call, not left in the background: a loop that closes after
        the call (``run_sync``) would drop it and hold the slot until its lease ends."""
        if ticket.settled:
            return None
        entry: Any = ticket.entry
        where, *rest = entry
        ticket.settled = True
        if where == "local":
            self.local.settle(rest[0], tokens, cost)
            return None
        want = ticket.want
        limits = want.limits
        if not want.charges and (limits is None or not (limits.tpm or limits.max_concurrency)):
            return None  # nothing to give back or count: no round trip
        call, names = rest
        args = [call, "" if tokens is None else str(tokens), repr(cost), repr(want.cost)]
        return self._settle(names, args)

    def usage(self) -> dict[str, dict[str, float]]:
        """What :meth:`refresh` last read from Redis, over this process's local share (used
        while Redis was down); no round trip (see :meth:`read`)."""
        return {**self.local.usage(), **self._view}

    async def refresh(self) -> None:
        """Read the use and spend of every limiter and budget this process has taken from
        into :meth:`usage` (before a ``/metrics`` scrape); Redis errors leave it as it was."""
        wants = list(self._asked.values())
        limited = [w.name for w in wants if w.limits is not None]
        charges = list({c.key: c for w in wants for c in w.charges}.values())
        try:
            view = await self.read(limited) if limited else {}
            spent = await self.spend(charges) if charges else {}
        except Exception as e:  # redis-py's own errors, a timeout: keep the last view
            if isinstance(e, TimeoutError | OSError) or type(e).__module__.startswith("redis"):
                return
            raise
        view.update({f"{key}:now": {"spent_usd": usd} for key, usd in spent.items()})
        self._view = view

    async def read(self, names: list[str]) -> dict[str, dict[str, float]]:
        """Each named limiter's calls, tokens and calls in flight in Redis now."""
        out: dict[str, dict[str, float]] = {}
        client = self._script_for_loop() and self._client
        for name in names:
            log, tok, live = keys(self.key_prefix, name, ())
            pipe = client.pipeline(transaction=False)
            pipe.zcard(log).hget(tok, "sum").zcard(live)
            count, total, inflight = await pipe.execute()
            out[name] = {"requests": count, "tokens": float(total or 0), "in_flight": inflight}
        return out

    async def spend(self, charges: list[Charge]) -> dict[str, float]:
        """Each budget's spend in its current period, in Redis now (by ``Charge.key``)."""
        client = self._script_for_loop() and self._client
        wall, out = self.clock.wall(), {}
        for charge in charges:
            index, _ = period_bounds(charge.budget.per, wall)
            key = keys(self.key_prefix, "", (f"{charge.key}:{index}",))[3]
            out[charge.key] = float(await client.hget(key, "spent") or 0)
        return out

    async def aclose(self) -> None:
        """Close the connection pool."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    # -- internals ----------------------------------------------------------------

    def _call_args(self, want: Want, call: str) -> tuple[list[str], list[str]]:
        wall = self.clock.wall()
        limits = want.limits or Limits()
        args = [call, str(limits.rpm or 0), str(limits.tpm or 0), str(limits.max_concurrency or 0)]
        args += [repr(limits.window), str(want.tokens), repr(_LEASE), repr(want.cost)]
        budgets = []
        for charge in want.charges:
            index, end = period_bounds(charge.budget.per, wall)
            budgets.append(f"{charge.key}:{index}")
            args += [repr(charge.budget.usd), repr(end), str(int(end - wall) + 3600)]
        return keys(self.key_prefix, want.name, tuple(budgets)), args

    def _script_for_loop(self) -> tuple[Any, Any]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            import redis.asyncio as aioredis

            # A few connections, shared: calls in flight queue for one rather than each
            # opening its own (hundreds of connects at once time out on a busy host).
            pool = aioredis.BlockingConnectionPool.from_url(
                self.url,
                decode_responses=True,
                max_connections=_CONNECTIONS,
                timeout=self.timeout,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
            )
            self._client = aioredis.Redis(connection_pool=pool)
            self._loop = loop
            self._scripts = (
                self._client.register_script(TAKE),
                self._client.register_script(SETTLE),
            )
        assert self._scripts is not None
        return self._scripts

    async def _settle(self, names: list[str], args: list[str]) -> None:
        try:
            await self._script_for_loop()[1](keys=names, args=args)
        except Exception:  # Redis gone: the window forgets it, the budget keeps the reservation
            return

    def _local_take(self, want: Want) -> Ticket | Refusal:
        got = self.local.take_now(_share(want, self.replicas))
        return Ticket(want, ("local", got)) if isinstance(got, Ticket) else got

    def _degraded(self, want: Want, error: BaseException, epoch: int) -> Ticket | Refusal:
        if epoch != self._epoch:  # sent before the last change: this call alone goes local
            return self._local_take(want)
        if self._down_until is None:
            self._epoch += 1
            events.emit(
                "warning",
                "capacity_store_degraded",
                store="redis",
                error_type=type(error).__name__,
                replicas=self.replicas,
                note="limits and budgets fall back to a local share: limit / replicas",
            )
        self._down_until = self.clock.now() + self.retry_after
        self._client = None  # reconnect next time
        return self._local_take(want)

    def _recovered(self) -> None:
        if self._down_until is not None:
            self._down_until = None
            self._epoch += 1
            events.emit("info", "capacity_store_recovered", store="redis")


def _share(want: Want, replicas: int) -> Want:
    """``want`` with each limit and budget cut to this process's share."""
    if replicas == 1:
        return want
    limits = want.limits
    if limits is not None:
        cut = [
            None if v is None else max(1, math.ceil(v / replicas))
            for v in (limits.rpm, limits.tpm, limits.max_concurrency)
        ]
        limits = Limits(rpm=cut[0], tpm=cut[1], max_concurrency=cut[2], window=limits.window)
    charges = tuple(
        Charge(c.key, Budget(usd=c.budget.usd / replicas, per=c.budget.per), c.scope)
        for c in want.charges
    )
    return Want(want.name, limits, want.tokens, charges, want.cost)


def _refusal(what: str, free_in: float, charges: tuple[Charge, ...]) -> Refusal:
    left = None if free_in < 0 else free_in
    if what.startswith("b"):
        return Refusal("budget", charges[int(what[1:]) - 1].scope, left)
    return Refusal("at_capacity", _WHICH[what], left)
