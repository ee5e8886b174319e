"""RetryPolicy: how often and how long to wait before retrying one provider.

A policy is a frozen value compiled to a tenacity ``AsyncRetrying`` only when
a retry is actually needed: a first attempt that succeeds never pays for it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from tenacity import RetryCallState, Retrying
from tenacity.wait import wait_base, wait_exponential, wait_fixed, wait_none

from orchestrator.errors import RateLimited
from orchestrator.units import seconds

__all__ = ["STRATEGIES", "Jitter", "RetryPolicy", "Strategy", "retry_policy_or_none"]

STRATEGIES = ("exponential", "linear", "none")
Strategy = Literal["exponential", "linear", "none"]
Jitter = Literal["full"]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How one provider is retried before the chain falls over to the next.

    Delay before retry *n* (n = 1, 2, ...): ``exponential`` waits
    ``delay * 2**(n-1)``; ``linear`` waits ``delay`` every time; ``none`` does not
    wait. ``max_delay`` caps it. ``jitter="full"`` draws uniformly in ``[0, delay]``
    (off by default so the schedule is exactly as documented). A ``RateLimited``
    error whose ``retry_after`` is at most ``max_retry_after`` waits exactly
    ``retry_after`` instead (whatever the strategy, when ``respect_retry_after``);
    a longer one is not retried: the chain falls over at once.

    ``retry_timeouts_last`` (on by default): an error whose class is ``retried_last``
    (a timeout) is retried only after the later children of the chain failed, so a
    silent provider does not keep the caller waiting through its retries while a
    fallback could answer. Off: retried at once, like other transient errors.
    ``probe_when_down`` (on by default): once a call spent every retry on a provider,
    its next calls give it one attempt each, no retries, until one succeeds
    (:class:`~orchestrator.engine.children.Down`): an outage is served by the next
    child without hammering the provider, and its recovery is seen at the next call.
    """

    max_retries: int = 2
    strategy: Strategy = "exponential"
    delay: float = 1.0
    max_delay: float = 60.0
    jitter: Jitter | None = None
    respect_retry_after: bool = True
    max_retry_after: float = 30.0
    retry_timeouts_last: bool = True
    probe_when_down: bool = True

    def __init__(
        self,
        *,
        max_retries: int = 2,
        strategy: Strategy = "exponential",
        delay: float | timedelta = 1.0,
        max_delay: float | timedelta = 60.0,
        jitter: Jitter | None = None,
        respect_retry_after: bool = True,
        max_retry_after: float | timedelta = 30.0,
        retry_timeouts_last: bool = True,
        probe_when_down: bool = True,
    ) -> None:
        if isinstance(max_retries, bool) or not isinstance(max_retries, int):
            raise TypeError(
                f"max_retries: expected an int >= 0, got {type(max_retries).__name__} "
                f"{max_retries!r}"
            )
        if max_retries < 0:
            raise ValueError(f"max_retries: {max_retries!r} is negative; use an int >= 0")
        if strategy not in STRATEGIES:
            raise ValueError(
                f"retry_strategy (RetryPolicy.strategy): {strategy!r} is not one of "
                f"{', '.join(STRATEGIES)}"
            )
        if jitter not in (None, "full"):
            raise ValueError(f"jitter: {jitter!r} is not allowed; use None or 'full'")
        s = object.__setattr__
        s(self, "max_retries", max_retries)
        s(self, "strategy", strategy)
        s(self, "delay", seconds(delay, "retry_delay (RetryPolicy.delay)", allow_zero=True))
        s(self, "max_delay", seconds(max_delay, "max_delay", allow_zero=True))
        s(self, "jitter", jitter)
        s(self, "respect_retry_after", bool(respect_retry_after))
        s(self, "max_retry_after", seconds(max_retry_after, "max_retry_after", allow_zero=True))
        s(self, "retry_timeouts_last", bool(retry_timeouts_last))
        s(self, "probe_when_down", bool(probe_when_down))

    def backoff(self, retry_number: int, rng: random.Random | None = None) -> float:
        """The computed delay before retry ``retry_number`` (1-based), ignoring Retry-After.

        Read off the same tenacity wait the engine sleeps by, so the two never differ.
        """
        state = RetryCallState(Retrying(), None, (), {})
        state.attempt_number = retry_number
        return float(self._base_wait(rng)(state))

    def retry_after_of(self, error: BaseException | None) -> float | None:
        """The server-requested wait for ``error`` if this policy honours it, else ``None``."""
        if (
            self.respect_retry_after
            and isinstance(error, RateLimited)
            and error.retry_after is not None
        ):
            return max(0.0, error.retry_after)
        return None

    def allows_retry_after(self, error: BaseException | None) -> bool:
        """False when ``error`` asks to wait longer than ``max_retry_after``: fall over."""
        wait = self.retry_after_of(error)
        return wait is None or wait <= self.max_retry_after

    def wait_strategy(self, rng: random.Random | None = None) -> wait_base:
        """The tenacity wait for this policy, with Retry-After honoured.

        ``rng`` draws the jitter (the ``random`` module's own generator by default).
        """
        return _RetryAfter(self._base_wait(rng), self)

    def _base_wait(self, rng: random.Random | None) -> wait_base:
        """The strategy's own wait: capped at ``max_delay``, jittered if asked."""
        base: wait_base
        if self.strategy == "none":
            base = wait_none()
        elif self.strategy == "linear":
            base = wait_fixed(self.delay)
        else:
            base = wait_exponential(multiplier=self.delay, exp_base=2, min=0, max=self.max_delay)
        if self.strategy != "none":
            # wait_fixed has no cap of its own; clamp every strategy at max_delay.
            base = _Capped(base, self.max_delay)
        if self.jitter == "full":
            base = _FullJitter(base, (rng or random).uniform)
        return base

    def __repr__(self) -> str:
        return (
            f"RetryPolicy(max_retries={self.max_retries}, strategy={self.strategy!r}, "
            f"delay={self.delay}, max_delay={self.max_delay}, jitter={self.jitter!r})"
        )


def retry_policy_or_none(value: object, owner: str) -> RetryPolicy | None:
    """A provider's ``retry_policy=`` checked (``TypeError`` naming ``owner``): the engine
    retries that provider by it instead of the agent's policy."""
    if value is None or isinstance(value, RetryPolicy):
        return value
    raise TypeError(
        f"{owner}.retry_policy: expected RetryPolicy or None, got {type(value).__name__}; "
        "write retry_policy=RetryPolicy(max_retries=..., ...)"
    )


class _Capped(wait_base):
    def __init__(self, inner: wait_base, cap: float) -> None:
        self.inner, self.cap = inner, cap

    def __call__(self, retry_state: RetryCallState) -> float:
        return min(float(self.inner(retry_state)), self.cap)


class _FullJitter(wait_base):
    """Uniform in [0, inner delay], drawn from an injected random source."""

    def __init__(self, inner: wait_base, uniform: Callable[[float, float], float]) -> None:
        self.inner, self.uniform = inner, uniform

    def __call__(self, retry_state: RetryCallState) -> float:
        return self.uniform(0.0, float(self.inner(retry_state)))


class _RetryAfter(wait_base):
    """Wait exactly the server's Retry-After when the last error carried one."""

    def __init__(self, inner: wait_base, policy: RetryPolicy) -> None:
        self.inner, self.policy = inner, policy

    def __call__(self, retry_state: RetryCallState) -> float:
        outcome = retry_state.outcome
        error = outcome.exception() if outcome is not None and outcome.failed else None
        wait = self.policy.retry_after_of(error)
        return wait if wait is not None else float(self.inner(retry_state))
