"""A stream stopped at its final Response leaves no async generator for the loop to close.

A provider yields its Response before the stream's tail, and the engine closes its
stream there (``assemble``, ``Watched``, a hedge's lane). Every layer below (the
vendor's events, the POST, the SSE decoder, the body reader) must be closed then,
in the caller's task: one left open is closed later by the event loop's asyncgen
finalizer, which costs a task and a loop turn per layer on every call. Over real
loopback HTTP, on both transports, one call and many in flight.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from orchestrator import FallbackAgent
from orchestrator.engine.deadlines import assemble
from orchestrator.types import Request
from providers.simulator import SimulatedServer
from tests.providers.http.test_http_matrix import make

ROUTES = ("openai", "anthropic", "gemini", "vertex_anthropic", "vertex_gemini", "bedrock")
TRANSPORTS = ("aiohttp", "reqwest")


@contextmanager
def left_to_the_loop() -> Iterator[list[str]]:
    """The names of the library's async generators the loop's finalizer had to close."""
    names: list[str] = []
    first, finalizer = sys.get_asyncgen_hooks()
    assert finalizer is not None

    def hook(agen: AsyncGenerator[Any, Any]) -> None:
        code: Any = agen
        if "/simulator/" not in code.ag_code.co_filename:
            names.append(code.__qualname__)
        finalizer(agen)

    sys.set_asyncgen_hooks(first, hook)
    try:
        yield names
    finally:
        sys.set_asyncgen_hooks(first, finalizer)


async def settle() -> None:
    """Let finalizer tasks (if any were scheduled) run."""
    for _ in range(3):
        await asyncio.sleep(0)


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("route", ROUTES)
async def test_a_stream_closed_at_its_response_closes_every_layer(
    sim: SimulatedServer, route: str, transport: str
) -> None:
    provider = make(route, sim, transport)
    with left_to_the_loop() as left:
        for _ in range(3):
            stream: AsyncGenerator[Any, None] = provider.stream(Request("hi"))
            response = await assemble(stream, provider.name)
            assert response.text
        await settle()
    assert left == []


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_hedged_runs_in_flight_leave_nothing_to_the_loop(
    sim: SimulatedServer, transport: str
) -> None:
    agent = FallbackAgent(
        [make("openai", sim, transport, name="a"), make("openai", sim, transport, name="b")]
    )
    assert agent.hedge is not None  # "auto": every run streams through a lane
    with left_to_the_loop() as left:
        results = await asyncio.gather(*(agent.run("hi") for _ in range(40)))
        await settle()
    assert {r.handled_by for r in results} == {"a"}
    assert left == []
