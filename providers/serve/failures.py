"""What the gateway answers when a run fails: one decision per error, for both wire formats.

:func:`failure_of` reads an exception from the engine (or from parsing the
client's request) and returns a :class:`Failure`: the HTTP status, a kind both
wire formats know how to spell, a short message and, for rate limits, a
``Retry-After``. Messages name providers and error types only: never request
text, an upstream body or a key (the taxonomy's messages are safe, but an
upstream 400's text is the upstream's and is not repeated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from orchestrator.errors import (
    BudgetExceeded,
    ContextWindowExceeded,
    FallbackError,
    GuardrailTriggered,
    HookError,
    InvalidRequest,
    RateLimited,
)

__all__ = ["BadRequest", "Failure", "failure_of"]

#: How long a client is told to wait when no provider said (seconds).
DEFAULT_RETRY_AFTER = 1


class BadRequest(ValueError):
    """The client's request cannot be read: 400 (or ``status``) in the client's error format."""

    def __init__(self, message: str, *, status: int = 400, kind: str = "invalid_request") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


@dataclass(frozen=True, slots=True)
class Failure:
    """A failed request as the gateway answers it.

    ``kind`` is one of: invalid_request, authentication, not_found, too_large,
    rate_limited, insufficient_quota (a gateway key's budget), overloaded, unavailable,
    content_filter, context_window, internal.
    """

    status: int
    kind: str
    message: str
    retry_after: int | None = None


def _retry_after(errors: list[RateLimited]) -> int:
    """The shortest wait any provider asked for (whole seconds, at least 1)."""
    waits = [e.retry_after for e in errors if e.retry_after is not None]
    return max(1, math.ceil(min(waits))) if waits else DEFAULT_RETRY_AFTER


def _summary(error: FallbackError) -> str:
    """Who failed and how: each attempt's agent, error type and HTTP status (repeats
    collapsed), never the upstream's own words, which may hold its URL or the prompt."""
    runs: list[tuple[str, int]] = []
    for attempt in error.attempts:
        status = getattr(attempt.error, "status", None)
        label = f"{attempt.agent}: {attempt.kind_label()}"
        label += f" (HTTP {status})" if isinstance(status, int) else ""
        if runs and runs[-1][0] == label:
            runs[-1] = (label, runs[-1][1] + 1)
        else:
            runs.append((label, 1))
    shown = "; ".join(label + (f" x{n}" if n > 1 else "") for label, n in runs)
    return f"every provider failed ({len(error.attempts)} attempts: {shown})"


def _exhausted(error: FallbackError) -> Failure:
    errors = [a.error for a in error.attempts if a.error is not None]
    if errors and all(isinstance(e, RateLimited) for e in errors):
        limited = [e for e in errors if isinstance(e, RateLimited)]
        return Failure(
            429, "rate_limited", f"rate limited: {_summary(error)}", _retry_after(limited)
        )
    if errors and all(isinstance(e, ContextWindowExceeded) for e in errors):
        return Failure(400, "context_window", f"the prompt fits no model: {_summary(error)}")
    return Failure(503, "unavailable", _summary(error), DEFAULT_RETRY_AFTER)


def failure_of(error: BaseException) -> Failure:
    """The answer for ``error``: the one place the gateway decides a failed request's status."""
    if isinstance(error, BadRequest):
        return Failure(error.status, error.kind, str(error))
    if isinstance(error, FallbackError):
        return _exhausted(error)
    if isinstance(error, RateLimited):  # every child at its limit: wait for the soonest
        return Failure(429, "rate_limited", "every provider is at capacity", _retry_after([error]))
    if isinstance(error, BudgetExceeded):
        return Failure(429, "rate_limited", f"the budget is spent ({error.provider})")
    if isinstance(error, GuardrailTriggered):
        return Failure(400, "content_filter", f"refused by a content policy ({error.provider})")
    if isinstance(error, InvalidRequest):
        status = f" (HTTP {error.status})" if error.status is not None else ""
        return Failure(
            400,
            "invalid_request",
            f"provider {error.provider} refused the request as invalid{status}",
        )
    if isinstance(error, HookError):
        return Failure(500, "internal", f"a hook of the chain failed: {error.hook}")
    return Failure(500, "internal", f"the gateway failed: {type(error).__name__}")
