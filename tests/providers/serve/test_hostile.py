"""A hostile client: every malformed body is answered in its own error format, never a 500."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import pytest

from orchestrator import FallbackAgent, Request, Result, ToolCall, ToolCallDelta
from orchestrator.errors import GuardrailTriggered, RateLimited, ServerError
from orchestrator.testing import capture_events
from providers import Fault, SimulatedServer
from providers.serve import GatewayKeys
from providers.serve import gateway as gateway_module
from tests.providers.serve.conftest import Recorder, fallback, gateway

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
    async with (
        gateway({"m": FallbackAgent([recorder])}) as url,
        aiohttp.ClientSession() as http,
        http.post(url + path, json=body) as r,
    ):
        assert r.status == 400, await r.text()
        assert "required" in _error_message(path, await r.json())
    assert recorder.requests == []


async def test_a_refusal_before_any_text_still_streams_for_the_anthropic_sdk() -> None:
    # Anthropic answers a refusal with a message whose stop_reason is "refusal"; asked to
    # stream, the client must get that as SSE events, not a JSON body it cannot read.
    guard = FallbackAgent([Recorder(GuardrailTriggered("policy", provider="p"), "p")])
    async with gateway({"m": guard}) as url:
        client = anthropic.AsyncAnthropic(base_url=url, api_key="k", max_retries=0)
        async with client.messages.stream(model="m", max_tokens=5, messages=USER) as stream:
            message = await stream.get_final_message()
    assert message.stop_reason == "refusal"


async def test_a_refusal_before_any_text_still_streams_for_the_responses_api() -> None:
    guard = FallbackAgent([Recorder(GuardrailTriggered("policy", provider="p"), "p")])
    async with gateway({"m": guard}) as url, aiohttp.ClientSession() as http:
        body = {"model": "m", "input": "x", "stream": True}
        async with http.post(url + RESPONSES, json=body) as r:
            assert r.status == 200
            assert r.headers["Content-Type"].startswith("text/event-stream")
            assert b"content_filter" in await r.read()


@pytest.mark.parametrize("path", [CHAT, MESSAGES, "/v1/messages/count_tokens"])
async def test_a_gateway_bug_while_reading_a_request_is_a_500_in_the_clients_format(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The last line of defence: a parsing gap answers in the client's shape, and says so.
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("a parsing gap")

    monkeypatch.setattr(gateway_module, "body_object", broken)
    body = {"model": "m", "max_tokens": 5, "messages": USER}
    with capture_events() as logs:
        async with (
            gateway({"m": FallbackAgent([Recorder()])}) as url,
            aiohttp.ClientSession() as http,
            http.post(url + path, json=body) as r,
        ):
            assert r.status == 500
            message = _error_message(path, await r.json())
    assert message == "the gateway failed: TypeError"
    assert [e["event"] for e in logs] == ["gateway_error"]


def test_a_key_file_that_is_not_utf8_is_named_without_echoing_it(tmp_path: Path) -> None:
    keys_file = tmp_path / "keys"
    keys_file.write_bytes(b"sk-live-\xff\xfeplaintext\n")
    with pytest.raises(ValueError, match=r"key file .*keys: not UTF-8 text") as info:
        GatewayKeys.load({}, str(keys_file))
    assert "plaintext" not in str(info.value) and "\\xff" not in str(info.value)


@pytest.mark.parametrize("path", [CHAT, MESSAGES])
@pytest.mark.parametrize("stream", [False, True])
async def test_the_failure_summary_names_providers_and_types_never_upstream_words(
    path: str, stream: bool
) -> None:
    # An upstream's error text may carry its URL, internal hosts or an echo of the prompt:
    # the client learns who failed and how, not what the upstream said.
    said = "at http://10.1.2.3:8443/internal/v1 for prompt 'x'"
    agent = FallbackAgent(
        [
            Recorder(ServerError(said, provider="a", status=500), "a"),
            Recorder(RateLimited(said, provider="b", retry_after=3.0), "b"),
        ],
        max_retries=0,
        retry_strategy="none",
    )
    body = {"model": "m", "max_tokens": 5, "stream": stream, "messages": USER}
    async with (
        gateway({"m": agent}) as url,
        aiohttp.ClientSession() as http,
        http.post(url + path, json=body) as r,
    ):
        assert r.status == 503
        message = _error_message(path, await r.json())
    assert "a: ServerError (HTTP 500)" in message and "b: RateLimited (HTTP 429)" in message
    assert "10.1.2.3" not in message and "prompt" not in message


async def test_a_client_sending_both_auth_headers_gets_in_when_either_is_a_gateway_key() -> None:
    # Which header carries the gateway key must not matter: a client configured with a vendor
    # key (x-api-key) and the gateway key as a bearer token was refused, the other way round let in.
    keys = GatewayKeys.load({"FAILOVER_GATEWAY_KEYS": "gw-key"})
    recorder = Recorder("hello")
    body = {"model": "m", "max_tokens": 5, "messages": USER}
    cases = [
        ({"x-api-key": "sk-ant-vendor", "Authorization": "Bearer gw-key"}, 200),
        ({"x-api-key": "gw-key", "Authorization": "Bearer sk-vendor"}, 200),
        ({"x-api-key": "sk-ant-vendor", "Authorization": "Bearer not-it"}, 401),
        ({"x-api-key": "", "Authorization": "Bearer "}, 401),
    ]
    async with (
        gateway({"m": FallbackAgent([recorder])}, keys=keys) as url,
        aiohttp.ClientSession() as http,
    ):
        for headers, status in cases:
            async with http.post(url + MESSAGES, json=body, headers=headers) as r:
                assert r.status == status, headers
    assert len(recorder.requests) == 2


async def test_two_hundred_streams_whose_clients_leave_free_the_upstream_and_every_task(
    sim: SimulatedServer,
) -> None:
    sim.set_default("anthropic", Fault.status(529))
    sim.set_default("openai", Fault.stall(2))  # streams, then never ends
    body = {"model": "review", "stream": True, "messages": USER}
    async with gateway({"review": fallback(sim)}) as url:
        before = len(asyncio.all_tasks())
        connector = aiohttp.TCPConnector(limit=0, force_close=True)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def leave_after_first_event() -> None:
                async with http.post(url + CHAT, json=body) as r:
                    assert r.status == 200
                    await r.content.readline()

            await asyncio.gather(*(leave_after_first_event() for _ in range(200)))
        assert sim.count("openai") == 200  # each stream reached the upstream (some are gone)
        async with asyncio.timeout(30):
            while sim.in_flight or len(asyncio.all_tasks()) > before:
                await asyncio.sleep(0.05)


class _ToolsOnly:
    """A node whose stream yields tool-call pieces, then holds until ``release`` is set
    (a model writing a long tool argument, such as a whole file)."""

    name = "tools"
    health_store = None

    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def __aenter__(self) -> _ToolsOnly:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    @asynccontextmanager
    async def stream(self, request: Request) -> AsyncIterator[Any]:
        node = self

        class Chunks:
            result = Result("", "tools", (), 0.0, tool_calls=(ToolCall("c1", "f", {}),))

            async def __aiter__(self) -> AsyncIterator[Any]:
                yield ToolCallDelta(0, "c1", "f", "{")
                await node.release.wait()
                yield ToolCallDelta(0, None, None, "}")

        yield Chunks()


@pytest.mark.parametrize("path", [CHAT, MESSAGES, RESPONSES])
async def test_a_stream_of_tool_call_pieces_answers_at_once_not_at_the_end(path: str) -> None:
    # Silence until the whole call is known trips clients' and proxies' idle timeouts.
    node = _ToolsOnly()
    tools = [{"type": "function", "function": {"name": "f"}}]
    body: dict[str, Any] = {"model": "m", "stream": True, "messages": USER, "tools": tools}
    if path == MESSAGES:
        body.update(max_tokens=5, tools=[{"name": "f", "input_schema": {"type": "object"}}])
    if path == RESPONSES:
        body = {
            "model": "m",
            "stream": True,
            "input": "x",
            "tools": [{"type": "function", "name": "f"}],
        }
    async with gateway({"m": node}) as url, aiohttp.ClientSession() as http:
        async with asyncio.timeout(10):
            async with http.post(url + path, json=body) as r:
                assert r.status == 200
                assert (await r.content.readline()).startswith((b"data: ", b"event: "))
                node.release.set()
                rest = await r.read()
    assert b'"c1"' in rest
