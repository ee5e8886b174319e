"""How one agent orders its children for a run: its strategy, its split arms, affinity.

:class:`Router` is built once per agent; :func:`orchestrator.engine.serving.route`
asks it, per run, for the order and the arm. With ``order="priority"``, no split
and no affinity key the engine does not ask at all (:attr:`Router.plain`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.routing.state import (
    DEFAULT_AFFINITY_TTL,
    MemoryRouting,
    RoutingState,
    scoped_digest,
)
from orchestrator.routing.strategies import Strategy
from orchestrator.routing.tally import call_ended, call_sampled

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.engine.serving import Member

__all__ = [
    "MAX_KEY_CHARS",
    "TOUCH_EVERY",
    "Held",
    "Keys",
    "Names",
    "Router",
    "check_key",
]

#: Longer affinity or split keys are refused (a key names a conversation or a user).
MAX_KEY_CHARS = 1024


class Keys:
    """A run's routing keys: ``affinity`` (first to the child that served it last)
    and ``split`` (which arm of a :class:`~orchestrator.Split`; None: the affinity key
    splits). Nested chains see the keys of the run they are part of."""

    # Class defaults, set on the instance once used (a run per call: the fewer set, the better).
    split: str | None = None
    made: tuple[str, str] | None = None  # (agent, digest): asked twice per run
    #: The router that found ``kept`` holding the affinity key, synced with the state
    #: lately: a turn it serves changes nothing there (:meth:`Router.served`).
    kept_by: Router | None = None
    kept: str | None = None

    def __init__(self, affinity: str | None, split_key: str | None) -> None:
        """The keys of a run, checked (``split_key`` None: the affinity key splits)."""
        if affinity.__class__ is not str or not 0 < len(affinity) <= MAX_KEY_CHARS:
            check_key(affinity, "affinity")  # says what is wrong (None is fine)
        self.affinity = affinity
        if split_key is not None:
            if split_key.__class__ is not str or not 0 < len(split_key) <= MAX_KEY_CHARS:
                check_key(split_key, "split_key")
            self.split = split_key

    def digest(self, agent: str) -> str:
        """The stored form of the affinity key for the agent named ``agent``."""
        made = self.made
        if made is None or made[0] is not agent:
            assert self.affinity is not None
            made = self.made = (agent, scoped_digest(agent, self.affinity))
        return made[1]

    @classmethod
    def of(cls, affinity: str | None, split_key: str | None) -> Keys | None:
        """The keys of a run, checked; None when neither is given (the hot path)."""
        return None if affinity is None and split_key is None else cls(affinity, split_key)

    def __repr__(self) -> str:
        # Keys name users and conversations: never in a repr (a log line, a traceback's locals).
        return "Keys()"


def check_key(key: object, field: str) -> None:
    """``TypeError``/``ValueError`` for a key that is not a short string (never echoed:
    a key may be a user id)."""
    if key is None:
        return
    if not isinstance(key, str):
        raise TypeError(f"{field}: expected a str, got {type(key).__name__}")
    if not key or len(key) > MAX_KEY_CHARS:
        raise ValueError(f"{field}: {len(key)} characters; give 1 to {MAX_KEY_CHARS}")


class Router:
    """One agent's routing: its strategy (None for priority), the arm names of a
    split, how long an affinity key lasts, and the state they read."""

    __slots__ = (
        "_ttl",
        "arms",
        "busy",
        "counts",
        "ended",
        "found",
        "names",
        "own_state",
        "owners",
        "plain",
        "recent",
        "samples",
        "strategy",
        "times",
        "touch_every",
    )

    def __init__(
        self,
        strategy: Strategy | None,
        *,
        affinity_ttl: float = DEFAULT_AFFINITY_TTL,
        arms: tuple[str, ...] | None = None,
    ) -> None:
        self.strategy, self.arms = strategy, arms
        self.affinity_ttl = affinity_ttl  # (and touch_every)
        #: Neither a strategy nor a split: without keys the chain's own order, unasked.
        self.plain = strategy is None and arms is None
        self.own_state: MemoryRouting | None = None  # for an agent without a store
        self.found: RoutingState | None = None  # the state, once looked up
        self.owners: dict[str, str] | None = None  # provider name -> child name (lazy)
        #: An order of the agent's children -> their names (``router.names[order]``).
        self.names = Names()
        #: What this router knows of each recent affinity key (:class:`Held`).
        self.recent: dict[int, Held] = {}
        #: What runs tell the state: calls in flight (``least_busy``), latency (``latency``).
        self.counts = strategy is not None and strategy.counts
        self.times = strategy is not None and strategy.times
        #: What the engine calls when a call to a child ends (None: nothing to tell).
        self.ended: Callable[..., None] | None = (
            call_ended if self.counts else call_sampled if self.times else None
        )
        #: Set when the state is found (:meth:`state`): a memory state's own counts of calls
        #: in flight, counted and read here without a call; and the latency samples taken
        #: since the last :meth:`fold`, for a state that takes them in batches.
        self.busy: dict[str, int] | None = None
        self.samples: list[tuple[str, float, float]] | None = None

    @property
    def affinity_ttl(self) -> float:
        """Seconds without a turn after which an affinity key is forgotten."""
        return self._ttl

    @affinity_ttl.setter
    def affinity_ttl(self, ttl: float) -> None:
        self._ttl = ttl
        #: How long what this router read of a key stands (seconds): the turns within it
        #: trust that; a key lasts at least 99% of its ttl after its last turn.
        self.touch_every = min(TOUCH_EVERY, ttl / 100)

    def state(self, agent: FallbackAgent) -> RoutingState:
        """The health store's routing state (shared by its users), else the agent's own,
        with every latency sample taken so far in it (:meth:`fold`)."""
        found = self.found
        if found is None:
            shared = getattr(agent.health_store, "routing", None)
            if shared is None:
                shared = self.own_state = MemoryRouting(agent.clock)
            found = self.found = shared
            if self.counts and _plain(shared, ("began", "ended", "in_flight")):
                self.busy = shared.busy
            if self.times and _plain(shared, ("observe", "observe_many"), overridden=True):
                self.samples = []
        if self.samples:
            self.fold()
        return found

    def fold(self) -> None:
        """Hand the latency samples taken since the last fold to the state (one call for
        all: a ``latency`` agent folds when its order is made again, every
        :data:`~orchestrator.routing.strategies.RERANK_AFTER` while busy, or at
        :data:`~orchestrator.routing.state.MAX_SAMPLES`)."""
        samples, self.samples = self.samples, []
        if samples:
            assert self.found is not None
            self.found.observe_many(samples)  # type: ignore[attr-defined]

    def draw(self, agent: FallbackAgent, keys: Keys) -> float | None:
        """A split's draw for ``keys`` (its key's hash in [0, 1): the same key, the same
        arm), or None (drawn from the agent's rng; not a split, or no split key)."""
        key = keys.affinity if keys.split is None else keys.split
        if self.arms is None or key is None:
            return None
        return int(scoped_digest(agent.name, key), 16) / 2.0**64

    def holder(self, agent: FallbackAgent, keys: Keys, peek: bool) -> str | None:
        """The child holding ``keys.affinity``. The state is read at most once per
        :attr:`touch_every` for a key (and the turn that reads it writes it back, which
        refreshes its time to live); the turns between trust this router's memory.
        ``peek`` reads without remembering."""
        now = agent.clock.now()
        held = self.recent.get(hash(keys.affinity))
        if held is not None and held.synced <= now < held.until:
            child = held.child
            if not peek and not held.owed:
                keys.kept_by, keys.kept = self, child
            return child
        assert keys.affinity is not None
        digest = keys.digest(agent.name) if held is None else held.digest
        child = (self.found or self.state(agent)).affinity(digest)
        if not peek:
            held = held or self._remember(keys.affinity, digest)
            held.child, held.synced, held.owed = child, now, True
            held.until = now + self.touch_every
        return child

    def held(self, agent: FallbackAgent, keys: Keys) -> tuple[str, str | None]:
        """The digest of ``keys.affinity`` for this agent and the child the state holds for
        it now (read from the state, not this router's memory)."""
        assert keys.affinity is not None
        digest = keys.digest(agent.name)
        return digest, self.state(agent).affinity(digest)

    def served(self, agent: FallbackAgent, keys: Keys, provider: str | None) -> None:
        """The run succeeded through ``provider``: the key's calls go to its child next.
        Written to the state when the key moves, or on the turn that read it (which
        refreshes its time to live); otherwise nothing changes."""
        if keys.kept_by is self and keys.kept == provider:
            return  # the usual turn: the holder (a provider) served, synced lately
        if provider is None or keys.affinity is None or self.arms is not None:
            return
        owners = self.owners
        if owners is None:
            owners = self.owners = _owners(agent.members)
        child = owners.get(provider)
        if child is None:
            return
        held = self.recent.get(hash(keys.affinity))
        if held is not None and held.child == child and not held.owed:
            return  # (a nested chain's turn: its inner level set ``keys.kept``)
        digest = keys.digest(agent.name) if held is None else held.digest
        (self.found or self.state(agent)).keep(digest, child, self._ttl)
        held = held or self._remember(keys.affinity, digest)
        held.child, held.owed = child, False

    def _remember(self, key: str, digest: str) -> Held:
        """A new :class:`Held` for ``key`` (by its hash: the key itself is never kept)."""
        recent = self.recent
        if len(recent) >= MAX_RECENT:
            recent.clear()  # bounded, lock-free: the next turns read the state again
        held = recent[hash(key)] = Held(digest)
        return held


def _plain(state: object, methods: tuple[str, ...], overridden: bool = False) -> bool:
    """Whether ``state`` is a :class:`MemoryRouting` whose ``methods`` are its own (a
    subclass's ``overridden`` ones count too; a method set on the instance does not)."""
    if not isinstance(state, MemoryRouting):
        return False
    mine = vars(state)
    own = {m: getattr(MemoryRouting, m) for m in methods}
    return all(m not in mine and (overridden or getattr(type(state), m) is own[m]) for m in methods)


#: Affinity keys a router remembers (what it last read or wrote); emptied when full.
MAX_RECENT = 4096
#: How often (seconds) a conversation's key is read from the state and written back (its
#: ttl refreshed), at most; a turn within this of that one trusts this router's memory.
TOUCH_EVERY = 1.0


class Held:
    """What a router knows of one affinity key: its digest, the child holding it, and when
    this router last read it from the state (remembered by the key's in-process hash;
    two keys whose hashes collide, which needs the process's secret seed to aim, would
    share one for a second)."""

    __slots__ = ("child", "digest", "owed", "synced", "until")

    def __init__(self, digest: str) -> None:
        self.digest = digest
        self.child: str | None = None
        #: When this router last read the key from the state, and until when that stands
        #: (``synced`` + :attr:`Router.touch_every`).
        self.synced = self.until = -math.inf
        #: The turn that read the state writes the key back (its ttl refreshed).
        self.owed = False

    def __repr__(self) -> str:
        return f"Held(child={self.child!r})"


class Names(dict[tuple["Member", ...], tuple[str, ...]]):
    """An order of an agent's children -> their names, each made on first use (orders
    of a few children: a handful; past 256 they are made each time, not kept)."""

    def __missing__(self, members: tuple[Member, ...]) -> tuple[str, ...]:
        names = tuple(m.name for m in members)
        if len(self) < 256:
            self[members] = names
        return names


def _owners(members: Sequence[Any], depth: int = 0) -> dict[str, str]:
    """Provider name -> the name of the child of these members that holds it."""
    out: dict[str, str] = {}
    for m in members:
        inner = getattr(m, "agent", None)
        if inner is None:
            out[m.name] = m.name
        elif depth < 8:  # chains nest a few levels; bounded all the same
            out.update(dict.fromkeys(_owners(inner.members, depth + 1), m.name))
    return out
