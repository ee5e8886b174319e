"""Structured events for attempts, retries, fallbacks and outcomes."""

from __future__ import annotations

import pytest

from orchestrator import FallbackAgent, FallbackError
from orchestrator.errors import AuthenticationFailed, ServerError
from orchestrator.testing import FakeClock, capture_events
from tests.conftest import Scripted


async def test_events_for_a_run_that_fails_over(clock: FakeClock) -> None:
    agent = FallbackAgent(
        [Scripted("a", [ServerError("down")]), Scripted("b", ["ok"])],
        name="review",
        max_retries=1,
        retry_delay=2.0,
        clock=clock,
    )
    with capture_events() as events:
        await agent.run("secret prompt")
    names = [e["event"] for e in events]
    assert names == [
        "attempt_failed",
        "retry_scheduled",
        "attempt_failed",
        "fallback",
        "attempt_succeeded",
        "run_succeeded",
    ]
    retry = events[1]
    assert retry["child"] == "a" and retry["attempt"] == 1 and retry["delay"] == 2.0
    assert retry["error_kind"] == "transient" and retry["error_type"] == "ServerError"
    assert events[3]["to"] == "b" and events[3]["reason"] == "error"
    assert all(e["agent"] == "review" for e in events)
    assert all(e["logger"] == "orchestrator" for e in events)
    assert "secret prompt" not in repr(events)


async def test_run_failed_event(clock: FakeClock) -> None:
    agent = FallbackAgent([Scripted("a", [AuthenticationFailed("sk-secret")])], clock=clock)
    with capture_events() as events, pytest.raises(FallbackError):
        await agent.run("x")
    assert events[-1]["event"] == "run_failed" and events[-1]["log_level"] == "warning"
    assert "sk-secret" not in repr(events)


async def test_run_succeeded_event(clock: FakeClock) -> None:
    with capture_events() as events:
        await FallbackAgent([Scripted("a", ["ok"])], clock=clock).run("x")
    done = [e for e in events if e["event"] == "run_succeeded"]
    assert len(done) == 1 and done[0]["handled_by"] == "a" and done[0]["log_level"] == "info"


def test_capture_events_restores_the_structlog_configuration_it_found(clock: FakeClock) -> None:
    import structlog

    from orchestrator import events

    was_configured, saved = structlog.is_configured(), structlog.get_config()
    try:
        structlog.reset_defaults()
        with capture_events() as captured:
            FallbackAgent([Scripted("a", ["ok"])], clock=clock).run_sync("x")
        assert any(e["event"] == "run_succeeded" for e in captured)
        # Left unconfigured, as found: later calls in the process print nothing.
        assert not structlog.is_configured() and not events.is_enabled()
        structlog.configure(processors=[structlog.processors.KeyValueRenderer()])
        mine = structlog.get_config()["processors"]
        with capture_events():
            pass
        assert structlog.is_configured() and structlog.get_config()["processors"] == mine
    finally:
        structlog.reset_defaults()
        if was_configured:
            structlog.configure(**saved)


async def test_attempt_events_carry_the_attempt_spans_fields(clock: FakeClock) -> None:
    from orchestrator import Response, Usage

    agent = FallbackAgent(
        [
            Scripted("a", [ServerError("down"), AuthenticationFailed("no")]),
            Scripted("b", [Response("ok", Usage(7, 3), cost_usd=0.25)]),
        ],
        max_retries=1,
        retry_delay=1.0,
        clock=clock,
    )
    with capture_events() as events:
        await agent.run("x")
    attempts = [e for e in events if e["event"].startswith("attempt_")]
    assert [(e["child"], e["attempt"], e["decision"]) for e in attempts] == [
        ("a", 1, "retry"),
        ("a", 2, "fallback"),
        ("b", 1, "success"),
    ]
    assert attempts[0]["reason"] == "error" and attempts[1]["reason"] == "unusable"
    assert attempts[1]["error_type"] == "AuthenticationFailed"
    won = attempts[2]
    assert (won["input_tokens"], won["output_tokens"], won["cost_usd"]) == (7, 3, 0.25)


async def test_a_terminal_attempt_is_decided_stop(clock: FakeClock) -> None:
    from orchestrator.errors import InvalidRequest

    agent = FallbackAgent(
        [Scripted("a", [InvalidRequest("bad")]), Scripted("b", ["ok"])], clock=clock
    )
    with capture_events() as events, pytest.raises(InvalidRequest):
        await agent.run("x")
    names = [(e["event"], e.get("decision")) for e in events]
    assert names == [("attempt_failed", "stop"), ("terminal_error", None)]


def test_capture_events_works_with_processors_configured_as_a_tuple(clock: FakeClock) -> None:
    # structlog.configure accepts any sequence; capture_logs alone needs a list (.copy()).
    import structlog

    was_configured, saved = structlog.is_configured(), structlog.get_config()
    try:
        mine = (structlog.processors.KeyValueRenderer(),)
        structlog.configure(processors=mine)
        with capture_events() as captured:
            FallbackAgent([Scripted("a", ["ok"])], clock=clock).run_sync("x")
        assert any(e["event"] == "run_succeeded" for e in captured)
        assert structlog.get_config()["processors"] == mine
    finally:
        structlog.reset_defaults()
        if was_configured:
            structlog.configure(**saved)
