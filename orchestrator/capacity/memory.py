"""MemoryCapacity: exact sliding-window limiters and budget spend in this process.

A limiter keeps a log of the calls of its last ``window`` seconds (time and
tokens each), so "at most ``rpm`` in any ``window``" holds exactly, not just per
fixed window (a token bucket or GCRA admits up to twice the limit across a
window's edge). Tokens a call reserved are corrected in place when it settles.
Budgets are a spend and a reservation per calendar period.
"""

from __future__ import annotations

import threading
from collections import deque

from orchestrator.capacity.model import Refusal, Ticket, Want
from orchestrator.capacity.values import Limits, period_bounds
from orchestrator.clock import SYSTEM_CLOCK, Clock

__all__ = ["Lane", "MemoryCapacity", "default_capacity", "reset_default_capacity"]

_new = object.__new__  # a ticket on the hot path without a Python __init__ to run


class _Call(Ticket):
    """A call the memory store admitted: its limiter, its place in the limiter's log
    (``seq``: how many calls the limiter took before it) and the budgets it reserved."""

    __slots__ = ("log", "seq", "spends")

    def __init__(
        self,
        store: MemoryCapacity,
        want: Want,
        log: _Log | None,
        seq: int,
        spends: tuple[list[float], ...],
    ) -> None:
        self.want, self.entry, self.settled, self.store = want, None, False, store
        self.log, self.seq, self.spends = log, seq, spends

    def release(self) -> None:
        """Free the call's slot, once: what a settle with nothing to correct or count does."""
        if self.settled:
            return None
        self.settled = True
        log = self.log
        if log is not None:
            with self.store._lock:  # type: ignore[union-attr]  # a MemoryCapacity's
                log.inflight -= 1
        return None


class _Bare(_Call):
    """A call a :class:`Lane` took: it counts nothing to settle (:meth:`release` it), so
    it has no tokens to find by ``seq`` and no budget: class values, not set per call."""

    __slots__ = ()
    counts = False
    entry, seq, spends = None, 0, ()


class _Log:
    """One limiter: the start times and tokens of its calls in the window, oldest first,
    as plain numbers (the log of a busy limiter holds a minute of calls: no object per
    call to keep, so the collector has nothing to walk), their token sum, the calls in
    flight, and ``gone``: how many calls left the window (a call's index is its seq
    minus it)."""

    __slots__ = ("gone", "inflight", "times", "tokens", "toks", "window")

    def __init__(self) -> None:
        self.times: deque[float] = deque()
        self.toks: deque[float] = deque()
        self.tokens = 0.0
        self.inflight = 0
        self.gone = 0
        self.window = 60.0  # the last one pruned by: what usage() prunes by

    def prune(self, now: float, window: float) -> None:
        self.window = window
        times, toks, cut = self.times, self.toks, now - window
        while times and times[0] <= cut:
            times.popleft()
            self.tokens -= toks.popleft()
            self.gone += 1

    def refusal(self, limits: Limits, tokens: int, now: float) -> Refusal | None:
        """Why one more call reserving ``tokens`` does not fit now, or None."""
        times, window = self.times, limits.window
        if times and times[0] <= now - window:  # most takes have nothing to prune
            self.prune(now, window)
        self.window = window
        if limits.max_concurrency is not None and self.inflight >= limits.max_concurrency:
            return Refusal("at_capacity", "max_concurrency", None)
        if limits.rpm is not None and len(times) >= limits.rpm:
            oldest = times[len(times) - limits.rpm]
            return Refusal("at_capacity", "rpm", max(0.0, oldest + window - now))
        if limits.tpm is not None and self.tokens + min(tokens, limits.tpm) > limits.tpm:
            excess, free_at = self.tokens + min(tokens, limits.tpm) - limits.tpm, now
            for at, used in zip(times, self.toks, strict=True):
                excess, free_at = excess - used, at + window
                if excess <= 0:
                    break
            return Refusal("at_capacity", "tpm", max(0.0, free_at - now))
        return None

    def correct(self, call: _Call, tokens: int) -> None:
        """The call used ``tokens``: what it holds in the window (if still in it) is that."""
        index = call.seq - self.gone
        if index >= 0:
            self.tokens += tokens - self.toks[index]
            self.toks[index] = tokens


class Lane:
    """One limiter of a store for a :class:`Want` that counts nothing but requests and
    calls in flight (no ``tpm``, no budget): what the engine keeps per provider, so a
    call's take is one method call (:meth:`take`)."""

    __slots__ = ("lock", "log", "room", "rpm", "store", "want", "window")

    def __init__(self, store: MemoryCapacity, want: Want, log: _Log) -> None:
        limits = want.limits
        assert limits is not None and not limits.tpm and not want.charges
        self.store, self.want, self.log, self.lock = store, want, log, store._lock
        self.window, self.rpm = limits.window, limits.rpm
        self.room = limits.max_concurrency  # None: no limit on calls in flight

    def take(self) -> Ticket | None:
        """A ticket when the call surely fits now (taken as :meth:`MemoryCapacity.take_now`
        takes it), else None: nothing taken, ask ``take_now`` (a refusal's reason and
        when it frees are decided there, by :meth:`_Log.refusal`)."""
        log, now, window = self.log, self.store.clock.now(), self.window
        times, rpm, room = log.times, self.rpm, self.room
        with self.lock:
            if times and times[0] <= now - window:
                log.prune(now, window)
            if (rpm is not None and len(times) >= rpm) or (
                room is not None and log.inflight >= room
            ):
                return None
            call: _Call = _new(_Bare)
            call.want, call.settled, call.store, call.log = self.want, False, self.store, log
            times.append(now)
            log.toks.append(0)
            log.inflight += 1
            log.window = window
        return call


class MemoryCapacity:
    """Limiters and budgets of one process (the default; thread-safe, no I/O).

    Use :class:`~orchestrator.health.RedisHealthStore` for many processes: each
    process's own memory would let every replica spend the whole limit.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self._logs: dict[str, _Log] = {}
        self._spend: dict[str, list[float]] = {}  # key:period -> [spent, reserved]
        self._lock = threading.Lock()
        #: False once :func:`reset_default_capacity` forgot it: a lane kept on it is stale.
        self.current = True

    def peek(self, want: Want) -> Refusal | None:
        """Why ``want`` would be refused now; nothing is taken."""
        with self._lock:
            got = self._refusal(want, self.clock.now(), self.clock.wall())
            return got if isinstance(got, Refusal) else None

    async def take(self, want: Want) -> Ticket | Refusal:
        """Reserve ``want`` everywhere or nowhere (see :class:`CapacityStore`)."""
        return self.take_now(want)

    def take_now(self, want: Want) -> Ticket | Refusal:
        """:meth:`take`, synchronously (what the Redis store falls back to)."""
        now = self.clock.now()
        wall = self.clock.wall() if want.charges else 0.0  # budgets go by the calendar
        with self._lock:
            got = self._refusal(want, now, wall)
            if isinstance(got, Refusal):
                return got
            log, spends = got
            for spend in spends:
                spend[1] += want.cost
            if log is None:
                return _Call(self, want, None, 0, spends)
            times = log.times
            call = _Call(self, want, log, log.gone + len(times), spends)
            times.append(now)
            log.toks.append(want.tokens)
            log.tokens += want.tokens
            log.inflight += 1
            return call

    def settle(self, ticket: Ticket, tokens: int | None, cost: float) -> None:
        """Correct the reserved tokens, count ``cost``, free the call's slot (once)."""
        call: _Call = ticket  # type: ignore[assignment]  # what take_now gave
        log, spends = call.log, call.spends
        if tokens is None and not spends:  # nothing to correct or count: free the slot
            call.release()
            return
        if ticket.settled:
            return
        ticket.settled = True
        with self._lock:
            if log is not None:
                log.inflight -= 1
                if tokens is not None:
                    log.correct(call, tokens)
            for spend in spends:
                spend[0] += cost
                spend[1] -= call.want.cost

    def lane(self, want: Want) -> Lane:
        """The :class:`Lane` of ``want`` (one with no ``tpm`` and no budget) in this store."""
        with self._lock:
            log = self._logs.get(want.name)
            if log is None:
                log = self._logs[want.name] = _Log()
        return Lane(self, want, log)

    def usage(self) -> dict[str, dict[str, float]]:
        """Each limiter's calls, tokens and in-flight count in its window; each budget's spend."""
        out: dict[str, dict[str, float]] = {}
        now = self.clock.now()
        with self._lock:
            for name, log in self._logs.items():
                log.prune(now, log.window)  # a quiet limiter's calls leave its window too
                out[name] = {"requests": len(log.times), "tokens": log.tokens}
                out[name]["in_flight"] = log.inflight
            for key, (spent, reserved) in self._spend.items():
                out[key] = {"spent_usd": spent, "reserved_usd": reserved}
        return out

    def _refusal(
        self, want: Want, now: float, wall: float
    ) -> Refusal | tuple[_Log | None, tuple[list[float], ...]]:
        """Why ``want`` does not fit now, or its limiter's log and its budgets' spends."""
        log = None
        limits = want.limits
        if limits is not None:
            log = self._logs.get(want.name)
            if log is None:
                log = self._logs[want.name] = _Log()
            refused = log.refusal(limits, want.tokens, now)
            if refused is not None:
                return refused
        if not want.charges:  # a limiter alone (the hot path): no budget, no list to build
            return log, ()
        spends = []
        for charge in want.charges:
            index, end = period_bounds(charge.budget.per, wall)
            key = f"{charge.key}:{index}"
            spend = self._spend.get(key)
            if spend is None:
                self._spend = {k: v for k, v in self._spend.items() if _current(k, charge.key, key)}
                spend = self._spend[key] = [0.0, 0.0]
            if spend[0] + spend[1] >= charge.budget.usd:
                return Refusal("budget", charge.scope, max(0.0, end - wall))
            spends.append(spend)
        return log, tuple(spends)


def _current(key: str, prefix: str, now_key: str) -> bool:
    """Whether the spend kept under ``key`` is still wanted once ``now_key`` starts
    (another budget's, or this budget's current period)."""
    return not key.startswith(prefix + ":") or key == now_key


_defaults: dict[int, tuple[Clock, MemoryCapacity]] = {}
_default_lock = threading.Lock()


def default_capacity(clock: Clock = SYSTEM_CLOCK) -> MemoryCapacity:
    """The process-wide store on ``clock`` for agents without a health store (made on
    first use): every agent of the process shares a provider's limiter."""
    held = _defaults.get(id(clock))  # a dict read is atomic: the lock only to make one
    if held is None or held[0] is not clock:
        with _default_lock:
            held = _defaults.get(id(clock))
            if held is None or held[0] is not clock:
                held = _defaults[id(clock)] = (clock, MemoryCapacity(clock))
    return held[1]


def reset_default_capacity() -> None:
    """Forget the process-wide stores (for tests)."""
    with _default_lock:
        for _, store in _defaults.values():
            store.current = False
        _defaults.clear()
