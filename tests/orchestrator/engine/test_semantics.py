"""Issue 10, errors and semantics: what a new user meets first.

run_sync tracebacks, what ``str(FallbackError)`` says, ``retry_on``/``fallback_on``
adding to the taxonomy, and observational hooks that cannot sink a failover.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

import pytest

from orchestrator import FallbackAgent, FallbackError, Request, only
from orchestrator.engine.classify import Classifier
from orchestrator.errors import (
    AuthenticationFailed,
    HookError,
    InvalidRequest,
    ServerError,
    TransientError,
)
from orchestrator.testing import FakeClock, capture_events
from orchestrator.workflow import Phase, Step, Workflow
from providers import FunctionProvider
from tests.conftest import Scripted

# -- 1. run_sync: no spurious "no running event loop" ------------------------------------


def _assert_no_loop_probe(error: BaseException) -> None:
    for linked in (error.__context__, error.__cause__):
        assert not (isinstance(linked, RuntimeError) and "no running event loop" in str(linked))
    text = "".join(traceback.format_exception(error))
    assert "no running event loop" not in text
    assert "During handling of the above exception" not in text


def test_agent_run_sync_raises_without_a_chained_loop_probe() -> None:
    agent = FallbackAgent([Scripted("a", [AuthenticationFailed("bad key")])])
    with pytest.raises(FallbackError) as info:
        agent.run_sync("x")
    _assert_no_loop_probe(info.value)


def test_workflow_run_sync_raises_without_a_chained_loop_probe() -> None:
    agent = FallbackAgent([Scripted("a", [AuthenticationFailed("bad key")])])
    wf = Workflow(Phase("P", Step("s", agent, prompt="{input}")))
    with pytest.raises(Exception) as info:
        wf.run_sync("x")
    _assert_no_loop_probe(info.value)


async def test_run_sync_inside_a_loop_still_refuses_with_a_clean_error() -> None:
    agent = FallbackAgent([Scripted("a", ["ok"])])
    wf = Workflow(Phase("P", Step("s", agent, prompt="{input}")))
    for call in (lambda: agent.run_sync("x"), lambda: wf.run_sync("x")):
        with pytest.raises(RuntimeError, match="await") as info:
            call()
        assert info.value.__context__ is None and info.value.__cause__ is None


# -- 2. str(FallbackError) says the cause --------------------------------------------------


def test_missing_key_cause_is_in_the_fallback_error_text(monkeypatch: pytest.MonkeyPatch) -> None:
    from providers import OpenAIChat

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = FallbackAgent([OpenAIChat("gpt-4o-mini")], max_retries=0)
    with pytest.raises(FallbackError) as info:
        agent.run_sync("hi")
    text = str(info.value)
    assert "AuthenticationFailed" in text
    assert "no API key: pass api_key= to OpenAIChat or set OPENAI_API_KEY" in text


async def test_fallback_error_text_names_each_attempt_shortened_without_secrets(
    clock: FakeClock,
) -> None:
    key = "sk-proj-" + "A" * 40
    long_first = "upstream down " + "x" * 400 + "\nsecond line: never shown"
    agent = FallbackAgent(
        [
            Scripted("a", [ServerError(long_first, status=503)]),
            Scripted("b", [AuthenticationFailed(f"Incorrect API key provided: {key}", status=401)]),
            Scripted("c", [RuntimeError(f"user code leaked {key} and the PROMPT")]),
        ],
        max_retries=1,
        retry_strategy="none",
        clock=clock,
    )
    with pytest.raises(FallbackError) as info:
        await agent.run("PROMPT")
    text = str(info.value)
    assert text.startswith("All agents failed after 5 attempts")
    assert "a: ServerError: HTTP 503: upstream down xxx" in text and "(x2)" in text
    assert "second line" not in text and "x" * 200 not in text
    assert "b: AuthenticationFailed: HTTP 401: Incorrect API key provided: ***" in text
    # A foreign exception's text is not trusted: only its class is shown.
    assert "c: RuntimeError" in text and "leaked" not in text and "PROMPT" not in text
    assert key not in text and key not in repr(info.value)
    assert "\n" not in text


# -- 3. retry_on / fallback_on add to the taxonomy ------------------------------------------


async def test_fallback_on_adds_to_the_defaults_503_still_fails_over(clock: FakeClock) -> None:
    a = Scripted("a", [ServerError("down", status=503)])
    result = await FallbackAgent(
        [a, Scripted("b", ["ok"])], fallback_on=KeyError, max_retries=1, clock=clock
    ).run("x")
    assert result.handled_by == "b" and a.calls == 2


async def test_retry_on_adds_to_the_defaults(clock: FakeClock) -> None:
    a = Scripted("a", [AuthenticationFailed("rotating"), ServerError("down"), "ok"])
    result = await FallbackAgent(
        [a], retry_on=AuthenticationFailed, max_retries=2, retry_strategy="none", clock=clock
    ).run("x")
    assert result.handled_by == "a" and a.calls == 3  # the 503 is still retried


async def test_only_replaces_the_defaults(clock: FakeClock) -> None:
    class Flaky(Exception):
        pass

    a = Scripted("a", [ServerError("down")])
    b = Scripted("b", ["ok"])
    agent = FallbackAgent(
        [a, b],
        retry_on=only(Flaky),
        fallback_on=only(lambda e: isinstance(e, ServerError)),
        max_retries=3,
        clock=clock,
    )
    assert (await agent.run("x")).handled_by == "b" and a.calls == 1
    stop = FallbackAgent(
        [Scripted("a", [ValueError("raised")]), b],
        fallback_on=only(TransientError),
        max_retries=0,
        clock=clock,
    )
    with pytest.raises(ValueError, match="raised"):
        await stop.run("x")


def test_only_checks_its_arguments_and_reads_well() -> None:
    assert "ServerError" in repr(only(ServerError))
    with pytest.raises(TypeError, match="only"):
        only()
    with pytest.raises(TypeError, match="only: 'ServerError' is not an exception type"):
        only("ServerError")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="retry_on"):
        Classifier(retry_on="ServerError")  # type: ignore[arg-type]


def test_classifier_adds_unless_only() -> None:
    added = Classifier(retry_on=KeyError, fallback_on=KeyError)
    assert added.retryable(ServerError("x")) and added.hands_over(ServerError("x"))
    assert added.retryable(KeyError("k")) and not added.retryable(AuthenticationFailed("x"))
    assert not added.hands_over(InvalidRequest("bad"))
    assert Classifier(fallback_on=InvalidRequest).hands_over(InvalidRequest("bad"))
    replaced = Classifier(retry_on=only(KeyError), fallback_on=only(KeyError))
    assert not replaced.retryable(ServerError("x")) and not replaced.hands_over(ServerError("x"))


# -- 4. observational hooks never stop a run ------------------------------------------------


async def test_quick_start_stdlib_logger_on_fallback_does_not_abort(clock: FakeClock) -> None:
    log: Any = logging.getLogger("quickstart")
    primary = Scripted("codex", [ServerError("down", status=503)])
    backup = Scripted("claude", ["answer"])
    agent = FallbackAgent(
        [primary, backup],
        max_retries=2,
        retry_delay=1.0,
        # The README's first version: stdlib loggers take no keyword fields (TypeError).
        on_fallback=lambda from_, to, error: log.warning("fallback", frm=from_, to=to, err=error),
        clock=clock,
    )
    with capture_events() as events:
        result = await agent.run("x")
    assert result.text == "answer" and result.handled_by == "claude"
    assert primary.calls == 3 and clock.sleeps == [1.0, 2.0]  # its own retries, none for the hook
    failed = [e for e in events if e["event"] == "hook_failed"]
    assert failed and failed[0]["hook"] == "on_fallback" and failed[0]["error_type"] == "TypeError"
    # Noted on the attempt whose failure fired the hook (codex's last).
    assert "on_fallback raised TypeError" in (result.attempts[2].note or "")
    assert result.attempts[-1].note is None


async def test_raising_on_retry_and_on_all_failed_do_not_stop_the_run(clock: FakeClock) -> None:
    def boom(*args: Any) -> None:
        raise RuntimeError("hook bug")

    a = Scripted("a", [ServerError("down"), "ok"])
    result = await FallbackAgent([a], on_retry=boom, retry_strategy="none", clock=clock).run("x")
    assert result.handled_by == "a" and a.calls == 2
    assert "on_retry raised RuntimeError" in (result.attempts[0].note or "")
    agent = FallbackAgent(
        [Scripted("a", [AuthenticationFailed("k")])], on_all_failed=boom, clock=clock
    )
    with pytest.raises(FallbackError) as info:
        await agent.run("x")
    assert "on_all_failed raised RuntimeError" in (info.value.attempts[-1].note or "")


@pytest.mark.parametrize("hook", ["before_fallback", "accept", "best_effort"])
async def test_control_hooks_still_stop_with_hook_error(clock: FakeClock, hook: str) -> None:
    def boom(*args: Any) -> Request:
        raise RuntimeError("redactor bug")

    children = [Scripted("a", [AuthenticationFailed("k")]), Scripted("b", ["ok"])]
    if hook == "best_effort":
        children = [Scripted("a", [AuthenticationFailed("k")])]
    agent = FallbackAgent(children, clock=clock, **{hook: boom})
    with pytest.raises(HookError, match=hook):
        await agent.run("x")


async def test_a_hundred_runs_with_a_raising_on_fallback_all_fail_over() -> None:
    import asyncio

    async def down(req: Request) -> str:
        raise ServerError("down", status=503)

    def bad_hook(frm: str, to: str, error: BaseException) -> None:
        raise TypeError("bad logger call")

    agent = FallbackAgent(
        [FunctionProvider(down, name="a"), Scripted("b", ["ok"])],
        max_retries=0,
        on_fallback=bad_hook,
    )
    results = await asyncio.gather(*(agent.run(f"r{i}") for i in range(100)))
    assert {r.handled_by for r in results} == {"b"}


@pytest.mark.parametrize(
    ("message", "secret"),
    [
        ("upstream said 401 to Authorization: Bearer eyJhbGciOi.payload.sig9", "eyJhbGciOi"),
        ("request with api_key=plainsecret99 rejected", "plainsecret99"),
        ('body {"api_key": "hunter2hunter2"} refused', "hunter2hunter2"),
        ("x-api-key: abcd1234efgh5678 is not valid", "abcd1234efgh5678"),
        ("login failed: password=correct-horse", "correct-horse"),
        ("access_token: ya29.a0AfH6SMB is expired", "ya29.a0AfH6SMB"),
    ],
)
async def test_fallback_error_text_masks_credentials_that_are_not_key_shaped(
    clock: FakeClock, message: str, secret: str
) -> None:
    # A user's provider raising a taxonomy error may quote a header or a form field: the
    # credential is not key-shaped (no sk- prefix) but its name says what it is.
    agent = FallbackAgent([Scripted("a", [ServerError(message, status=503)])], max_retries=0)
    with pytest.raises(FallbackError) as info:
        await agent.run("hi")
    assert secret not in str(info.value) and "***" in str(info.value)


def test_masking_credentials_keeps_ordinary_words() -> None:
    from orchestrator.secrets import scrub

    plain = "max_tokens: 200 exceeds the window; input_tokens=5000; Bearer; check the key"
    assert scrub(plain) == plain


@pytest.mark.parametrize(
    ("keywords", "says"),
    [
        ({"retries": 3}, "did you mean 'max_retries'?"),
        ({"on_fallbak": print}, "did you mean 'on_fallback'?"),
        ({"retry_stratgy": "linear"}, "did you mean 'retry_strategy'?"),
    ],
)
def test_fallback_agent_keyword_typos_suggest_the_name_meant(
    keywords: dict[str, object], says: str
) -> None:
    # Providers already do this; the agent is where most keywords are written.
    with pytest.raises(TypeError) as info:
        FallbackAgent([Scripted("a", ["ok"])], **keywords)  # type: ignore[arg-type]
    assert says in str(info.value) and "FallbackAgent()" in str(info.value)


def test_fallback_agent_providers_keyword_says_they_come_first() -> None:
    # The chain file's key is `providers:`; in Python the list is the first argument.
    with pytest.raises(TypeError) as info:
        FallbackAgent(providers=[Scripted("a", ["ok"])])  # type: ignore[call-arg]
    assert "FallbackAgent([first, second, ...]" in str(info.value)


def test_only_refuses_an_empty_tuple() -> None:
    # only(tuple(my_list)) with an empty list would silently retry nothing or, as
    # fallback_on=, turn failover off: the very surprise only(...) exists to make explicit.
    with pytest.raises(TypeError, match=r"only\(\(\)\): an empty tuple matches no error"):
        only(())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("hook", "fn", "says"),
    [
        ("on_fallback", lambda frm, to: None, "on_fallback(from_name, to_name, error)"),
        ("on_retry", lambda name, error: None, "on_retry(name, attempt, error, delay)"),
        ("on_all_failed", lambda: None, "on_all_failed(errors)"),
        ("accept", lambda result, extra: True, "accept(result)"),
        ("before_fallback", lambda request: request, "before_fallback(request, reason)"),
    ],
)
def test_a_hook_that_cannot_take_its_arguments_is_refused_when_built(
    hook: str, fn: Any, says: str
) -> None:
    # An observational hook that raises no longer stops the run, so one with the wrong
    # signature would fail silently on every call: say so once, when the agent is built.
    with pytest.raises(TypeError) as info:
        FallbackAgent([Scripted("a", ["ok"])], **{hook: fn})
    assert says in str(info.value)


def test_hooks_with_defaults_varargs_or_a_reason_are_accepted() -> None:
    FallbackAgent(
        [Scripted("a", ["ok"])],
        on_fallback=lambda frm, to, error, reason: None,
        on_retry=lambda *args: None,
        on_all_failed=lambda errors, extra=None: None,
        accept=print,  # a builtin: no signature to check, accepted
    )
