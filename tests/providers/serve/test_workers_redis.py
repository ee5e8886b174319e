"""``failover serve --workers 2`` with the chain file's Redis health store: a circuit opened by
traffic through one worker is honoured by the other; ``/readyz`` follows the store."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest

from providers import Fault, SimulatedServer
from tests.orchestrator.health.redis.conftest import RedisServer
from tests.providers.serve.processes import CHAIN, serving, worker_pids

pytestmark = pytest.mark.redis

SHARED = CHAIN.replace(
    "retry_strategy: none}",
    "retry_strategy: none,\n"
    '           health: {redis_url: "${REDIS_URL}", circuit: {failure_threshold: 3, cooldown: 60}}}',
)
REQUEST = {"model": "review", "messages": [{"role": "user", "content": "hi"}]}


async def _session_on_worker(url: str, pid: int, other: bool) -> aiohttp.ClientSession:
    """A one-connection keep-alive session whose connection is served by worker ``pid`` (or,
    ``other``, by any other worker): new connections until the kernel hands one there."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1))
        async with http.get(url + "/healthz") as r:
            served_by = (await r.json())["pid"]
        if (served_by != pid) == other:
            return http
        await http.close()
    raise AssertionError(f"no connection reached the wanted worker (pid {pid}, other={other})")


async def _post(http: aiohttp.ClientSession, url: str) -> str:
    async with http.post(url + "/v1/chat/completions", json=REQUEST) as r:
        assert r.status == 200
        return r.headers["x-failover-handled-by"]


async def _stores(http: aiohttp.ClientSession, url: str) -> list[str]:
    async with http.get(url + "/readyz") as r:
        assert r.status == 200
        stores: list[str] = (await r.json())["stores"]
        return stores


async def test_a_circuit_opened_through_one_worker_is_honoured_by_the_other(
    sim: SimulatedServer, tmp_path: Path, redis_server_factory: Callable[[], RedisServer]
) -> None:
    redis = redis_server_factory()
    sim.set_default("anthropic", Fault.overloaded())
    env = {"REDIS_URL": redis.url}
    async with serving(sim, tmp_path, "--workers", "2", chain=SHARED, env=env) as (_, url):
        first, _ = sorted(await worker_pids(url, 2))
        one = await _session_on_worker(url, first, other=False)
        two = await _session_on_worker(url, first, other=True)
        try:
            for _ in range(3):  # three failures through worker one open the circuit
                assert await _post(one, url) == "gpt"
            assert sim.count("anthropic") == 3
            assert await _post(one, url) == "gpt" and sim.count("anthropic") == 3
            async with asyncio.timeout(10):  # worker two syncs within a few sync intervals
                while (await _stores(two, url)) != ["ok"]:
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)
            for _ in range(5):
                assert await _post(two, url) == "gpt"
            assert sim.count("anthropic") == 3  # worker two never called the open circuit
            redis.stop()
            async with asyncio.timeout(10):
                while (await _stores(two, url)) != ["degraded"]:
                    assert await _post(two, url) == "gpt"  # still serving meanwhile
                    await asyncio.sleep(0.05)
            async with two.get(url + "/readyz") as r:
                assert (await r.json())["status"] == "degraded"
        finally:
            await one.close()
            await two.close()
