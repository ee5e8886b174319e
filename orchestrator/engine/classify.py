"""Which failures are retried on the same child, handed over, or raised at once."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, cast

from orchestrator.errors import (
    CircuitOpen,
    FallbackError,
    GuardrailTriggered,
    HookError,
    InvalidOutput,
    Overloaded,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    Rejected,
    ResponseTooLarge,
    TerminalError,
    TransientError,
    UnusableError,
)

__all__ = ["ErrorMatcher", "Classifier", "matcher", "reason_of"]

ErrorMatcher = (
    type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]
)


def matcher(spec: ErrorMatcher | None, field: str) -> Callable[[BaseException], bool] | None:
    """Turn an exception type, a tuple of types or a predicate into a predicate."""
    if spec is None:
        return None
    if inspect.isclass(spec) and issubclass(spec, BaseException):
        cls = spec
        return lambda e: isinstance(e, cls)
    if isinstance(spec, tuple):
        for item in spec:
            if not (inspect.isclass(item) and issubclass(item, BaseException)):
                raise TypeError(f"{field}: tuple item {item!r} is not an exception type")
        types = spec
        return lambda e: isinstance(e, types)
    if callable(spec):
        return cast(Callable[[BaseException], bool], spec)
    raise TypeError(f"{field}: {spec!r} is not an exception type, a tuple of them, or a predicate")


class Classifier:
    """Decides, for one agent, what a failure means.

    Defaults follow the taxonomy: transient errors, invalid output (but not
    ``Rejected`` or ``ResponseTooLarge``) and any exception outside the taxonomy
    are retried; every non-terminal error is
    handed over when retries end; terminal errors, hook errors and nested
    ``FallbackError`` are never retried. ``retry_on`` replaces the retry set,
    ``fallback_on`` replaces the hand-over set (an error in neither is raised
    as is). A ``HookError`` always stops the run.
    """

    __slots__ = ("_fallback_on", "_retry_on", "escalate_on_guardrail")

    def __init__(
        self,
        *,
        retry_on: ErrorMatcher | None = None,
        fallback_on: ErrorMatcher | None = None,
        escalate_on_guardrail: bool = False,
    ) -> None:
        self._retry_on = matcher(retry_on, "retry_on")
        self._fallback_on = matcher(fallback_on, "fallback_on")
        self.escalate_on_guardrail = escalate_on_guardrail

    def retryable(self, error: BaseException) -> bool:
        """Whether ``error`` may be retried on the same child (policy permitting)."""
        # Cancellation (any BaseException), hook errors and exhausted nested chains are
        # never retried, whatever a user predicate says.
        if not isinstance(error, Exception) or isinstance(error, HookError | FallbackError):
            return False
        if self._retry_on is not None:
            return bool(self._retry_on(error))
        if isinstance(error, ProviderError):
            return isinstance(error, TransientError | InvalidOutput) and not isinstance(
                error, Rejected | ResponseTooLarge
            )
        return True

    def hands_over(self, error: BaseException) -> bool:
        """Whether ``error`` (not retried, or retries spent) passes the call to the next child."""
        if isinstance(error, HookError) or not isinstance(error, Exception):
            return False
        if isinstance(error, FallbackError):
            return True  # a nested chain that is exhausted always hands over
        if self._fallback_on is not None:
            return bool(self._fallback_on(error))
        if isinstance(error, GuardrailTriggered):
            return self.escalate_on_guardrail
        return not isinstance(error, TerminalError)


def reason_of(error: BaseException | None, default: str = "error") -> str:
    """The documented hand-over reason for an error (see ``orchestrator.REASONS``)."""
    if error is None:
        return default
    if isinstance(error, RateLimited):
        return "rate_limited"
    if isinstance(error, Overloaded):
        return "overloaded"
    if isinstance(error, ProviderTimeout | TimeoutError):
        return "timeout"
    if isinstance(error, Rejected):
        return "rejected"
    if isinstance(error, InvalidOutput):
        return "invalid_output"
    if isinstance(error, CircuitOpen):
        return "circuit_open"
    if isinstance(error, UnusableError):
        return "unusable"
    if isinstance(error, TerminalError):
        return "terminal"
    return default


def describe(error: BaseException) -> dict[str, Any]:
    """A safe summary of an error (type and kind only), for hand-over payloads."""
    return {"error_type": type(error).__name__, "error_kind": getattr(error, "kind", "transient")}
