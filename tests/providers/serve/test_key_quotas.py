"""Per gateway key limits and budgets, over loopback against the simulator: a key over its
limit gets 429 + Retry-After, over its budget 429 ``insufficient_quota``, each checked in one
atomic take of the gateway's store and settled with the call's real usage and cost."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent
from orchestrator.health import MemoryHealthStore, RedisHealthStore
from providers import Fault, OpenAIChat, SimulatedServer
from providers.serve import GatewayKeys
from providers.serve.auth import hash_key
from tests.orchestrator.health.redis.conftest import RedisServer
from tests.providers.serve.conftest import UPSTREAM_KEY, gateway

CHAT = "/v1/chat/completions"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
LIMITED, FREE = "sk-team-a-0123456789", "sk-team-b-0123456789"


def keys(tmp_path: Path, quota: str) -> GatewayKeys:
    """Two keys: ``LIMITED`` with ``quota`` after its digest (``ID``: an id no other test
    uses, as the process's store outlives a test), ``FREE`` with none."""
    path = tmp_path / "gateway.keys"
    quota = quota.replace("ID", f"team-{uuid.uuid4().hex[:8]}")
    path.write_text(f"{hash_key(LIMITED)}  {quota}\n{hash_key(FREE)}\n")
    return GatewayKeys.load(environ={}, key_file=str(path))


def agent(sim: SimulatedServer, health: Any = None, **kwargs: Any) -> FallbackAgent:
    provider = OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=UPSTREAM_KEY, **kwargs)
    return FallbackAgent([provider], retry_strategy="none", max_retries=0, health=health)


async def post(
    http: aiohttp.ClientSession, url: str, key: str, **extra: Any
) -> tuple[int, dict[str, str], Any]:
    headers = {"Authorization": f"Bearer {key}"}
    async with http.post(url + CHAT, json={**BODY, **extra}, headers=headers) as r:
        body = await r.json() if not extra.get("stream") or r.status != 200 else await r.text()
        return r.status, dict(r.headers), body


def test_a_key_file_line_carries_limits_and_a_budget(tmp_path: Path) -> None:
    loaded = keys(
        tmp_path, "{id: team-a, limits: {rpm: 60, tpm: 900}, budget: {usd: 5, per: hour}}"
    )
    quota = loaded.quota_of(LIMITED)
    assert quota is not None and quota.id == "team-a"
    assert quota.limits is not None and (quota.limits.rpm, quota.limits.tpm) == (60, 900)
    assert quota.budget is not None and (quota.budget.usd, quota.budget.per) == (5.0, "hour")
    assert loaded.quota_of(FREE) is None and loaded.quota_of("sk-other") is None
    assert loaded.allows(LIMITED) and loaded.allows(FREE)


@pytest.mark.parametrize(
    "quota",
    [
        "{limits: {rpm: 0}}",
        "{limits: {rpms: 5}}",
        "{budget: {usd: -1}}",
        "{sk-secret-x: 1}",
        "[1",
        "{id: 'team a'}",
        "{id: 'x{y}'}",
        "{id: ''}",
        "{id: 7}",
    ],
)
def test_a_bad_quota_names_the_line_and_never_quotes_it(tmp_path: Path, quota: str) -> None:
    with pytest.raises(ValueError, match=r"gateway\.keys:1: ") as caught:
        keys(tmp_path, quota)
    assert "sk-secret" not in str(caught.value)
    assert caught.value.__cause__ is None


async def test_a_key_over_its_rpm_gets_429_with_retry_after_others_do_not(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    loaded = keys(tmp_path, "{id: ID, limits: {rpm: 2, window: 30}}")
    async with gateway({"m": agent(sim)}, keys=loaded) as url, aiohttp.ClientSession() as http:
        assert [(await post(http, url, LIMITED))[0] for _ in range(2)] == [200, 200]
        status, headers, body = await post(http, url, LIMITED)
        assert status == 429 and 29 <= int(headers["Retry-After"]) <= 30
        assert body["error"]["code"] == "rate_limit_exceeded"
        assert "gateway key team-" in body["error"]["message"] and LIMITED not in str(body)
        assert (await post(http, url, FREE))[0] == 200  # another key: not limited
    assert sim.count("openai") == 3  # the refused call never reached a provider


async def test_many_calls_in_flight_take_exactly_the_keys_limit(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    sim.set_default("openai", Fault.delay(0.05))
    loaded = keys(tmp_path, "{id: ID, limits: {rpm: 5, max_concurrency: 3}}")
    async with gateway({"m": agent(sim)}, keys=loaded) as url, aiohttp.ClientSession() as http:
        statuses = await asyncio.gather(*(post(http, url, LIMITED) for _ in range(20)))
    codes = sorted(s for s, _, _ in statuses)
    assert codes.count(200) <= 3 and codes.count(429) >= 17
    assert sim.count("openai") == codes.count(200)


async def test_tokens_reserved_are_reconciled_with_the_replys_usage(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    sim.set_default("openai", Fault.ok("hi", usage=(10, 5)))
    loaded = keys(tmp_path, "{id: ID, limits: {tpm: 1000}}")
    async with gateway({"m": agent(sim)}, keys=loaded) as url, aiohttp.ClientSession() as http:
        # Each reserves its prompt plus 600: two at once would not fit; one after another
        # does, as the first gives back all but the 15 tokens it used.
        assert (await post(http, url, LIMITED, max_tokens=600))[0] == 200
        assert (await post(http, url, LIMITED, max_tokens=600, stream=True))[0] == 200
        assert (await post(http, url, LIMITED, max_tokens=600))[0] == 200
        status, headers, _ = await post(http, url, LIMITED, max_tokens=990)
        assert status == 429 and int(headers["Retry-After"]) >= 1


async def test_a_spent_key_budget_is_a_429_insufficient_quota_streams_counted(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    sim.set_default("openai", Fault.ok("hi", usage=(100, 100)))
    loaded = keys(tmp_path, "{id: ID, budget: {usd: 0.003, per: day}}")
    chain = agent(sim, price=(10.0, 10.0))  # $0.002 a call of 200 tokens
    async with gateway({"m": chain}, keys=loaded) as url, aiohttp.ClientSession() as http:
        assert (await post(http, url, LIMITED, stream=True))[0] == 200
        assert (await post(http, url, LIMITED))[0] == 200  # $0.002 of $0.003: still open
        status, headers, body = await post(http, url, LIMITED)
        assert status == 429 and int(headers["Retry-After"]) >= 1
        assert body["error"]["type"] == body["error"]["code"] == "insufficient_quota"
        assert (await post(http, url, FREE))[0] == 200
    assert sim.count("openai") == 3


@pytest.mark.redis
async def test_a_keys_limit_is_shared_by_gateways_on_one_redis(
    sim: SimulatedServer, tmp_path: Path, redis_server_factory: Callable[[], RedisServer]
) -> None:
    redis = redis_server_factory()
    loaded = keys(tmp_path, "{id: ID, limits: {rpm: 3, window: 30}}")
    one, two = (agent(sim, RedisHealthStore(redis.url)) for _ in range(2))
    async with (
        gateway({"m": one}, keys=loaded) as url_one,
        gateway({"m": two}, keys=loaded) as url_two,
        aiohttp.ClientSession() as http,
    ):
        urls = [url_one, url_two] * 4
        statuses = [(await post(http, u, LIMITED))[0] for u in urls]
    assert statuses.count(200) == 3 and sim.count("openai") == 3


async def test_the_memory_store_is_the_agents_health_store(
    sim: SimulatedServer, tmp_path: Path
) -> None:
    loaded = keys(tmp_path, "{id: ID, limits: {rpm: 1, window: 30}}")
    chain = agent(sim, MemoryHealthStore())
    async with gateway({"m": chain}, keys=loaded) as url, aiohttp.ClientSession() as http:
        assert [(await post(http, url, LIMITED))[0] for _ in range(2)] == [200, 429]
