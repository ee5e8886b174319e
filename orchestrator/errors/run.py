"""What a run makes of a failure: :func:`meaning` reads any exception's decision
(foreign ones included), and the run's own failures outside the provider taxonomy:
:class:`HookError` (a control hook raised) and :class:`FallbackError` (every child failed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from orchestrator.errors.base import FailoverError
from orchestrator.errors.transient import ProviderTimeout

if TYPE_CHECKING:
    from orchestrator.types import Attempt

__all__ = ["FallbackError", "HookError", "meaning"]


def meaning(error: BaseException) -> type[FailoverError] | None:
    """The class whose attributes say what ``error`` means; ``None`` for a cancellation.

    A cancellation (any ``BaseException`` that is not an ``Exception``) is never
    retried, handed over or counted: it stops the run. A foreign ``TimeoutError``
    means what :class:`ProviderTimeout` means; any other foreign exception what the
    root means.
    """
    if isinstance(error, FailoverError):
        return type(error)
    if not isinstance(error, Exception):
        return None
    return ProviderTimeout if isinstance(error, TimeoutError) else FailoverError


class HookError(FailoverError):
    """A control hook (``before_fallback``, ``accept``, ``best_effort``) raised: the run
    stops; the hook's own exception is ``__cause__``. An observational hook
    (``on_retry``, ``on_fallback``, ``on_all_failed``) that raises does not stop it."""

    retried = False
    hands_over = False
    counts_for_health = False
    overridable = False

    def __init__(
        self, hook: str, error: BaseException | None = None, *, message: str | None = None
    ) -> None:
        detail = f": {type(error).__name__}: {error}" if error is not None else ""
        super().__init__(message or f"hook {hook!r} raised{detail}")
        self.hook = hook

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_hook_error, (self.hook, str(self)), self.__dict__)


def _rebuild_hook_error(hook: str, message: str) -> HookError:
    return HookError(hook, message=message)


class FallbackError(FailoverError):
    """Every child failed. ``attempts`` lists every failed attempt, in order; ``order``
    and ``arm`` say, as on a :class:`~orchestrator.Result`, the order the run tried its
    children in and the :class:`~orchestrator.Split` arm it was assigned to.

    ``str(err)`` reads ``All agents failed after N attempts (a: ServerError: HTTP
    503: upstream down (x3); b: AuthenticationFailed: no API key: ...)``: each
    attempt's class and, for the taxonomy's provider errors, the first line of
    its message, masked and cut to
    :data:`~orchestrator.summary.DETAIL_LIMIT` characters (repeats in a
    row are counted, not repeated). An exception from outside the taxonomy shows
    its class only: its text may quote the prompt or a credential the library
    cannot know. It holds no request text and no secret; it pickles. A nested
    chain that is exhausted always hands over and is never retried whole; its
    children's failures were counted already.
    """

    retried = False
    counts_for_health = False
    overridable = False

    def __init__(
        self,
        attempts: Sequence[Attempt],
        *,
        name: str | None = None,
        untried: Sequence[str] = (),
        order: Sequence[str] = (),
        arm: str | None = None,
    ) -> None:
        self.attempts: tuple[Attempt, ...] = tuple(attempts)
        self.name = name
        #: The children the run's deadline left without a single attempt.
        self.untried: tuple[str, ...] = tuple(untried)
        #: As on a Result: the children in the order the run tried them, and the
        #: :class:`~orchestrator.Split` arm the call was assigned to (or None).
        self.order: tuple[str, ...] = tuple(order)
        self.arm = arm
        super().__init__(self._summary())

    @property
    def errors(self) -> list[BaseException | None]:
        """Every attempt's error, in order."""
        return [a.error for a in self.attempts]

    def _summary(self) -> str:
        from orchestrator.summary import summary  # it reads ProviderError: imported late

        return summary(self.attempts, self.untried)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_fallback,
            (self.attempts, self.name, self.untried, self.order, self.arm),
        )


def _rebuild_fallback(
    attempts: Sequence[Attempt],
    name: str | None,
    untried: Sequence[str],
    order: Sequence[str] = (),
    arm: str | None = None,
) -> FallbackError:
    return FallbackError(attempts, name=name, untried=untried, order=order, arm=arm)
