"""Replies and streams are bounded: size caps, gzip bombs, endless streams, a whole-attempt
deadline. Hostile replies come from the simulated server over loopback, on every HTTP
provider and in both modes; ``asyncio.timeout`` guards only keep a regression from
hanging the suite (they are not what is asserted).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from orchestrator import FallbackAgent, FallbackError
from orchestrator import errors as E
from orchestrator.types import Request
from providers.simulator import Fault, SimulatedServer

from .test_http_matrix import call, make

MiB = 1024 * 1024
VENDORS = ("openai", "anthropic", "gemini", "bedrock")
ROUTES = (*VENDORS, "http")
ALL = [(r, m) for r in ROUTES for m in ("complete", "stream")]
IDS = [f"{r}-{m}" for r, m in ALL]


async def _fails(provider: Any, mode: str, guard: float = 20.0) -> E.ProviderError:
    with pytest.raises(E.ProviderError) as info:
        async with asyncio.timeout(guard):
            await call(provider, mode, Request("hi"))
    return info.value


# -- a size cap on every reply --------------------------------------------------------


@pytest.mark.parametrize(("route", "mode"), ALL, ids=IDS)
async def test_a_reply_over_the_default_cap_is_response_too_large(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    sim.script(route, [Fault.oversized(40 * MiB)])
    provider = make(route, sim)
    err = await _fails(provider, mode)
    assert type(err) is E.ResponseTooLarge and isinstance(err, E.InvalidOutput)
    assert provider.max_response_bytes == 32 * MiB
    assert err.provider == provider.name
    assert "max_response_bytes=33554432" in str(err)


@pytest.mark.parametrize(("route", "mode"), ALL, ids=IDS)
async def test_max_response_bytes_is_per_provider(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    sim.script(route, [Fault.oversized(200_000), Fault.oversized(50_000)])
    provider = make(route, sim, max_response_bytes=100_000)
    err = await _fails(provider, mode)
    assert type(err) is E.ResponseTooLarge
    _, response = await call(provider, mode, Request("hi"))
    assert response.text == "x" * 50_000


@pytest.mark.parametrize("route", ROUTES)
def test_max_response_bytes_must_be_a_positive_int(sim: SimulatedServer, route: str) -> None:
    for bad in (0, -1, 1.5, True, "1000"):
        with pytest.raises(ValueError, match=r"max_response_bytes=.*whole number of bytes >= 1"):
            make(route, sim, max_response_bytes=bad)


# -- gzip bombs -----------------------------------------------------------------------


@pytest.mark.parametrize(("route", "mode"), ALL, ids=IDS)
async def test_a_gzip_bomb_is_refused_at_the_cap_after_decompression(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    sim.script(route, [Fault.oversized(256 * MiB, gzip=True)])  # about 265 KB on the wire
    err = await _fails(make(route, sim), mode)
    assert type(err) is E.ResponseTooLarge, repr(err)


@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize("route", ["openai", "anthropic"])
async def test_a_gzip_bomb_lets_the_attempt_timeout_fire_on_time(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    # A cap high enough that only the deadline can end the call: inflating 1 GiB takes
    # seconds, and the loop must get its turns while it happens.
    sim.script(route, [Fault.oversized(1024 * MiB, gzip=True)])
    provider = make(route, sim, max_response_bytes=4096 * MiB, timeout=60)
    agent = FallbackAgent([provider], max_retries=0, attempt_timeout=0.3)
    start = time.monotonic()
    with pytest.raises(FallbackError) as info:
        if mode == "complete":
            await agent.run(Request("hi"))
        else:
            async with agent.stream(Request("hi")) as chunks:
                async for _ in chunks:
                    pass
    elapsed = time.monotonic() - start
    assert isinstance(info.value.attempts[0].error, E.ProviderTimeout)
    assert elapsed < 1.5, f"attempt_timeout=0.3 fired after {elapsed:.2f}s"


# -- replies without end --------------------------------------------------------------


@pytest.mark.parametrize(("route", "mode"), ALL, ids=IDS)
async def test_an_endless_reply_is_response_too_large(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    sim.script(route, [Fault.endless()])
    err = await _fails(make(route, sim, max_response_bytes=4 * MiB), mode, guard=10)
    assert type(err) is E.ResponseTooLarge, repr(err)


async def test_an_endless_stream_stops_at_the_default_cap(sim: SimulatedServer) -> None:
    sim.script("openai", [Fault.endless()])
    err = await _fails(make("openai", sim), "stream", guard=10)
    assert type(err) is E.ResponseTooLarge


@pytest.mark.parametrize(("route", "mode"), ALL, ids=IDS)
async def test_a_keep_alive_drip_ends_at_the_provider_timeout(
    sim: SimulatedServer, route: str, mode: str
) -> None:
    sim.script(route, [Fault.endless(0.05, keepalive=True)])
    provider = make(route, sim, timeout=0.5)
    start = time.monotonic()
    err = await _fails(provider, mode, guard=5)
    elapsed = time.monotonic() - start
    assert type(err) is E.ProviderTimeout, repr(err)
    assert 0.45 < elapsed < 2.0, f"timeout=0.5 ended the call after {elapsed:.2f}s"
    assert "timeout=0.5" in str(err)


# -- a user's own httpx client and the reqwest transport are bounded the same way -------


@pytest.mark.parametrize("client", ["httpx", "reqwest"])
@pytest.mark.parametrize("mode", ["complete", "stream"])
@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (lambda: Fault.oversized(2 * MiB), E.ResponseTooLarge),
        (lambda: Fault.oversized(256 * MiB, gzip=True), E.ResponseTooLarge),
        (lambda: Fault.endless(), E.ResponseTooLarge),
        (lambda: Fault.endless(0.05, keepalive=True), E.ProviderTimeout),
    ],
    ids=["large", "gzip-bomb", "endless", "drip"],
)
async def test_a_user_httpx_client_is_bounded_too(
    sim: SimulatedServer, mode: str, fault: Any, expected: type[E.ProviderError], client: str
) -> None:
    sim.script("openai", [fault()])
    async with httpx.AsyncClient() as user:
        kw: dict[str, Any] = {"transport": client} if client == "reqwest" else {"client": user}
        provider = make("openai", sim, timeout=0.5, max_response_bytes=MiB, **kw)
        start = time.monotonic()
        err = await _fails(provider, mode, guard=5)
    assert type(err) is expected, repr(err)
    assert time.monotonic() - start < 2.0


async def test_a_healthy_gzip_reply_is_read(sim: SimulatedServer) -> None:
    sim.script("openai", [Fault.oversized(3 * MiB + 5, gzip=True)] * 2)
    for mode in ("complete", "stream"):
        _, response = await call(make("openai", sim), mode, Request("hi"))
        assert response.text == "x" * (3 * MiB + 5)
