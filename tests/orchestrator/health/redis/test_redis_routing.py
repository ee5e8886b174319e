"""Routing state shared through Redis between replicas (a real redis-server): calls in flight,
latency figures and affinity keys one replica records, another sees within a sync."""

from __future__ import annotations

import asyncio

from orchestrator import FallbackAgent, Request, Response
from orchestrator.health import RedisHealthStore
from tests.orchestrator.health.redis.conftest import RedisServer


class Quick:
    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(self, request: Request) -> Response:
        await asyncio.sleep(0)
        return Response(self.name)


def _replica(url: str, prefix: str, order: str = "weighted") -> FallbackAgent:
    store = RedisHealthStore(url, key_prefix=prefix, sync_interval=0.01)
    children = [Quick(n) for n in ("east", "west", "eu")]
    return FallbackAgent(children, order=order, health=store, hedge_after=None)  # type: ignore[arg-type]


async def _synced(*agents: FallbackAgent) -> None:
    for agent in agents:
        store = agent.health_store
        assert isinstance(store, RedisHealthStore)
        assert await store.sync(timeout=5)
        assert await store.sync(timeout=5)  # a second tick: the other's push is in


async def test_a_conversation_keeps_its_child_across_replicas(
    redis_server: RedisServer, prefix: str
) -> None:
    one, two = _replica(redis_server.url, prefix), _replica(redis_server.url, prefix)
    try:
        first = (await one.run("hi", affinity="conversation-1")).handled_by
        await _synced(one, two)
        for _ in range(9):  # weighted without affinity would spread these over three
            assert (await two.run("hi", affinity="conversation-1")).handled_by == first
        assert "conversation-1" not in repr(await _keys(redis_server, prefix))
    finally:
        await _close(one, two)


async def test_calls_in_flight_and_latency_figures_are_shared(
    redis_server: RedisServer, prefix: str
) -> None:
    one, two = (
        _replica(redis_server.url, prefix, "least_busy"),
        _replica(redis_server.url, prefix, "latency"),
    )
    try:
        await one.run("warm up")
        await two.run("warm up")
        state_one, state_two = one.health_store.routing, two.health_store.routing  # type: ignore[union-attr]
        for _ in range(3):
            state_one.began("east")
        state_two.observe("west", 0.25)
        await _synced(one, two)
        assert state_two.in_flight("east") == 3  # one's calls, seen by two
        figure = state_one.latency("west")
        assert figure is not None and abs(figure[0] - 0.25) < 1e-9
        for _ in range(3):
            state_one.ended("east")
        await _synced(one, two)
        assert state_two.in_flight("east") == 0
    finally:
        await _close(one, two)


async def _keys(server: RedisServer, prefix: str) -> list[str]:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(server.url, decode_responses=True)
    try:
        return [k async for k in client.scan_iter(match=f"{prefix}*")]
    finally:
        await client.aclose()


async def _close(*agents: FallbackAgent) -> None:
    for agent in agents:
        assert agent.health_store is not None
        await agent.health_store.aclose()
