"""Health value objects: circuit and budget settings, ``admit``'s answer, ``snapshot``'s view.

Also the :class:`HealthStore` protocol the engine calls on its hot path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal, Protocol, runtime_checkable

from orchestrator.units import seconds

__all__ = [
    "Admission",
    "CircuitBreaker",
    "CircuitStateName",
    "HealthStore",
    "ProviderHealth",
    "RetryBudget",
]

CircuitStateName = Literal["closed", "open", "half_open"]


def _count(owner: str, name: str, value: object, *, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ValueError(f"{owner}: {name}={value!r} must be an integer >= {minimum}")
    return value


def _fraction(owner: str, name: str, value: object, *, low_open: bool) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    number = float(value) if ok else math.nan  # type: ignore[arg-type]
    in_range = (0.0 < number <= 1.0) if low_open else (0.0 <= number <= 1.0)
    if not in_range:
        allowed = "0 < x <= 1" if low_open else "0 <= x <= 1"
        raise ValueError(f"{owner}: {name}={value!r} must be a number with {allowed}")
    return number


@dataclass(frozen=True, slots=True, init=False)
class CircuitBreaker:
    """When a provider's circuit opens and for how long.

    By default the circuit opens on evidence, never on coincidence: when at
    least ``failure_ratio`` (default 0.5) of the calls recorded over the last
    ``window`` seconds (default 30) failed, counted only once that window holds
    at least ``min_calls`` calls (default 100, as Resilience4j and Polly). A
    ratio over many calls is robust to concurrency: a provider failing 30% of
    calls at random fails about 30% of any large window, whereas "3 failures in
    a row" happens every few dozen completions and would trip every circuit at
    once. The minimum matters as much as the ratio: a 30%-flaky provider reaches
    50% failures somewhere in a fresh window with 7% chance when counting from
    20 calls, 0.3% from 50, and 0.005% from 100. The price: a provider needs 100
    recorded calls within ``window`` before its circuit can open (a dead one is
    skipped after about 100 failed attempts; below ~3 attempts a second the
    ratio never opens it, and the chain just falls over as without health).

    ``failure_threshold`` (off by default, ``None``) adds the classic rule: that
    many consecutive failures, in the order calls complete, a success resetting
    the count. It reacts faster at low traffic, but under concurrency it trips on
    random failures (at 100 in flight and 30% failures, 3 in a row is near
    certain every second); turn it on only for sequential use.

    The circuit stays open for ``cooldown`` seconds (default 30), then one
    half-open probe is let through: success closes it, failure re-opens it. A
    ``Retry-After`` longer than the engine will wait (the child's
    ``RetryPolicy.max_retry_after``) keeps it open that long instead, but never
    longer than ``max_cooldown`` (default 600 s): a hostile or mistaken
    ``Retry-After: 99999`` must not close a provider for a day. Times accept
    seconds or ``datetime.timedelta``.
    """

    failure_threshold: int | None
    failure_ratio: float | None
    window: float
    min_calls: int
    cooldown: float
    max_cooldown: float

    def __init__(
        self,
        *,
        failure_threshold: int | None = None,
        failure_ratio: float | None = 0.5,
        window: float | timedelta = 30.0,
        min_calls: int = 100,
        cooldown: float | timedelta = 30.0,
        max_cooldown: float | timedelta = 600.0,
    ) -> None:
        owner = "CircuitBreaker"
        threshold = None
        if failure_threshold is not None:
            threshold = _count(owner, "failure_threshold", failure_threshold, minimum=1)
        ratio = None
        if failure_ratio is not None:
            ratio = _fraction(owner, "failure_ratio", failure_ratio, low_open=True)
        if threshold is None and ratio is None:
            raise ValueError(
                f"{owner}: failure_threshold=None and failure_ratio=None would never open "
                "the circuit; set at least one of them"
            )
        object.__setattr__(self, "failure_threshold", threshold)
        object.__setattr__(self, "failure_ratio", ratio)
        object.__setattr__(self, "window", seconds(window, f"{owner}.window"))
        object.__setattr__(self, "min_calls", _count(owner, "min_calls", min_calls, minimum=1))
        object.__setattr__(self, "cooldown", seconds(cooldown, f"{owner}.cooldown"))
        longest = seconds(max_cooldown, f"{owner}.max_cooldown")
        if longest < self.cooldown:
            raise ValueError(
                f"{owner}: max_cooldown={max_cooldown!r} must be >= cooldown={cooldown!r}"
            )
        object.__setattr__(self, "max_cooldown", longest)

    def hold_for(self, retry_after: float | None) -> float:
        """How long a ``Retry-After`` holds the circuit open: capped at ``max_cooldown``."""
        if retry_after is None or not retry_after > 0:  # also NaN
            return 0.0
        return min(retry_after, self.max_cooldown)


@dataclass(frozen=True, slots=True, init=False)
class RetryBudget:
    """How many retries the whole process (or fleet, with Redis) may make.

    A retry is allowed when, counting the last ``window`` seconds, the retries
    already granted plus this one stay within::

        ratio * requests_in_window + min_per_second * window

    where a request is one run (the first attempt of a call, reported with
    ``record_request``). The second term is a floor so that a quiet process can
    still retry (the Finagle / gRPC retry-budget design). Defaults: 50% of the
    requests of the last 10 s plus 10 retries per second.

    Why 50% and not Finagle's 20%: here an empty budget does not just fail the
    call, it hands it to the next provider with fewer tries, so a budget below
    what a flaky-but-up provider needs makes availability worse. A provider
    failing a fraction ``f`` of calls at random needs ``f + f**2 + ...`` retries
    per call (0.42 at 30%, with ``max_retries=3``), at most ``f / (1 - f)``: 50%
    covers every provider failing up to a third of its calls, while a storm
    (a provider failing everything before its circuit opens) is still capped at
    1.5x the calls instead of ``1 + max_retries`` times.
    """

    ratio: float
    window: float
    min_per_second: float

    def __init__(
        self,
        *,
        ratio: float = 0.5,
        window: float | timedelta = 10.0,
        min_per_second: float = 10.0,
    ) -> None:
        owner = "RetryBudget"
        object.__setattr__(self, "ratio", _fraction(owner, "ratio", ratio, low_open=False))
        object.__setattr__(self, "window", seconds(window, f"{owner}.window"))
        if (
            not isinstance(min_per_second, int | float)
            or isinstance(min_per_second, bool)
            or not math.isfinite(min_per_second)
            or min_per_second < 0
        ):
            raise ValueError(
                f"{owner}: min_per_second={min_per_second!r} must be a finite number >= 0"
            )
        object.__setattr__(self, "min_per_second", float(min_per_second))

    def allowance(self, requests_in_window: int) -> float:
        """Retries allowed over one window given that many requests in it."""
        return self.ratio * requests_in_window + self.min_per_second * self.window


@dataclass(frozen=True, slots=True)
class Admission:
    """The store's answer to "may I call this provider now?".

    ``allowed`` False means skip the provider (its circuit is open). ``probe``
    True means this call is the single half-open probe: record its outcome.
    ``open_until`` is the end of the cooldown (epoch seconds) while open.
    """

    allowed: bool
    probe: bool
    state: CircuitStateName
    open_until: float | None


@dataclass(frozen=True, slots=True)
class ProviderHealth:
    """One provider's circuit as seen by this store, for ``agent.health()`` and dashboards.

    ``open_until`` is epoch seconds while the circuit is open, else ``None``;
    ``recent_failures`` / ``recent_calls`` count the breaker's sliding window.
    """

    provider: str
    state: CircuitStateName
    open_until: float | None
    consecutive_failures: int
    recent_failures: int
    recent_calls: int


@runtime_checkable
class HealthStore(Protocol):
    """Where circuits and the retry budget live; the engine calls it on every call.

    Every method but :meth:`aclose` is synchronous and cheap (no I/O): a shared
    store answers from a local mirror and syncs in the background. The store
    records what it is told; the engine decides what counts (only transient and
    unusable failures are recorded; guardrails, invalid requests, cancellations
    and hook errors never are).
    """

    def admit(self, provider: str) -> Admission:
        """May ``provider`` be called now? Grants at most one half-open probe per cooldown."""
        ...

    def record_success(self, provider: str) -> None:
        """A call to ``provider`` succeeded; closes a half-open circuit."""
        ...

    def record_failure(self, provider: str, *, retry_after: float | None = None) -> None:
        """A call to ``provider`` failed in a way that counts; may open the circuit."""
        ...

    def record_request(self) -> None:
        """One run started (its first attempt): feeds the retry budget."""
        ...

    def last_resort(self, provider: str) -> bool:
        """Every circuit a run could use is open: may it call ``provider`` anyway?

        True for at most one call per provider at a time (per process, for a
        shared store); pair every True with :meth:`end_last_resort`. Bounds the
        traffic an all-down chain sends to the open circuits it still tries.
        """
        ...

    def end_last_resort(self, provider: str, *, succeeded: bool) -> None:
        """The last-resort call ended: frees its slot; a success closes the circuit."""
        ...

    def try_acquire_retry(self) -> bool:
        """Take one retry from the budget; ``False`` when it is empty (fall over instead)."""
        ...

    def snapshot(self, provider: str) -> ProviderHealth:
        """The provider's current circuit state and counters."""
        ...

    async def aclose(self) -> None:
        """Release background tasks and connections (a no-op for the memory store)."""
        ...
