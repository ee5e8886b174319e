"""Unusable here: this provider cannot serve this request now (credentials, model, quota,
window, tools), or the chain skipped it without a request (circuit, capacity, budget):
the next child is asked at once, no retry."""

from __future__ import annotations

from typing import Any

from orchestrator.errors.base import ProviderError

__all__ = [
    "AtCapacity",
    "AuthenticationFailed",
    "BudgetSpent",
    "CircuitOpen",
    "ContextWindowExceeded",
    "ModelNotFound",
    "NotInstalled",
    "PrefillUnsupported",
    "QuotaExhausted",
    "ToolsUnsupported",
    "UnusableError",
]


class UnusableError(ProviderError):
    """This provider cannot serve this request now: hand over at once, no retry."""

    kind = "unusable"
    reason = "unusable"


class AuthenticationFailed(UnusableError):
    """401/403: missing, wrong or revoked credentials."""


class ModelNotFound(UnusableError):
    """404: the model (or deployment) does not exist here."""


class QuotaExhausted(UnusableError):
    """Quota or billing exhausted: retrying will not help before someone pays."""


class ContextWindowExceeded(UnusableError):
    """The prompt is too long for this model; a later model may have a bigger window.

    Raised by a provider (HTTP 413, a context-length message) or by the engine
    before sending, when the request cannot fit the model's known window. Not
    counted for health: the request is too big, the provider is fine.
    """

    counts_for_health = False
    reason = "context_window"


class ToolsUnsupported(UnusableError):
    """The request carries tools and this provider cannot take them: skipped without a
    request (the next child is asked). Not counted for health."""

    counts_for_health = False
    reason = "unsupported"


class PrefillUnsupported(UnusableError):
    """The model refuses a request ending in an assistant message (a prefill), as recent
    Claude models do: a continuation sent there as a prefill is handed over at once, so
    the run's error still starts with the failure that needed the continuation. Not
    counted for health: the request's shape, not the provider, failed."""

    counts_for_health = False
    reason = "unsupported"


class NotInstalled(UnusableError):
    """A command-line agent's binary is not on PATH."""


class CircuitOpen(UnusableError):
    """The provider was skipped without a request: its circuit breaker is open."""

    counts_for_health = False  # no request was made: nothing new about the provider
    reason = "circuit_open"


class AtCapacity(UnusableError):
    """Skipped without a request: the provider is at one of its own ``Limits`` (rpm, tpm,
    max_concurrency); ``retry_after`` is how long until it frees (None: when a call in
    flight ends). The next child is tried at once; when every child is at capacity the
    run raises :class:`RateLimited` with the soonest. Not counted: nothing failed."""

    counts_for_health = False
    reason = "at_capacity"

    def __init__(
        self, message: str = "", *, provider: str | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, provider=provider)
        self.retry_after = retry_after

    def _kwargs(self) -> dict[str, Any]:
        return {"provider": self.provider, "retry_after": self.retry_after}


class BudgetSpent(UnusableError):
    """Skipped without a request: the provider's own ``Budget`` is spent for its period;
    the next child is tried. Not counted for health: the provider is fine."""

    counts_for_health = False
    reason = "budget"
