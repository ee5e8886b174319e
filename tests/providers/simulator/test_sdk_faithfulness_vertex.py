"""anthropic's ``AnthropicVertex`` and ``AsyncAnthropicVertex``, pointed at the simulator's
Vertex root with an access token (nothing reaches Google), parse its replies, streams and
errors: the simulator speaks Vertex AI's wire for Claude.

``sim`` is the module's simulated server (tests/providers/conftest.py).
"""

from __future__ import annotations

from typing import Any

import anthropic
import pytest

from providers.simulator import Fault, SimulatedServer

MESSAGES: list[Any] = [{"role": "user", "content": "Name one prime number."}]
MODEL = "claude-sonnet-4-6"


def client(sim: SimulatedServer, **kw: Any) -> anthropic.AnthropicVertex:
    kw.setdefault("access_token", sim.vertex_token)
    return anthropic.AnthropicVertex(
        region="us-east5", project_id="sim-project", base_url=sim.vertex_url, max_retries=0, **kw
    )


def test_a_message_through_raw_predict(sim: SimulatedServer) -> None:
    sim.script("vertex_anthropic", [Fault.ok("seven", usage=(12, 3))])
    reply = client(sim).messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)
    assert reply.content[0].type == "text" and reply.content[0].text == "seven"
    assert reply.stop_reason == "end_turn" and reply.usage.input_tokens == 12
    (sent,) = sim.requests("vertex_anthropic")
    where = "/vertex/v1/projects/sim-project/locations/us-east5"
    assert sent["path"] == f"{where}/publishers/anthropic/models/{MODEL}:rawPredict"
    assert sent["headers"]["authorization"] == f"Bearer {sim.vertex_token}"
    assert sent["body"]["anthropic_version"]  # the SDK's own version string
    assert "model" not in sent["body"]


def test_a_stream_through_stream_raw_predict(sim: SimulatedServer) -> None:
    sim.script("vertex_anthropic", [Fault.ok("two three five", chunks=3, usage=(4, 5))])
    with client(sim).messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "two three five" and final.usage.output_tokens == 5
    assert sim.requests("vertex_anthropic")[0]["path"].endswith(":streamRawPredict")


def test_tool_use_and_a_refusal(sim: SimulatedServer) -> None:
    calls = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    sim.script("vertex_anthropic", [Fault.ok(tool_calls=calls), Fault.content_filter()])
    tool = {"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}
    reply = client(sim).messages.create(model=MODEL, max_tokens=64, messages=MESSAGES, tools=[tool])
    block = reply.content[-1]
    assert block.type == "tool_use" and block.input == {"city": "Paris"}
    refused = client(sim).messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)
    assert refused.stop_reason == "refusal"


@pytest.mark.parametrize(
    ("fault", "error", "status"),
    [
        (lambda: Fault.rate_limited(2), anthropic.RateLimitError, 429),
        (Fault.quota, anthropic.RateLimitError, 429),
        (Fault.model_not_found, anthropic.NotFoundError, 404),
        (lambda: Fault.auth(403), anthropic.PermissionDeniedError, 403),
        (Fault.overloaded, anthropic.InternalServerError, 529),
        (Fault.context_too_long, anthropic.BadRequestError, 400),
    ],
)
def test_errors_are_the_sdks_own(sim: SimulatedServer, fault: Any, error: Any, status: int) -> None:
    sim.script("vertex_anthropic", [fault()])
    with pytest.raises(error) as info:
        client(sim).messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)
    assert info.value.status_code == status
    if status == 429:
        assert info.value.response.json()["error"]["status"] == "RESOURCE_EXHAUSTED"


def test_a_wrong_token_is_google_401(sim: SimulatedServer) -> None:
    with pytest.raises(anthropic.AuthenticationError) as info:
        client(sim, access_token="ya29.wrong").messages.create(
            model=MODEL, max_tokens=64, messages=MESSAGES
        )
    assert info.value.response.json()["error"]["status"] == "UNAUTHENTICATED"
    assert sim.count("vertex_anthropic") == 0


async def test_the_async_client_completes_streams_and_fails(sim: SimulatedServer) -> None:
    sim.script(
        "vertex_anthropic", [Fault.ok("seven"), Fault.ok("a b", chunks=2), Fault.status(503)]
    )
    async with anthropic.AsyncAnthropicVertex(
        region="global",
        project_id="sim-project",
        base_url=sim.vertex_url,
        access_token=sim.vertex_token,
        max_retries=0,
    ) as vertex:
        reply = await vertex.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)
        assert reply.content[0].text == "seven"  # type: ignore[union-attr]
        async with vertex.messages.stream(model=MODEL, max_tokens=64, messages=MESSAGES) as stream:
            assert "".join([t async for t in stream.text_stream]) == "a b"
        with pytest.raises(anthropic.InternalServerError):
            await vertex.messages.create(model=MODEL, max_tokens=64, messages=MESSAGES)
    assert "/locations/global/" in sim.requests("vertex_anthropic")[0]["path"]
