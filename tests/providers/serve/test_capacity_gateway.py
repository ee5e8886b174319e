"""The gateway answers a chain at capacity with 429 and the soonest ``Retry-After``."""

from __future__ import annotations

import aiohttp

from orchestrator import Budget, FallbackAgent, Limits, Request, Response, Usage
from orchestrator.function import FunctionProvider
from orchestrator.health import MemoryHealthStore
from tests.providers.serve.conftest import gateway

CHAT = "/v1/chat/completions"
BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


async def test_every_child_at_capacity_is_a_429_with_when_one_frees() -> None:
    provider = FunctionProvider(lambda r: "ok", name="fn", limits=Limits(rpm=1, window=30))
    agent = FallbackAgent([provider], health=MemoryHealthStore())
    async with gateway({"m": agent}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + CHAT, json=BODY) as r:
            assert r.status == 200
        async with http.post(url + CHAT, json=BODY) as r:
            assert r.status == 429
            assert 29 <= int(r.headers["Retry-After"]) <= 30
            assert (await r.json())["error"]["code"] == "rate_limit_exceeded"


async def test_a_spent_chain_budget_is_a_429_before_any_call() -> None:
    calls: list[str] = []

    def answer(request: Request) -> Response:
        calls.append("x")
        return Response("ok", usage=Usage(1, 1), cost_usd=1.0)

    provider = FunctionProvider(answer, name="fn")
    provider.price = (0.0, 0.0)  # type: ignore[attr-defined]  # priced: the budget may count it
    agent = FallbackAgent([provider], health=MemoryHealthStore(), budget=Budget(usd=0.5))
    async with gateway({"m": agent}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + CHAT, json=BODY) as r:
            assert r.status == 200  # $1.00 spent: the $0.50 budget is gone
        async with http.post(url + CHAT, json=BODY) as r:
            assert r.status == 429
            assert "budget" in (await r.json())["error"]["message"]
    assert calls == ["x"]
