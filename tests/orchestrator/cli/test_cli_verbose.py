"""``failover run -v``: retries, fallbacks and the outcome live on stderr; stdout keeps the answer."""

from __future__ import annotations

import io
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator import events
from orchestrator.cli import main
from orchestrator.cli.progress import Progress, describe_event
from tests.conftest import hooks_chain
from tests.orchestrator.cli.test_cli_command import HOOKS, PROVIDERS

PROMPT = "PROMPT-TEXT-7f3a"


@pytest.fixture
def chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("SECRET_KEY_VALUE", "sk-verbose-secret-0123456789")
    path, mod = hooks_chain(
        tmp_path,
        "verbosehooks",
        HOOKS,
        PROVIDERS
        + textwrap.dedent("""
            agents:
              review:
                providers: [down, fn]
                max_retries: 1
                retry_delay: 0.001
              guarded: {providers: [refuse, fn]}
              quick: {providers: [down, fn], max_retries: 0}
            workflows:
              release:
                phases:
                  - {name: Review, steps: [{name: review, agent: quick}]}
                  - {name: Summary, steps: [{name: summary, agent: fn, prompt: "S {review.text}"}]}
            """),
    )
    yield path
    sys.modules.pop(mod, None)


def test_verbose_shows_each_retry_fallback_and_the_outcome_on_stderr(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(chain), "--agent", "review", "-v", PROMPT]) == 0
    out, err = capsys.readouterr()
    assert out == f"answer: {PROMPT}\n"  # stdout: the answer only
    lines = [line.split("] ", 1)[1] for line in err.splitlines()]
    assert lines[0] == "review: trying down -> fn"
    assert lines[1].startswith("review: down try 1 failed after ")
    assert lines[1].endswith(": ConnectionError (transient)")
    assert lines[2].startswith("review: down retry 2 in ")
    assert lines[3].startswith("review: down try 2 failed")
    assert lines[4] == "review: fallback down -> fn after ConnectionError (transient)"
    assert lines[5].startswith("review: fn try 1 ok in ")
    assert lines[6].startswith("review: answered by fn after 3 attempt(s) in ")
    assert len(lines) == 7
    assert PROMPT not in err


def test_verbose_with_json_keeps_stdout_one_document(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(chain), "--agent", "guarded", "--verbose", "--json", PROMPT]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["ok"] is False
    assert "guarded: stopped at refuse: GuardrailTriggered is terminal" in err
    assert PROMPT not in err and "sk-verbose" not in err


def test_without_verbose_nothing_is_reported_and_structlog_is_restored(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import structlog

    was = structlog.is_configured()
    assert main(["run", str(chain), "--agent", "review", "-v", "hi"]) == 0
    assert structlog.is_configured() == was
    assert not events.is_enabled() or was
    capsys.readouterr()
    assert main(["run", str(chain), "--agent", "review", "hi"]) == 0
    assert capsys.readouterr().err == ""


def test_rich_lines_on_a_terminal_plain_elsewhere() -> None:
    event = {"event": "fallback", "agent": "a", "child": "x", "to": "y", "reason": "rate_limited"}
    event |= {"error_type": "RateLimited", "error_kind": "transient"}
    plain = io.StringIO()
    with Progress(plain).active():
        events.emit("info", **event)
    assert plain.getvalue().endswith("] a: fallback x -> y after RateLimited (rate_limited)\n")
    assert "\x1b[" not in plain.getvalue()

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    coloured = Terminal()
    with Progress(coloured).active():
        events.emit("info", **event)
    assert "\x1b[" in coloured.getvalue() and "a: fallback x -> y after" in coloured.getvalue()


def test_unknown_events_and_unlisted_fields_are_never_printed() -> None:
    assert describe_event({"event": "something_new", "prompt": PROMPT}) is None
    shown = describe_event(
        {
            "event": "attempt_failed",
            "agent": "a",
            "child": "c",
            "attempt": 1,
            "error_type": "ServerError",
            "reason": "server_error",
            "duration": 0.2,
            "message": PROMPT,
            "api_key": "sk-x",
        }
    )
    assert shown is not None and PROMPT not in shown[1] and "sk-x" not in shown[1]


def test_verbose_on_a_workflow_names_its_phases_and_each_agents_progress(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(chain), "--workflow", "release", "-v", PROMPT]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("== review (answered by fn) ==")
    assert "workflow release: phases Review -> Summary" in err
    assert "quick: fallback down -> fn after ConnectionError (transient)" in err
    assert PROMPT not in err


async def test_a_hundred_runs_in_flight_print_whole_lines(scripted: type) -> None:
    import asyncio

    from orchestrator import FallbackAgent
    from orchestrator.errors import ServerError

    out = io.StringIO()
    with Progress(out).active():
        agents = [
            FallbackAgent(
                [scripted(f"p{i}", [ServerError("503", status=503)]), scripted(f"b{i}", ["ok"])],
                name=f"a{i}",
                max_retries=0,
            )
            for i in range(100)
        ]
        results = await asyncio.gather(*(a.run("hi") for a in agents))
    assert {r.handled_by for r in results} == {f"b{i}" for i in range(100)}
    lines = out.getvalue().splitlines()
    answered = [line for line in lines if "answered by" in line]
    assert len(answered) == 100
    for i in range(100):
        assert (
            sum(f"] a{i}: fallback p{i} -> b{i} after ServerError" in line for line in lines) == 1
        )


def test_an_applications_structlog_setup_is_restored_after_verbose(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import structlog

    seen: list[str] = []

    def keep(logger: object, method: str, event: dict[str, object]) -> dict[str, object]:
        seen.append(str(event.get("event")))
        raise structlog.DropEvent

    before, was = structlog.get_config(), structlog.is_configured()
    try:
        structlog.configure(processors=[keep])
        assert main(["run", str(chain), "--agent", "review", "-v", "hi"]) == 0
        assert seen == []  # during the command: its own lines only, stdout clean
        assert structlog.get_config()["processors"] == [keep]
        structlog.get_logger("app").info("after")
        assert seen == ["after"]
    finally:
        structlog.configure(**before)
        if not was:
            structlog.reset_defaults()
    assert capsys.readouterr().out == "answer: hi\n"


async def test_a_skip_says_why_it_was_skipped(clock: Any) -> None:
    # A child skipped without a request is attempt 0 for a context window too, not only
    # for an open circuit: the line must not send the user to look at circuits.
    from orchestrator import FallbackAgent
    from tests.orchestrator.engine.test_context_window import LONG, windowed

    out = io.StringIO()
    agent = FallbackAgent([windowed("small", 500), windowed("large", None)], clock=clock)
    with Progress(out).active():
        assert (await agent.run(LONG)).handled_by == "large"
    text = out.getvalue()
    assert "skipped small: its context window cannot hold the request" in text, text
    assert "circuit" not in text
    circuit = {"event": "attempt_failed", "child": "c", "attempt": 0, "reason": "circuit_open"}
    shown = describe_event({**circuit, "error_type": "CircuitOpen", "error_kind": "unusable"})
    assert shown is not None and shown[1] == "skipped c: circuit open"
