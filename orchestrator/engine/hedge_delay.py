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
"""

from __future__ import annotations

import math
import re
from collections import deque
from datetime import timedelta

from orchestrator.ignored import warn_ignored
from orchestrator.units import seconds

__all__ = ["FLOOR", "MIN_SAMPLES", "TAIL_CAP", "WINDOW", "Hedging"]

#: Observations a child needs before an adaptive ``hedge_after`` hedges it.
MIN_SAMPLES = 20
#: The shortest adaptive delay, in seconds.
FLOOR = 0.05
#: How many recent first-content latencies an adaptive delay looks at, per child.
WINDOW = 256
#: An adaptive delay is at most this many times the window's median.
TAIL_CAP = 4.0
_PERCENTILE = re.compile(r"p(\d{1,2}(?:\.\d{1,3})?)")


class Hedging:
    """When a FallbackAgent hedges: a fixed delay or a percentile, and how many hedges."""

    __slots__ = ("after", "max_hedges", "percentile", "samples")

    def __init__(self, after: float | None, percentile: float | None, max_hedges: int) -> None:
        self.after, self.percentile, self.max_hedges = after, percentile, max_hedges
        #: child name -> its recent first-content latencies (adaptive delay only)
        self.samples: dict[str, deque[float]] = {}

    @classmethod
    def of(cls, hedge_after: float | timedelta | str | None, max_hedges: int) -> Hedging | None:
        """Validated settings; ``None`` when ``hedge_after`` is (hedging off)."""
        if isinstance(max_hedges, bool) or not isinstance(max_hedges, int) or max_hedges < 1:
            raise ValueError(f"FallbackAgent.max_hedges={max_hedges!r} must be an int >= 1")
        if hedge_after is None:
            if max_hedges != 1:
                warn_ignored(
                    f"FallbackAgent: max_hedges={max_hedges} has no effect without hedge_after= "
                    "(hedging is off); set hedge_after= (seconds, or 'p95') or drop max_hedges",
                    stacklevel=3,
                )
            return None
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
        window = self.samples.get(name)
        if window is None or len(window) < MIN_SAMPLES:
            return None
        ordered = sorted(window)
        rank = max(0, math.ceil(self.percentile / 100 * len(ordered)) - 1)
        return max(FLOOR, min(ordered[rank], TAIL_CAP * ordered[len(ordered) // 2]))

    def observe(self, name: str, latency: float) -> None:
        """Record one first-content latency of ``name`` (kept only for an adaptive delay)."""
        if self.percentile is not None:
            window = self.samples.get(name)
            if window is None:
                window = self.samples[name] = deque(maxlen=WINDOW)
            window.append(latency)

    def __repr__(self) -> str:
        when = f"p{self.percentile:g}" if self.percentile is not None else f"{self.after}s"
        return f"Hedging(after={when}, max_hedges={self.max_hedges})"
