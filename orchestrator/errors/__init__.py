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

Each kind is written in its own module (``base``, ``transient``, ``unusable``,
``output``, ``terminal``, ``run``); import them from here: ``orchestrator.errors.X`` is
every class's name, in tracebacks and pickles too. ``ConfigError`` lives in
:mod:`orchestrator.config.problems`, ``WorkflowError`` in :mod:`orchestrator.workflow`
and ``JournalError`` in :mod:`orchestrator.journal`; all derive from :class:`FailoverError`.
Messages never contain request text or credentials: they name the provider,
the HTTP status (when there is one) and a short reason.
"""

from __future__ import annotations

from orchestrator.errors.base import FailoverError, ProviderError, describe
from orchestrator.errors.base import _rebuild as _rebuild
from orchestrator.errors.output import InvalidOutput, Rejected, ResponseTooLarge
from orchestrator.errors.run import FallbackError, HookError, meaning
from orchestrator.errors.run import _rebuild_fallback as _rebuild_fallback
from orchestrator.errors.run import _rebuild_hook_error as _rebuild_hook_error
from orchestrator.errors.terminal import (
    BudgetExceeded,
    GuardrailTriggered,
    InvalidRequest,
    TerminalError,
)
from orchestrator.errors.transient import (
    ConnectionFailed,
    FirstTokenTimeout,
    Overloaded,
    ProviderTimeout,
    RateLimited,
    ServerError,
    StreamInterrupted,
    StreamStalled,
    TransientError,
)
from orchestrator.errors.unusable import (
    AtCapacity,
    AuthenticationFailed,
    BudgetSpent,
    CircuitOpen,
    ContextWindowExceeded,
    ModelNotFound,
    NotInstalled,
    PrefillUnsupported,
    QuotaExhausted,
    ToolsUnsupported,
    UnusableError,
)

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

# Every name is ``orchestrator.errors.X`` wherever its module is: in tracebacks, reprs and
# pickles, so a pickle reads the same before and after a module moves (as httpx does).
_PICKLED = (_rebuild, _rebuild_hook_error, _rebuild_fallback)
for _public in (*(globals()[_name] for _name in __all__), *_PICKLED):
    _public.__module__ = __name__
del _public, _PICKLED
