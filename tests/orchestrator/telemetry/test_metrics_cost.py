"""Issue 22: all the metrics of a call within 10 us of CPU: one lock taken per successful
attempt, into points found once (label sets built once), and nothing exported for a point
made ahead but never recorded."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from orchestrator import FallbackAgent, Request, Response, Usage
from orchestrator.telemetry import names as n
from orchestrator.telemetry.instruments import instruments
from providers import FunctionProvider
from tests.orchestrator.telemetry.conftest import Otel


class CountingLock:
    """A lock that counts how often it was taken."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.taken = 0

    def __enter__(self) -> bool:
        self.taken += 1
        return self.lock.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self.lock.__exit__(*exc_info)


def _agent(cost: float | None) -> FallbackAgent:
    async def reply(request: Request) -> Response:
        return Response("ok", usage=Usage(5, 2), cost_usd=cost)

    return FallbackAgent([FunctionProvider(reply, name="fn")], tracing=False)


async def test_a_successful_call_takes_the_metrics_lock_once(otel: Otel) -> None:
    agent = _agent(0.25)
    await agent.run("x")  # the instruments and the child's points are made
    meters = instruments()
    assert meters is not None
    counting = CountingLock()
    tallies: list[Any] = [
        meters.duration,
        meters.tokens,
        meters.first_chunk,
        meters.attempts,
        meters.cost,
    ]
    for tally in [*tallies, meters.fallbacks]:
        tally._lock = counting
    if hasattr(meters, "lock"):  # one lock shared by every tally
        meters.lock = counting  # type: ignore[assignment]
    calls = 20
    await asyncio.gather(*(agent.run("x") for _ in range(calls)))
    assert counting.taken == calls  # was 5 a call: one per record
    (attempts,) = otel.points(n.METRIC_ATTEMPTS)
    assert attempts.value == calls + 1
    (duration,) = otel.points(n.METRIC_DURATION)
    assert duration.count == calls + 1
    tokens = {dict(p.attributes)[n.TOKEN_TYPE]: p.sum for p in otel.points(n.METRIC_TOKENS)}
    assert tokens == {"input": 5 * (calls + 1), "output": 2 * (calls + 1)}
    (cost,) = otel.points(n.METRIC_COST)
    assert cost.value == 0.25 * (calls + 1)


async def test_points_made_ahead_show_only_once_recorded(otel: Otel) -> None:
    await _agent(None).run("x")  # not streamed, no cost: no first chunk, no cost
    assert otel.points(n.METRIC_COST) == []
    assert otel.points(n.METRIC_FIRST_CHUNK) == []
    assert len(otel.points(n.METRIC_DURATION)) == 1
