"""Result and Stop: what a run returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator._attempt import Attempt
from orchestrator._request import Usage

__all__ = ["Result", "Stop"]


@dataclass(frozen=True, slots=True)
class Stop:
    """Returned by ``before_fallback`` to end the run without calling the next child."""

    text: str = ""
    reason: str = "stopped"


@dataclass(frozen=True, slots=True)
class Result:
    """A successful run: the text, who answered, and every attempt (the winning one last).

    ``handled_by`` is the name of the provider that actually answered (inside
    nested chains too); it is ``None`` only when ``stopped`` or ``best_effort``
    produced the text. ``value`` holds the validated object when ``schema=`` was
    given. ``usage`` and ``cost_usd`` sum every attempt that reported them.
    """

    text: str
    handled_by: str | None
    attempts: tuple[Attempt, ...]
    latency: float
    value: Any = None
    model: str | None = None
    stopped: Stop | None = None
    best_effort: bool = False

    @property
    def usage(self) -> Usage | None:
        """Tokens summed over every attempt that reported usage (failed ones included)."""
        total: Usage | None = None
        for a in self.attempts:
            if a.usage is not None:
                total = a.usage if total is None else total + a.usage
        return total

    @property
    def cost_usd(self) -> float | None:
        """Cost summed over every attempt that consumed priced tokens."""
        costs = [a.cost_usd for a in self.attempts if a.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def failed_attempts(self) -> tuple[Attempt, ...]:
        return tuple(a for a in self.attempts if a.error is not None or a.reason is not None)

    def __repr__(self) -> str:
        return (
            f"Result(handled_by={self.handled_by!r}, attempts={len(self.attempts)}, "
            f"latency={self.latency:.3f}, chars={len(self.text)})"
        )
