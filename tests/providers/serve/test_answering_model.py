"""Issue 17 item 22: a gateway reply names the model that answered, not the client's alias,
in JSON and in every stream event of each wire format, with that model's usage."""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from providers import Fault, SimulatedServer
from tests.providers.serve.conftest import fallback, gateway

PROMPT = [{"role": "user", "content": "hello"}]
# path, body, where each event (or the reply) names its model
WIRES: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("/v1/chat/completions", {"messages": PROMPT}),
    "anthropic": ("/v1/messages", {"messages": PROMPT, "max_tokens": 64}),
    "responses": ("/v1/responses", {"input": "hello"}),
}


def _models(value: Any) -> list[str]:
    """Every ``model`` field anywhere in ``value``."""
    if isinstance(value, dict):
        here = [value["model"]] if isinstance(value.get("model"), str) else []
        return here + [m for v in value.values() for m in _models(v)]
    if isinstance(value, list):
        return [m for v in value for m in _models(v)]
    return []


def _events(raw: str) -> list[Any]:
    lines = (line[6:] for line in raw.split("\n") if line.startswith("data: "))
    return [json.loads(data) for data in lines if data != "[DONE]"]


@pytest.mark.parametrize("wire", sorted(WIRES))
async def test_the_reply_names_the_fallback_model_that_answered(
    sim: SimulatedServer, wire: str
) -> None:
    sim.set_default("anthropic", Fault.status(503))
    sim.set_default("openai", Fault.ok("answered", usage=(11, 7)))
    path, extra = WIRES[wire]
    async with gateway({"review": fallback(sim)}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + path, json={"model": "review", **extra}) as r:
            reply = await r.json()
            assert r.status == 200, reply
            assert r.headers["x-failover-model-alias"] == "review"
        stream = {"model": "review", "stream": True, **extra}
        if wire == "openai":
            stream["stream_options"] = {"include_usage": True}
        async with http.post(url + path, json=stream) as r:
            assert r.status == 200
            assert r.headers["x-failover-model-alias"] == "review"
            events = _events((await r.read()).decode())
    assert set(_models(reply)) == {"gpt-sim"}
    named = [_models(e) for e in events]
    if wire == "openai":
        assert events and all(named), named  # every chunk names a model...
    assert {m for ms in named for m in ms} == {"gpt-sim"}  # ...the one that answered
    usage = json.dumps(reply.get("usage"))
    assert "11" in usage and "7" in usage  # the answering model's usage, nothing billed for 503
