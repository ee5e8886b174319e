"""Request, RetryPolicy, configuration errors, the error tree and the public API."""

from __future__ import annotations

import pickle
import types
from datetime import timedelta

import pytest

import orchestrator
from orchestrator import FallbackAgent, Request, RetryPolicy
from orchestrator import errors as E
from providers import FunctionProvider
from tests.conftest import turns


def ok(req: Request) -> str:
    return "ok"


P = FunctionProvider(ok)


def test_request_prompt_messages_and_replace() -> None:
    r = Request(
        messages=turns("first", "a", "second"),
        system="sys",
        temperature=0.2,
    )
    assert r.prompt == "second"
    r2 = r.replace(prompt="changed", max_tokens=9)
    assert r2.prompt == "changed" and r2.max_tokens == 9 and r2.system == "sys"
    assert r.prompt == "second" and r.max_tokens is None
    assert [m.content for m in r2.messages] == ["first", "a", "changed"]
    with pytest.raises(AttributeError):
        r.system = "x"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(r)) == r
    assert "second" not in repr(r)


@pytest.mark.parametrize(
    ("kwargs", "exc", "needle"),
    [
        ({}, ValueError, "prompt="),
        ({"messages": [{"role": "robot", "content": "x"}]}, ValueError, "robot"),
        ({"messages": [{"content": "x"}]}, ValueError, "messages[0]"),
        ({"prompt": "x", "max_tokens": 0}, ValueError, "max_tokens"),
    ],
)
def test_request_bad_input(kwargs: dict[str, object], exc: type[Exception], needle: str) -> None:
    with pytest.raises(exc, match=needle.replace("[", r"\[").replace("]", r"\]")):
        Request(**kwargs)  # type: ignore[arg-type]


def test_request_replace_unknown_field() -> None:
    with pytest.raises(TypeError, match="colour"):
        Request("x").replace(colour="red")


@pytest.mark.parametrize(
    ("kwargs", "exc", "needles"),
    [
        ({"retry_delay": -1}, ValueError, ["retry_delay", "-1", ">= 0"]),
        (
            {"retry_strategy": "expo"},
            ValueError,
            ["retry_strategy", "'expo'", "exponential, linear, none"],
        ),
        ({"max_retries": -2}, ValueError, ["max_retries", "-2", ">= 0"]),
        ({"max_retries": 1.5}, TypeError, ["max_retries", "1.5", "int"]),
        ({"max_retries": True}, TypeError, ["max_retries"]),
        ({"retry_delay": "1s"}, TypeError, ["retry_delay", "'1s'", "timedelta"]),
        ({"timeout": 0}, ValueError, ["timeout", "> 0"]),
        ({"jitter": "half"}, ValueError, ["jitter", "'half'"]),
        ({"policy": RetryPolicy(), "max_retries": 1}, TypeError, ["policy", "max_retries"]),
        ({"policies": {"nope": RetryPolicy()}}, ValueError, ["policies", "'nope'", "'ok'"]),
        ({"mid_stream": "maybe"}, ValueError, ["mid_stream", "'maybe'"]),
        ({"on_fallback": "print"}, TypeError, ["on_fallback", "callable"]),
    ],
)
def test_bad_configuration_names_argument_value_and_fix(
    kwargs: dict[str, object], exc: type[Exception], needles: list[str]
) -> None:
    with pytest.raises(exc) as info:
        FallbackAgent([P], **kwargs)  # type: ignore[arg-type]
    for needle in needles:
        assert needle in str(info.value)


def test_bad_children() -> None:
    with pytest.raises(ValueError, match="children: the list is empty"):
        FallbackAgent([])
    with pytest.raises(TypeError, match=r"children\[1\].*FunctionProvider"):
        FallbackAgent([P, ok])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="distinct name"):
        FallbackAgent([P, FunctionProvider(ok)])
    with pytest.raises(TypeError, match="list of providers"):
        FallbackAgent(P)  # type: ignore[arg-type]


def test_policy_accepts_timedelta_and_reports_schedule() -> None:
    p = RetryPolicy(max_retries=3, delay=timedelta(seconds=2))
    assert [p.backoff(n) for n in (1, 2, 3)] == [2.0, 4.0, 8.0]
    assert RetryPolicy(strategy="linear", delay=3).backoff(5) == 3.0
    assert RetryPolicy(strategy="none").backoff(1) == 0.0


def test_error_tree_matches_the_taxonomy() -> None:
    assert issubclass(E.RateLimited, E.TransientError)
    assert issubclass(E.ProviderTimeout, E.TransientError) and issubclass(
        E.ProviderTimeout, TimeoutError
    )
    for cls in (E.AuthenticationFailed, E.ContextWindowExceeded, E.NotInstalled, E.QuotaExhausted):
        assert issubclass(cls, E.UnusableError)
    for cls in (E.GuardrailTriggered, E.InvalidRequest):
        assert issubclass(cls, E.TerminalError)
    for cls in (E.TransientError, E.UnusableError, E.InvalidOutput, E.TerminalError):
        assert issubclass(cls, E.ProviderError)
    assert not issubclass(E.HookError, E.ProviderError)
    assert orchestrator.HookError is E.HookError
    for name in E.__all__:
        assert name in (E.__doc__ or ""), f"{name} missing from the tree in the docstring"


def test_provider_errors_pickle_with_their_fields() -> None:
    err = E.RateLimited("slow", provider="openai:x", retry_after=3.0)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is E.RateLimited and back.retry_after == 3.0 and back.provider == "openai:x"
    assert str(back) == str(err) == "[openai:x] HTTP 429: slow"
    hook = pickle.loads(pickle.dumps(E.HookError("on_fallback", ValueError("x"))))
    assert hook.hook == "on_fallback"


def test_public_api_is_exactly_all() -> None:
    # Not identifiers: what pytest's assertion rewriting puts in a module it rewrote
    # (pytest 9.2 rewrites every package of a distribution that ships a pytest plugin, as
    # ours does, even an editable install: `@py_builtins`, `@pytest_ar`).
    public = {n for n in dir(orchestrator) if n.isidentifier() and not n.startswith("_")}
    modules = {
        "errors",
        "policy",
        "events",
        "types",
        "clock",
        "engine",
        "secrets",
        "function",
        "keywords",
        "tasks",
        "testing",
        "health",
        "workflow",
        "config",
        "cli",
        "units",
        "tokens",
        "telemetry",
        "tools",
        "messages",
        "ignored",
        "usage",
        "summary",
        "journal",
        "routing",
        "capacity",
        "frozen",
    }
    assert set(orchestrator.__all__) == public - {"annotations"} - (modules - {"errors"})
    import providers

    assert set(providers.__all__) == {
        n
        for n in providers.__dir__()
        if not n.startswith("_")
        and n not in {"annotations", "importlib", "TYPE_CHECKING", "Any"}
        # Subpackages and vendor modules are the package's files, not its names.
        and not isinstance(getattr(providers, n, None), types.ModuleType)
    }


def test_the_package_loads_its_names_lazily_and_all_of_them() -> None:
    # `failover` imports the package before it can handle Ctrl-C: it must stay tiny.
    import subprocess
    import sys

    code = (
        "import sys, orchestrator; "
        "print(sorted(m for m in sys.modules if m.startswith(('orchestrator', 'pydantic', "
        "'tenacity', 'structlog', 'asyncio'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['orchestrator']"
    assert set(orchestrator._LAZY) == set(orchestrator.__all__)
    for name in orchestrator.__all__:
        assert getattr(orchestrator, name) is not None


def test_policy_errors_name_the_argument_as_passed() -> None:
    with pytest.raises(ValueError, match=r"RetryPolicy\.delay"):
        RetryPolicy(delay=-1)
    with pytest.raises(ValueError, match=r"RetryPolicy\.strategy"):
        RetryPolicy(strategy="fibonacci")
