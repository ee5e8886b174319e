"""``/readyz`` with a shared Redis health store: ok, then degraded when Redis goes away."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import aiohttp
import pytest

from orchestrator import FallbackAgent
from orchestrator.health import RedisHealthStore
from tests.orchestrator.health.redis.conftest import RedisServer
from tests.providers.serve.conftest import Recorder, gateway

pytestmark = pytest.mark.redis

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


async def _ready(http: aiohttp.ClientSession, url: str) -> dict[str, object]:
    async with http.get(url + "/readyz") as r:
        assert r.status == 200
        body: dict[str, object] = await r.json()
        return body


async def test_readyz_reports_the_shared_store(
    redis_server_factory: Callable[[], RedisServer],
) -> None:
    server = redis_server_factory()
    store = RedisHealthStore(server.url, key_prefix=f"test:{uuid.uuid4().hex[:8]}:")
    agent = FallbackAgent([Recorder()], health=store)
    async with gateway({"m": agent}) as url, aiohttp.ClientSession() as http:
        assert (await _ready(http, url))["stores"] == ["idle"]
        async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
            assert r.status == 200
        async with asyncio.timeout(10):
            while (await _ready(http, url))["stores"] != ["ok"]:
                await asyncio.sleep(0.05)
        server.stop()
        async with asyncio.timeout(10):
            while (ready := await _ready(http, url))["stores"] != ["degraded"]:
                async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
                    assert r.status == 200  # the chain still serves meanwhile
                await asyncio.sleep(0.05)
        assert ready["status"] == "degraded"
    await store.aclose()
