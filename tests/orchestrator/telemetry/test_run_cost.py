"""What telemetry costs a run once it is set up (issue 22): the agents the circuit gauge
reports are registered once, not looked up on every run; a request leaving with no span
active asks the context once."""

from __future__ import annotations

import weakref
from typing import Any

import pytest

from orchestrator import FallbackAgent, Request, Response
from orchestrator.telemetry import trace_headers
from orchestrator.telemetry.instruments import instruments
from tests.orchestrator.telemetry.conftest import Otel


class Plain:
    """A provider answering at once."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: Request) -> Response:
        return Response(text="ok")


class CountingSet(weakref.WeakSet[Any]):
    """A WeakSet counting its membership checks (each one makes a weakref)."""

    def __init__(self, data: Any) -> None:
        super().__init__(data)
        self.checks = 0

    def __contains__(self, item: object) -> bool:
        self.checks += 1
        return super().__contains__(item)


async def test_a_watched_agent_is_not_looked_up_on_every_run(otel: Otel) -> None:
    agent = FallbackAgent([Plain("only")])
    await agent.run("x")
    meters = instruments()
    assert meters is not None and agent in meters.watched
    meters.watched = watched = CountingSet(meters.watched)
    for _ in range(3):
        await agent.run("x")
    assert watched.checks == 0  # main: one per run (3)
    other = FallbackAgent([Plain("other")])
    await other.run("x")
    assert set(watched) == {agent, other}  # a new agent is still registered, once


def test_an_empty_context_is_not_asked_for_its_span(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import context, trace

    asked: list[object] = []

    def counted(*args: Any) -> Any:
        asked.append(args)
        return real(*args)

    real = trace.get_current_span
    monkeypatch.setattr(trace, "get_current_span", counted)
    headers = {"authorization": "Bearer x"}
    assert trace_headers(headers) is headers
    assert asked == []  # main: asked on every request (its look-ups and an ABC check)
    token = context.attach(context.set_value("unrelated", 1))
    try:
        assert trace_headers(headers) is headers  # a context without a span: asked, none
    finally:
        context.detach(token)
    assert len(asked) == 1
