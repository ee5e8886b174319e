"""``async with FallbackAgent(...)`` and ``aclose()``: each closes what it opened, nothing else.

An entered HTTP provider opens its own pool and closes it on exit; a user's
``client=`` is never closed; the event loop's shared client belongs to the loop.
"""

from __future__ import annotations

import asyncio
import gc
import warnings
from typing import Any

import aiohttp
import httpx
import pytest

from orchestrator import FallbackAgent
from orchestrator.types import Request, Response
from providers.generic_http import HTTPFallback
from providers.http.client import shared_client
from providers.openai import OpenAIChat
from providers.simulator import Fault, SimulatedServer


def _session(provider: Any) -> aiohttp.ClientSession:
    session = provider._transport._session
    assert isinstance(session, aiohttp.ClientSession)
    return session


async def test_async_with_opens_a_pool_per_provider_and_closes_it(sim: SimulatedServer) -> None:
    sim.reset()
    openai = OpenAIChat("m", base_url=sim.openai_url, api_key="k")
    hook = HTTPFallback(sim.http_url)
    inner = FallbackAgent([hook], name="inner")
    shared = shared_client()
    async with FallbackAgent([openai, inner], max_retries=0) as agent:
        opened = [_session(openai), _session(hook)]  # the nested agent entered its child
        assert all(s is not shared._session for s in opened)  # type: ignore[attr-defined]
        assert (await agent.run("hi")).text.startswith("sim-openai")
        sim.script("openai", [Fault.status(503)])
        assert (await agent.run("hi")).handled_by == hook.name  # over the other pool
    assert all(s.closed for s in opened)
    assert openai._transport is None and hook._transport is None  # back to the shared client
    assert not shared._session.closed  # type: ignore[attr-defined]
    assert (await openai.complete(Request("again"))).text  # and still usable
    sim.reset()


@pytest.mark.parametrize("kind", ["httpx", "aiohttp"])
async def test_a_users_client_is_never_closed(sim: SimulatedServer, kind: str) -> None:
    client: Any = httpx.AsyncClient() if kind == "httpx" else aiohttp.ClientSession()
    try:
        provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k", client=client)
        async with FallbackAgent([provider]) as agent:
            assert (await agent.run("hi")).text
        await agent.aclose()
        await provider.aclose()
        assert not (client.is_closed if kind == "httpx" else client.closed)
        assert (await provider.complete(Request("hi"))).text  # the same client, still in use
    finally:
        await (client.aclose() if kind == "httpx" else client.close())


async def test_aclose_without_entering_leaves_the_shared_client_open(sim: SimulatedServer) -> None:
    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k")
    agent = FallbackAgent([provider])
    assert (await agent.run("hi")).text
    shared = shared_client()
    await agent.aclose()
    await agent.aclose()  # idempotent
    assert shared_client() is shared and not shared._session.closed  # type: ignore[attr-defined]


async def test_a_provider_in_two_entered_agents_closes_at_the_last_exit(
    sim: SimulatedServer,
) -> None:
    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k")
    first, second = FallbackAgent([provider]), FallbackAgent([provider])
    async with first:
        session = _session(provider)
        async with second:
            assert _session(provider) is session
        assert not session.closed
        assert (await first.run("hi")).text
    assert session.closed


class _Child:
    """A provider with a lifecycle that records it (and can fail to enter or close)."""

    def __init__(self, name: str, log: list[str], fail: str = "") -> None:
        self.name, self.log, self.fail = name, log, fail

    async def complete(self, request: Request) -> Response:
        return Response(text="ok")

    async def __aenter__(self) -> _Child:
        if self.fail == "enter":
            raise RuntimeError(f"{self.name} cannot enter")
        self.log.append(f"enter {self.name}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        self.log.append(f"close {self.name}")
        if self.fail == "close":
            raise RuntimeError(f"{self.name} cannot close")


async def test_a_child_failing_to_enter_closes_those_entered() -> None:
    log: list[str] = []
    agent = FallbackAgent([_Child("a", log), _Child("b", log), _Child("c", log, fail="enter")])
    with pytest.raises(RuntimeError, match="c cannot enter"):
        async with agent:
            pass
    assert log == ["enter a", "enter b", "close b", "close a"]


async def test_aclose_closes_every_child_even_when_one_raises() -> None:
    log: list[str] = []
    agent = FallbackAgent([_Child("a", log), _Child("b", log, fail="close"), _Child("c", log)])
    with pytest.raises(RuntimeError, match="b cannot close"):
        async with agent:
            assert (await agent.run("x")).text == "ok"
    assert log == ["enter a", "enter b", "enter c", "close c", "close b", "close a"]


def test_async_with_under_asyncio_run_leaves_nothing_open(
    sim: SimulatedServer, caplog: pytest.LogCaptureFixture
) -> None:
    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k")

    async def main() -> aiohttp.ClientSession:
        async with FallbackAgent([provider]) as agent:
            await agent.run("hi")
            return _session(provider)

    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        session = asyncio.run(main())
        gc.collect()
    assert session.closed
    assert "Unclosed" not in caplog.text


def test_many_loops_leave_no_entry_and_one_collection_hook(sim: SimulatedServer) -> None:
    from providers.http import client as _client

    provider = OpenAIChat("m", base_url=sim.openai_url, api_key="k")
    for _ in range(5):
        asyncio.run(provider.complete(Request("hi")))  # closed at each loop's shutdown
        loop = asyncio.new_event_loop()
        loop.run_until_complete(provider.complete(Request("hi")))
        loop.close()  # no shutdown_asyncgens: forgotten at the next collection
        del loop
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # sockets: closed when collected
        gc.collect()
    assert len(_client._shared) == 0
    assert gc.callbacks.count(_client._sweep_closed_loops) == 1
