"""Issue 22: what a non-streamed call costs the provider below its own ``complete``: a
request body of plain values is written without being parsed back to prove it, the
reqwest transport reads a whole reply in the request's own context, with no stream
object over it, and a healthy reply is parsed and read with few calls. Counted over real loopback HTTP against the simulator, one call and
many in flight; a request holding what orjson could write otherwise than the stdlib
keeps its proof."""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from enum import Enum
from types import FrameType
from typing import Any

import orjson
import pytest

import providers
from orchestrator.types import Request, Tool
from providers import OpenAIChat
from providers.http.transports import RawReply
from providers.simulator import Fault, SimulatedServer
from tests.profiling import profiled
from tests.providers.http.test_http_matrix import make

TRANSPORTS = ("aiohttp", "reqwest")
_PROVIDERS = os.path.dirname(providers.__file__) + os.sep
_TRANSPORTS_DIR = os.path.join(_PROVIDERS, "http", "transports") + os.sep
_SIMULATOR = os.path.join(_PROVIDERS, "simulator") + os.sep


class _Counts:
    """A profile function counting ``orjson.loads`` calls, and the Python functions run
    (started or resumed) in the transports' modules."""

    def __init__(self) -> None:
        self.loads = 0
        self.transport_calls: set[str] = set()
        self.provider_calls: list[str] = []

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "c_call" and arg is orjson.loads:
            self.loads += 1
        elif (
            event == "call"
            and frame.f_code.co_filename.startswith(_PROVIDERS)
            and not frame.f_code.co_filename.startswith(_SIMULATOR)
        ):
            self.provider_calls.append(frame.f_code.co_qualname)
            if frame.f_code.co_filename.startswith(_TRANSPORTS_DIR):
                self.transport_calls.add(frame.f_code.co_qualname)


def counted() -> AbstractContextManager[_Counts]:
    return profiled(_Counts())


async def _calls(provider: Any, request: Request, calls: int) -> _Counts:
    await provider.complete(request)  # warm: the transport's pool and imports
    with counted() as counts:
        replies = await asyncio.gather(*(provider.complete(request) for _ in range(calls)))
    assert {r.text for r in replies} == {"pong"}
    return counts


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("calls", [1, 20])
async def test_a_plain_request_body_is_not_parsed_back(
    sim: SimulatedServer, transport: str, calls: int
) -> None:
    sim.set_default("openai", Fault.ok("pong"))
    provider = make("openai", sim, transport)
    for request in (Request("hi"), Request("hi", max_tokens=5, temperature=0.5, stop=["x"])):
        counts = await _calls(provider, request, calls)
        # main: 2 a call (the request body parsed back, then the reply); now the reply's.
        assert counts.loads == calls, (request, counts.loads)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_healthy_reply_is_sent_read_and_parsed_with_few_calls(
    sim: SimulatedServer, transport: str
) -> None:
    sim.set_default("openai", Fault.ok("pong"))
    provider = make("openai", sim, transport)
    counts = await _calls(provider, Request("hi"), 1)
    # main, reqwest: 8 functions of the transport's (also the stream reply over the
    # response, its status and headers, and its reading method around the capped read);
    # now the post, the request's opening (its URL parsed once per URL), the whole
    # reply's reading and the capped read. aiohttp's likewise.
    assert len(counts.transport_calls) <= 5, counts.transport_calls
    # main: 48 starts and resumes of the providers' functions (49 on aiohttp): also the
    # reply's parse wrapped twice, a coroutine parsing a small reply, a generator
    # building the messages, the refusal and tool calls looked at through a call each
    # when the reply has neither, and a call for each count a vendor does not name.
    assert len(counts.provider_calls) <= 35, counts.provider_calls


class _Recorder:
    """A :class:`~providers.http.transports.Transport` keeping each body sent, answering
    a Chat Completions reply."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def post(
        self, url: str, headers: Mapping[str, str], body: bytes, *_: Any, **__: Any
    ) -> RawReply:
        self.bodies.append(body)
        reply = {"choices": [{"message": {"content": "pong"}, "finish_reason": "stop"}]}
        return RawReply(200, {}, json.dumps(reply).encode())

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        return None


class Color(Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (Request("hi", temperature=math.nan), b'"temperature": NaN'),
        (Request("hi", temperature=math.inf), b'"temperature": Infinity'),
        (Request("hi", json_schema={"type": "object", "x": (1, 2)}), b'"x": [1, 2]'),
        (Request("hi", stop=[math.nan]), b'"stop": [NaN]'),  # type: ignore[list-item]
        (
            Request(
                "hi",
                tools=[
                    Tool(
                        "f",
                        parameters={
                            "type": "object",
                            "properties": {"n": {"type": "number", "maximum": math.nan}},
                        },
                    )
                ],
            ),
            b'"maximum": NaN',
        ),
    ],
)
async def test_a_request_orjson_could_write_otherwise_keeps_its_proof(
    request_: Request, expected: bytes
) -> None:
    recorder = _Recorder()
    provider = OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key="k", client=recorder)
    with counted() as counts:
        await provider.complete(request_)
    assert expected in recorder.bodies[0]  # the stdlib's JSON, as before
    assert counts.loads >= 1


async def test_an_enum_in_a_schema_is_written_by_the_stdlib_or_refused_as_before() -> None:
    recorder = _Recorder()
    provider = OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key="k", client=recorder)
    with pytest.raises(TypeError):  # orjson would write "red"; the stdlib refuses it
        await provider.complete(Request("hi", json_schema={"enum": [Color.RED]}))
    assert recorder.bodies == []
