"""``RedisHealthStore.sync``: a one-shot process sees the fleet's circuits before its first call."""

from __future__ import annotations

import time

import pytest

from orchestrator.health import CircuitBreaker, RedisHealthStore
from tests.orchestrator.health.redis.conftest import RedisServer, free_port

pytestmark = pytest.mark.redis


async def test_a_fresh_store_sees_a_circuit_another_opened_after_sync(
    redis_server: RedisServer, prefix: str
) -> None:
    circuit = CircuitBreaker(failure_threshold=1, cooldown=60.0)
    first = RedisHealthStore(redis_server.url, circuit=circuit, key_prefix=prefix)
    first.record_failure("primary")
    await first.aclose()  # pushes what it recorded

    second = RedisHealthStore(redis_server.url, circuit=circuit, key_prefix=prefix)
    try:
        assert second.admit("primary").allowed  # before sync: only its own (empty) view
        assert await second.sync(["primary", "backup"]) is True
        assert second.snapshot("primary").state == "open"
        assert not second.admit("primary").allowed
        assert second.snapshot("backup").state == "closed"
    finally:
        await second.aclose()


async def _sync_fails(url: str, prefix: str, timeout: float) -> float:
    """Sync a fresh store with ``url``, which must fail; the seconds it took."""
    store = RedisHealthStore(url, key_prefix=prefix)
    started = time.monotonic()
    try:
        assert await store.sync(["primary"], timeout=timeout) is False
        assert store.admit("primary").allowed  # alone, as whenever Redis is away
        return time.monotonic() - started
    finally:
        await store.aclose()


async def test_sync_gives_up_on_an_unreachable_redis_and_says_so(prefix: str) -> None:
    assert await _sync_fails(f"redis://127.0.0.1:{free_port()}/0", prefix, 1.0) < 5


async def test_sync_returns_at_once_when_redis_refuses(prefix: str) -> None:
    # Nothing listens: the connection is refused in a millisecond, so waiting out the
    # limit would only delay every `failover run` made while Redis is down.
    assert await _sync_fails(f"redis://127.0.0.1:{free_port()}/0", prefix, 20.0) < 5


async def test_sync_returns_at_once_on_a_wrong_password(
    redis_server: RedisServer, prefix: str
) -> None:
    url = redis_server.url.replace("redis://", "redis://nobody:wrong-password@", 1)
    assert await _sync_fails(url, prefix, 20.0) < 5


@pytest.mark.parametrize(
    "url",
    [
        "redis://:pw-in-userinfo-1@127.0.0.1:6379/0",
        "redis://127.0.0.1:6379/0?password=pw-in-query-22",  # redis-py reads it too
        "rediss://user:pw-in-userinfo-1@h.example/0?password=pw-in-query-22",
        "unix:///tmp/redis.sock?password=pw-in-query-22",
        "redis://:pw-in-userinfo-1@h:notaport/0",  # must not raise from repr
    ],
)
def test_the_store_url_is_shown_without_any_password(url: str) -> None:
    from orchestrator.health.redis.link import safe_url

    shown = safe_url(url) + repr(RedisHealthStore(url))
    assert "pw-in-" not in shown, shown
