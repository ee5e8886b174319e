"""Health value objects: circuit and budget settings, ``admit``'s answer, ``snapshot``'s view.

Also the :class:`HealthStore` protocol the engine calls on its hot path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Literal, Protocol, runtime_checkable

from orchestrator.units import seconds

__all__ = [
    "Admission",
    "CircuitBreaker",
    "CircuitStateName",
    "HealthStore",
    "ProviderHealth",
    "RetryBudget",
    "store_from",
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

    The breaker judges a provider by its calls, not its attempts. One call is
    the first attempt on a child plus its retries in the same run: it failed
    when it was left with a counted failure (every try spent, or the retries
    cut short), it succeeded when it answered. A provider failing half its
    attempts at random answers 94% of its calls with ``max_retries=3``: it is
    flaky, not down, and the engine tells the store one outcome per call so it
    is never read as down. (With ``max_retries=0`` a call is one attempt.)

    By default the circuit opens on evidence, never on coincidence: when at
    least ``failure_ratio`` (default 0.5) of the calls recorded over the last
    ``window`` seconds (default 30) failed, counted only once that window holds
    at least ``min_calls`` calls (default 100, as Resilience4j and Polly). A
    ratio over many calls is robust to concurrency: a provider failing 30% of
    calls at random fails about 30% of any large window, whereas "3 failures in
    a row" happens every few dozen completions and would trip every circuit at
    once. The minimum matters as much as the ratio. The chance that a provider
    whose attempts fail at random (rate ``f``) reaches 50% failed calls somewhere
    in a fresh window of 3,000 calls, by ``min_calls`` (a call fails with
    probability ``f ** (1 + max_retries)``)::

        f    max_retries   min_calls=20   50         100
        30%  0             6.5%           0.3%       0.003%
        30%  1..3          3e-6 or less   1e-13      6e-26
        40%  0             37%            16%        4.4%
        40%  1             0.05%          3e-8       4e-15
        50%  1             1.8%           0.02%      9e-8
        50%  2             6e-5           2e-10      1e-19
        50%  3             1e-7           2e-17      3e-33

    With retries a smaller minimum would be safe, but with ``max_retries=0`` a
    call is one attempt and 20 would trip a 30%-flaky provider in one fresh
    window in 15, so the default stays 100. Under concurrency it costs little:
    the calls in flight when a dead provider starts failing make their attempts
    whatever the minimum (measured at 200 in flight and ``max_retries=3``: about
    410 requests to a dead provider with 20, 430 with 100), and stop at their
    next retry once it opens. The price is at low traffic: a provider needs
    100 recorded calls within ``window`` before its circuit can open (below
    ~3 calls a second the ratio never opens it, and the chain just falls over
    as without health). A provider failing half its calls or more
    (``f ** (1 + max_retries) >= failure_ratio``, e.g. 50% with ``max_retries=0``)
    is treated as down: that is what the ratio means.

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
    failing a fraction ``f`` of attempts at random needs ``f + f**2 + ...``
    retries per call (0.42 at 30%, with ``max_retries=3``), at most
    ``f / (1 - f)``: 50% covers every provider failing up to a third of its
    attempts, whatever ``max_retries`` (about 34% with ``max_retries=3``, where
    ``f + f**2 + f**3`` reaches 0.5), while a storm (a provider failing
    everything before its circuit opens) is still capped at 1.5x the calls
    instead of ``1 + max_retries`` times. Only retries spend it: a child's first
    attempt (also after a fall-over) never takes a token nor waits for one.

    Beyond that the budget is what makes a store fail more calls than none, by
    design (it is the guard against retry storms): measured on one frozen window
    with two providers, ``max_retries=3``, 100 in flight and 5,000 calls, 40%
    flaky fails 3-5 calls without a store and 107-147 with the default budget,
    50% flaky 18-22 and 486-562; above ~1/3 the ``min_per_second`` floor covers
    only low traffic. Raise ``ratio`` (1.0 covers up to half) for providers that
    flaky: with ``ratio=1.0`` both cases fail exactly as many calls as without
    a store.
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
        """A call to ``provider`` succeeded; closes a half-open circuit.

        A call is a first attempt and its retries on that provider in one run:
        the engine reports it once, when it ends, never once per attempt.
        """
        ...

    def record_failure(self, provider: str, *, retry_after: float | None = None) -> None:
        """A call to ``provider`` ended with a failure that counts; may open the circuit.

        Once per call (after its retries), as :meth:`record_success`.
        ``retry_after`` is set only for a ``Retry-After`` the engine would not
        wait for; it opens the circuit at once (capped at ``max_cooldown``).
        """
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


#: What the engine calls on a store (a store written for an older protocol fails here, not
#: in the rare "every circuit open" path).
_STORE_METHODS = (
    "admit",
    "record_success",
    "record_failure",
    "record_request",
    "try_acquire_retry",
    "snapshot",
    "last_resort",
    "end_last_resort",
)


def store_from(health: Any) -> HealthStore:
    """The store a ``health=`` argument names: ``True`` is the process's memory store;
    anything else must have every method the engine calls (``TypeError`` naming the first
    missing one)."""
    if health is True:
        from orchestrator.health import default_health_store

        return default_health_store()
    for method in _STORE_METHODS:
        if not callable(getattr(health, method, None)):
            raise TypeError(f"health: {type(health).__name__} is not a HealthStore (no {method})")
    store: HealthStore = health
    return store
