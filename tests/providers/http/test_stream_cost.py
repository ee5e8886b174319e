"""Issue 22: what a streamed call costs the provider below its own ``stream()``: the
layers between the body's chunks and the vendor's loop resume once per chunk, not once
per event, and a healthy event is parsed without a coroutine of its own. Counted over
real loopback HTTP against the simulator (which writes a reply's events in one chunk),
every streaming vendor, both transports, one call and many in flight."""

from __future__ import annotations

import asyncio
import os
from contextlib import AbstractContextManager
from inspect import CO_ASYNC_GENERATOR, CO_COROUTINE
from types import CodeType, FrameType
from typing import Any

import pytest

import providers
from orchestrator.types import Request
from providers.simulator import Fault, SimulatedServer
from tests.profiling import profiled
from tests.providers.http.test_http_matrix import make

ROUTES = (
    "openai",
    "azure",
    "anthropic",
    "gemini",
    "vertex_anthropic",
    "vertex_gemini",
    "bedrock",
)
TRANSPORTS = ("aiohttp", "reqwest")
_PROVIDERS = os.path.dirname(providers.__file__) + os.sep
_SIMULATOR = os.path.join(_PROVIDERS, "simulator") + os.sep
_SUSPENDABLE = CO_ASYNC_GENERATOR | CO_COROUTINE


class _Resumes:
    """A profile function counting, per code object of the providers package (the
    simulator's aside), each start and resume of an async generator or coroutine."""

    def __init__(self) -> None:
        self.counts: dict[CodeType, int] = {}

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if (
            event == "call"
            and code.co_flags & _SUSPENDABLE
            and code.co_filename.startswith(_PROVIDERS)
            and not code.co_filename.startswith(_SIMULATOR)
        ):
            self.counts[code] = self.counts.get(code, 0) + 1

    def below(self, provider: Any) -> int:
        """The starts and resumes of everything but ``provider``'s own ``stream``."""
        own = type(provider).stream.__code__
        return sum(n for code, n in self.counts.items() if code is not own)

    def generators(self) -> list[str]:
        """The names of the async generators that ran."""
        return sorted(c.co_qualname for c in self.counts if c.co_flags & CO_ASYNC_GENERATOR)


def counted() -> AbstractContextManager[_Resumes]:
    return profiled(_Resumes())


async def _consume(provider: Any) -> int:
    """Items the provider's stream yields for one request."""
    return len([item async for item in provider.stream(Request("hi"))])


async def _below(sim: SimulatedServer, route: str, provider: Any, events: int, calls: int) -> int:
    """What runs below ``provider``'s stream for ``calls`` streams at once of ``events``
    text deltas each (all in one chunk, as the simulator writes them)."""
    sim.set_default(route, Fault.ok("word " * events, chunks=events))
    with counted() as resumes:
        items = await asyncio.gather(*(_consume(provider) for _ in range(calls)))
    assert min(items) > events
    return resumes.below(provider)


@pytest.mark.parametrize(("route", "transport"), [(r, t) for r in ROUTES for t in TRANSPORTS])
async def test_the_layers_below_a_stream_resume_per_chunk_not_per_event(
    sim: SimulatedServer, route: str, transport: str
) -> None:
    provider = make(route, sim, transport)
    await _consume(provider)  # warm: the transport's pool and imports
    few = await _below(sim, route, provider, 10, 1)
    many = await _below(sim, route, provider, 80, 1)
    # main: 4-7 more per event (the SSE decoder's, the POST's and the events' generators
    # resumed once each, and a coroutine or three parsing it): 280-490 more for 70 more
    # events. Now a few per chunk (one or two here) and per call, whatever the events.
    assert many - few <= 12, (few, many)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_many_streams_in_flight_pay_per_chunk_each(
    sim: SimulatedServer, transport: str
) -> None:
    provider = make("openai", sim, transport)
    await _consume(provider)
    few = await _below(sim, "openai", provider, 10, 20)
    many = await _below(sim, "openai", provider, 80, 20)
    assert many - few <= 20 * 12, (few, many)


async def test_a_streamed_call_runs_few_async_generators(sim: SimulatedServer) -> None:
    provider = make("openai", sim, "reqwest")
    await _consume(provider)
    with counted() as resumes:
        await _consume(provider)
    # main: 8 (also the events' forwarder, the SSE decoder's, the body reader's wrapper
    # and the transport's stream, a generator-based context manager); now the vendor's
    # stream, the POST's, the bounded body's and reqwest's raw body reader.
    assert len(resumes.generators()) <= 4, resumes.generators()
