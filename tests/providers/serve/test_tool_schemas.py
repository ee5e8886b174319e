"""A client's tool schema the gateway cannot apply is the client's 400, in its own format.

SDKs retry a 500, so a schema refused as "the gateway failed" was sent again and
again; and a schema whose ``$ref`` is a URL made the gateway fetch it. Both are
refused when the request is built, before any upstream is asked.
"""

from __future__ import annotations

import asyncio
import socketserver
import threading
from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent
from orchestrator.tools import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES
from providers import Fault, SimulatedServer
from tests.providers.serve.conftest import Recorder, fallback, gateway, tool_body

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    node = schema
    for _ in range(levels):
        node["properties"] = {"x": {"type": "object"}}
        node = node["properties"]["x"]
    return schema


def _prop(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": schema}}


#: (schema, words the 400's message holds): every one was "the gateway failed: ValueError".
BAD_SCHEMAS: list[tuple[dict[str, Any], str]] = [
    (_prop({"type": "string", "pattern": "^(?=a)a$"}), "no linear-time match"),  # lookahead
    (_prop({"type": "string", "pattern": "^(?!x).*$"}), "no linear-time match"),
    (_prop({"type": "string", "pattern": "(?<=a)b"}), "no linear-time match"),  # lookbehind
    (_prop({"type": "string", "pattern": "(?<!a)b"}), "no linear-time match"),
    (_prop({"type": "string", "pattern": "^(a)\\1$"}), "no linear-time match"),  # backreference
    (_prop({"type": "string", "pattern": "("}), "no linear-time match"),
    ({"type": "object", "patternProperties": {"^a": {}}}, "patternProperties"),
    (_prop({"type": "object", "patternProperties": {"^(a+)+$": {}}}), "patternProperties"),
    (_deep(MAX_SCHEMA_DEPTH), "too large"),
    (
        {
            "type": "object",
            "properties": {f"p{i}": {"type": "string"} for i in range(MAX_SCHEMA_NODES // 2)},
        },
        "too large",
    ),
    (_prop({"type": 5}), "not a valid JSON schema"),
    (_prop({"type": "strng"}), "not a valid JSON schema"),
    ({"type": "object", "required": "city"}, "not a valid JSON schema"),
    ({"type": "object", "properties": []}, "not a valid JSON schema"),
    (_prop({"type": "integer", "minimum": "0"}), "not a valid JSON schema"),
    (_prop({"enum": 5}), "not a valid JSON schema"),
    (_prop({"type": "array", "items": 5}), "not a valid JSON schema"),
    (_prop({"type": "string", "maxLength": -1}), "not a valid JSON schema"),
    ({"type": "object", "additionalProperties": "no"}, "not a valid JSON schema"),
    (_prop({"type": "string", "pattern": 5}), "not a valid JSON schema"),
    (_prop({"anyOf": []}), "not a valid JSON schema"),
    (_prop({"type": "number", "multipleOf": 0}), "not a valid JSON schema"),
    (_prop({"$ref": "http://127.0.0.1:9/schema.json"}), "not a local '#/...' reference"),
    (_prop({"$ref": "#/$defs/nowhere"}), "points at nothing"),
]


def _client_error(path: str, body: dict[str, Any]) -> str:
    """The error's message, checked to be in the format the client's SDK reads."""
    if path == MESSAGES:
        assert body["type"] == "error"
        assert body["error"]["type"] == "invalid_request_error"
    else:
        assert body["error"]["type"] == "invalid_request_error"
    return str(body["error"]["message"])


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("path", [CHAT, MESSAGES, RESPONSES])
async def test_every_bad_tool_schema_is_a_400_in_the_clients_format(
    path: str, stream: bool
) -> None:
    recorder = Recorder()
    answers: list[tuple[int, str]] = []
    async with (
        gateway({"m": FallbackAgent([recorder])}) as url,
        aiohttp.ClientSession() as http,
    ):
        for schema, _ in BAD_SCHEMAS:
            async with http.post(url + path, json=tool_body(path, schema, stream=stream)) as r:
                assert r.headers["Content-Type"].startswith("application/json")
                answers.append((r.status, _client_error(path, await r.json())))
    assert [status for status, _ in answers] == [400] * len(BAD_SCHEMAS)
    for (schema, words), (_, message) in zip(BAD_SCHEMAS, answers, strict=True):
        assert words in message and "'lookup'" in message, (schema, message)
        assert "the gateway failed" not in message
    assert recorder.requests == []  # refused before any provider was asked


class _Listener(socketserver.ThreadingTCPServer):
    """A loopback port that counts the connections made to it (and closes each)."""

    daemon_threads = True

    def __init__(self) -> None:
        self.connections = 0
        super().__init__(("127.0.0.1", 0), socketserver.BaseRequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections += 1
        self.shutdown_request(request)


@pytest.mark.parametrize("path", [CHAT, MESSAGES, RESPONSES])
async def test_a_url_ref_is_refused_before_the_upstream_is_asked_and_never_fetched(
    path: str,
) -> None:
    # The upstream would call the tool: that is when the gateway fetched the URL.
    call = {"name": "lookup", "arguments": {"a": {"x": 1}}}
    with SimulatedServer.in_thread() as sim, _Listener() as target:
        threading.Thread(target=target.serve_forever, daemon=True).start()
        ref = f"http://127.0.0.1:{target.server_address[1]}/schema.json"
        sim.set_default("anthropic", Fault.ok("", tool_calls=[call]))
        sim.set_default("openai", Fault.ok("", tool_calls=[call]))
        async with (
            gateway({"m": fallback(sim)}) as url,
            aiohttp.ClientSession() as http,
            http.post(url + path, json=tool_body(path, _prop({"$ref": ref}))) as r,
        ):
            status, message = r.status, _client_error(path, await r.json())
        target.shutdown()
        upstream = sim.count("anthropic") + sim.count("openai")
    assert status == 400, message
    assert "'lookup'" in message and ref in message and "not a local" in message
    assert upstream == 0 and target.connections == 0


async def test_good_and_bad_schemas_in_flight_together_are_each_answered_on_their_own() -> None:
    # Validators are cached per tool: a bad schema's refusal must not stick to a good one.
    good = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {}}}
    bad = _prop({"$ref": "http://127.0.0.1:9/a"})
    recorder = Recorder()
    async with (
        gateway({"m": FallbackAgent([recorder])}) as url,
        aiohttp.ClientSession() as http,
    ):

        async def post(schema: dict[str, Any]) -> int:
            async with http.post(url + CHAT, json=tool_body(CHAT, schema)) as r:
                await r.read()
                return r.status

        statuses = await asyncio.gather(*(post(good if i % 2 else bad) for i in range(100)))
    assert statuses == [200 if i % 2 else 400 for i in range(100)]
    assert len(recorder.requests) == 50
