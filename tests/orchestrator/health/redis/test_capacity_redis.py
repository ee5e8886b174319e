"""The Redis capacity store: exact across stores, and never fails a call when Redis is gone."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator import FallbackAgent, Limits, Request, Response
from orchestrator.capacity import Refusal, Ticket, Want
from orchestrator.cli.explain import _explained
from orchestrator.config import load_config
from orchestrator.function import FunctionProvider
from orchestrator.health import RedisHealthStore
from orchestrator.testing import capture_events
from tests.conftest import write_chain
from tests.orchestrator.health.redis.conftest import RedisServer

pytestmark = pytest.mark.redis


async def test_two_stores_admit_exactly_the_limit_between_them(
    redis_server: RedisServer, prefix: str
) -> None:
    stores = [RedisHealthStore(redis_server.url, key_prefix=prefix) for _ in range(2)]
    want = Want("p", Limits(rpm=30, max_concurrency=20), 1, (), 0.0)
    got = await asyncio.gather(*(stores[i % 2].capacity.take(want) for i in range(100)))
    tickets = [g for g in got if isinstance(g, Ticket)]
    assert len(tickets) == 20  # max_concurrency first
    assert {g.which for g in got if isinstance(g, Refusal)} == {"max_concurrency"}
    for i, ticket in enumerate(tickets):
        pending = stores[i % 2].capacity.settle(ticket, 1, 0.0)
        assert pending is not None  # a concurrency slot to give back: one round trip
        await pending
    more = await asyncio.gather(*(stores[0].capacity.take(want) for _ in range(20)))
    assert sum(isinstance(g, Ticket) for g in more) == 10  # rpm=30 in the window
    refused = [g for g in more if isinstance(g, Refusal)]
    assert refused[0].which == "rpm" and 0 < (refused[0].free_in or 0) <= 60
    used = await stores[1].capacity.read(["p"])
    assert used["p"]["requests"] == 30
    for store in stores:
        await store.aclose()


async def test_a_redis_restart_mid_run_loses_no_call(
    redis_server_factory: Callable[[], RedisServer], prefix: str
) -> None:
    server = redis_server_factory()

    async def answer(request: Request) -> Response:
        await asyncio.sleep(0.01)
        return Response("ok")

    provider = FunctionProvider(answer, name="fn", limits=Limits(rpm=100_000, max_concurrency=64))
    store = RedisHealthStore(server.url, key_prefix=prefix, timeout=0.2, replicas=4)
    agent = FallbackAgent([provider], health=store, hedge_after=None, wait_for_capacity=5)
    results: list[str] = []

    async def caller() -> None:
        for _ in range(30):
            results.append((await agent.run("hi")).text)

    with capture_events() as events:
        callers = asyncio.gather(*(caller() for _ in range(20)))
        await asyncio.sleep(0.1)
        server.stop()
        await asyncio.sleep(0.3)
        server.start()
        await callers
    assert results == ["ok"] * 600
    names = [e["event"] for e in events]
    assert names.count("capacity_store_degraded") == 1
    degraded = next(e for e in events if e["event"] == "capacity_store_degraded")
    assert degraded["replicas"] == 4 and "limit / replicas" in degraded["note"]
    await store.aclose()


async def test_while_redis_is_down_each_process_takes_its_share(
    redis_server_factory: Callable[[], RedisServer], prefix: str
) -> None:
    server = redis_server_factory()
    store = RedisHealthStore(server.url, key_prefix=prefix, timeout=0.2, replicas=4)
    server.stop()
    want = Want("p", Limits(rpm=40), 1, (), 0.0)
    got = [await store.capacity.take(want) for _ in range(20)]
    assert sum(isinstance(g, Ticket) for g in got) == 10  # 40 / 4 replicas
    await store.aclose()


def test_calls_on_a_new_loop_each_free_their_slots(redis_server: RedisServer, prefix: str) -> None:
    # run_sync closes its loop when the call returns: a settle left in the background died
    # with it and held the concurrency slot for its lease (the 4th of 10 calls was refused).
    provider = FunctionProvider(lambda r: "ok", name="fn", limits=Limits(max_concurrency=3))
    store = RedisHealthStore(redis_server.url, key_prefix=prefix)
    agent = FallbackAgent([provider], health=store)
    assert [agent.run_sync("hi").text for _ in range(10)] == ["ok"] * 10


async def test_explain_shows_what_other_processes_took(
    redis_server: RedisServer, prefix: str, tmp_path: Path
) -> None:
    other = RedisHealthStore(redis_server.url, key_prefix=prefix)  # another replica
    assert isinstance(await other.capacity.take(Want("fn", Limits(rpm=1), 0, (), 0.0)), Ticket)
    chain = f"""
    providers:
      fn: {{type: function, path: "os:getcwd", limits: {{rpm: 1}}}}
    agents:
      main:
        providers: [fn]
        health: {{redis_url: "{redis_server.url}", key_prefix: "{prefix}"}}
    """
    config = load_config(write_chain(tmp_path, chain), need_keys=False)
    # This process took nothing and was never refused; the one slot is the other's.
    verdicts = await _explained(config, "main", Request("x"), None)
    assert [type(v.skipped).__name__ for v in verdicts] == ["AtCapacity"]
    await other.aclose()
    await config.agents["main"].health_store.aclose()  # type: ignore[union-attr]
