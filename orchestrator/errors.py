"""The error taxonomy: every failure the library reports, as one class tree.

Providers translate every failure at their own boundary into one of these
classes. Each class carries what it means, so no other module decides it
again: ``retried`` (may the same provider be asked again, policy permitting),
``hands_over`` (when not retried, or retries are spent: ask the next child;
otherwise the run stops and the error is raised), ``counts_for_health``
(a failure the circuit breaker counts), ``retried_last`` (with a later
child waiting, hand over first and spend the retries only if the others fail)
and ``reason`` (the documented ``Attempt.reason``; ``None`` reads as ``"error"``). Read them through
:func:`meaning`, which also places exceptions from outside the tree
(:func:`describe` gives the safe summary events carry)::

    Exception
    └── FailoverError                  the root: anything this library raises
        │                              (outside the taxonomy: retried, handed over, counted)
        ├── ProviderError              a provider call failed (base of the taxonomy)
        │   ├── TransientError         retry this provider per policy, then fall over
        │   │   ├── ProviderTimeout    (also a TimeoutError) attempt or run deadline hit
        │   │   │   ├── FirstTokenTimeout  no content within ``first_token_timeout``
        │   │   │   └── StreamStalled      a gap between content over ``idle_timeout``
        │   │   ├── ConnectionFailed   connect/read/write error, reset connection
        │   │   ├── ServerError        408, 409, 5xx
        │   │   ├── Overloaded         529, Anthropic overloaded_error
        │   │   ├── RateLimited        429; .retry_after in seconds when the server said
        │   │   └── StreamInterrupted  a stream ended without its terminator
        │   ├── UnusableError          fall over at once, no retry (also: a 4xx that says
        │   │   │                      nothing about the request, such as 405, 410, 418, 451)
        │   │   ├── AuthenticationFailed   401, 403
        │   │   ├── ModelNotFound      404 model
        │   │   ├── QuotaExhausted     402, quota or billing exhausted
        │   │   ├── ContextWindowExceeded  413, prompt too long for this model (not counted)
        │   │   ├── ToolsUnsupported   the request has tools this provider cannot take
        │   │   ├── PrefillUnsupported a continuation's assistant prefill refused (400)
        │   │   ├── NotInstalled       a CLI binary is missing
        │   │   ├── CircuitOpen        skipped: the provider's circuit is open (not counted)
        │   │   ├── AtCapacity         skipped: at its rpm/tpm/concurrency limit (not counted)
        │   │   └── BudgetSpent        skipped: the provider's budget is spent (not counted)
        │   ├── InvalidOutput          reply malformed or off-schema: retry, then fall over
        │   │   ├── Rejected           the ``accept`` check refused the reply: fall over at once
        │   │   └── ResponseTooLarge   reply over ``max_response_bytes``: fall over at once
        │   └── TerminalError          stop: no retry, no fallback
        │       ├── GuardrailTriggered content policy / safety refusal
        │       ├── InvalidRequest     malformed request (400, 422)
        │       └── BudgetExceeded     the chain's budget is spent: before any request
        ├── FallbackError              every child failed; .attempts holds each attempt
        ├── HookError                  a control hook raised; the hook's exception is __cause__
        ├── ConfigError                (also a ValueError) the chain file cannot be used
        ├── JournalError               a durable run's journal refused it: stop, nothing sent
        │   ├── RunInProgress          another live process holds the run id
        │   ├── StepInterrupted        a step with on_interrupted='fail' was cut mid-call
        │   └── WorkflowChanged        completed steps' prompt, inputs or chain changed
        └── WorkflowError              a workflow step failed; .error is the step's error

``ConfigError`` lives in :mod:`orchestrator.config.problems`, ``WorkflowError``
in :mod:`orchestrator.workflow` and ``JournalError`` in :mod:`orchestrator.journal`;
all derive from :class:`FailoverError`.
Messages never contain request text or credentials: they name the provider,
the HTTP status (when there is one) and a short reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from orchestrator.types import Attempt, Usage

__all__ = [
    "AtCapacity",
    "AuthenticationFailed",
    "BudgetExceeded",
    "BudgetSpent",
    "CircuitOpen",
    "ConnectionFailed",
    "ContextWindowExceeded",
    "FailoverError",
    "FallbackError",
    "FirstTokenTimeout",
    "GuardrailTriggered",
    "HookError",
    "InvalidOutput",
    "InvalidRequest",
    "ModelNotFound",
    "NotInstalled",
    "Overloaded",
    "PrefillUnsupported",
    "ProviderError",
    "ProviderTimeout",
    "QuotaExhausted",
    "RateLimited",
    "Rejected",
    "ResponseTooLarge",
    "ServerError",
    "StreamInterrupted",
    "StreamStalled",
    "TerminalError",
    "ToolsUnsupported",
    "TransientError",
    "UnusableError",
    "describe",
    "meaning",
]


class FailoverError(Exception):
    """The root of every exception this library raises; catch it to catch them all.

    Its class attributes are what a failure means to a run; subclasses override
    them. The root's values also stand for any exception from outside the tree
    (a bug in a user's provider, a library error): retried, then handed over,
    counted for health, with no particular reason. ``overridable`` is False where
    ``retry_on``/``fallback_on`` may not change the decision.
    """

    retried: ClassVar[bool] = True
    retried_last: ClassVar[bool] = False
    hands_over: ClassVar[bool] = True
    counts_for_health: ClassVar[bool] = True
    reason: ClassVar[str | None] = None
    overridable: ClassVar[bool] = True


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


def describe(error: BaseException) -> dict[str, Any]:
    """A safe summary of ``error`` (type and kind only) for events and hand-over payloads."""
    return {"error_kind": getattr(error, "kind", "transient"), "error_type": type(error).__name__}


class ProviderError(FailoverError):
    """A provider call failed; the subclass says what the engine does about it.

    ``provider`` is the provider's name, ``status`` the HTTP status when there
    was one (CLI agents put the API's status here, their exit code in the
    message). Safe to log: holds no request text, no key.
    """

    kind: str = "provider_error"
    retried: ClassVar[bool] = False

    def __init__(
        self,
        message: str = "",
        *,
        provider: str | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.status = status

    def _kwargs(self) -> dict[str, Any]:
        return {"provider": self.provider, "status": self.status}

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only constructor arguments need an explicit reduce to pickle.
        return (_rebuild, (type(self), self.message, self._kwargs()), self.__dict__)

    def __str__(self) -> str:
        parts = []
        if self.provider:
            parts.append(f"[{self.provider}]")
        if self.status is not None:
            parts.append(f"HTTP {self.status}:")
        if self.message:
            parts.append(self.message)
        return " ".join(parts) or type(self).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"


def _rebuild(cls: type[ProviderError], message: str, kwargs: dict[str, Any]) -> ProviderError:
    return cls(message, **kwargs)


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


class InvalidOutput(ProviderError):
    """The reply is malformed or fails the schema: retry (``schema_retries``), then hand over.

    ``usage`` and ``cost_usd`` are what a reply that could not be used still
    reported and cost (the vendor bills it): set by the provider when the reply's
    usage was readable (a stream: the usage seen so far), else None. The engine
    records them on the failed attempt, so ``Result.cost_usd`` counts them.
    """

    kind = "invalid_output"
    retried = True
    counts_for_health = False  # the provider is up; the reply is the problem
    reason = "invalid_output"

    def __init__(
        self,
        message: str = "",
        *,
        provider: str | None = None,
        status: int | None = None,
        usage: Usage | None = None,
        cost_usd: float | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.usage = usage
        self.cost_usd = cost_usd

    def _kwargs(self) -> dict[str, Any]:
        return {**super()._kwargs(), "usage": self.usage, "cost_usd": self.cost_usd}


class Rejected(InvalidOutput):
    """The ``accept`` check refused a well-formed reply: escalate to the next child at once."""

    retried = False
    reason = "rejected"


class ResponseTooLarge(InvalidOutput):
    """The reply (decoded body, stream, or one stream line or event) passed the provider's
    ``max_response_bytes``: reading stopped there. Not retried on the same provider:
    asking again costs the same download for a reply that is most likely as large
    (a runaway generation or a broken or hostile server); the next child is asked.
    """

    retried = False


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
