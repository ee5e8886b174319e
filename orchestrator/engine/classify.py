"""Which failures are retried on the same child, handed over, or raised at once."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import cast

from orchestrator.errors import GuardrailTriggered, describe, meaning

__all__ = ["ErrorMatcher", "Classifier", "describe", "matcher", "reason_of"]

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

    Defaults are the taxonomy's own: each class's ``retried`` and ``hands_over``
    (see :mod:`orchestrator.errors`). ``retry_on`` replaces the retry set,
    ``fallback_on`` replaces the hand-over set (an error in neither is raised
    as is), except for the classes that are not ``overridable``: a ``HookError``
    always stops the run, an exhausted nested chain always hands over, neither
    is retried. ``escalate_on_guardrail`` hands a guardrail refusal over.
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
        # Cancellation, hook errors and exhausted nested chains are never retried,
        # whatever a user predicate says: their classes are not ``overridable``.
        means = meaning(error)
        if means is None:
            return False
        if means.overridable and self._retry_on is not None:
            return bool(self._retry_on(error))
        return means.retried

    def hands_over(self, error: BaseException) -> bool:
        """Whether ``error`` (not retried, or retries spent) passes the call to the next child."""
        means = meaning(error)
        if means is None:
            return False
        if means.overridable and self._fallback_on is not None:
            return bool(self._fallback_on(error))
        if self.escalate_on_guardrail and isinstance(error, GuardrailTriggered):
            return True  # the user's opt-in: ask another vendor after a refusal
        return means.hands_over


def reason_of(error: BaseException | None, default: str = "error") -> str:
    """The documented hand-over reason for an error (see ``orchestrator.REASONS``)."""
    means = None if error is None else meaning(error)
    reason = None if means is None else means.reason
    return default if reason is None else reason
