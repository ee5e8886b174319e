"""What telemetry costs a run, counted in Python functions entered (issue 22): with only
metrics on, a successful attempt records everything through a few frames; without an SDK
a run pays a few look-ups (the providers read once, the context read without a call)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import opentelemetry
import pytest
import structlog
from opentelemetry import metrics
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from orchestrator import FallbackAgent, Request, Response, Usage, events, telemetry
from orchestrator.engine.run import Run
from orchestrator.telemetry import installed, propagation
from orchestrator.telemetry import names as n
from tests.orchestrator.telemetry.conftest import uninstall
from tests.profiling import profiled

#: Where telemetry's Python frames live: ours, structlog's flag, the API's context.
PLACES = tuple(
    str(Path(module.__file__ or "").parent if package else module.__file__)
    for module, package in (
        (telemetry, True),
        (events, False),
        (opentelemetry, True),
        (structlog, True),
    )
)


class Counted:
    """A profile hook counting the frames started in :data:`PLACES`, by function."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(PLACES):
            name = frame.f_code.co_qualname
            self.calls[name] = self.calls.get(name, 0) + 1

    def total(self) -> int:
        return sum(self.calls.values())


class Vendor:
    """An HTTP provider's shape: the request goes out with the trace headers, then replies."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: Request) -> Response:
        from orchestrator.telemetry import trace_headers

        trace_headers({"authorization": "Bearer x"})  # as providers.http sends each request
        return Response(text="ok", usage=Usage(5, 2))


async def _calls_a_run(agent: FallbackAgent, runs: int = 5) -> Counted:
    await agent.run("x")  # the instruments and the child's points are made
    with profiled(Counted()) as counted:
        for _ in range(runs):
            await agent.run("x")
    counted.calls = {k: v // runs for k, v in counted.calls.items()}
    return counted


async def test_a_run_with_metrics_on_enters_few_telemetry_frames(meter_with: Any) -> None:
    reader = InMemoryMetricReader()
    meter_with(reader)
    counted = await _calls_a_run(FallbackAgent([Vendor("gpt")], max_retries=0, hedge_after=None))
    assert counted.total() <= 17, counted.calls  # main: 29
    points = _points(reader, n.METRIC_DURATION)
    assert [p.count for p in points] == [6]  # every run still recorded


async def test_a_run_without_an_sdk_enters_few_telemetry_frames() -> None:
    uninstall()  # the API's own no-op providers, as in an application without an SDK
    counted = await _calls_a_run(FallbackAgent([Vendor("gpt")], max_retries=0, hedge_after=None))
    assert counted.total() <= 5, counted.calls  # main: 11


def _points(reader: InMemoryMetricReader, name: str) -> list[Any]:
    data = reader.get_metrics_data()
    found: Callable[[Any], bool] = lambda m: m.name == name  # noqa: E731
    return [
        p
        for rm in (data.resource_metrics if data is not None else ())
        for sm in rm.scope_metrics
        for m in sm.metrics
        if found(m)
        for p in m.data.data_points
    ]


async def test_what_a_run_gets_follows_the_installed_providers(meter_with: Any) -> None:
    agent = FallbackAgent([Vendor("gpt")], max_retries=0, hedge_after=None)
    first, second = InMemoryMetricReader(), InMemoryMetricReader()
    meter_with(first)
    await agent.run("x")
    meter_with(second)  # another provider: its own instruments, from the next run on
    await agent.run("x")
    await agent.run("x")
    assert [p.count for p in _points(first, n.METRIC_DURATION)] == [1]
    assert [p.count for p in _points(second, n.METRIC_DURATION)] == [2]
    uninstall()
    run = Run.start(agent, Request("x"), None, None)
    assert run.log.trace is None  # no SDK now: no observer


async def test_providers_named_by_the_environment_are_read_through_the_api(
    meter_with: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = InMemoryMetricReader()
    meter_with(reader)
    monkeypatch.setenv("OTEL_PYTHON_METER_PROVIDER", "sdk_meter_provider")
    for name in ("_read_tracer_provider", "_read_meter_provider", "_globals"):
        monkeypatch.setattr(installed, name, getattr(installed, name))  # restored after
    monkeypatch.setattr(installed, "_api", None)  # imported again: the variable is seen
    assert installed.providers()[1] is metrics.get_meter_provider()
    assert installed._globals is None  # read through the API's getter, not its global
    await FallbackAgent([Vendor("gpt")], max_retries=0, hedge_after=None).run("x")
    assert [p.count for p in _points(reader, n.METRIC_DURATION)] == [1]


def test_the_context_is_read_through_the_api_when_it_is_not_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from opentelemetry import context

    monkeypatch.setattr(context, "_RUNTIME_CONTEXT", object())  # another runtime context
    monkeypatch.setattr(propagation, "_current", None)
    try:
        assert propagation._context_reader() is context.get_current
    finally:
        propagation._current = None  # found again, from the real runtime context
