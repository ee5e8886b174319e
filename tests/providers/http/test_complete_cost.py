"""Issue 22: what a non-streamed call costs the provider below its own ``complete``: the
reqwest transport reads a whole reply in the request's own context, with no stream
object over it. Counted over real loopback HTTP against the simulator."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import orjson

import providers
from orchestrator.types import Request
from providers.simulator import Fault, SimulatedServer
from tests.providers.http.test_http_matrix import make

TRANSPORTS = ("aiohttp", "reqwest")
_TRANSPORTS_DIR = os.path.join(os.path.dirname(providers.__file__), "http", "transports") + os.sep


class _Counts:
    """A profile function counting ``orjson.loads`` calls, and the Python functions run
    (started or resumed) in the transports' modules."""

    def __init__(self) -> None:
        self.loads = 0
        self.transport_calls: set[str] = set()

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "c_call" and arg is orjson.loads:
            self.loads += 1
        elif event == "call" and frame.f_code.co_filename.startswith(_TRANSPORTS_DIR):
            self.transport_calls.add(frame.f_code.co_qualname)


@contextmanager
def counted() -> Iterator[_Counts]:
    counts = _Counts()
    sys.setprofile(counts)
    try:
        yield counts
    finally:
        sys.setprofile(None)


async def _calls(provider: Any, request: Request, calls: int) -> _Counts:
    await provider.complete(request)  # warm: the transport's pool and imports
    with counted() as counts:
        replies = await asyncio.gather(*(provider.complete(request) for _ in range(calls)))
    assert {r.text for r in replies} == {"pong"}
    return counts


async def test_the_reqwest_transport_reads_a_whole_reply_in_its_requests_context(
    sim: SimulatedServer,
) -> None:
    sim.set_default("openai", Fault.ok("pong"))
    provider = make("openai", sim, "reqwest")
    counts = await _calls(provider, Request("hi"), 1)
    # main: 8 functions (also the stream reply over the response, its status and headers,
    # and its reading method around the capped read); now the post, the request's
    # opening (its URL parsed once per URL) and the capped read.
    assert len(counts.transport_calls) <= 4, counts.transport_calls
