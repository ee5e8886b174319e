"""Workflows as models, and a failure of the gateway's own (not a provider's)."""

from __future__ import annotations

import json

import aiohttp

from orchestrator import FallbackAgent, Phase, Request, Step, Workflow
from orchestrator.testing import capture_events
from tests.providers.serve import conftest
from tests.providers.serve.conftest import Recorder, gateway

CHAT = "/v1/chat/completions"


def body(model: str, **extra: object) -> dict[str, object]:
    return {"model": model, "messages": [{"role": "user", "content": "topic"}], **extra}


async def test_a_workflow_is_a_model_answered_whole_or_as_one_chunk() -> None:
    draft = FallbackAgent([Recorder("draft text", "drafter")])
    polish = FallbackAgent([Recorder("polished text", "polisher")])
    flow = Workflow(
        Phase("write", Step("draft", draft, prompt="{input}")),
        Phase("edit", Step("polish", polish, prompt="{draft.text}")),
        name="pipeline",
    )
    async with gateway({}, workflows={"pipeline": flow}) as url, aiohttp.ClientSession() as http:
        async with http.get(url + "/v1/models") as r:
            assert [m["id"] for m in (await r.json())["data"]] == ["pipeline"]
        async with http.post(url + CHAT, json=body("pipeline")) as r:
            reply = await r.json()
            assert r.headers["x-failover-handled-by"] == "polisher"
        async with http.post(url + CHAT, json=body("pipeline", stream=True)) as r:
            raw = (await r.read()).decode()
    assert reply["choices"][0]["message"]["content"] == "polished text"
    chunks = [json.loads(x[6:]) for x in raw.split("\n") if x.startswith("data: {")]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text == "polished text"


class Broken(conftest.Node):
    """A node whose run fails in a way no provider would: a bug, not an outage."""

    name = "broken"

    async def run(self, request: Request) -> None:
        raise RuntimeError("secret internals sk-live-123")

    def stream(self, request: Request) -> None:
        raise RuntimeError("secret internals sk-live-123")


async def test_a_gateway_fault_is_a_500_without_its_message_and_is_reported() -> None:
    async with gateway({"b": Broken()}) as url, aiohttp.ClientSession() as http:
        # capture_events, not structlog's capture_logs: that leaves structlog configured,
        # so every later test in the process would print events.
        with capture_events() as logs:
            async with http.post(url + CHAT, json=body("b")) as r:
                text = await r.text()
                assert r.status == 500
            async with http.post(
                url + "/v1/messages", json={**body("b"), "max_tokens": 5, "stream": True}
            ) as r:
                assert r.status == 500
                assert (await r.json())["error"]["type"] == "api_error"
    assert "sk-live" not in text and "RuntimeError" in text
    assert [e["event"] for e in logs] == ["gateway_error", "gateway_error"]
    assert logs[0]["error_type"] == "RuntimeError"


async def test_agents_entered_are_closed_when_a_later_one_fails_to_enter() -> None:
    import pytest

    from providers.serve import Models

    closed: list[str] = []

    class Node:
        health_store = None

        def __init__(self, name: str, fail: bool) -> None:
            self.name, self.fail = name, fail

        async def __aenter__(self) -> Node:
            if self.fail:
                raise OSError("cannot open a pool")
            return self

        async def __aexit__(self, *exc_info: object) -> None:
            closed.append(self.name)

    models = Models({"a": Node("a", False), "b": Node("b", True)}, {})
    with pytest.raises(OSError):
        await models.__aenter__()
    assert closed == ["a"]
