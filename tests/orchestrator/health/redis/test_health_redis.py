"""RedisHealthStore against a real redis-server: sharing, probes, budget, outages."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import pytest
import redis.asyncio as aioredis

from orchestrator import FallbackAgent, Request, Response
from orchestrator.errors import ServerError
from orchestrator.health import CircuitBreaker, RedisHealthStore, RetryBudget
from orchestrator.testing import capture_events

pytestmark = pytest.mark.redis

SYNC = 0.05  # the default sync_interval


class RedisServer(Protocol):
    """What the conftest fixtures hand out (a restartable redis-server child)."""

    url: str
    proc: subprocess.Popen[bytes] | None

    def start(self) -> None: ...
    def stop(self) -> None: ...


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# Process A of the multi-process test; module-level so ``spawn`` children can import it.
def fail_provider(url: str, prefix: str, ready: Any, go: Any, out: Any) -> None:
    """Process A: join the shared store, wait for ``go``, record 3 failures, report the time."""
    asyncio.run(_fail_provider(url, prefix, ready, go, out))


async def _fail_provider(url: str, prefix: str, ready: Any, go: Any, out: Any) -> None:
    store = RedisHealthStore(
        url, circuit=CircuitBreaker(failure_threshold=3, cooldown=30.0), key_prefix=prefix
    )
    store.admit("primary")  # starts the background sync
    await asyncio.sleep(0.2)
    ready.set()
    while not go.is_set():
        await asyncio.sleep(0.001)
    out.put(time.time())
    for _ in range(3):
        store.record_failure("primary")
    out.put(store.admit("primary").state)
    await asyncio.sleep(0.3)
    await store.aclose()


async def wait_for(check: Callable[[], bool], timeout: float, step: float = 0.002) -> float:
    """Poll ``check`` until true; return how long it took, fail after ``timeout``."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            pytest.fail(f"condition not met within {timeout} s")
        await asyncio.sleep(step)
    return time.monotonic() - start


@pytest.fixture
async def stores(redis_server: RedisServer, prefix: str) -> AsyncIterator[list[RedisHealthStore]]:
    """Stores on the healthy session server: none of them may ever report degraded."""
    made: list[RedisHealthStore] = []
    with capture_events() as logs:
        yield made
        for store in made:
            await store.aclose()
    assert [e for e in logs if e["event"] == "health_store_degraded"] == []


def new_store(
    made: list[RedisHealthStore], url: str, prefix: str, **kwargs: object
) -> RedisHealthStore:
    kwargs.setdefault("circuit", CircuitBreaker(failure_threshold=3))  # the rule tests drive
    store = RedisHealthStore(url, key_prefix=prefix, **kwargs)  # type: ignore[arg-type]
    made.append(store)
    store.admit("p")  # starts the sync task and registers the provider
    return store


async def synced_stores(
    made: list[RedisHealthStore], url: str, prefix: str, n: int = 2, **kwargs: object
) -> list[RedisHealthStore]:
    """``n`` stores sharing ``prefix`` (each made by :func:`new_store`), past their first sync."""
    group = [new_store(made, url, prefix, **kwargs) for _ in range(n)]
    await asyncio.sleep(3 * SYNC)
    return group


async def test_failures_in_one_store_open_the_circuit_in_another_within_100ms(
    redis_server: RedisServer, prefix: str, stores: list[RedisHealthStore]
) -> None:
    a, b = await synced_stores(stores, redis_server.url, prefix)
    assert b.admit("p").allowed
    for _ in range(3):
        a.record_failure("p")
    took = await wait_for(lambda: not b.admit("p").allowed, timeout=1.0)
    assert took < 0.1
    seen_a, seen_b = a.snapshot("p"), b.snapshot("p")
    assert seen_b.state == "open"
    assert seen_b.consecutive_failures == 3
    assert seen_b.open_until == pytest.approx(seen_a.open_until, abs=0.01)
    client = aioredis.Redis.from_url(redis_server.url)
    try:  # the cooldown is a key with expiry
        ttl_ms = await client.pttl(f"{prefix}open:p")
        assert 29_000 < ttl_ms <= 30_000
    finally:
        await client.aclose()


async def test_only_one_process_probes_and_success_closes_everywhere(
    redis_server: RedisServer, prefix: str, stores: list[RedisHealthStore]
) -> None:
    circuit = CircuitBreaker(failure_threshold=3, cooldown=0.5)
    group = await synced_stores(stores, redis_server.url, prefix, 3, circuit=circuit)
    for _ in range(3):
        group[0].record_failure("p")
    await asyncio.sleep(2 * SYNC)
    probes: list[int] = []
    # until the cooldown is over and most of a second one (a lost probe is re-issued after it)
    deadline = time.monotonic() + 0.5 + 0.3
    while time.monotonic() < deadline:
        for i, store in enumerate(group):
            admission = store.admit("p")
            if admission.probe:
                probes.append(i)
            elif admission.allowed:
                pytest.fail(f"store {i} let a non-probe call through a tripped circuit")
        await asyncio.sleep(0.002)
    assert len(probes) == 1, probes
    group[probes[0]].record_success("p")
    await wait_for(lambda: all(s.admit("p").state == "closed" for s in group), timeout=0.1 + SYNC)


async def test_failed_probe_reopens_for_everyone(
    redis_server: RedisServer, prefix: str, stores: list[RedisHealthStore]
) -> None:
    circuit = CircuitBreaker(failure_threshold=3, cooldown=0.3)
    a, b = await synced_stores(stores, redis_server.url, prefix, circuit=circuit)
    a.record_failure("p", retry_after=0.3)  # Retry-After alone opens it
    await wait_for(lambda: b.admit("p").state == "open", timeout=0.1)
    await asyncio.sleep(0.3)
    probe = await asyncio.wait_for(_first_probe([a, b]), timeout=1.0)
    probe.record_failure("p")
    other = b if probe is a else a
    await wait_for(lambda: other.admit("p").state == "open", timeout=0.1 + SYNC)
    assert other.snapshot("p").open_until == pytest.approx(time.time() + 0.3, abs=0.1)


async def _first_probe(group: list[RedisHealthStore]) -> RedisHealthStore:
    while True:
        for store in group:
            if store.admit("p").probe:
                return store
        await asyncio.sleep(0.002)


async def test_longer_cooldown_is_never_shortened_across_stores(
    redis_server: RedisServer, prefix: str, stores: list[RedisHealthStore]
) -> None:
    a, b = await synced_stores(stores, redis_server.url, prefix)
    a.record_failure("p", retry_after=100.0)
    await wait_for(lambda: b.admit("p").state == "open", timeout=0.1)
    b.record_failure("p", retry_after=5.0)
    b.record_failure("p")
    b.record_failure("p")
    await asyncio.sleep(3 * SYNC)
    for store in (a, b):
        assert store.snapshot("p").open_until == pytest.approx(time.time() + 100, abs=0.5)


async def test_a_retry_after_is_capped_at_max_cooldown_for_every_store(
    redis_server: RedisServer, prefix: str, stores: list[RedisHealthStore]
) -> None:
    a, b = await synced_stores(stores, redis_server.url, prefix)
    a.record_failure("p", retry_after=99_999.0)  # a hostile header: not 28 hours
    await wait_for(lambda: b.admit("p").state == "open", timeout=0.5)
    for store in (a, b):
        assert store.snapshot("p").open_until == pytest.approx(time.time() + 600, abs=1.0)
    client = aioredis.Redis.from_url(redis_server.url)
    try:
        assert 599_000 < await client.pttl(f"{prefix}open:p") <= 600_000
    finally:
        await client.aclose()


async def test_a_last_resort_success_closes_the_circuit_for_every_store(
    redis_server: RedisServer, prefix: str, stores: list[RedisHealthStore]
) -> None:
    a, b = await synced_stores(stores, redis_server.url, prefix)
    for _ in range(3):
        a.record_failure("p")
    await wait_for(lambda: b.admit("p").state == "open", timeout=0.5)
    assert a.last_resort("p") and not a.last_resort("p")  # one at a time in this process
    a.end_last_resort("p", succeeded=True)
    assert a.admit("p") == a.admit("q")  # closed here at once
    await wait_for(lambda: b.admit("p").allowed, timeout=0.5)
    await asyncio.sleep(3 * SYNC)
    assert a.admit("p").allowed and b.snapshot("p").state == "closed"


async def test_retry_budget_is_shared(
    redis_server: RedisServer, prefix: str, stores: list[RedisHealthStore]
) -> None:
    budget = RetryBudget(ratio=0.5, window=5.0, min_per_second=0.6)  # floor: 3 per window
    a, b = await synced_stores(stores, redis_server.url, prefix, budget=budget)
    assert [a.try_acquire_retry() for _ in range(4)] == [True, True, True, False]
    await asyncio.sleep(3 * SYNC)
    assert not b.try_acquire_retry()  # a spent the fleet's floor
    for _ in range(4):
        a.record_request()  # +2 retries for the fleet
    await asyncio.sleep(3 * SYNC)
    assert [b.try_acquire_retry() for _ in range(3)] == [True, True, False]


async def test_unreachable_redis_degrades_once_and_works_locally(prefix: str) -> None:
    store = RedisHealthStore(
        f"redis://127.0.0.1:{free_port()}/0",
        key_prefix=prefix,
        circuit=CircuitBreaker(failure_threshold=3, cooldown=0.2),
        timeout=0.05,
    )
    try:
        with capture_events() as logs:
            for _ in range(100):
                assert store.admit("p").allowed
                store.record_request()
                store.record_success("p")
                await asyncio.sleep(0.005)
            for _ in range(3):
                store.record_failure("p")
            assert store.admit("p").state == "open"
            await asyncio.sleep(0.2)
            assert store.admit("p").probe  # the probe is decided locally meanwhile
            assert store.try_acquire_retry()
        degraded = [e for e in logs if e["event"] == "health_store_degraded"]
        assert len(degraded) == 1
        assert degraded[0]["log_level"] == "warning"
    finally:
        await store.aclose()


async def test_redis_killed_mid_run_then_restarted(
    redis_server_factory: Callable[[], RedisServer], prefix: str
) -> None:
    server = redis_server_factory()
    circuit = CircuitBreaker(failure_threshold=3, cooldown=30.0)
    made: list[RedisHealthStore] = []
    try:
        a = new_store(made, server.url, prefix, circuit=circuit, timeout=0.1)
        await asyncio.sleep(3 * SYNC)
        with capture_events() as logs:
            server.stop()
            worst = 0.0
            for i in range(150):  # about 0.75 s of traffic against a dead Redis
                start = time.perf_counter()
                a.admit("p")
                a.record_request()
                a.try_acquire_retry()
                if i == 100:
                    for _ in range(3):
                        a.record_failure("p")
                else:
                    a.record_success("p")
                worst = max(worst, time.perf_counter() - start)
                await asyncio.sleep(0.005)
            assert a.admit("p").state == "open"  # opened on the local mirror
            assert worst < 0.01  # calls never wait on Redis
            server.start()
            await wait_for(
                lambda: any(e["event"] == "health_store_recovered" for e in logs), timeout=3.0
            )
        assert [e["event"] for e in logs].count("health_store_degraded") == 1
        c = new_store(made, server.url, prefix, circuit=circuit)  # what the outage hid
        await wait_for(lambda: c.admit("p").state == "open", timeout=0.5)
    finally:
        for store in made:
            await store.aclose()


async def test_stalled_redis_is_treated_as_down(
    redis_server_factory: Callable[[], RedisServer], prefix: str
) -> None:
    server = redis_server_factory()
    assert server.proc is not None
    made: list[RedisHealthStore] = []
    try:
        a = new_store(made, server.url, prefix, timeout=0.05)
        await asyncio.sleep(3 * SYNC)
        with capture_events() as logs:
            os.kill(server.proc.pid, signal.SIGSTOP)  # alive but not answering: "slow"
            try:
                worst = 0.0
                for _ in range(60):
                    start = time.perf_counter()
                    a.admit("p")
                    a.record_success("p")
                    worst = max(worst, time.perf_counter() - start)
                    await asyncio.sleep(0.005)
            finally:
                os.kill(server.proc.pid, signal.SIGCONT)
            await wait_for(
                lambda: any(e["event"] == "health_store_recovered" for e in logs), timeout=3.0
            )
        assert worst < 0.01
        assert [e["event"] for e in logs].count("health_store_degraded") == 1
    finally:
        for store in made:
            await store.aclose()


def test_failures_in_process_a_are_respected_by_process_b(
    redis_server: RedisServer, prefix: str
) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, go, out = ctx.Event(), ctx.Event(), ctx.Queue()
    child = ctx.Process(target=fail_provider, args=(redis_server.url, prefix, ready, go, out))
    child.start()
    try:
        refused_at = asyncio.run(_process_b(redis_server.url, prefix, ready, go))
        recorded_at = out.get(timeout=10)
        assert out.get(timeout=10) == "open"
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
    assert 0 <= refused_at - recorded_at < 0.1


async def _process_b(url: str, prefix: str, ready: object, go: object) -> float:
    store = RedisHealthStore(url, key_prefix=prefix)
    try:
        assert store.admit("primary").allowed
        ok = await asyncio.to_thread(ready.wait, 30)  # type: ignore[attr-defined]
        assert ok, "process A did not start"
        assert store.admit("primary").allowed
        go.set()  # type: ignore[attr-defined]
        await wait_for(lambda: not store.admit("primary").allowed, timeout=2.0, step=0.001)
        return time.time()
    finally:
        await store.aclose()


async def test_the_shared_window_counts_calls_not_attempts(
    redis_server: RedisServer, prefix: str, stores: list[RedisHealthStore]
) -> None:
    # The engine tells every store one outcome per call (first attempt plus retries), so
    # the shared window in Redis counts calls as the local mirror does.

    class TwoBlipsThenOk:
        name, calls = "p", 0

        async def complete(self, request: Request) -> Response:
            self.calls += 1
            if self.calls in (2, 3):  # the first run answers; the second after two blips
                raise ServerError("blip")
            return Response("ok")

    a = new_store(stores, redis_server.url, prefix, budget=RetryBudget(min_per_second=1000))
    b = new_store(stores, redis_server.url, prefix)
    agent = FallbackAgent([TwoBlipsThenOk()], max_retries=3, retry_strategy="none", health=a)
    for _ in range(2):
        assert (await agent.run("x")).handled_by == "p"
    assert agent.children[0].calls == 4  # type: ignore[attr-defined]
    await wait_for(lambda: b.snapshot("p").recent_calls == 2, timeout=1.0)
    seen = b.snapshot("p")
    assert (seen.recent_calls, seen.recent_failures) == (2, 0)
