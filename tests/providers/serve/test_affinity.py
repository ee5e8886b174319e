"""The gateway routes by the call's affinity key over loopback HTTP: ``x-failover-affinity``,
or OpenAI's ``prompt_cache_key`` / ``user``, or Anthropic's ``metadata.user_id``."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent
from providers import OpenAIChat, SimulatedServer
from tests.providers.serve.conftest import UPSTREAM_KEY, gateway

CHAT, MESSAGES, RESPONSES = "/v1/chat/completions", "/v1/messages", "/v1/responses"
HELLO = [{"role": "user", "content": "hello"}]


def _regions(sim: SimulatedServer) -> FallbackAgent:
    """Three regions with equal weights: without a key, calls land on each in turn."""
    regions = [
        OpenAIChat("gpt-sim", base_url=sim.openai_url, api_key=UPSTREAM_KEY, name=n)
        for n in ("east", "west", "eu")
    ]
    return FallbackAgent(regions, order="weighted", max_retries=0, hedge_after=None)


@pytest.mark.parametrize(
    ("path", "extra", "headers"),
    [
        (CHAT, {}, {"x-failover-affinity": "conversation-1"}),
        (CHAT, {"prompt_cache_key": "conversation-2"}, {}),
        (CHAT, {"user": "user-3"}, {}),
        (MESSAGES, {"metadata": {"user_id": "user-4"}, "max_tokens": 50}, {}),
        (RESPONSES, {"input": "hello", "user": "user-5"}, {}),
    ],
)
async def test_every_turn_with_a_key_reaches_the_same_region(
    sim: SimulatedServer, path: str, extra: dict[str, Any], headers: dict[str, str]
) -> None:
    body: dict[str, Any] = {"model": "m", **extra}
    if path != RESPONSES:
        body["messages"] = HELLO
    served = []
    async with gateway({"m": _regions(sim)}) as url, aiohttp.ClientSession() as http:
        for stream in (False, True) * 6:
            async with http.post(url + path, json={**body, "stream": stream}, headers=headers) as r:
                assert r.status == 200, await r.text()
                await r.read()
                served.append(r.headers["x-failover-handled-by"])
        async with http.post(url + CHAT, json={"model": "m", "messages": HELLO}) as r:
            unkeyed = [r.headers["x-failover-handled-by"]]
        for _ in range(5):
            async with http.post(url + CHAT, json={"model": "m", "messages": HELLO}) as r:
                unkeyed.append(r.headers["x-failover-handled-by"])
    assert len(set(served)) == 1
    assert len(set(unkeyed)) == 3  # without a key the strategy spreads the calls


async def test_the_header_wins_over_the_body_and_a_bad_key_is_ignored(
    sim: SimulatedServer,
) -> None:
    agent = _regions(sim)
    async with gateway({"m": agent}) as url, aiohttp.ClientSession() as http:
        first = None
        for user in ("a", "b", "c", "d"):  # the body's user changes; the header does not
            body = {"model": "m", "messages": HELLO, "user": user}
            headers = {"x-failover-affinity": "conversation-9"}
            async with http.post(url + CHAT, json=body, headers=headers) as r:
                first = first or r.headers["x-failover-handled-by"]
                assert r.headers["x-failover-handled-by"] == first
        body = {"model": "m", "messages": HELLO, "user": "x" * 5000}  # too long: no key
        async with http.post(url + CHAT, json=body) as r:
            assert r.status == 200
    assert agent.router.own_state is not None
    assert len(agent.router.own_state.keys) == 1  # conversation-9: the users were never keys
