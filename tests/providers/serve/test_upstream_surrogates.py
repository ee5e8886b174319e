"""A lone surrogate from an upstream (``"\\ud800"``: valid JSON, not valid Unicode) reaches
the client as U+FFFD, in the client's format, on every endpoint, JSON and streamed.

It was a bare text/plain 500 with a traceback, and it cut a streamed tool call
with no error event (18 of 18 cases). Upstream JSON is decoded in one place
(``providers.http.safe_json``), which replaces it, as every UTF-8 decoder
replaces what it cannot decode.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent, Response, ToolCall
from providers import Fault, SimulatedServer
from tests.providers.serve.conftest import Recorder, fallback, gateway, tool_body

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"
LONE = "\ud800"
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}

#: Where the surrogate is: the text, a tool call's name, a tool call's arguments.
FAULTS: dict[str, Any] = {
    "text": Fault.ok(f"caf{LONE}!"),
    "tool name": Fault.ok("", tool_calls=[{"name": f"look{LONE}up", "arguments": {"q": "x"}}]),
    "tool arguments": Fault.ok("", tool_calls=[{"name": "lookup", "arguments": {"q": LONE}}]),
}


def _documents(raw: bytes, stream: bool) -> list[Any]:
    """The reply's JSON documents (one, or one per SSE event), read as an SDK reads them:
    strict UTF-8 and JSON, or the test fails."""
    text = raw.decode("utf-8")  # strict: invalid UTF-8 fails here
    if not stream:
        return [json.loads(text)]
    data = [line[6:] for line in text.splitlines() if line.startswith("data: ")]
    return [json.loads(d) for d in data if d != "[DONE]"]


def _ended_well(path: str, docs: list[Any]) -> bool:
    """Whether a stream ended as its SDK expects a complete stream to end."""
    if path == MESSAGES:
        return docs[-1].get("type") == "message_stop"
    if path == RESPONSES:
        return docs[-1].get("type") == "response.completed"
    return any(c.get("finish_reason") for d in docs for c in d.get("choices", ()))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("where", list(FAULTS))
@pytest.mark.parametrize("path", [CHAT, MESSAGES, RESPONSES])
async def test_a_lone_surrogate_from_upstream_is_answered_in_the_clients_format(
    path: str, where: str, stream: bool
) -> None:
    with SimulatedServer.in_thread() as sim:
        sim.script("anthropic", [FAULTS[where]])  # the primary's one reply is hostile
        sim.set_default("openai", Fault.ok("", tool_calls=[{"name": "lookup", "arguments": {}}]))
        async with (
            gateway({"m": fallback(sim)}) as url,
            aiohttp.ClientSession() as http,
            http.post(url + path, json=tool_body(path, SCHEMA, stream=stream)) as r,
        ):
            status, kind, raw = r.status, r.headers["Content-Type"], await r.read()
            handled_by = r.headers.get("x-failover-handled-by", "")
    assert b"Traceback" not in raw and not kind.startswith("text/plain"), raw[:300]
    assert status == 200, raw[:300]
    assert kind.startswith("text/event-stream" if stream else "application/json")
    docs = _documents(raw, stream)
    assert not stream or _ended_well(path, docs), docs[-3:]
    shown = json.dumps(docs, ensure_ascii=False)
    if where == "tool name":  # a tool that was not offered: invalid output, handed over
        assert "openai" in handled_by and f"look{LONE}" not in shown
    else:  # text or arguments: what could be decoded, with U+FFFD for what could not
        assert "anthropic" in handled_by and "\ufffd" in shown


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("path", [CHAT, MESSAGES, RESPONSES])
async def test_a_lone_surrogate_from_a_python_provider_is_answered_too(
    path: str, stream: bool
) -> None:
    # No upstream JSON on the way: the gateway's own writer keeps its replies UTF-8.
    call = ToolCall("c1", "lookup", {"q": f"a{LONE}"})
    reply = Response(f"caf{LONE}!", tool_calls=(call,))
    async with (
        gateway({"m": FallbackAgent([Recorder(reply)])}) as url,
        aiohttp.ClientSession() as http,
        http.post(url + path, json=tool_body(path, SCHEMA, stream=stream)) as r,
    ):
        status, raw = r.status, await r.read()
    assert status == 200, raw[:300]
    docs = _documents(raw, stream)
    assert not stream or _ended_well(path, docs), docs[-3:]
    assert "caf\ufffd!" in json.dumps(docs, ensure_ascii=False)
