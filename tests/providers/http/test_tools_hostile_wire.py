"""Hostile tool calls on each vendor's wire (loopback to the simulator): bounded errors."""

from __future__ import annotations

import pytest

from orchestrator.errors import InvalidOutput
from orchestrator.types import Usage
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_tools_wire import ROUTES, ask, provider, streamed

HOSTILE_NAME = "x" * 100_000 + "\x1b[2J\u202e"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("arguments", ["[1, 2]", '{"city": '])
async def test_a_hostile_tool_name_is_cut_and_escaped_in_the_error(
    sim: SimulatedServer, route: str, stream: bool, arguments: str
) -> None:
    sim.script(route, [Fault.ok(tool_calls=[{"name": HOSTILE_NAME, "arguments": arguments}])])
    p = provider(route, sim)
    with pytest.raises(InvalidOutput) as info:
        if stream:
            await streamed(p, ask())
        else:
            await p.complete(ask())
    message = str(info.value)
    assert "xxxx" in message and len(message) < 400
    assert "\x1b" not in message and "\u202e" not in message


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_reply_with_bad_arguments_keeps_the_usage_it_reported(
    sim: SimulatedServer, route: str, stream: bool
) -> None:
    from orchestrator import FallbackAgent
    from tests.providers.http.test_billed_invalid_output import only_attempt

    bad = Fault.ok(tool_calls=[{"name": "get_weather", "arguments": "[1]"}], usage=(100, 50))
    sim.script(route, [bad])
    agent = FallbackAgent([provider(route, sim, price=(2.0, 8.0))], max_retries=0, schema_retries=0)
    attempt = await only_attempt(agent, stream=stream)
    assert attempt.usage == Usage(100, 50)
    assert isinstance(attempt.error, InvalidOutput) and attempt.error.usage == Usage(100, 50)
    assert attempt.cost_usd == pytest.approx((100 * 2.0 + 50 * 8.0) / 1_000_000)
