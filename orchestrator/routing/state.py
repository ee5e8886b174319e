"""What routing remembers between calls: calls in flight, recent latency, affinity keys.

Kept in the health store (``store.routing``) so replicas sharing a store share it
(:class:`~orchestrator.health.RedisHealthStore` mirrors it through Redis), or,
for an agent without a store, in a :class:`MemoryRouting` of its own. Every
method is synchronous and cheap (no I/O), like the store's.

Affinity keys are kept hashed (:func:`key_digest`): a key is often a user or
conversation id, and never appears in memory dumps, logs or Redis in the clear.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from orchestrator.clock import SYSTEM_CLOCK, Clock

__all__ = [
    "ALPHA",
    "DEFAULT_AFFINITY_TTL",
    "FORGET_AFTER",
    "MAX_KEYS",
    "MAX_SAMPLES",
    "MemoryRouting",
    "RoutingState",
    "key_digest",
    "scoped_digest",
]

#: Weight of a new latency sample in a child's decayed average (of one just taken).
ALPHA = 0.3
#: How long a stale average keeps half its weight against a new sample, in seconds: a
#: region not called for a while is judged mostly by its next sample.
HALF_LIFE = 5.0
#: A figure this old (seconds) is forgotten: the next sample replaces it (an exploration).
FORGET_AFTER = 10.0
#: Latency samples a router keeps before it folds them into the state, at most.
MAX_SAMPLES = 64
#: An affinity key forgotten after this many seconds without a call (10 minutes).
DEFAULT_AFFINITY_TTL = 600.0
#: At most this many affinity keys are kept (the least recently used go first).
MAX_KEYS = 100_000


def key_digest(key: str) -> str:
    """The stored form of an affinity or split key: 16 hex digits of its BLAKE2b hash
    (stable across processes and hosts; linear in the key's length)."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


#: Recent digests by ``hash((scope, key))``: a conversation's turns hash its key once, and
#: the key itself is never kept (it names a user). Emptied when full: bounded, lock-free.
_DIGESTS: dict[int, str] = {}
_MAX_DIGESTS = 4096


def scoped_digest(scope: str, key: str) -> str:
    """``key_digest(scope + "\\0" + key)`` (an agent's name scopes a key), remembered for
    the last few thousand pairs (a collision of Python's 64-bit keyed string hash, which
    needs the process's secret seed to aim, would only share a digest)."""
    h = hash((scope, key))
    made = _DIGESTS.get(h)
    if made is None:
        made = key_digest(f"{scope}\0{key}")
        if len(_DIGESTS) >= _MAX_DIGESTS:
            _DIGESTS.clear()
        _DIGESTS[h] = made
    return made


@runtime_checkable
class RoutingState(Protocol):
    """What the routing strategies read and the engine tells, per child name."""

    def began(self, child: str) -> None:
        """A call to ``child`` started (it is in flight until :meth:`ended`)."""
        ...

    def ended(self, child: str) -> None:
        """A call to ``child`` ended, however it ended."""
        ...

    def in_flight(self, child: str) -> int:
        """Calls to ``child`` in flight now (every replica's, for a shared store)."""
        ...

    def observe(self, child: str, seconds: float) -> None:
        """One latency sample of ``child``: its decayed average moves toward it."""
        ...

    def latency(self, child: str) -> tuple[float, float] | None:
        """``child``'s decayed average latency and when it was last sampled or explored
        (``clock.now()`` seconds; the average is infinite while an exploration has no
        sample yet), or None before either."""
        ...

    def explored(self, child: str) -> None:
        """A run sends ``child`` a call to learn its latency: no other run explores it
        until it is stale again."""
        ...

    def affinity(self, digest: str) -> str | None:
        """The child that served the key with this digest last, unless expired."""
        ...

    def keep(self, digest: str, child: str, ttl: float) -> None:
        """``child`` served the key: it goes there first for ``ttl`` seconds of inactivity."""
        ...


class MemoryRouting:
    """:class:`RoutingState` in this process's memory. Thread-safe where it must be
    (the affinity table); counters are plain ints (a lost increment under threads
    only skews a balance, never a result)."""

    def __init__(self, clock: Clock | None = None, *, max_keys: int = MAX_KEYS) -> None:
        self.clock: Clock = clock if clock is not None else SYSTEM_CLOCK
        self.max_keys = max_keys
        self.busy: dict[str, int] = {}
        self.averages: dict[str, tuple[float, float]] = {}  # child -> (average, sampled at)
        self.explorations: dict[str, float] = {}  # child -> when a run last explored it
        self.keys: OrderedDict[str, tuple[str, float]] = OrderedDict()  # digest -> child, until
        self._lock = threading.Lock()

    def began(self, child: str) -> None:
        busy = self.busy
        busy[child] = busy.get(child, 0) + 1

    def ended(self, child: str) -> None:
        busy = self.busy
        n = busy.get(child, 0)
        busy[child] = n - 1 if n > 0 else 0

    def in_flight(self, child: str) -> int:
        return self.busy.get(child, 0)

    def observe(self, child: str, seconds: float) -> None:
        """One sample of ``child`` taken now (:meth:`observe_many`)."""
        self.observe_many(((child, seconds, self.clock.now()),))

    def observe_many(self, samples: Iterable[tuple[str, float, float]]) -> None:
        """Samples ``(child, seconds, taken at)`` in the order taken: each moves its child's
        average toward it. The old average weighs ``1 - ALPHA``, less when it is old
        (halved every :data:`HALF_LIFE` seconds since it last moved), nothing after
        :data:`FORGET_AFTER` (a region that failed for long is judged by how it is now).
        A ``latency`` agent's router hands them over in batches (:meth:`Router.fold
        <orchestrator.routing.router.Router.fold>`), so this loop is its per-call cost."""
        averages, keep_new, half_life, forget = self.averages, _KEEP, HALF_LIFE, FORGET_AFTER
        child, average, at = None, 0.0, 0.0  # the child whose figure is being moved
        for name, seconds, now in samples:
            if name != child:  # (a batch is mostly runs of one child: the fastest goes first)
                if child is not None:
                    averages[child] = (average, at)
                child, known = name, averages.get(name)
                if known is None:
                    average, at = seconds, now
                    continue
                average, at = known
            age = now - at
            if age < forget:
                keep = keep_new * 0.5 ** (age / half_life) if age > 0.0 else keep_new
                average = keep * average + (1.0 - keep) * seconds
            else:
                average = seconds
            at = now
        if child is not None:
            averages[child] = (average, at)

    def latency(self, child: str) -> tuple[float, float] | None:
        # Asked for each child when a ``latency`` agent ranks (every 50 ms while busy).
        known, explored = self.averages.get(child), self.explorations.get(child)
        if known is None:
            return None if explored is None else (math.inf, explored)
        return known if explored is None or explored <= known[1] else (known[0], explored)

    def explored(self, child: str) -> None:
        self.explorations[child] = self.clock.now()

    def affinity(self, digest: str) -> str | None:
        held = self.keys.get(digest)
        if held is None or held[1] <= self.clock.now():
            return None
        return held[0]

    def keep(self, digest: str, child: str, ttl: float) -> None:
        keys = self.keys
        keys[digest] = (child, self.clock.now() + ttl)
        keys.move_to_end(digest)
        if len(keys) > self.max_keys:
            with self._lock:  # two threads trimming at once must not pop an empty table
                while len(keys) > self.max_keys:
                    keys.popitem(last=False)

    def __repr__(self) -> str:
        return f"MemoryRouting(children={len(self.averages)}, keys={len(self.keys)})"


_KEEP = 1.0 - ALPHA
