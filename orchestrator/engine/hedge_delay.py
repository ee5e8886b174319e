"""When a FallbackAgent hedges: ``hedge_after`` as a fixed delay or an adaptive percentile.

Adaptive delay, ``"pNN"``: the NN-th percentile (nearest rank) of the child's
last :data:`WINDOW` observed first-content latencies, never below :data:`FLOOR`
(a hedge earlier than that mostly duplicates healthy calls) and never above
:data:`TAIL_CAP` times their median (a percentile that far out is a tail of
failures, not of normal calls: when 5% of calls stall, the p95 itself would be
a stall). A lane that lost to a hedge counts with the time it went without
content (a lower bound of its latency), so the window does not forget the slow
calls hedging hides. Until the child has :data:`MIN_SAMPLES` observations the
call is not hedged: a cold start never doubles traffic on a guess.

The default, ``"auto"``, rescues a first token that comes too late without cutting a
slow but healthy model. A child with no content after :data:`AUTO_AFTER` (10 s), or a
third of its tightest timeout when that is shorter (the run's ``timeout``, the agent's
``attempt_timeout``, the provider's ``timeout=``), is hedged: the next child starts in
parallel and the slow one keeps running, so a reasoning model that thinks for 20 s is
not cut, it races. 10 s is far past a healthy model's first token (typically under 2 s)
and a third of the budget leaves the successor two thirds to answer. Once a child has
:data:`MIN_SAMPLES` observations the delay rises to their p99 (capped as above) when
that is later: a model that is always slow to start (reasoning) stops being duplicated.
Only chains with a successor hedge (a one-child chain never pays for one); a hedge's
loser is cancelled and its input tokens billed (:mod:`orchestrator.engine.hedging`).
``hedge_after=None`` turns hedging off.

Which children hedge (:func:`can_hedge`): a provider followed by a provider, while
nothing was streamed to the consumer yet.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from orchestrator.engine.children import ProviderChild
from orchestrator.ignored import warn_ignored
from orchestrator.units import seconds

if TYPE_CHECKING:
    from orchestrator.engine.run import Run

__all__ = [
    "AUTO_AFTER",
    "FLOOR",
    "MIN_SAMPLES",
    "TAIL_CAP",
    "WINDOW",
    "Hedging",
    "can_hedge",
    "check_hedged",
]

#: Observations a child needs before an adaptive ``hedge_after`` hedges it.
MIN_SAMPLES = 20
#: The shortest adaptive delay, in seconds.
FLOOR = 0.05
#: How many recent first-content latencies an adaptive delay looks at, per child.
WINDOW = 256
#: An adaptive delay is at most this many times the window's median.
TAIL_CAP = 4.0
#: ``hedge_after="auto"``: the longest a child goes without content before it is hedged
#: (until its own p99 is known and later); a third of its tightest timeout when shorter.
AUTO_AFTER = 10.0
_AUTO_SHARE = 1 / 3
_AUTO_PERCENTILE = 99.0
#: An adaptive delay is recomputed after this many new observations of its child.
_REFRESH = 8
_PERCENTILE = re.compile(r"p(\d{1,2}(?:\.\d{1,3})?)")


class Hedging:
    """When a FallbackAgent hedges: a fixed delay or a percentile, and how many hedges."""

    __slots__ = ("after", "floors", "learned", "max_hedges", "percentile", "samples", "seen")

    def __init__(
        self,
        after: float | None,
        percentile: float | None,
        max_hedges: int,
        floors: dict[str, float] | None = None,
    ) -> None:
        self.after, self.percentile, self.max_hedges = after, percentile, max_hedges
        #: ``"auto"`` only: child name -> the delay before its own p99 is known
        self.floors = floors
        #: child name -> its recent first-content latencies (adaptive delay only)
        self.samples: dict[str, deque[float]] = {}
        #: child name -> (observations then, the adaptive delay they gave): a cache, so a
        #: call reads the delay in O(1) instead of sorting the window (every call consults it)
        self.learned: dict[str, tuple[int, float]] = {}
        self.seen: dict[str, int] = {}  #: child name -> observations so far

    @classmethod
    def of(
        cls,
        hedge_after: float | timedelta | str | None,
        max_hedges: int,
        children: Iterable[Any] = (),
        limits: Iterable[float | None] = (),
    ) -> Hedging | None:
        """Validated settings; ``None`` when ``hedge_after`` is (hedging off). ``"auto"``
        takes each child's delay from ``limits`` (the agent's timeouts) and its own."""
        if isinstance(max_hedges, bool) or not isinstance(max_hedges, int) or max_hedges < 1:
            raise ValueError(f"FallbackAgent.max_hedges={max_hedges!r} must be an int >= 1")
        if hedge_after is None:
            if max_hedges != 1:
                warn_ignored(
                    f"FallbackAgent: max_hedges={max_hedges} has no effect with hedge_after=None "
                    "(hedging is off); drop hedge_after=None (the default hedges) or max_hedges",
                    stacklevel=3,
                )
            return None
        if hedge_after == "auto":
            known = [t for t in limits if t is not None]
            floors = {c.name: _auto_after([*known, getattr(c, "timeout", None)]) for c in children}
            return cls(None, _AUTO_PERCENTILE, max_hedges, floors)
        if isinstance(hedge_after, str):
            m = _PERCENTILE.fullmatch(hedge_after)
            if m is None or not 0 < float(m[1]) < 100:
                raise ValueError(
                    f"FallbackAgent.hedge_after={hedge_after!r} must be seconds or a percentile "
                    "of observed first-token latency such as 'p95' (p1..p99.9)"
                )
            return cls(None, float(m[1]), max_hedges)
        return cls(seconds(hedge_after, "FallbackAgent.hedge_after"), None, max_hedges)

    def delay(self, name: str) -> float | None:
        """Seconds after which a lane of ``name`` without content is hedged (None: never)."""
        if self.percentile is None:
            return self.after
        learned = self._learned(name)
        if self.floors is None:
            return learned
        floor = self.floors.get(name, AUTO_AFTER)
        return floor if learned is None else max(floor, learned)

    def _learned(self, name: str) -> float | None:
        """The adaptive delay from ``name``'s window, recomputed every :data:`_REFRESH`
        observations (it moves slowly: one call changes one of up to :data:`WINDOW`)."""
        window = self.samples.get(name)
        if window is None or len(window) < MIN_SAMPLES or self.percentile is None:
            return None
        seen = self.seen.get(name, 0)
        cached = self.learned.get(name)
        if cached is not None and seen - cached[0] < _REFRESH:
            return cached[1]
        ordered = sorted(window)
        rank = max(0, math.ceil(self.percentile / 100 * len(ordered)) - 1)
        value = max(FLOOR, min(ordered[rank], TAIL_CAP * ordered[len(ordered) // 2]))
        self.learned[name] = (seen, value)
        return value

    def observe(self, name: str, latency: float) -> None:
        """Record one first-content latency of ``name`` (kept only for an adaptive delay)."""
        if self.percentile is not None:
            window = self.samples.get(name)
            if window is None:
                window = self.samples[name] = deque(maxlen=WINDOW)
            window.append(latency)
            self.seen[name] = self.seen.get(name, 0) + 1

    def __repr__(self) -> str:
        when = f"p{self.percentile:g}" if self.percentile is not None else f"{self.after}s"
        when = "auto" if self.floors is not None else when
        return f"Hedging(after={when}, max_hedges={self.max_hedges})"


def _auto_after(timeouts: list[Any]) -> float:
    """``"auto"``'s delay for a child bounded by ``timeouts`` (seconds; others ignored)."""
    known = [float(t) for t in timeouts if isinstance(t, int | float) and t > 0]
    return min([AUTO_AFTER, *(t * _AUTO_SHARE for t in known)])


def can_hedge(run: Run, idx: int) -> bool:
    """Whether child ``idx`` of ``run`` is tried hedged: a provider followed by a provider,
    with nothing streamed to the consumer yet."""
    return _pair(run.members, idx) and not getattr(run.delivery, "delivered", None)


def _pair(members: Sequence[object], idx: int) -> bool:
    return (
        idx + 1 < len(members)
        and isinstance(members[idx], ProviderChild)
        and isinstance(members[idx + 1], ProviderChild)
    )


def check_hedged(members: Sequence[object], hedge_after: object) -> None:
    """Warn (:class:`~orchestrator.ignored.IgnoredSetting`) when ``hedge_after`` can never
    start a hedge: no provider of the chain is followed by a provider to hedge to."""
    if not any(_pair(members, idx) for idx in range(len(members))):
        one = "has one child" if len(members) == 1 else "has no provider followed by a provider"
        warn_ignored(
            f"FallbackAgent: hedge_after={hedge_after!r} has no effect: the chain {one}, so "
            "there is no next provider to start in parallel; add one or drop hedge_after",
            stacklevel=3,
        )
