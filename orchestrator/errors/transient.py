"""Transient failures: the provider may answer next time, so it is retried per policy,
then the next child is asked."""

from __future__ import annotations

from typing import Any

from orchestrator.errors.base import ProviderError

__all__ = [
    "ConnectionFailed",
    "FirstTokenTimeout",
    "Overloaded",
    "ProviderTimeout",
    "RateLimited",
    "ServerError",
    "StreamInterrupted",
    "StreamStalled",
    "TransientError",
]


class TransientError(ProviderError):
    """A failure that may pass: retried on the same provider, then handed over."""

    kind = "transient"
    retried = True


class ProviderTimeout(TransientError, TimeoutError):
    """An attempt or the whole run hit its deadline (imposed by the engine or the transport).
    Retried last: a provider silent for a whole attempt is likely to stay silent."""

    reason = "timeout"
    retried_last = True


class FirstTokenTimeout(ProviderTimeout):
    """No content (a text or tool-call delta; keep-alives do not count) arrived within the
    provider's ``first_token_timeout``: the provider is stalled, not slow to finish."""


class StreamStalled(ProviderTimeout):
    """Content had started, then the gap before the next piece passed ``idle_timeout``."""


class ConnectionFailed(TransientError):
    """The connection could not be made or broke mid-request."""


class ServerError(TransientError):
    """The provider answered 408, 409 or 5xx: its problem (a conflict or lock for 409), likely
    to pass; the vendors' own SDKs retry these too."""


class Overloaded(TransientError):
    """The provider says it is overloaded (529, Anthropic ``overloaded_error``)."""

    reason = "overloaded"


class RateLimited(TransientError):
    """HTTP 429 or a rate-limit message; ``retry_after`` (seconds) when the provider said.

    The engine waits exactly ``retry_after`` when it fits ``max_retry_after``;
    a longer one hands over at once.
    """

    reason = "rate_limited"

    def __init__(
        self,
        message: str = "",
        *,
        provider: str | None = None,
        status: int | None = 429,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after

    def _kwargs(self) -> dict[str, Any]:
        return {**super()._kwargs(), "retry_after": self.retry_after}


class StreamInterrupted(TransientError):
    """A stream ended (or broke) without its terminator: never a silent truncation."""
