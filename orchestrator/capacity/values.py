"""What a limit and a budget say: :class:`Limits` per provider, :class:`Budget` per scope.

Validated here, once, whichever way they are given (keywords, the chain file,
the gateway's keys file): a count is a positive ``int``, dollars a positive
finite number, a window seconds (:func:`orchestrator.units.seconds`).
"""

from __future__ import annotations

import calendar
import math
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal, get_args

from orchestrator.units import seconds

__all__ = ["PERIODS", "Budget", "Limits", "Period", "checked", "period_bounds"]

Period = Literal["minute", "hour", "day", "month"]
PERIODS: tuple[str, ...] = get_args(Period)
_FIXED = {"minute": 60, "hour": 3600, "day": 86400}


def _count(field: str, value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{field}={value!r} must be an integer >= 1 (or None for no limit)")
    return value


@dataclass(frozen=True, slots=True, init=False)
class Limits:
    """A provider's quota: requests and tokens per window, and calls in flight at once.

    ``rpm`` requests and ``tpm`` tokens (input + output) in any ``window``
    seconds (default 60: per minute, as vendors state quotas; another window is
    the same algorithm on another time scale), ``max_concurrency`` calls in
    flight. ``None`` is no limit. A child at one of its limits is skipped
    without a request (attempt reason ``at_capacity``).
    """

    rpm: int | None
    tpm: int | None
    max_concurrency: int | None
    window: float

    def __init__(
        self,
        *,
        rpm: int | None = None,
        tpm: int | None = None,
        max_concurrency: int | None = None,
        window: float | timedelta = 60.0,
    ) -> None:
        object.__setattr__(self, "rpm", _count("Limits.rpm", rpm))
        object.__setattr__(self, "tpm", _count("Limits.tpm", tpm))
        object.__setattr__(
            self, "max_concurrency", _count("Limits.max_concurrency", max_concurrency)
        )
        object.__setattr__(self, "window", seconds(window, "Limits.window"))


@dataclass(frozen=True, slots=True, init=False)
class Budget:
    """At most ``usd`` dollars per calendar ``per`` (UTC ``minute``, ``hour``, ``day``,
    ``month``), counted from every billed attempt. For an agent or a provider; a
    spent budget skips the provider (reason ``budget``) or ends a run
    before any request (:class:`~orchestrator.errors.BudgetExceeded`)."""

    usd: float
    per: Period

    def __init__(self, *, usd: float, per: Period = "day") -> None:
        ok = isinstance(usd, int | float) and not isinstance(usd, bool)
        if not ok or not math.isfinite(usd) or usd <= 0:
            raise ValueError(f"Budget.usd={usd!r} must be a finite number of dollars > 0")
        if per not in PERIODS:
            raise ValueError(f"Budget.per={per!r} must be one of {', '.join(PERIODS)}")
        object.__setattr__(self, "usd", float(usd))
        object.__setattr__(self, "per", per)


def period_bounds(per: Period, wall: float) -> tuple[int, float]:
    """The UTC period ``wall`` (epoch seconds) falls in: its number and its end (epoch)."""
    size = _FIXED.get(per)
    if size is not None:
        index = int(wall // size)
        return index, float((index + 1) * size)
    year, month = time.gmtime(wall)[:2]
    after = (year + 1, 1) if month == 12 else (year, month + 1)
    return year * 12 + month, float(calendar.timegm((*after, 1, 0, 0, 0)))


def checked(limits: object, budget: object, owner: str) -> tuple[Limits | None, Budget | None]:
    """A provider's ``limits=`` and ``budget=`` keywords, type-checked (``TypeError``)."""
    if limits is not None and not isinstance(limits, Limits):
        raise TypeError(
            f"{owner}.limits: expected Limits(rpm=..., ...), got {type(limits).__name__}"
        )
    if budget is not None and not isinstance(budget, Budget):
        raise TypeError(
            f"{owner}.budget: expected Budget(usd=..., per=...), got {type(budget).__name__}"
        )
    return limits, budget
