"""The exception tree: one root, and each class's meaning written on the class, read by all."""

from __future__ import annotations

import asyncio
import inspect
import pickle
import pickletools

import pytest

import orchestrator
from orchestrator import HookError
from orchestrator import errors as E
from orchestrator.config.problems import ConfigError, Problem
from orchestrator.engine.attempt import _counts_for_health
from orchestrator.engine.classify import Classifier, reason_of
from orchestrator.errors import ServerError
from orchestrator.events import error_fields
from orchestrator.workflow import WorkflowError

CLASSES = [c for c in vars(E).values() if inspect.isclass(c) and issubclass(c, BaseException)] + [
    ConfigError,
    WorkflowError,
]


def test_one_root_for_every_exception_the_library_raises() -> None:
    assert orchestrator.FailoverError is E.FailoverError
    for cls in CLASSES:
        assert issubclass(cls, E.FailoverError), cls.__name__
    assert issubclass(ConfigError, ValueError)  # still caught where a ValueError is
    assert issubclass(E.ProviderTimeout, TimeoutError)
    assert "ConfigError" in (E.__doc__ or "") and "WorkflowError" in (E.__doc__ or "")


def test_config_and_workflow_errors_still_pickle() -> None:
    config = ConfigError([Problem("chain.yaml", 3, ("agents", "a"), "bad value")])
    back = pickle.loads(pickle.dumps(config))
    assert type(back) is ConfigError and str(back) == str(config) and back.line == 3
    step = pickle.loads(pickle.dumps(WorkflowError("p", "s", E.ServerError("x", provider="q"))))
    assert (step.phase, step.step, type(step.error)) == ("p", "s", E.ServerError)


# (retried, hands over, counts for health, reason): the taxonomy as documented.
MEANINGS: dict[type[BaseException], tuple[bool, bool, bool, str]] = {
    E.ProviderError: (False, True, True, "error"),
    E.TransientError: (True, True, True, "error"),
    E.ProviderTimeout: (True, True, True, "timeout"),
    E.FirstTokenTimeout: (True, True, True, "timeout"),
    E.StreamStalled: (True, True, True, "timeout"),
    E.ConnectionFailed: (True, True, True, "error"),
    E.ServerError: (True, True, True, "error"),
    E.Overloaded: (True, True, True, "overloaded"),
    E.RateLimited: (True, True, True, "rate_limited"),
    E.StreamInterrupted: (True, True, True, "error"),
    E.UnusableError: (False, True, True, "unusable"),
    E.AuthenticationFailed: (False, True, True, "unusable"),
    E.ModelNotFound: (False, True, True, "unusable"),
    E.QuotaExhausted: (False, True, True, "unusable"),
    E.ContextWindowExceeded: (False, True, False, "context_window"),
    E.ToolsUnsupported: (False, True, False, "unsupported"),
    E.PrefillUnsupported: (False, True, False, "unsupported"),
    E.NotInstalled: (False, True, True, "unusable"),
    E.CircuitOpen: (False, True, False, "circuit_open"),
    E.AtCapacity: (False, True, False, "at_capacity"),
    E.BudgetSpent: (False, True, False, "budget"),
    E.InvalidOutput: (True, True, False, "invalid_output"),
    E.Rejected: (False, True, False, "rejected"),
    E.ResponseTooLarge: (False, True, False, "invalid_output"),
    E.TerminalError: (False, False, False, "terminal"),
    E.GuardrailTriggered: (False, False, False, "terminal"),
    E.InvalidRequest: (False, False, False, "terminal"),
    E.BudgetExceeded: (False, False, False, "budget"),
    E.HookError: (False, False, False, "error"),
    E.FallbackError: (False, True, False, "error"),
    E.FailoverError: (True, True, True, "error"),
    ConfigError: (True, True, True, "error"),
    WorkflowError: (True, True, True, "error"),
}


def _instance(cls: type[BaseException]) -> BaseException:
    if cls is E.HookError:
        return E.HookError("on_fallback", ValueError("x"))
    if cls is E.FallbackError:
        return E.FallbackError([])
    if cls is ConfigError:
        return ConfigError([Problem("f", None, (), "x")])
    if cls is WorkflowError:
        return WorkflowError("p", "s", ValueError("x"))
    return cls("x")


@pytest.mark.parametrize("cls", list(MEANINGS), ids=lambda c: c.__name__)
def test_every_reader_reads_the_class(cls: type[BaseException]) -> None:
    retried, hands_over, counts, reason = MEANINGS[cls]
    means = E.meaning(_instance(cls))
    assert means is not None
    assert (means.retried, means.hands_over, means.counts_for_health) == (
        retried,
        hands_over,
        counts,
    )
    error = _instance(cls)
    classifier = Classifier()
    assert classifier.retryable(error) is retried
    assert classifier.hands_over(error) is hands_over
    assert _counts_for_health(error) is counts
    assert reason_of(error) == reason


def test_every_class_has_its_meaning_listed() -> None:
    assert set(CLASSES) == set(MEANINGS)


def test_a_subclass_changes_what_every_reader_decides() -> None:
    """Nobody re-decides by ``isinstance``: a class that says otherwise is obeyed."""

    class Lock(E.InvalidRequest):
        retried = True
        hands_over = True
        counts_for_health = True
        reason = "overloaded"

    error = Lock("conflict", provider="p", status=409)
    assert Classifier().retryable(error) and Classifier().hands_over(error)
    assert _counts_for_health(error) and reason_of(error) == "overloaded"
    assert error_fields(error) == {"error_kind": "terminal", "error_type": "Lock"}


def test_exceptions_from_outside_the_tree() -> None:
    classifier = Classifier()
    for foreign in (ValueError("bug"), KeyError("k")):
        assert classifier.retryable(foreign) and classifier.hands_over(foreign)
        assert _counts_for_health(foreign) and reason_of(foreign) == "error"
    assert E.meaning(TimeoutError()) is E.ProviderTimeout
    assert reason_of(TimeoutError("read")) == "timeout"
    cancelled = asyncio.CancelledError()
    assert E.meaning(cancelled) is None
    assert not classifier.retryable(cancelled) and not classifier.hands_over(cancelled)
    assert not _counts_for_health(cancelled) and reason_of(cancelled, "deadline") == "deadline"
    assert error_fields(ValueError("x")) == {"error_kind": "transient", "error_type": "ValueError"}


def test_user_predicates_cannot_override_hook_errors_or_exhausted_chains() -> None:
    anything = Classifier(retry_on=lambda e: True, fallback_on=lambda e: True)
    hook = E.HookError("accept", ValueError("x"))
    assert not anything.retryable(hook) and not anything.hands_over(hook)
    nothing = Classifier(retry_on=lambda e: False, fallback_on=lambda e: False)
    assert nothing.hands_over(E.FallbackError([])) and not nothing.retryable(E.FallbackError([]))
    assert anything.retryable(E.InvalidRequest("x")) and anything.hands_over(E.InvalidRequest("x"))
    guard = E.GuardrailTriggered("no")
    assert Classifier(escalate_on_guardrail=True).hands_over(guard)
    assert not Classifier().hands_over(guard)


@pytest.mark.parametrize(
    ("error", "label"),
    [
        (E.ProviderTimeout("t"), "timeout"),
        (TimeoutError(), "timeout"),
        (E.RateLimited("r"), "transient"),
        (E.QuotaExhausted("q"), "unusable"),
        (E.Rejected("r"), "invalid_output"),
        (E.GuardrailTriggered("g"), "terminal"),
        (E.ProviderError("p"), "error"),
        (ValueError("v"), "error"),
    ],
)
def test_the_ping_report_labels_errors_by_their_class(error: BaseException, label: str) -> None:
    from orchestrator.cli.report import _kind

    assert _kind(error) == label


def test_errors_pickle_with_their_messages() -> None:
    hook = HookError("on_fallback", ValueError("hook broke"))
    assert str(pickle.loads(pickle.dumps(hook))) == str(hook)
    wf = WorkflowError("Review", "review", ServerError("x", provider="p"))
    back = pickle.loads(pickle.dumps(wf))
    assert (back.phase, back.step, str(back)) == ("Review", "review", str(wf))


def test_invalid_output_pickles_with_the_usage_it_was_billed() -> None:
    from orchestrator import Usage

    for cls in (E.InvalidOutput, E.Rejected, E.ResponseTooLarge):
        error = cls("bad reply", provider="p", usage=Usage(3, 4), cost_usd=0.5)
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is cls and str(back) == str(error) == "[p] bad reply"
        assert (back.usage, back.cost_usd) == (Usage(3, 4), 0.5)
    assert E.InvalidOutput("x").usage is None and E.InvalidOutput("x").cost_usd is None


#: ``RateLimited("slow", provider="p", retry_after=2.0)`` pickled (protocol 4) when the whole
#: taxonomy was one module, orchestrator/errors.py: its names are still where it looks.
_PICKLED_BY_ONE_MODULE = (
    b"\x80\x04\x95\x9c\x00\x00\x00\x00\x00\x00\x00\x8c\x13orchestrator.errors\x94\x8c\x08_rebuild"
    b"\x94\x93\x94h\x00\x8c\x0bRateLimited\x94\x93\x94\x8c\x04slow\x94}\x94(\x8c\x08provider\x94"
    b"\x8c\x01p\x94\x8c\x06status\x94M\xad\x01\x8c\x0bretry_after\x94G@\x00\x00\x00\x00\x00\x00"
    b"\x00u\x87\x94R\x94}\x94(\x8c\x07message\x94h\x05h\x07h\x08h\tM\xad\x01h\nG@\x00\x00\x00"
    b"\x00\x00\x00\x00ub."
)


def _pickled_modules(error: BaseException) -> set[str]:
    """The modules a pickle of ``error`` names (protocol 2 writes each as a GLOBAL)."""
    data = pickle.dumps(error, protocol=2)
    return {
        str(arg).split(" ")[0] for op, arg, _ in pickletools.genops(data) if op.name == "GLOBAL"
    }


def test_every_error_is_named_and_pickled_as_orchestrator_errors() -> None:
    """The kinds live in modules of the orchestrator.errors package, but users see (and
    pickles name) orchestrator.errors.X: a process before or after a module moves reads them."""
    from orchestrator.types import Attempt, Usage

    for name in E.__all__:
        assert getattr(E, name).__module__ == "orchestrator.errors", name
    attempt = Attempt("a", E.ServerError("down", provider="a"), 1, 0.0, 0.1, usage=Usage(1, 2))
    errors = [
        E.RateLimited("slow", provider="p", retry_after=2.0),
        E.AtCapacity("full", provider="p", retry_after=1.0),
        E.InvalidOutput("bad", provider="p", usage=Usage(3, 4), cost_usd=0.5),
        E.BudgetExceeded("spent"),
        E.HookError("accept", ValueError("x")),
        E.FallbackError([attempt], name="chain"),
    ]
    for error in errors:
        modules = _pickled_modules(error)
        assert "orchestrator.errors" in modules
        assert not [m for m in modules if m.startswith("orchestrator.errors.")], modules
        assert str(pickle.loads(pickle.dumps(error))) == str(error)
    old = pickle.loads(_PICKLED_BY_ONE_MODULE)
    assert type(old) is E.RateLimited and (old.provider, old.retry_after) == ("p", 2.0)
    assert str(old) == "[p] HTTP 429: slow"
