"""A hostile client: every malformed body is answered in its own error format, never a 500."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from orchestrator import FallbackAgent
from tests.providers.serve.conftest import Recorder, gateway

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"
USER = [{"role": "user", "content": "x"}]

# A required field sent as JSON null is missing, not a value to iterate or measure.
NULLS: list[tuple[str, dict[str, Any]]] = [
    (CHAT, {"model": None, "messages": USER}),
    (CHAT, {"model": "m", "messages": None}),
    (
        CHAT,
        {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]},
    ),
    (MESSAGES, {"model": None, "max_tokens": 5, "messages": USER}),
    (MESSAGES, {"model": "m", "max_tokens": 5, "messages": None}),
    (
        MESSAGES,
        {
            "model": "m",
            "max_tokens": 5,
            "messages": [{"role": "user", "content": [{"type": "text", "text": None}]}],
        },
    ),
    ("/v1/messages/count_tokens", {"model": "m", "messages": None}),
    (RESPONSES, {"model": "m", "input": None}),
    (
        RESPONSES,
        {"model": "m", "input": [{"type": "function_call_output", "call_id": None, "output": "x"}]},
    ),
    (
        CHAT,
        {
            "model": "m",
            "messages": USER,
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "tool_choice": {"type": "function", "function": {"name": None}},
        },
    ),
]


def _error_message(path: str, body: dict[str, Any]) -> str:
    if path.startswith(MESSAGES):
        assert body["type"] == "error"
        return str(body["error"]["message"])
    return str(body["error"]["message"])


@pytest.mark.parametrize(("path", "body"), NULLS)
async def test_a_required_field_sent_as_null_is_a_400_in_the_clients_format(
    path: str, body: dict[str, Any]
) -> None:
    recorder = Recorder()
    async with gateway({"m": FallbackAgent([recorder])}) as url, aiohttp.ClientSession() as http:
        async with http.post(url + path, json=body) as r:
            assert r.status == 400, await r.text()
            assert "required" in _error_message(path, await r.json())
    assert recorder.requests == []
