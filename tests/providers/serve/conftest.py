"""A gateway on loopback for the tests: same event loop, real HTTP, real sockets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent, Request, Response
from providers import AnthropicMessages, OpenAIChat, SimulatedServer
from providers.serve import GatewayKeys, GatewaySettings, Models
from providers.serve.server import listen_socket, serve
from providers.serve.settings import SERVERS
from tests.orchestrator.health.redis.conftest import redis_server_factory

__all__ = ["redis_server_factory"]  # a fixture: real redis-servers a test may stop

UPSTREAM_KEY = "sk-upstream-secret-0123456789"
#: The HTTP server the gateway of the test runs on (set by the ``server`` fixture).
_SERVER = ["aiohttp"]


@pytest.fixture(autouse=True, params=SERVERS)
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every gateway test runs on each HTTP server (``gateway()`` below serves on it)."""
    name: str = request.param
    _SERVER[0] = name
    yield name
    _SERVER[0] = "aiohttp"  # tests elsewhere that borrow gateway() get the same one each run


def current_server() -> str:
    """The HTTP server the running test's gateway uses."""
    return _SERVER[0]


@asynccontextmanager
async def gateway(
    agents: Mapping[str, Any],
    *,
    workflows: Mapping[str, Any] | None = None,
    keys: GatewayKeys | None = None,
    **limits: Any,
) -> AsyncIterator[str]:
    """Serve ``agents`` on 127.0.0.1 (any free port); yields the base URL."""
    settings = GatewaySettings(port=0, server=limits.pop("server", _SERVER[0]), **limits)
    sock = listen_socket("127.0.0.1", 0, reuse_port=False)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    stop = asyncio.Event()
    ready = asyncio.Event()
    async with Models(agents, workflows or {}) as models:
        task = asyncio.create_task(
            serve(models, keys or GatewayKeys(), settings, sock, stop, ready.set)
        )
        await ready.wait()
        try:
            yield url
        finally:
            stop.set()
            await task


class Node:
    """A node the gateway can serve, for tests that script its run or stream: a name, no
    health store, and an ``async with`` that does nothing."""

    name = "node"
    health_store = None

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None


async def answered(
    agents: Mapping[str, Any], path: str, request: Mapping[str, Any]
) -> tuple[int, dict[str, str], Any]:
    """``request`` sent once to ``path`` of a gateway serving ``agents``: the status, the
    headers and the JSON reply."""
    async with (
        gateway(agents) as url,
        aiohttp.ClientSession() as http,
        http.post(url + path, json=request) as r,
    ):
        return r.status, dict(r.headers), await r.json()


async def whole_and_streamed(
    agents: Mapping[str, Any], path: str, request: Mapping[str, Any]
) -> tuple[Any, str]:
    """``request`` sent to ``path`` of a gateway serving ``agents``, as asked and then with
    ``stream: true``: the JSON reply and the raw text of the stream."""
    async with gateway(agents) as url, aiohttp.ClientSession() as http:
        async with http.post(url + path, json=request) as r:
            reply = await r.json()
        async with http.post(url + path, json={**request, "stream": True}) as r:
            raw = (await r.read()).decode()
    return reply, raw


def fallback(sim: SimulatedServer, **kwargs: Any) -> FallbackAgent:
    """The chain of the issue: simulated Anthropic first, simulated OpenAI second."""
    return FallbackAgent(
        [
            AnthropicMessages("claude-sim", base_url=sim.anthropic_url, api_key=UPSTREAM_KEY),
            OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=UPSTREAM_KEY),
        ],
        retry_strategy="none",
        max_retries=0,
        **kwargs,
    )


class Recorder:
    """A provider that records each request and answers with ``reply``."""

    def __init__(self, reply: Response | str | BaseException = "ok", name: str = "fn") -> None:
        self.name = name
        self.reply = reply
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Response:
        self.requests.append(request)
        await asyncio.sleep(0)
        if isinstance(self.reply, BaseException):
            raise self.reply
        return self.reply if isinstance(self.reply, Response) else Response(self.reply)


def tool_body(path: str, schema: Mapping[str, Any], *, stream: bool = False) -> dict[str, Any]:
    """A request for model "m" offering one tool, ``lookup``, whose parameters are
    ``schema``, in the wire format of ``path`` (chat completions, messages or responses)."""
    user = [{"role": "user", "content": "x"}]
    if path.endswith("/messages"):
        tool: dict[str, Any] = {"name": "lookup", "input_schema": schema}
        return {"model": "m", "max_tokens": 50, "stream": stream, "messages": user, "tools": [tool]}
    if path.endswith("/responses"):
        tool = {"type": "function", "name": "lookup", "parameters": schema}
        return {"model": "m", "stream": stream, "input": "x", "tools": [tool]}
    tool = {"type": "function", "function": {"name": "lookup", "parameters": schema}}
    return {"model": "m", "stream": stream, "messages": user, "tools": [tool]}
