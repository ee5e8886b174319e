"""Attempt: the record of one call to one provider."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator._request import Usage

__all__ = ["REASONS", "Attempt"]

#: Why a child was left (``Attempt.reason``): the documented set.
REASONS = frozenset(
    {
        "error",
        "timeout",
        "rate_limited",
        "overloaded",
        "unusable",
        "invalid_output",
        "rejected",
        "circuit_open",
        "deadline",
        "terminal",
    }
)


@dataclass(frozen=True, slots=True)
class Attempt:
    """One call to one provider: who, which try, when, how long, and how it ended.

    ``error`` is ``None`` for the attempt that succeeded. ``started_at`` is wall
    time (seconds since the epoch, from the agent's clock); ``duration`` seconds.
    ``reason`` says why the attempt failed (one of :data:`REASONS`), ``note``
    adds detail such as ``"retry budget empty"``; neither holds request text.
    """

    agent: str
    error: BaseException | None
    attempt_number: int
    started_at: float
    duration: float
    reason: str | None = None
    usage: Usage | None = None
    cost_usd: float | None = None
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.reason is None

    def kind_label(self) -> str:
        """The error's type name, or the reason when there is no error object."""
        if self.error is not None:
            return type(self.error).__name__
        return self.reason or "ok"
