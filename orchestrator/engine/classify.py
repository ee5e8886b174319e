"""Which failures are retried on the same child, handed over, or raised at once."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import cast

from orchestrator.errors import GuardrailTriggered, describe, meaning

__all__ = ["ErrorMatcher", "Classifier", "Only", "describe", "matcher", "only", "reason_of"]

ErrorMatcher = (
    type[BaseException] | tuple[type[BaseException], ...] | Callable[[BaseException], bool]
)


class Only:
    """``retry_on=only(...)`` / ``fallback_on=only(...)``: these errors *instead of* the
    taxonomy's defaults (see :func:`only`)."""

    __slots__ = ("label", "test")

    def __init__(self, test: Callable[[BaseException], bool], label: str) -> None:
        self.test, self.label = test, label

    def __repr__(self) -> str:
        return f"only({self.label})"


def only(*spec: type[BaseException] | Callable[[BaseException], bool]) -> Only:
    """Replace the taxonomy's defaults: ``retry_on=only(ServerError)`` retries nothing else.

    A plain ``retry_on=X`` / ``fallback_on=X`` *adds* ``X`` to what the taxonomy
    already retries or hands over (a 503 keeps failing over). Wrap the same
    arguments (exception types, or one predicate) in ``only(...)`` when the list
    you give must be the whole list. Cancellations, hook errors and exhausted
    nested chains keep their own meaning either way.
    """
    if not spec:
        raise TypeError("only(): give exception types or one predicate, e.g. only(ServerError)")
    single = spec[0] if len(spec) == 1 else spec
    if single == ():
        raise TypeError("only(()): an empty tuple matches no error; give exception types")
    test = matcher(cast(ErrorMatcher, single), "only")
    assert test is not None
    label = ", ".join(getattr(s, "__name__", repr(s)) for s in spec)
    return Only(test, label)


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
    (see :mod:`orchestrator.errors`). ``retry_on`` adds to the retry set and
    ``fallback_on`` to the hand-over set; wrapped in :func:`only` either replaces
    its set instead (an error in neither set is raised as is). Classes that are
    not ``overridable`` keep their meaning whatever is given: a ``HookError``
    always stops the run, an exhausted nested chain always hands over, neither
    is retried. ``escalate_on_guardrail`` hands a guardrail refusal over.
    """

    __slots__ = ("_fallback_on", "_retry_on", "escalate_on_guardrail")

    def __init__(
        self,
        *,
        retry_on: ErrorMatcher | Only | None = None,
        fallback_on: ErrorMatcher | Only | None = None,
        escalate_on_guardrail: bool = False,
    ) -> None:
        self._retry_on = _rule(retry_on, "retry_on")
        self._fallback_on = _rule(fallback_on, "fallback_on")
        self.escalate_on_guardrail = escalate_on_guardrail

    def retryable(self, error: BaseException) -> bool:
        """Whether ``error`` may be retried on the same child (policy permitting)."""
        # Cancellation, hook errors and exhausted nested chains are never retried,
        # whatever a user predicate says: their classes are not ``overridable``.
        means = meaning(error)
        if means is None:
            return False
        decided = _decide(self._retry_on, error) if means.overridable else None
        return means.retried if decided is None else decided

    def retried_last(self, error: BaseException) -> bool:
        """Whether ``error``'s retries wait until the later children failed (a timeout)."""
        means = meaning(error)
        return means is not None and means.retried_last

    def hands_over(self, error: BaseException) -> bool:
        """Whether ``error`` (not retried, or retries spent) passes the call to the next child."""
        means = meaning(error)
        if means is None:
            return False
        decided = _decide(self._fallback_on, error) if means.overridable else None
        if decided is not None:
            return decided
        if self.escalate_on_guardrail and isinstance(error, GuardrailTriggered):
            return True  # the user's opt-in: ask another vendor after a refusal
        return means.hands_over


#: A compiled ``retry_on``/``fallback_on``: the test, and whether it replaces the defaults.
_Rule = tuple[Callable[[BaseException], bool], bool] | None


def _rule(spec: ErrorMatcher | Only | None, field: str) -> _Rule:
    if isinstance(spec, Only):
        return (spec.test, True)
    test = matcher(spec, field)
    return None if test is None else (test, False)


def _decide(rule: _Rule, error: BaseException) -> bool | None:
    """The user's decision for ``error``; ``None`` leaves it to the taxonomy.

    An added rule only ever says yes (the defaults still hold for the rest);
    an ``only(...)`` rule decides every error alone.
    """
    if rule is None:
        return None
    test, replaces = rule
    if bool(test(error)):
        return True
    return False if replaces else None


def reason_of(error: BaseException | None, default: str = "error") -> str:
    """The documented hand-over reason for an error (see ``orchestrator.REASONS``)."""
    means = None if error is None else meaning(error)
    reason = None if means is None else means.reason
    return default if reason is None else reason
