"""How one agent orders its children for a run: its strategy, its split arms, affinity.

:class:`Router` is built once per agent; :func:`orchestrator.engine.serving.route`
asks it, per run, for the order and the arm. With ``order="priority"``, no split
and no affinity key the engine does not ask at all (:attr:`Router.plain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.routing.state import (
    DEFAULT_AFFINITY_TTL,
    MemoryRouting,
    RoutingState,
    scoped_digest,
)
from orchestrator.routing.strategies import Strategy

if TYPE_CHECKING:
    from orchestrator.engine.agent import FallbackAgent
    from orchestrator.engine.serving import Member

__all__ = ["MAX_KEY_CHARS", "Keys", "Router", "check_key"]

#: Longer affinity or split keys are refused (a key names a conversation or a user).
MAX_KEY_CHARS = 1024


class Keys:
    """A run's routing keys: ``affinity`` (first to the child that served it last)
    and ``split`` (which arm of a :class:`~orchestrator.Split`; the affinity key when
    not given). Nested chains see the keys of the run they are part of."""

    __slots__ = ("affinity", "made", "split")

    def __init__(self, affinity: str | None, split: str | None) -> None:
        self.affinity, self.split = affinity, split
        self.made: tuple[str, str] | None = None  # (agent, digest): asked twice per run

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
        if affinity is None and split_key is None:
            return None
        if affinity.__class__ is not str or not 0 < len(affinity) <= MAX_KEY_CHARS:
            check_key(affinity, "affinity")  # says what is wrong (None is fine)
        if split_key is None:
            return cls(affinity, affinity)
        check_key(split_key, "split_key")
        return cls(affinity, split_key)

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
        "affinity_ttl",
        "arms",
        "counts",
        "found",
        "names",
        "own_state",
        "owners",
        "plain",
        "strategy",
        "times",
        "tracks",
    )

    def __init__(
        self,
        strategy: Strategy | None,
        *,
        affinity_ttl: float = DEFAULT_AFFINITY_TTL,
        arms: tuple[str, ...] | None = None,
    ) -> None:
        self.strategy, self.arms, self.affinity_ttl = strategy, arms, affinity_ttl
        #: Neither a strategy nor a split: without keys the chain's own order, unasked.
        self.plain = strategy is None and arms is None
        self.own_state: MemoryRouting | None = None  # for an agent without a store
        self.found: RoutingState | None = None  # the state, once looked up
        self.owners: dict[str, str] | None = None  # provider name -> child name (lazy)
        self.names: dict[tuple[Member, ...], tuple[str, ...]] = {}  # an order -> its names
        #: What runs tell the state: calls in flight (``least_busy``), latency (``latency``).
        self.counts = strategy is not None and strategy.counts
        self.times = strategy is not None and strategy.times
        self.tracks = self.counts or self.times

    def state(self, agent: FallbackAgent) -> RoutingState:
        """The health store's routing state (shared by its users), else the agent's own."""
        found = self.found
        if found is None:
            shared = getattr(agent.health_store, "routing", None)
            if shared is None:
                shared = self.own_state = MemoryRouting(agent.clock)
            found = self.found = shared
        return found

    def rank(
        self, agent: FallbackAgent, request: Any, keys: Keys | None, peek: bool
    ) -> tuple[tuple[Member, ...], str | None]:
        """The strategy's order of ``agent``'s children and the split arm (None: no split)."""
        members = agent.members
        strategy = self.strategy
        if strategy is None:
            return members, None
        arms = self.arms
        if arms is None:
            return strategy.rank(members, request, agent, peek, None), None
        draw = None
        if keys is not None and keys.split is not None:
            draw = int(scoped_digest(agent.name, keys.split), 16) / 2.0**64
        ranked = strategy.rank(members, request, agent, peek, draw)
        return ranked, arms[members.index(ranked[0])]

    def names_of(self, members: tuple[Member, ...]) -> tuple[str, ...]:
        """The names of ``members`` (an order of the agent's children), made once per order."""
        names = self.names.get(members)
        if names is None:
            names = tuple(m.name for m in members)
            if len(self.names) < 256:  # orders of a few children: a handful
                self.names[members] = names
        return names

    def held(self, agent: FallbackAgent, keys: Keys) -> tuple[str, str | None]:
        """The digest of ``keys.affinity`` for this agent and the child holding it."""
        assert keys.affinity is not None
        digest = keys.digest(agent.name)
        return digest, self.state(agent).affinity(digest)

    def served(self, agent: FallbackAgent, keys: Keys, provider: str | None) -> None:
        """The run succeeded through ``provider``: the key's calls go to its child next."""
        if provider is None or keys.affinity is None or self.arms is not None:
            return
        owners = self.owners
        if owners is None:
            owners = self.owners = _owners(agent.members)
        child = owners.get(provider)
        if child is not None:
            state = self.found or self.state(agent)
            state.keep(keys.digest(agent.name), child, self.affinity_ttl)


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
