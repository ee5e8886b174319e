"""Terminal failures: the request, its content or the chain's budget is at fault, so the
run stops: no retry, no other child."""

from __future__ import annotations

from orchestrator.errors.base import ProviderError

__all__ = ["BudgetExceeded", "GuardrailTriggered", "InvalidRequest", "TerminalError"]


class TerminalError(ProviderError):
    """Stop everything: no retry, no fallback; raised to the caller as itself."""

    kind = "terminal"
    hands_over = False
    counts_for_health = False  # the request or its content is at fault, not the provider
    reason = "terminal"


class GuardrailTriggered(TerminalError):
    """A content-policy or safety refusal: another vendor is not asked unless opted in."""


class InvalidRequest(TerminalError):
    """The request itself is malformed (HTTP 400, 422): every provider would refuse it."""


class BudgetExceeded(TerminalError):
    """The chain's budget (``FallbackAgent(budget=...)``) is spent for
    its period: raised before any request, never retried, never escalated to a parent."""

    overridable = False
    reason = "budget"
